"""exact_search / hnsw_search: the ranking trec_eval would produce, whatever the block sizes."""

from __future__ import annotations

import pickle
import re
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pytest_embeval.core.capacity import Latency
from pytest_embeval.search.exact import equal_scores, exact_search, tie_ranks
from pytest_embeval.search.hnsw import (
    HnswIndex,
    TargetNotReached,
    ann_recall,
    effective_ef,
    flat_query_seconds,
    hnsw_search,
    smallest_ef,
)


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def reference(
    queries: np.ndarray, documents: np.ndarray, k: int, doc_ids: list[str]
) -> tuple[np.ndarray, ...]:
    """Brute force: the full score matrix (float64 rounded to float32, as documented), fully sorted."""
    scores = (queries.astype(np.float64) @ documents.astype(np.float64).T).astype(np.float32)
    id_rank = np.argsort(np.argsort(np.array(doc_ids)))  # plain ASCII ids: numpy's order is Python's
    positions = np.stack([np.lexsort((-id_rank, -row))[:k] for row in scores])
    return positions, np.take_along_axis(scores, positions, axis=1)


@pytest.fixture
def tied_data() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """300 documents, 40 queries; groups of identical documents, and queries equal to some documents so that
    tie groups sit at the top and straddle the cutoff k = 10."""
    rng = np.random.default_rng(7)
    documents = unit_rows(rng, 300, 24)
    documents[10:22] = documents[3]  # 13 identical documents
    documents[50:53] = documents[40]
    documents[200:204] = documents[199]
    queries = unit_rows(rng, 40, 24)
    queries[0] = documents[3]  # the 13-way tie is the whole top 10 and more
    queries[1] = documents[40]
    queries[2] = -documents[3]  # the tie group is last
    queries[3] = documents[199]
    doc_ids = [f"doc-{i:04d}" for i in rng.permutation(300)]  # id order unrelated to row order
    return queries, documents, doc_ids


@pytest.mark.parametrize("k", [1, 2, 10, 13, 14, 299, 300])
def test_exact_search_matches_brute_force(
    tied_data: tuple[np.ndarray, np.ndarray, list[str]], k: int
) -> None:
    queries, documents, doc_ids = tied_data
    positions, scores = exact_search(queries, documents, k, doc_ids=doc_ids)
    expected_positions, expected_scores = reference(queries, documents, k, doc_ids)
    assert positions.dtype == np.int64 and scores.dtype == np.float32
    assert positions.shape == scores.shape == (40, k)
    np.testing.assert_array_equal(positions, expected_positions)
    np.testing.assert_array_equal(scores, expected_scores)


