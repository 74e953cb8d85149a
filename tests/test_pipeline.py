"""The pipeline's control check and index statistics, on golden sets built in memory and a hashing encoder."""

from __future__ import annotations

import dataclasses
import pickle
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embeval.arms.dense import ANN_SAMPLE, ann_sample
from pytest_embeval.arms.embedding import Arm
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.data_files import Document, Query
from pytest_embeval.golden.schema import GoldenSet, IndexSpec
from pytest_embeval.run import golden_run, pipeline
from pytest_embeval.run.control import ControlMismatch, check_control, control_differences, short_digest
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import golden_control, run_arm

DOCUMENTS = 120
QUERIES = 40
DIMENSIONS = 32
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def make_golden(**changes: Any) -> GoldenSet:
    """40 queries over 120 documents; query i is "query i", judged relevant: document i."""
    documents = tuple(Document(f"d{i:03d}", f"document {i}") for i in range(DOCUMENTS))
    queries = tuple(
        Query(f"q{i:03d}", f"query {i}", {"language": "en" if i % 2 else "es"}) for i in range(QUERIES)
    )
    golden = GoldenSet(
        path=Path("golden.yaml"),
        name="golden",
        documents=documents,
        queries=queries,
        qrels={query.id: {f"d{i:03d}": 1} for i, query in enumerate(queries)},
        strata_fields=("language",),
        metric=parse_metric("recall@10"),
        guards={},
        report_metrics=(),
        tie_margin=0.02,
        confidence=0.95,
        min_queries=20,
        bootstrap=200,
        seed=0,
        index=IndexSpec("exact"),
        relevance_level=1,
    )
    return dataclasses.replace(golden, **changes)


class HashModel:
    """Document i is a random unit vector seeded by i; "query i" is that vector plus a little noise, so
    retrieval is nearly perfect and a search that loses neighbours shows."""

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(text) for text in texts])

    def encode_query(self, texts: list[str]) -> np.ndarray:
        # Noise seeded by the text alone: a query embeds the same in any batch.
        noise = [
            np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIMENSIONS) for text in texts
        ]
        vectors: np.ndarray = self.encode_document(texts) + 0.05 * np.stack(noise).astype(np.float32)
        return vectors

    @staticmethod
    def _vector(text: str) -> np.ndarray:
        rng = np.random.default_rng(int(text.split()[-1]))
        return rng.standard_normal(DIMENSIONS).astype(np.float32)


def hash_arm(name: str = "hash") -> Arm:
    return Arm(spec=name, encoder=HashModel(), fingerprint=f'{{"name":"{name}"}}', prompts={})


# --------------------------------------------------------------------------------------------- control


def test_golden_control_is_stable_and_reuses_the_plan_fingerprint() -> None:
    golden = make_golden()
    control = golden_control(golden)
    assert control == golden_control(make_golden())
    assert list(control.components()) == ["corpus", "queries", "qrels", "index", "depth", "plan"]
    assert all(DIGEST.fullmatch(digest) for digest in control.components().values())
    assert control.plan == golden.plan_fingerprint()
    assert DIGEST.fullmatch(control.fingerprint)
    # Pinned: the digests are a contract between reports written by different runs and machines. (The plan
    # digest belongs to golden.py and changes with its schema.)
    assert {name: digest for name, digest in control.components().items() if name != "plan"} == {
        "corpus": "sha256:9070751a380ea8c7bc818403c94710d8959b004b0173e0d6bf643ec9b10f71db",
        "queries": "sha256:501627ae626525278d5894acc8afe5ee449d35030d75a753dfe40b5c6c1f7297",
        "qrels": "sha256:f0acac2291b3e745478b1bdd7bed48b09a870c97f0f888e559e5d711701e13ee",
        "index": "sha256:be33c26d3781589175ed68012fd97812efe65b52b05af9dc9cc006ef22fcdc55",
        "depth": "sha256:130305e00199e2e45d9c34e82c19cca178cdadc34d54912c77b1c3607ad6d54d",
    }


def _replace_document(golden: GoldenSet, position: int, document: Document) -> tuple[Document, ...]:
    documents = list(golden.documents)
    documents[position] = document
    return tuple(documents)


