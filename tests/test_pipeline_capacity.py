"""The pipeline's capacity side: a recall target held constant per arm, corpus slices, measured capacity."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_pipeline import DIMENSIONS, DOCUMENTS, QUERIES, hash_arm, make_golden

from pytest_embeval.arms.embedding import Arm, embed
from pytest_embeval.arms.retriever import RecallTargetError
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.core.capacity import Production
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.data_files import Document, Query
from pytest_embeval.golden.schema import CorpusSample, IndexSpec
from pytest_embeval.run.corpus_slices import GAP_STILL_MOVING, corpus_slices
from pytest_embeval.run.pipeline import golden_control, run_arm, run_golden
from pytest_embeval.run.stratum_evaluation import evaluate_stratum


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


class IntrinsicModel:
    """Documents and queries are random unit vectors in a ``rank``-dimensional subspace of 32 dimensions:
    an intrinsic dimension of ``rank``. "doc i" is seeded by i, "query j" by 10,000 + j."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.basis = np.linalg.qr(np.random.default_rng(1).standard_normal((32, 32)))[0][:rank]

    def _embed(self, texts: list[str], offset: int) -> np.ndarray:
        rows = [np.random.default_rng(offset + int(t.split()[-1])).standard_normal(self.rank) for t in texts]
        return _unit(np.stack(rows) @ self.basis)

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, 0)

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, 10_000)


def intrinsic_arm(rank: int) -> Arm:
    return Arm(spec=f"rank-{rank}", encoder=IntrinsicModel(rank), fingerprint=f"rank-{rank}", prompts={})


def wide_golden(index: IndexSpec, documents: int = 1500, **changes: Any) -> Any:
    """60 queries over 1,500 documents, query j judged relevant: document j."""
    return make_golden(
        documents=tuple(Document(f"d{i:04d}", f"doc {i}") for i in range(documents)),
        queries=tuple(Query(f"q{j:03d}", f"query {j}", {"language": "en"}) for j in range(60)),
        qrels={f"q{j:03d}": {f"d{j:04d}": 1} for j in range(60)},
        index=index,
        **changes,
    )


TARGET = IndexSpec("hnsw", M=4, ef_construction=20, recall_target=0.95)


# ------------------------------------------------------------------------------------------- recall target


def test_each_arm_searches_at_the_ef_its_own_vectors_need_for_the_recall_target() -> None:
    """Vectors of intrinsic dimension 2 reach recall@100 0.95 at the least ef, 100; of intrinsic dimension 32
    they need far more on this sparse graph. Both arms reach the target, each at its own ef."""
    golden = wide_golden(TARGET)
    run = run_golden(golden, intrinsic_arm(2), intrinsic_arm(32))
    low, high = run.incumbent.index.hnsw, run.candidate.index.hnsw
    assert low is not None and high is not None
    assert low.parameters["ef"] == 100
    assert high.parameters["ef"] > 2 * low.parameters["ef"]
    for hnsw in (low, high):
        assert hnsw.ann_recall >= 0.95 and hnsw.recall_target == 0.95
    # Quality is measured at each arm's own ef: a search at the other arm's ef ranks differently.
    at_low_ef = dataclasses.replace(golden, index=IndexSpec("hnsw", M=4, ef_construction=20, ef_search=100))
    assert run_arm(at_low_ef, intrinsic_arm(32), "candidate").ranked != run.candidate.ranked


def test_the_control_holds_the_recall_target_constant_not_the_ef() -> None:
    golden = wide_golden(TARGET)
    run = run_golden(golden, intrinsic_arm(2), intrinsic_arm(32))
    assert run.incumbent.control == run.candidate.control == golden_control(golden) == run.control
    # The target is the index component: another target is another index, the ef is not part of it.
    other = golden_control(dataclasses.replace(golden, index=dataclasses.replace(TARGET, recall_target=0.9)))
    assert other.index != run.control.index
    at_ef = golden_control(dataclasses.replace(golden, index=IndexSpec("hnsw", M=4, ef_construction=20)))
    assert at_ef.index != run.control.index


def test_an_arm_that_missed_the_target_records_the_recall_it_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its control then differs from the golden set's, and the run refuses to compare."""
    from pytest_embeval.run.control import ControlMismatch
    from pytest_embeval.search import hnsw as index_module

    golden = wide_golden(TARGET)
    monkeypatch.setattr(
        index_module.HnswIndex, "ef_for_recall", lambda self, queries, exact, target, **_: (100, 1.0)
    )
    with pytest.raises(ControlMismatch, match=r"held constant: index \(incumbent"):
        run_golden(golden, intrinsic_arm(2), intrinsic_arm(32))