def test_ties_straddling_k_keep_the_largest_ids(tied_data: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    queries, documents, doc_ids = tied_data
    positions, scores = exact_search(queries[:1], documents, 10, doc_ids=doc_ids)
    group = [3, *range(10, 22)]
    assert np.all(scores[0] == scores[0, 0])
    assert [doc_ids[p] for p in positions[0]] == sorted((doc_ids[p] for p in group), reverse=True)[:10]


def test_equal_scores_rank_the_larger_id_first_by_string_comparison() -> None:
    # As strings, "d9" > "d2" > "d11" > "d10" > "d1": not the numeric order.
    doc_ids = ["d1", "d2", "d9", "d10", "d11"]
    documents = np.tile(np.array([[0.6, 0.8]], dtype=np.float32), (5, 1))
    positions, scores = exact_search(np.array([[1.0, 0.0]], dtype=np.float32), documents, 5, doc_ids=doc_ids)
    assert [doc_ids[p] for p in positions[0]] == ["d9", "d2", "d11", "d10", "d1"]
    assert scores[0].tolist() == [pytest.approx(0.6)] * 5


def test_tie_rule_agrees_with_trec_eval(tied_data: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    """pytrec_eval ranks the whole run by score alone; each of our top documents must be at our rank."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    queries, documents, doc_ids = tied_data
    k = 20
    scores = (queries.astype(np.float64) @ documents.astype(np.float64).T).astype(np.float32)
    for query in range(4):  # the queries with tie groups
        positions, _ = exact_search(queries[query : query + 1], documents, k, doc_ids=doc_ids)
        run = {"q": {doc_id: float(score) for doc_id, score in zip(doc_ids, scores[query], strict=True)}}
        for rank, position in enumerate(positions[0], start=1):
            evaluator = pytrec_eval.RelevanceEvaluator({"q": {doc_ids[position]: 1}}, {"recip_rank"})
            assert evaluator.evaluate(run)["q"]["recip_rank"] == pytest.approx(1 / rank), (query, rank)


@pytest.mark.parametrize("block_size", [1, 2, 7, 64, 299, 300, 5000])
@pytest.mark.parametrize("query_block_size", [None, 1, 3])
def test_block_sizes_do_not_change_the_result(
    tied_data: tuple[np.ndarray, np.ndarray, list[str]], block_size: int, query_block_size: int | None
) -> None:
    queries, documents, doc_ids = tied_data
    unblocked = exact_search(
        queries, documents, 15, doc_ids=doc_ids, block_size=10**6, query_block_size=10**6
    )
    blocked = exact_search(
        queries, documents, 15, doc_ids=doc_ids, block_size=block_size, query_block_size=query_block_size
    )
    np.testing.assert_array_equal(blocked[0], unblocked[0])
    np.testing.assert_array_equal(blocked[1], unblocked[1])


def test_a_query_scores_the_same_alone_and_in_a_batch(
    tied_data: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    # A float32 product of one row takes another BLAS path than a matrix product; scores must not move.
    queries, documents, doc_ids = tied_data
    together = exact_search(queries, documents, 30, doc_ids=doc_ids)
    for i in range(0, 40, 7):
        alone = exact_search(queries[i : i + 1], documents, 30, doc_ids=doc_ids)
        np.testing.assert_array_equal(alone[0][0], together[0][i])
        np.testing.assert_array_equal(alone[1][0], together[1][i])


def test_k_larger_than_the_corpus_returns_every_document() -> None:
    rng = np.random.default_rng(1)
    documents = unit_rows(rng, 6, 4)
    positions, scores = exact_search(unit_rows(rng, 3, 4), documents, 50, doc_ids=[f"d{i}" for i in range(6)])
    assert positions.shape == scores.shape == (3, 6)
    assert all(sorted(row) == list(range(6)) for row in positions.tolist())
    assert np.all(np.diff(scores, axis=1) <= 0)


def test_empty_corpus_and_empty_query_set() -> None:
    positions, scores = exact_search(np.ones((2, 3)), np.empty((0, 3)), 5, doc_ids=[])
    assert positions.shape == scores.shape == (2, 0)
    positions, scores = exact_search(np.empty((0, 3)), np.ones((4, 3)), 5, doc_ids=list("abcd"))
    assert positions.shape == scores.shape == (0, 4)
    assert positions.dtype == np.int64 and scores.dtype == np.float32


def test_negative_zero_ties_with_zero() -> None:
    # trec_eval reads -0 and 0 as the same score, so only the ids may order them.
    documents = np.array([[-0.0], [0.0], [-0.0]], dtype=np.float32)
    positions, scores = exact_search(np.array([[1.0]]), documents, 3, doc_ids=["b", "c", "a"])
    assert positions[0].tolist() == [1, 0, 2]
    assert scores[0].tolist() == [0.0, 0.0, 0.0]


def test_tie_ranks_follow_python_string_order() -> None:
    doc_ids = ["b", "a", "é", "Z", "a0", ""]
    ranks = tie_ranks(doc_ids)
    assert [doc_ids[i] for i in np.argsort(ranks)] == sorted(doc_ids)


@pytest.mark.parametrize(
    ("queries", "documents", "k", "doc_ids", "message"),
    [
        (
            np.ones(3),
            np.ones((2, 3)),
            1,
            ["a", "b"],
            "queries must be a 2-D array (rows x dimension), got shape (3,)",
        ),
        (np.ones((1, 3)), np.ones((2, 3, 1)), 1, ["a", "b"], "documents must be a 2-D array"),
        (
            np.ones((1, 4)),
            np.ones((2, 3)),
            1,
            ["a", "b"],
            "queries have dimension 4 but documents have dimension 3",
        ),
        (np.ones((1, 3)), np.ones((2, 3)), 0, ["a", "b"], "k must be an integer >= 1, got 0"),
        (np.ones((1, 3)), np.ones((2, 3)), 2.0, ["a", "b"], "k must be an integer >= 1, got 2.0"),
        (np.ones((1, 3)), np.ones((2, 3)), 1, ["a"], "doc_ids has 1 ids but documents has 2 rows"),
        (
            np.ones((1, 3)),
            np.ones((2, 3)),
            1,
            ["a", "a"],
            "doc_ids must be unique: 'a' appears more than once",
        ),
        (np.ones((1, 3)), np.ones((2, 3)), 1, ["a", 7], "doc_ids[1] is int, not str: 7"),
        (np.array([["x"]]), np.ones((2, 1)), 1, ["a", "b"], "queries must hold real numbers, got dtype <U1"),
        (
            np.ones((1, 3)),
            np.array([[1, 2, 3], [1, np.nan, 0]]),
            1,
            ["a", "b"],
            "documents contain NaN or inf (first in row 1)",
        ),
    ],
)
def test_exact_search_validates_inputs(
    queries: np.ndarray, documents: np.ndarray, k: int, doc_ids: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        exact_search(queries, documents, k, doc_ids=doc_ids)


def test_block_size_is_validated() -> None:
    with pytest.raises(ValueError, match=re.escape("block_size must be an integer >= 1, got 0")):
        exact_search(np.ones((1, 2)), np.ones((2, 2)), 1, doc_ids=["a", "b"], block_size=0)


@pytest.fixture
def corpus() -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(3)
    documents = unit_rows(rng, 2000, 32)
    documents[100:104] = documents[99]
    queries = unit_rows(rng, 60, 32)
    queries[0] = documents[99]
    return queries, documents, [f"p{i:05d}" for i in range(2000)]


def test_hnsw_recall_against_exact(corpus: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    queries, documents, doc_ids = corpus
    exact_positions, exact_scores = exact_search(queries, documents, 10, doc_ids=doc_ids)
    positions, scores = hnsw_search(queries, documents, 10, doc_ids=doc_ids)
    assert positions.shape == scores.shape == (60, 10)
    assert positions.dtype == np.int64 and scores.dtype == np.float32
    recall = np.mean(
        [len(set(a) & set(b)) / 10 for a, b in zip(positions.tolist(), exact_positions.tolist(), strict=True)]
    )
    assert recall >= 0.98
    # Same pair, same score; and the tie group at the top is ordered by id like exact_search orders it.
    exact = {
        (i, p): s
        for i, row in enumerate(exact_positions.tolist())
        for p, s in zip(row, exact_scores[i], strict=True)
    }
    assert all(
        exact.get((i, p), s) == s
        for i, row in enumerate(positions.tolist())
        for p, s in zip(row, scores[i], strict=True)
    )
    np.testing.assert_array_equal(positions[0, :5], exact_positions[0, :5])


def test_hnsw_results_are_ranked_by_the_tie_rule(corpus: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    queries, documents, doc_ids = corpus
    positions, scores = hnsw_search(queries, documents, 25, doc_ids=doc_ids)
    for row_positions, row_scores in zip(positions.tolist(), scores.tolist(), strict=True):
        keys = [(score, doc_ids[p]) for p, score in zip(row_positions, row_scores, strict=True)]
        assert keys == sorted(keys, reverse=True)


def test_hnsw_rescoring_scores_each_pair_as_exact_search_does(
    corpus: tuple[np.ndarray, np.ndarray, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corpus within the scratch memory is rescored by one matmul, a larger one by gathering each
    candidate's vector: both give every pair the score exact search gives it."""
    queries, documents, doc_ids = corpus
    exact_positions, exact_scores = exact_search(queries, documents, 25, doc_ids=doc_ids)
    index = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50)
    by_matmul = index.search(queries, 25, ef_search=60)
    monkeypatch.setattr("pytest_embeval.search.exact.SCRATCH_BYTES", 1)  # every corpus is larger than that
    by_gathering = index.search(queries, 25, ef_search=60)
    for positions, scores in (by_matmul, by_gathering):
        np.testing.assert_array_equal(positions, by_matmul[0])
        for row in range(len(queries)):
            exact = dict(zip(exact_positions[row].tolist(), exact_scores[row].tolist(), strict=True))
            shared = [
                (exact[p], s)
                for p, s in zip(positions[row].tolist(), scores[row].tolist(), strict=True)
                if p in exact
            ]
            assert shared and all(a == b for a, b in shared)


def test_hnsw_is_deterministic_across_builds(corpus: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    queries, documents, doc_ids = corpus
    first = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50, seed=5).search(
        queries, 10, ef_search=20
    )
    second = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50, seed=5).search(
        queries, 10, ef_search=20
    )
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def test_hnsw_small_and_empty_corpora() -> None:
    positions, scores = hnsw_search(np.ones((2, 3)), np.empty((0, 3)), 5, doc_ids=[])
    assert positions.shape == scores.shape == (2, 0)
    rng = np.random.default_rng(0)
    documents = unit_rows(rng, 3, 4)
    positions, _ = hnsw_search(unit_rows(rng, 2, 4), documents, 10, doc_ids=["a", "b", "c"], ef_search=1)
    assert positions.shape == (2, 3)
    assert all(sorted(row) == [0, 1, 2] for row in positions.tolist())