def _changed(change: str) -> dict[str, Any]:
    """Keyword changes to `make_golden` that alter exactly one held-constant input."""
    base = make_golden()
    queries = list(base.queries)
    qrels = {qid: dict(docs) for qid, docs in base.qrels.items()}
    hnsw = IndexSpec("hnsw", M=16, ef_construction=200, ef_search=128)
    if change == "document text":
        return {"documents": _replace_document(base, 5, Document("d005", "edited document 5"))}
    if change == "document title":
        return {"documents": _replace_document(base, 5, Document("d005", "document 5", "Title"))}
    if change == "unjudged document id":
        return {"documents": _replace_document(base, 119, Document("d999", "document 119"))}
    if change == "query text":
        queries[3] = dataclasses.replace(queries[3], text="query 3, reworded")
        return {"queries": tuple(queries)}
    if change == "stratum value":
        queries[3] = dataclasses.replace(queries[3], fields={"language": "es"})
        return {"queries": tuple(queries)}
    if change == "query order":
        queries[0], queries[1] = queries[1], queries[0]
        return {"queries": tuple(queries)}
    if change == "grade":
        qrels["q000"]["d000"] = 2
        return {"qrels": qrels}
    if change == "extra judgment":
        qrels["q000"]["d100"] = 1
        return {"qrels": qrels}
    if change == "hnsw M":
        return {"index": dataclasses.replace(hnsw, M=8)}
    if change == "hnsw ef_search":
        return {"index": dataclasses.replace(hnsw, ef_search=300)}
    if change == "tie margin":
        return {"tie_margin": 0.05}
    if change == "relevance level":
        return {"relevance_level": 2}
    if change == "seed":
        return {"seed": 1}
    raise AssertionError(change)


@pytest.mark.parametrize(
    ("change", "baseline_index", "expected"),
    [
        ("document text", "exact", {"corpus"}),
        ("document title", "exact", {"corpus"}),
        ("unjudged document id", "exact", {"corpus"}),
        ("query text", "exact", {"queries"}),
        ("stratum value", "exact", {"queries"}),
        ("query order", "exact", {"queries"}),
        ("grade", "exact", {"qrels"}),
        ("extra judgment", "exact", {"qrels"}),
        ("hnsw M", "hnsw", {"index", "plan"}),
        ("hnsw ef_search", "hnsw", {"index", "plan"}),
        ("tie margin", "exact", {"plan"}),
        ("relevance level", "exact", {"plan"}),
        ("seed", "exact", {"plan"}),
        ("seed", "hnsw", {"index", "plan"}),
    ],
)
def test_each_component_changes_with_its_input_only(
    change: str, baseline_index: str, expected: set[str]
) -> None:
    index = IndexSpec("hnsw") if baseline_index == "hnsw" else IndexSpec("exact")
    before = golden_control(make_golden(index=index))
    after = golden_control(make_golden(**{"index": index, **_changed(change)}))
    old, new = before.components(), after.components()
    assert {name for name in old if old[name] != new[name]} == expected
    assert before.fingerprint != after.fingerprint


def test_ef_below_the_depth_is_held_constant_as_the_ef_searched_with() -> None:
    low = golden_control(make_golden(index=IndexSpec("hnsw", ef_search=20)))
    at_depth = golden_control(make_golden(index=IndexSpec("hnsw", ef_search=100)))
    assert low.index == at_depth.index
    assert low.plan != at_depth.plan


def test_depth_is_a_component(monkeypatch: pytest.MonkeyPatch) -> None:
    before = golden_control(make_golden()).components()
    monkeypatch.setattr(pipeline, "RANKED_DEPTH", 50)
    after = golden_control(make_golden()).components()
    assert {name for name in before if before[name] != after[name]} == {"depth"}


def test_each_arm_records_what_it_consumed() -> None:
    for index in (IndexSpec("exact"), IndexSpec("hnsw", M=8, ef_construction=50, ef_search=150)):
        golden = make_golden(index=index)
        result = run_arm(golden, hash_arm(), "incumbent")
        assert result.control == golden_control(golden)


