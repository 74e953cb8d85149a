"""How texts become encoder calls: by count and estimated tokens, longest first, some calls at once."""

from __future__ import annotations

import re
import threading
import time

import pytest

from pytest_embeval.arms.batching import Batching, completed, estimate_tokens, plan


def test_estimated_tokens_are_a_third_of_the_utf8_bytes() -> None:
    assert [estimate_tokens(text) for text in ["", "a", "abc", "abcd", "é" * 3, "日本語"]] == [
        1,
        1,
        1,
        2,
        2,
        3,
    ]


def test_batches_by_count_longest_first_in_a_stable_order() -> None:
    texts = ["bb", "a", "ccc", "dd", "e"]
    assert [rows.tolist() for rows in plan(texts, Batching(size=2))] == [[2, 0], [3, 1], [4]]


def test_batches_by_estimated_tokens_and_a_long_text_alone() -> None:
    texts = ["x" * 30, "x" * 9, "x" * 9, "x" * 9, "x" * 3]  # 10, 3, 3, 3, 1 estimated tokens
    batches = plan(texts, Batching(size=10, token_budget=7))
    assert [rows.tolist() for rows in batches] == [[0], [1, 2], [3, 4]]
    assert sum(len(rows) for rows in batches) == len(texts)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"size": 0}, "size must be an integer >= 1, got 0"),
        ({"token_budget": 0}, "token_budget must be an integer >= 1, got 0"),
        ({"concurrency": True}, "concurrency must be an integer >= 1, got True"),
    ],
)
def test_batching_is_validated(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Batching(**settings)  # type: ignore[arg-type]


def test_one_at_a_time_calls_run_here_in_order() -> None:
    seen: list[str] = []

    def call(job: int) -> int:
        seen.append(threading.current_thread().name)
        return job * 10

    assert list(completed(call, [1, 2, 3], 1)) == [(0, 10), (1, 20), (2, 30)]
    assert set(seen) == {threading.current_thread().name}


def test_concurrent_calls_stay_within_the_bound_and_all_return() -> None:
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def call(job: int) -> int:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.02 * (job % 3))
        with lock:
            state["now"] -= 1
        return job

    results = dict(completed(call, list(range(20)), 3))
    assert results == {i: i for i in range(20)} and state["most"] == 3


def test_after_a_failure_the_calls_in_flight_still_return_and_no_new_one_starts() -> None:
    started: list[int] = []

    def call(job: int) -> int:
        started.append(job)
        if job == 0:
            raise RuntimeError("first call fails")
        time.sleep(0.05)
        return job

    returned = []
    with pytest.raises(RuntimeError, match="first call fails"):
        for position, result in completed(call, list(range(10)), 3):
            returned.append((position, result))
    assert sorted(started) == [0, 1, 2] and sorted(returned) == [(1, 1), (2, 2)]