def test_hnsw_that_cannot_reach_k_documents_says_so() -> None:
    # Orthogonal vectors: every similarity is 0, so hnswlib's neighbour pruning disconnects the graph.
    documents = np.eye(60, 128, dtype=np.float32)
    index = HnswIndex(documents, doc_ids=[f"d{i}" for i in range(60)], M=8, ef_construction=40)
    with pytest.raises(
        ValueError, match=r"reached fewer than k=60 documents .*M=8, ef_construction=40, ef=60"
    ):
        index.search(documents[:5], 60, ef_search=16)


def test_hnsw_validates_inputs() -> None:
    with pytest.raises(ValueError, match=re.escape("doc_ids must be unique: 'a' appears more than once")):
        hnsw_search(np.ones((1, 2)), np.ones((2, 2)), 1, doc_ids=["a", "a"])
    with pytest.raises(ValueError, match=re.escape("M must be an integer >= 1, got 0")):
        HnswIndex(np.ones((2, 2)), doc_ids=["a", "b"], M=0)
    with pytest.raises(
        ValueError, match=re.escape("queries have dimension 3 but documents have dimension 2")
    ):
        hnsw_search(np.ones((1, 3)), np.ones((2, 2)), 1, doc_ids=["a", "b"])


def test_hnsw_index_reports_the_declared_parameters(corpus: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    queries, documents, doc_ids = corpus
    index = HnswIndex(documents, doc_ids=doc_ids, M=12, ef_construction=64, seed=3)
    index.search(queries, 10, ef_search=40)
    assert index.parameters() == {"M": 12, "ef_construction": 64, "ef": 40, "seed": 3}
    # hnswlib needs a candidate list at least as long as k.
    index.search(queries, 50, ef_search=20)
    assert index.parameters()["ef"] == effective_ef(20, 50) == 50


def test_hnsw_memory_is_the_size_of_the_saved_index(
    corpus: tuple[np.ndarray, np.ndarray, list[str]], tmp_path: Path
) -> None:
    """An hnswlib index built independently with the same parameters and seed saves to exactly
    memory_bytes: our build is the declared one, and memory_bytes is hnswlib's own count."""
    import hnswlib

    _, documents, doc_ids = corpus
    index = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50, seed=5)
    reference = hnswlib.Index(space="ip", dim=documents.shape[1])
    reference.init_index(max_elements=len(documents), ef_construction=50, M=8, random_seed=5)
    reference.add_items(documents, np.arange(len(documents)), num_threads=1)
    reference.save_index(str(tmp_path / "reference.bin"))
    assert index.memory_bytes() == (tmp_path / "reference.bin").stat().st_size
    # Per document: the float32 vector, an 8-byte label, level-0 links (a count and 2·M neighbours).
    assert index.memory_bytes() >= len(documents) * (documents.shape[1] * 4 + 8 + 4 + 2 * 8 * 4)
    again = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50, seed=5)
    assert again.memory_bytes() == index.memory_bytes()