def test_arms_run_on_different_corpora_are_refused_naming_the_corpus() -> None:
    golden = make_golden()
    stale = make_golden(**_changed("document text"))
    incumbent = run_arm(golden, hash_arm(), "incumbent").control
    candidate = run_arm(stale, hash_arm(), "candidate").control
    expected = golden_control(golden)
    differences = control_differences(expected, incumbent, candidate)
    assert differences == (
        f"corpus (incumbent {short_digest(expected.corpus)}, candidate {short_digest(candidate.corpus)}; "
        f"golden set {short_digest(expected.corpus)})",
    )
    with pytest.raises(ControlMismatch) as raised:
        check_control(expected, incumbent, candidate)
    assert str(raised.value) == (
        "refusing to compare: the arms differ in what must be held constant: " + differences[0]
    )
    assert re.search(
        r"corpus \(incumbent sha256:[0-9a-f]{12}…, candidate sha256:[0-9a-f]{12}…", differences[0]
    )


def test_arms_searched_with_different_index_parameters_are_refused_naming_each_component() -> None:
    golden = make_golden(index=IndexSpec("hnsw", M=16))
    incumbent = run_arm(golden, hash_arm(), "incumbent").control
    candidate = run_arm(make_golden(index=IndexSpec("hnsw", M=8)), hash_arm(), "candidate").control
    with pytest.raises(ControlMismatch) as raised:
        check_control(golden_control(golden), incumbent, candidate)
    assert [d.split(" ")[0] for d in raised.value.differences] == ["index", "plan"]
    assert "held constant: index (incumbent sha256:" in str(raised.value)
    assert "; plan (incumbent sha256:" in str(raised.value)


def test_an_arm_agreeing_with_the_other_but_not_the_golden_set_is_refused() -> None:
    golden = make_golden()
    other = run_arm(make_golden(tie_margin=0.1), hash_arm(), "incumbent").control
    assert [d.split(" ")[0] for d in control_differences(golden_control(golden), other, other)] == ["plan"]


def test_run_golden_checks_both_arms(monkeypatch: pytest.MonkeyPatch) -> None:
    golden = make_golden()
    run = run_golden(golden, hash_arm("a"), hash_arm("b"))
    assert run.control == run.incumbent.control == run.candidate.control == golden_control(golden)

    original = golden_run.run_arm

    def drifting(golden: GoldenSet, arm: Arm, role: pipeline.Role, **kwargs: Any) -> pipeline.ArmResult:
        if role == "candidate":  # as if the candidate had embedded an older corpus snapshot
            golden = dataclasses.replace(golden, documents=golden.documents[:-1])
        return original(golden, arm, role, **kwargs)

    monkeypatch.setattr(golden_run, "run_arm", drifting)
    # Deeper than the corpus: the depth is every document, so the candidate's shorter corpus shows twice.
    monkeypatch.setattr(pipeline, "RANKED_DEPTH", 1000)
    with pytest.raises(ControlMismatch, match=r"held constant: corpus \(.*\); depth \("):
        run_golden(golden, hash_arm("a"), hash_arm("b"))


def test_control_mismatch_survives_pickling() -> None:
    error = ControlMismatch(["corpus (a, b; c)", "depth (d, e; f)"])
    copy = pickle.loads(pickle.dumps(error))
    assert copy.differences == error.differences
    assert str(copy) == str(error)


# --------------------------------------------------------------------------------------------- index stats


def test_exact_arm_reports_its_vector_memory() -> None:
    stats = run_arm(make_golden(), hash_arm(), "incumbent").index
    assert stats.kind == "exact" and stats.hnsw is None
    assert stats.dimension == DIMENSIONS
    assert stats.memory_bytes == DOCUMENTS * DIMENSIONS * 4