def test_an_unreachable_recall_target_is_one_line_naming_the_arm() -> None:
    """150 copies of a vector and 150 of its opposite: the exact top 100 of a query equal to the vector is
    its 100 largest ids among 150 ties, which no graph search reproduces, however large its ef."""

    class Tied:
        def encode_document(self, texts: list[str]) -> np.ndarray:
            return np.array([[1.0, 0.0] if int(t.split()[-1]) % 2 else [-1.0, 0.0] for t in texts])

        def encode_query(self, texts: list[str]) -> np.ndarray:
            return np.tile([1.0, 0.0], (len(texts), 1))

    golden = wide_golden(dataclasses.replace(TARGET, recall_target=1.0), documents=300)
    tied = Arm(spec="tied", encoder=Tied(), fingerprint="tied", prompts={})
    with pytest.raises(RecallTargetError) as raised:
        run_golden(golden, intrinsic_arm(2), tied)
    message = str(raised.value)
    assert "\n" not in message
    assert re.fullmatch(
        r"candidate: index\.hnsw\.recall_target 1 is out of reach: ANN recall@100 0\.\d{4} on 60 sampled "
        r"queries at the largest ef, 300 \(every document\); lower the target, or raise M \(4\) or "
        r"ef_construction \(20\)",
        message,
    )


# -------------------------------------------------------------------------------------------- corpus slices