def test_query_timings_are_one_positive_duration_per_query(
    corpus: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    queries, documents, doc_ids = corpus
    index = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50)
    approximate = index.query_seconds(queries[:7], 10, ef_search=30)
    exact = flat_query_seconds(queries[:7], documents, 10)
    assert approximate.shape == exact.shape == (7,)
    assert np.all(approximate > 0) and np.all(exact > 0)
    assert index.parameters()["ef"] == 30  # timed at the ef searched with


def test_latency_percentiles() -> None:
    latency = Latency.of(np.arange(1, 21) / 1000)  # 1..20 ms
    assert latency.p50_ms == pytest.approx(10.5)
    assert latency.p95_ms == pytest.approx(19.05)  # linear interpolation, numpy's default
    with pytest.raises(ValueError, match="no timings"):
        Latency.of(np.array([]))


def test_ann_recall_is_the_share_of_the_exact_top_k_found() -> None:
    exact = np.array([[3, 2, 1], [4, 9, 8]])
    assert ann_recall(np.array([[1, 2, 3], [4, 5, 6]]), exact) == pytest.approx((3 / 3 + 1 / 3) / 2)
    assert ann_recall(exact, exact) == 1.0
    # Padding (-1: fewer documents allowed) never counts as found; a query with no exact result is left out.
    padded = np.array([[5, -1, -1], [-1, -1, -1], [7, 6, -1]])
    assert ann_recall(np.array([[-1, 5, -1], [-1, -1, -1], [6, -1, -1]]), padded) == pytest.approx(0.75)
    assert np.isnan(ann_recall(np.full((2, 3), -1), np.full((2, 3), -1)))
    with pytest.raises(ValueError, match=re.escape("same 2-D shape, got (2, 2) and (2, 3)")):
        ann_recall(np.ones((2, 2)), exact)
    with pytest.raises(ValueError, match=re.escape("at least one query and k >= 1, got shape (0, 3)")):
        ann_recall(np.ones((0, 3)), np.ones((0, 3)))