def test_hnsw_arm_is_built_as_declared_and_measured() -> None:
    golden = make_golden(index=IndexSpec("hnsw", M=12, ef_construction=64, ef_search=150))
    stats = run_arm(golden, hash_arm(), "incumbent").index
    assert stats.kind == "hnsw" and stats.hnsw is not None
    assert stats.hnsw.parameters == {"M": 12, "ef_construction": 64, "ef": 150, "seed": 0}
    assert stats.hnsw.ann_recall == pytest.approx(1.0, abs=0.01)
    assert stats.hnsw.sample == QUERIES
    assert stats.memory_bytes > DOCUMENTS * DIMENSIONS * 4  # the vectors and the graph
    for latency in (stats.hnsw.latency, stats.hnsw.exact_latency):
        assert 0 < latency.p50_ms <= latency.p95_ms


@pytest.mark.parametrize("sampled", [QUERIES, QUERIES - 3])
def test_the_recall_measurement_reuses_the_search_of_the_scores(
    monkeypatch: pytest.MonkeyPatch, sampled: int
) -> None:
    """The graph is searched once, for the ranking, and the recall is of that search's sampled rows (every
    query, or a draw of them) against exact search on the sample, which is run once too."""
    from pytest_embeval.arms import dense as retrievers
    from pytest_embeval.search import exact as exact_module
    from pytest_embeval.search import hnsw

    searches: list[int] = []
    exact: list[int] = []
    graph_search, exact_search = hnsw.HnswIndex.search, retrievers.exact_search

    def counted_search(self: hnsw.HnswIndex, queries: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        searches.append(queries.shape[0])
        return graph_search(self, queries, *args, **kwargs)

    def counted_exact(queries: np.ndarray, *args: Any, **kwargs: Any) -> Any:
        exact.append(queries.shape[0])
        return exact_search(queries, *args, **kwargs)

    monkeypatch.setattr(retrievers, "ANN_SAMPLE", sampled)
    golden = make_golden(index=IndexSpec("hnsw", M=4, ef_construction=8, ef_search=8))
    monkeypatch.setattr(hnsw.HnswIndex, "search", counted_search)
    monkeypatch.setattr(retrievers, "exact_search", counted_exact)
    stats = run_arm(golden, hash_arm(), "incumbent").index
    assert searches == [QUERIES] and exact == [sampled]
    sample = retrievers.ann_sample(QUERIES, golden.seed)
    monkeypatch.undo()
    # The same measurement by hand: a graph of its own searched on the sample alone.
    arm, doc_ids = hash_arm(), [doc.id for doc in golden.documents]
    documents = arm.encoder.encode_document([doc.embed_text for doc in golden.documents])
    queries = arm.encoder.encode_query([query.text for query in golden.queries])
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    depth = pipeline.ranked_depth(golden)
    graph = hnsw.HnswIndex(documents, doc_ids=doc_ids, M=4, ef_construction=8, seed=golden.seed)
    approximate, _ = graph.search(queries[sample], depth, ef_search=8)
    truth, _ = exact_module.exact_search(queries[sample], documents, depth, doc_ids=doc_ids)
    assert stats.hnsw is not None and stats.hnsw.sample == sampled
    assert stats.hnsw.ann_recall == hnsw.ann_recall(approximate, truth)


def test_hnsw_arms_are_reproducible() -> None:
    golden = make_golden(index=IndexSpec("hnsw", M=4, ef_construction=8, ef_search=8))
    first = run_arm(golden, hash_arm(), "incumbent")
    second = run_arm(golden, hash_arm(), "candidate")
    assert first.ranked == second.ranked
    assert first.index.memory_bytes == second.index.memory_bytes
    assert first.index.hnsw is not None and second.index.hnsw is not None
    assert first.index.hnsw.ann_recall == second.index.hnsw.ann_recall


def test_ann_sample_is_every_query_up_to_the_limit_then_a_seeded_draw() -> None:
    assert ann_sample(7, seed=0).tolist() == list(range(7))
    assert ann_sample(ANN_SAMPLE, seed=0).tolist() == list(range(ANN_SAMPLE))
    drawn = ann_sample(5000, seed=0)
    assert drawn.size == ANN_SAMPLE
    assert np.all(np.diff(drawn) > 0) and drawn[0] >= 0 and drawn[-1] < 5000
    np.testing.assert_array_equal(drawn, ann_sample(5000, seed=0))
    assert not np.array_equal(drawn, ann_sample(5000, seed=1))