class DistractedModel:
    """Document i is a random vector. Query j points at document j, except that for j odd it points more at
    one unjudged distractor, document 40 + j, which outranks document j whenever a slice holds it."""

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._doc(int(t.split()[-1])) for t in texts])

    def encode_query(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            j = int(text.split()[-1])
            rows.append(self._doc(j) + (1.5 * self._doc(40 + j) if j % 2 else 0.0))
        return np.stack(rows)

    @staticmethod
    def _doc(i: int) -> np.ndarray:
        return np.random.default_rng(i).standard_normal(DIMENSIONS)


SAMPLE = CorpusSample(sizes=(0.2, 0.5, 1.0), seed=7)


def counting_embedder(log: list[tuple[str, str, int]]) -> Any:
    def embedder(arm: Arm, texts: list[str], kind: str, **kwargs: Any) -> np.ndarray:
        log.append((arm.spec, kind, len(texts)))
        return embed(arm, texts, kind, **kwargs)

    return embedder


def test_slices_embed_once_for_the_largest_and_search_each() -> None:
    golden = make_golden(corpus_sample=SAMPLE)
    log: list[tuple[str, str, int]] = []
    run = run_golden(golden, hash_arm("a"), hash_arm("b"), embedder=counting_embedder(log))
    assert sorted(log) == [
        ("a", "document", DOCUMENTS),
        ("a", "query", QUERIES),
        ("b", "document", DOCUMENTS),
        ("b", "query", QUERIES),
    ]
    assert [(one.fraction, one.documents) for one in run.slices] == [(0.2, 40), (0.5, 60), (1.0, 120)]
    assert run.documents == DOCUMENTS and run.golden == golden
    for one, drawn in zip(run.slices, corpus_slices(golden), strict=True):
        assert [doc.id for doc in one.run.golden.documents] == [golden.documents[r].id for r in drawn.rows]
        assert one.run.control == golden_control(one.run.golden)
        # Every ranked document of a slice is in that slice.
        kept = {doc.id for doc in one.run.golden.documents}
        assert all(set(row) <= kept for row in one.run.candidate.ranked)


def test_a_largest_slice_smaller_than_the_corpus_embeds_only_that_slice() -> None:
    golden = make_golden(corpus_sample=CorpusSample(sizes=(0.25, 0.5), seed=7))
    log: list[tuple[str, str, int]] = []
    run = run_golden(golden, hash_arm("a"), hash_arm("b"), embedder=counting_embedder(log))
    assert ("a", "document", 60) in log and ("a", "document", DOCUMENTS) not in log
    assert run.documents == 60
    assert run.control == golden_control(run.slices[-1].run.golden) != golden_control(golden)


def test_the_largest_slice_at_the_whole_corpus_gives_exactly_the_single_size_verdicts() -> None:
    arms = (Arm("a", DistractedModel(), "a", {}), hash_arm("b"))
    single = run_golden(make_golden(), *arms)
    sliced = run_golden(make_golden(corpus_sample=SAMPLE), *arms)
    assert sliced.incumbent.ranked == single.incumbent.ranked
    assert sliced.candidate.ranked == single.candidate.ranked
    for stratum in make_golden().strata():
        one, other = evaluate_stratum(single, stratum), evaluate_stratum(sliced, stratum)
        assert other.ruling == one.ruling
        assert other.comparisons == one.comparisons
        assert other.slices[-1].verdict is one.ruling.verdict
        assert other.slices[-1].comparison == one.comparisons["recall@10"]


def test_a_gap_that_moves_between_the_two_largest_slices_says_so() -> None:
    """Under hit@1 the distracted arm loses each odd query whose distractor the slice holds: the larger the
    slice, the more it loses, half the queries on the whole corpus."""
    golden = make_golden(
        corpus_sample=CorpusSample(sizes=(0.2, 0.6, 1.0), seed=7), metric=parse_metric("hit@1")
    )
    run = run_golden(golden, hash_arm("steady"), Arm("distracted", DistractedModel(), "d", {}))
    outcome = evaluate_stratum(run, golden.strata()[0])
    deltas = [one.comparison.delta for one in outcome.slices]
    assert deltas[0] > deltas[1] > deltas[2]  # the more distractors a slice holds, the larger the loss
    assert deltas[2] == pytest.approx(-0.5)  # every odd query lost on the whole corpus
    assert abs(deltas[2] - deltas[1]) > golden.tie_margin / 2
    assert outcome.gap_moving
    assert GAP_STILL_MOVING == "gap still moving: the models cannot be ranked at this size yet"
    assert outcome.ruling.verdict is outcome.slices[-1].verdict  # decided on the largest slice


# ---------------------------------------------------------------------------------------- measured capacity


class CountedModel(IntrinsicModel):
    """Counts a token per word, as a custom encoder may."""

    def count_tokens(self, texts: list[str], kind: str) -> list[int]:
        return [len(text.split()) for text in texts]


def test_capacity_is_measured_only_when_production_is_declared() -> None:
    assert run_arm(make_golden(), hash_arm(), "incumbent").capacity is None
    capacity = run_arm(make_golden(production=Production(10**7)), hash_arm(), "incumbent").capacity
    assert capacity is not None
    assert (capacity.documents, capacity.dimension, capacity.dtype) == (DOCUMENTS, DIMENSIONS, "float32")
    assert capacity.bytes_per_vector == DIMENSIONS * 4 == capacity.index_bytes // DOCUMENTS
    assert capacity.index_kind == "exact" and capacity.M is None and capacity.latency_ef is None
    assert capacity.document_tokens is None  # the hash model cannot count its tokens
    assert capacity.throughput is not None and capacity.throughput.texts == DOCUMENTS
    assert capacity.throughput.seconds > 0 and capacity.throughput.tokens is None
    assert 0 < capacity.latency.p50_ms <= capacity.latency.p95_ms


def test_capacity_counts_tokens_and_the_throughput_of_what_was_encoded(tmp_path: Path) -> None:
    from pytest_embeval.arms.model_specs import resolve_model

    arm = dataclasses.replace(resolve_model(CountedModel(2)), price_per_million_tokens=0.5)
    golden = make_golden(production=Production(10**6), index=IndexSpec("hnsw", M=8, ef_construction=40))
    cache = EmbeddingCache(tmp_path)
    first = run_arm(golden, arm, "incumbent", embedder=cache.embed).capacity
    assert first is not None and first.document_tokens is not None and first.query_tokens is not None
    # "document i" and "query i" are two words each.
    assert (first.document_tokens.texts, first.document_tokens.tokens) == (DOCUMENTS, 2 * DOCUMENTS)
    assert (first.query_tokens.texts, first.query_tokens.tokens) == (QUERIES, 2 * QUERIES)
    assert first.throughput is not None
    assert (first.throughput.texts, first.throughput.tokens) == (DOCUMENTS, 2 * DOCUMENTS)
    assert first.price_per_million_tokens == 0.5
    assert first.index_kind == "hnsw" and first.M == 8 and first.latency_ef == 128
    # Every vector from the cache: nothing was encoded, so throughput was not measured.
    again = run_arm(golden, arm, "incumbent", embedder=cache.embed).capacity
    assert again is not None and again.throughput is None
    assert again.document_tokens == first.document_tokens


def test_timing_the_encoder_changes_no_result() -> None:
    plain = run_arm(make_golden(), hash_arm(), "incumbent")
    timed = run_arm(make_golden(production=Production(100)), hash_arm(), "incumbent")
    assert timed.ranked == plain.ranked and timed.similarities == plain.similarities
    assert timed.control.corpus == plain.control.corpus and timed.control.index == plain.control.index