def test_ann_recall_agrees_with_set_intersection() -> None:
    rng = np.random.default_rng(5)
    rows = [rng.choice(60, size=20, replace=False) for _ in range(400)]
    approximate = np.array([np.where(rng.random(20) < 0.2, -1, row) for row in rows])
    exact = np.array([rng.choice(60, size=20, replace=False) for _ in range(400)])
    exact[::7, 15:] = -1
    shares = [
        len(set(x[x >= 0]) & set(y[y >= 0])) / (y >= 0).sum() for x, y in zip(approximate, exact, strict=True)
    ]
    assert ann_recall(approximate, exact) == pytest.approx(np.mean(shares), abs=1e-12)


def _peak_bytes(queries: np.ndarray, documents: np.ndarray, k: int, **blocks: int) -> int:
    doc_ids = [f"d{i}" for i in range(len(documents))]
    tracemalloc.start()
    try:
        exact_search(queries, documents, k, doc_ids=doc_ids, **blocks)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_exact_search_memory_follows_the_blocks_not_the_corpus() -> None:
    rng = np.random.default_rng(11)
    queries = rng.random((500, 16), dtype=np.float32)
    small = _peak_bytes(queries, rng.random((5_000, 16), dtype=np.float32), 10, block_size=500)
    large = _peak_bytes(queries, rng.random((40_000, 16), dtype=np.float32), 10, block_size=500)
    # The full 500 x 40,000 score matrix alone would be 80 MB in float64.
    assert large < 16 * 2**20
    # 35,000 more documents cost only their tie ranks: well under 64 bytes each.
    assert large - small < 35_000 * 64


