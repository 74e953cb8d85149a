"""`measure`: the encoding time of overlapping calls, and an endpoint arm's tokens from its usage figures."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pytest_embeval.arms import capacity_measurement as measure
from pytest_embeval.arms.capacity_measurement import TimedEncoder, measure_capacity
from pytest_embeval.arms.embedding import Arm, EncodedBatch
from pytest_embeval.arms.usage import TokenUsage, UsageCount
from pytest_embeval.core.capacity import ArmCapacity, Latency


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class GatedEncoder:
    """Each document call waits for its own release, so the test decides when calls overlap and end."""

    def __init__(self, dimension: int = 2) -> None:
        self.dimension = dimension
        self.entered = threading.Semaphore(0)
        self.release: dict[str, threading.Event] = {}

    def encode_document(self, texts: list[str]) -> EncodedBatch:
        self.entered.release()
        assert self.release[texts[0]].wait(10)
        return EncodedBatch(np.ones((len(texts), self.dimension), np.float32), np.full(len(texts), 3))

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dimension), np.float32)


def test_overlapping_calls_are_timed_once_per_wall_clock_second(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(measure.time, "perf_counter", clock)
    encoder = GatedEncoder()
    encoder.release = {"a": threading.Event(), "b": threading.Event(), "c": threading.Event()}
    timer = TimedEncoder(encoder)
    first = threading.Thread(target=timer.encode_document, args=(["a", "a2"],))
    second = threading.Thread(target=timer.encode_document, args=(["b"],))
    first.start()  # a runs from 0 to 2, b from 1 to 3: busy for 3 seconds, not 2 + 2
    assert encoder.entered.acquire(timeout=10)
    clock.now = 1.0
    second.start()
    assert encoder.entered.acquire(timeout=10)
    clock.now = 2.0
    encoder.release["a"].set()
    first.join(10)
    clock.now = 3.0
    encoder.release["b"].set()
    second.join(10)
    clock.now = 10.0  # idle time between calls is not encoding
    third = threading.Thread(target=timer.encode_document, args=(["c"],))
    third.start()
    assert encoder.entered.acquire(timeout=10)
    clock.now = 10.5
    encoder.release["c"].set()
    third.join(10)
    assert timer.seconds == pytest.approx(3.5)
    assert sorted(timer.documents) == ["a", "a2", "b", "c"]
    assert timer.tokens == 4 * 3


def test_a_call_without_token_counts_leaves_the_encoded_tokens_unknown() -> None:
    class Plain:
        def encode_document(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2), np.float32)

        def encode_query(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2), np.float32)

    timer = TimedEncoder(Plain())
    timer.encode_document(["x"])
    assert timer.tokens is None and timer.documents == ["x"]


def capacity_of(arm: Arm, **usage: UsageCount | None) -> ArmCapacity:
    return measure_capacity(
        arm,
        documents=np.ones((3, 4), np.float32),
        document_texts=["d1", "d2", "d2"],
        query_texts=["q1", "q2"],
        timer=None,
        index="exact",
        index_bytes=48,
        M=None,
        latency=Latency.of(np.array([0.001, 0.002])),
        latency_ef=None,
        **usage,
    )


def test_an_endpoint_arms_tokens_are_its_usage_figures_over_distinct_texts() -> None:
    arm = Arm(spec="openai:m", encoder=GatedEncoder(), fingerprint="{}", prompts={}, usage=TokenUsage())
    capacity = capacity_of(
        arm,
        # one of the two distinct documents was sent (5 tokens), the other served by the cache (7)
        document_usage=UsageCount(tokens=5, requests=1, cached_tokens=7),
        query_usage=UsageCount(tokens=9, requests=1),
    )
    assert capacity.document_tokens is not None and capacity.query_tokens is not None
    assert (capacity.document_tokens.texts, capacity.document_tokens.tokens) == (2, 12)
    assert capacity.document_tokens.method == "the endpoint's usage figures"
    assert (capacity.query_tokens.texts, capacity.query_tokens.tokens, capacity.query_tokens.per_text) == (
        2,
        9,
        4.5,
    )


def test_an_endpoint_that_reports_no_usage_counts_no_tokens() -> None:
    arm = Arm(spec="openai:m", encoder=GatedEncoder(), fingerprint="{}", prompts={}, usage=TokenUsage())
    capacity = capacity_of(arm, document_usage=UsageCount(requests=1), query_usage=None)
    assert capacity.document_tokens is None and capacity.query_tokens is None