def test_exact_search_memory_does_not_grow_with_the_query_blocks() -> None:
    """Each query block's running top k is kept in an array of its own, not as a slice of that block's
    partitioned scores (which held a whole (block x document block) array per query block until the
    document block ended: 100 MB at 1,500 x 200,000)."""
    rng = np.random.default_rng(12)
    documents = rng.random((8_192, 8), dtype=np.float32)
    few = _peak_bytes(rng.random((200, 8), dtype=np.float32), documents, 10, query_block_size=100)
    many = _peak_bytes(rng.random((2_000, 8), dtype=np.float32), documents, 10, query_block_size=100)
    # 1,800 more queries cost their top 10 keys and scores (well under 1 MB), not 18 x 6.5 MB.
    assert many - few < 2**20


@pytest.mark.slow
def test_exact_search_of_200k_documents_stays_within_bounded_memory() -> None:
    """200,000 x 384 documents, 1,000 queries, default blocks: the 1,000 x 200,000 score matrix would be
    763 MiB in float32; the blocked search peaks at ~155 MiB of scratch (the documents themselves are the
    caller's and allocated before tracing starts). About 10 s on one core."""
    rng = np.random.default_rng(12)
    documents = rng.random((200_000, 384), dtype=np.float32) - 0.5
    queries = rng.random((1_000, 384), dtype=np.float32) - 0.5
    started = time.perf_counter()
    peak = _peak_bytes(queries, documents, 100)
    assert peak < 256 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    print(
        f"exact search 200k x 384, 1k queries: {time.perf_counter() - started:.1f} s, {peak / 2**20:.0f} MiB"
    )


# ------------------------------------------------------------------------------------- equal_scores


def test_equal_scores_finds_every_document_of_a_tie_group_in_any_block() -> None:
    # Six copies of one vector among other vectors: whatever the block size, all six tie with each other,
    # and exact_search's top 3 lists only the three with the largest ids.
    gen = np.random.default_rng(3)
    documents = gen.standard_normal((50, 8)).astype(np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    copies = [4, 11, 12, 30, 41, 49]
    documents[copies] = documents[4]
    query = documents[4:5] + np.float32(0.01)
    doc_ids = [f"d{i:02d}" for i in range(50)]
    positions, scores = exact_search(query, documents, 3, doc_ids=doc_ids)
    assert positions[0].tolist() == [49, 41, 30]
    for block_size in (1, 7, 50, 8192):
        found = equal_scores(query, documents, scores[:, -1], block_size=block_size)
        assert [group.tolist() for group in found] == [copies]


def test_equal_scores_per_query_and_none_found() -> None:
    documents = np.eye(4, dtype=np.float32)
    queries = np.array([[1, 1, 0, 0], [0, 0, 1, 0]], dtype=np.float32)
    found = equal_scores(queries, documents, np.array([1.0, 0.5]))
    assert [group.tolist() for group in found] == [[0, 1], []]
    with pytest.raises(ValueError, match=r"^targets must hold one score per query \(2\), got shape \(3,\)$"):
        equal_scores(queries, documents, np.zeros(3))


# --------------------------------------------------------------------------------- the ef of a recall target


def test_smallest_ef_finds_the_first_ef_reaching_the_target_in_few_evaluations() -> None:
    asked: list[int] = []

    def recall_at(ef: int) -> float:
        asked.append(ef)
        return min(1.0, ef / 400)

    assert smallest_ef(recall_at, 0.5, low=10, high=5000) == (200, 0.5)
    # Doubling 10, 20, ..., 320 (6 evaluations), then bisecting the 160 between 160 and 320 (8): no repeats.
    assert len(asked) == len(set(asked)) == 6 + 8
    assert smallest_ef(recall_at, 0.01, low=10, high=5000) == (10, 10 / 400)
    assert smallest_ef(recall_at, 1.0, low=10, high=400) == (400, 1.0)


def test_smallest_ef_that_cannot_reach_the_target_says_how_far_it_got() -> None:
    with pytest.raises(TargetNotReached) as info:
        smallest_ef(lambda ef: 0.9 if ef >= 64 else 0.5, 0.95, low=8, high=100)
    assert (info.value.target, info.value.recall, info.value.ef) == (0.95, 0.9, 100)
    assert str(info.value) == "ANN recall 0.9000 at the largest ef 100 is below the target 0.95"
    assert pickle.loads(pickle.dumps(info.value)).ef == 100


@pytest.mark.parametrize(
    ("target", "low", "high", "message"),
    [
        (0.0, 1, 2, "target must be in (0, 1], got 0.0"),
        (1.5, 1, 2, "target must be in (0, 1], got 1.5"),
        (0.9, 0, 2, "need 1 <= low <= high, got low=0, high=2"),
        (0.9, 5, 2, "need 1 <= low <= high, got low=5, high=2"),
    ],
)
def test_smallest_ef_validates(target: float, low: int, high: int, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        smallest_ef(lambda ef: 1.0, target, low=low, high=high)


def intrinsic(rng: np.random.Generator, n: int, dim: int, rank: int) -> np.ndarray:
    """Unit vectors in ``dim`` dimensions that span only ``rank`` of them: an intrinsic dimension of rank."""
    basis = np.linalg.qr(rng.standard_normal((dim, dim)))[0][:rank]
    return _unit(rng.standard_normal((n, rank)) @ basis)


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return unit


@pytest.mark.parametrize("target", [0.9, 0.95, 0.99])
def test_vectors_of_higher_intrinsic_dimension_need_a_larger_ef_for_the_same_recall(target: float) -> None:
    """On a sparse graph (M=8), 2,000 documents spanning 3 of 64 dimensions reach any recall@10 at the least
    ef there is (k); spanning all 64, they need several times more. The ef found reaches the target, and one
    less does not."""
    needed = {}
    for rank in (3, 64):
        vectors = intrinsic(np.random.default_rng(rank), 2100, 64, rank)
        documents, queries = vectors[:2000], vectors[2000:]
        doc_ids = [f"d{i:04d}" for i in range(2000)]
        index = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=40)
        exact, _ = exact_search(queries, documents, 10, doc_ids=doc_ids)
        ef, recall = index.ef_for_recall(queries, exact, target)
        assert recall >= target
        assert recall == ann_recall(index.search(queries, 10, ef_search=ef)[0], exact)
        if ef > 10:
            assert ann_recall(index.search(queries, 10, ef_search=ef - 1)[0], exact) < target
        needed[rank] = ef
    assert needed[3] == 10
    assert needed[64] > 4 * needed[3]


def test_a_recall_target_above_what_the_whole_graph_reaches_is_refused() -> None:
    """Documents tied with the k-th score count as misses when the id rule ranks them below it, so a target of
    1 can be out of reach at any ef: the search stops at the corpus size."""
    documents = np.tile(_unit(np.random.default_rng(1).standard_normal((1, 8))), (30, 1))
    documents[::2] *= -1
    doc_ids = [f"d{i:02d}" for i in range(30)]
    queries = documents[:3].copy()
    index = HnswIndex(documents, doc_ids=doc_ids, M=4, ef_construction=10)
    exact, _ = exact_search(queries, documents, 5, doc_ids=doc_ids)
    with pytest.raises(TargetNotReached) as info:
        index.ef_for_recall(queries, exact, 1.0)
    assert info.value.ef == 30
    assert info.value.recall < 1.0
