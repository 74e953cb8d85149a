"""Exact search at float32 speed gives the float64 search's result bit for bit (`search.exact`).

Every case compares `exact_search` (the float32 shortlist, its error bound and the float64 rescoring) with
`float64_search` (every pair scored in float64) and with a brute-force oracle of their definition (the full
float64 score matrix rounded to float32, ranked by score descending and tie rank descending), positions and
score bits alike, over seeded random and adversarial inputs: exact ties, near-ties within 1e-7, duplicated
vectors, zero vectors, vectors of very different norms, filters, and k beyond the allowed documents.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_embeval.golden.filters import Allowed
from pytest_embeval.search import exact
from pytest_embeval.search.exact import exact_search, float64_search, ranking_keys, tie_ranks
from pytest_embeval.search.float32_bounds import float32_bound, row_norms


def oracle(
    queries: np.ndarray, documents: np.ndarray, k: int, doc_ids: list[str], masks: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The definition: every score at once (float64 products rounded to float32), sorted per query."""
    scores = (queries.astype(np.float64) @ documents.astype(np.float64).T).astype(np.float32)
    ranks = tie_ranks(doc_ids)
    k_eff = min(k, documents.shape[0])
    positions = np.full((queries.shape[0], k_eff), -1, dtype=np.int64)
    values = np.full((queries.shape[0], k_eff), np.nan, dtype=np.float32)
    for row in range(queries.shape[0]):
        allowed = np.flatnonzero(masks[row]) if masks is not None else np.arange(documents.shape[0])
        # +0.0 makes -0.0 equal to 0.0, as trec_eval compares them
        row_scores = scores[row, allowed] + np.float32(0.0)
        order = np.lexsort((-ranks[allowed], -row_scores))[:k_eff]
        positions[row, : order.size] = allowed[order]
        values[row, : order.size] = row_scores[order]
    return positions, values


def assert_same(left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray]) -> None:
    np.testing.assert_array_equal(left[0], right[0])
    assert left[1].dtype == right[1].dtype == np.float32
    # bit for bit, NaN padding included
    assert left[1].tobytes() == right[1].tobytes()


def normalised(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1, norms)


def adversarial_case(rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(queries, documents) of one adversarial kind, float32 unless the kind says otherwise."""
    n_docs, dim = int(rng.integers(1, 400)), int(rng.choice([1, 2, 3, 8, 33, 128]))
    n_queries = int(rng.integers(1, 30))
    gaussian = normalised(rng.standard_normal((n_docs, dim))).astype(np.float32)
    queries = normalised(rng.standard_normal((n_queries, dim))).astype(np.float32)
    if kind == "random":
        return queries, gaussian
    if kind == "duplicated":  # a few distinct vectors, each many times: exact ties everywhere
        distinct = gaussian[: max(1, n_docs // 20)]
        return queries, distinct[rng.integers(0, distinct.shape[0], n_docs)]
    if kind == "quantised":  # values in {-1, 0, 1}: few distinct scores, many ties across every cutoff
        documents = rng.integers(-1, 2, (n_docs, dim)).astype(np.float32)
        return rng.integers(-1, 2, (n_queries, dim)).astype(np.float32), documents
    if kind == "near-ties":  # copies of one vector moved by ~1e-8: scores within 1e-7 of each other
        base = gaussian[:1] + rng.standard_normal((n_docs, dim)).astype(np.float32) * np.float32(1e-8)
        queries[: n_queries // 2] = base[rng.integers(0, n_docs, n_queries // 2)]
        return queries, base.astype(np.float32)
    if kind == "zeros":  # zero documents and zero queries among ordinary ones
        documents = gaussian.copy()
        documents[rng.random(n_docs) < 0.4] = 0.0
        queries[rng.random(n_queries) < 0.3] = 0.0
        return queries, documents
    if kind == "norms":  # not normalised: norms spread over twelve orders of magnitude
        scale = 10.0 ** rng.uniform(-6, 6, (n_docs, 1))
        return queries * np.float32(1e3), (gaussian * scale).astype(np.float32)
    if kind == "float64":  # values float32 cannot hold exactly
        return queries.astype(np.float64) / 3, normalised(rng.standard_normal((n_docs, dim)))
    if kind == "float16":
        return queries.astype(np.float16), gaussian.astype(np.float16)
    if kind == "integers":
        return rng.integers(-3, 4, (n_queries, dim)), rng.integers(-3, 4, (n_docs, dim))
    if kind == "huge":  # beyond what float32 holds: searched in float64 alone
        return queries.astype(np.float64) * 1e16, gaussian.astype(np.float64)
    raise AssertionError(kind)


KINDS = (
    "random",
    "duplicated",
    "quantised",
    "near-ties",
    "zeros",
    "norms",
    "float64",
    "float16",
    "integers",
    "huge",
)


@pytest.mark.parametrize("kind", KINDS)
def test_float32_search_equals_the_float64_search_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng(list(map(ord, kind)))
    for _ in range(40):
        queries, documents = adversarial_case(rng, kind)
        n_docs = documents.shape[0]
        doc_ids = [f"d{i}" for i in rng.permutation(n_docs).tolist()]
        k = int(rng.integers(1, n_docs + 10))  # sometimes past the corpus
        masks = None
        allowed = None
        if rng.random() < 0.5:  # a filter; some queries allowed fewer than k documents, or none
            pool = rng.random((3, n_docs)) < rng.choice([0.02, 0.3, 0.9])
            rows = rng.integers(0, 3, queries.shape[0])
            allowed = Allowed(masks=pool, rows=rows)
            masks = pool[rows]
        block = int(rng.choice([1, 7, 64, 8192]))
        expected = oracle(queries, documents, k, doc_ids, masks)
        found = exact_search(queries, documents, k, doc_ids=doc_ids, block_size=block, allowed=allowed)
        assert_same(found, expected)
        assert_same(float64_search(queries, documents, k, doc_ids=doc_ids, allowed=allowed), expected)


def test_a_large_random_corpus_equals_the_float64_search_in_any_blocks() -> None:
    rng = np.random.default_rng(7)
    documents = normalised(rng.standard_normal((20_000, 64))).astype(np.float32)
    documents[5_000:5_400] = documents[:400]  # duplicates across document blocks
    queries = normalised(rng.standard_normal((300, 64))).astype(np.float32)
    queries[:20] = documents[:20]  # their own duplicates tie at the top
    doc_ids = [f"c{i:06d}" for i in range(documents.shape[0])]
    expected = float64_search(queries, documents, 100, doc_ids=doc_ids)
    for block, query_block in ((8192, None), (1000, 17), (20_000, 300)):
        found = exact_search(
            queries, documents, 100, doc_ids=doc_ids, block_size=block, query_block_size=query_block
        )
        assert_same(found, expected)


@pytest.mark.parametrize("order", ["ascending", "descending", "sparse-start"])
def test_the_scans_floor_keeps_every_shortlisted_document_in_any_corpus_order(order: str) -> None:
    """The scan makes keys only of pairs at or above a query's floor (its width-th best score so far): a
    corpus in ascending score order raises the floor in every block, a descending one settles it in the
    first, a filter allowing nothing in the first blocks leaves it unset until later; the results are the
    oracle's in every block size, with and without float64 products."""
    rng = np.random.default_rng(list(map(ord, order)))
    query = normalised(rng.standard_normal((1, 16))).astype(np.float32)
    documents = normalised(rng.standard_normal((3_000, 16))).astype(np.float32)
    documents[::7] = documents[1::7]  # ties straddling block edges
    scores = (documents.astype(np.float64) @ query[0].astype(np.float64)).astype(np.float32)
    documents = documents[np.argsort(scores if order == "ascending" else -scores, kind="stable")]
    queries = np.vstack([query, normalised(rng.standard_normal((4, 16))).astype(np.float32)])
    doc_ids = [f"d{i}" for i in rng.permutation(3_000).tolist()]
    allowed, masks = None, None
    if order == "sparse-start":
        pool = np.ones((2, 3_000), dtype=bool)
        pool[1, :2_000] = False
        pool[1, 2_000:] = rng.random(1_000) < 0.1
        rows = np.array([1, 0, 1, 0, 1])
        allowed, masks = Allowed(masks=pool, rows=rows), pool[rows]
    for k in (1, 40, 150):
        expected = oracle(queries, documents, k, doc_ids, masks)
        for block in (1, 50, 999, 8192):
            found = exact_search(queries, documents, k, doc_ids=doc_ids, block_size=block, allowed=allowed)
            assert_same(found, expected)
        assert_same(float64_search(queries, documents, k, doc_ids=doc_ids, allowed=allowed), expected)


def test_pairs_below_the_floor_are_never_made_into_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is the one taken: of a corpus in descending score order, after the first block's
    shortlist only the pairs tied with the floor become keys (not one key per pair, as a full scan makes)."""
    made: list[int] = []
    original = exact.ranking_keys

    def counting(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        made.append(np.asarray(scores).size)
        return original(scores, ranks)

    monkeypatch.setattr(exact, "ranking_keys", counting)
    rng = np.random.default_rng(11)
    query = normalised(rng.standard_normal((1, 32))).astype(np.float32)
    documents = normalised(rng.standard_normal((20_000, 32))).astype(np.float32)
    scores = (documents.astype(np.float64) @ query[0].astype(np.float64)).astype(np.float32)
    documents = documents[np.argsort(-scores, kind="stable")]
    doc_ids = [f"d{i:05d}" for i in range(20_000)]
    found = exact_search(query, documents, 10, doc_ids=doc_ids, block_size=1_000)
    assert_same(found, oracle(query, documents, 10, doc_ids, None))
    width = exact.shortlist_width(10, 20_000)
    # the first block's width pairs (and any tied with its floor), the rescored shortlist's width keys
    assert sum(made) <= 2 * width + 10, made


def test_most_queries_are_settled_by_the_float32_shortlist(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is the one taken: ordinary queries never reach the float64 scan, all-tied ones do."""
    searched: list[int] = []
    original = exact.float64_search

    def counting(queries: np.ndarray, *args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
        searched.append(queries.shape[0])
        return original(queries, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(exact, "float64_search", counting)
    rng = np.random.default_rng(3)
    documents = normalised(rng.standard_normal((5_000, 32))).astype(np.float32)
    queries = normalised(rng.standard_normal((50, 32))).astype(np.float32)
    queries[:3] = 0.0  # every document ties at 0 with these
    doc_ids = [f"d{i}" for i in range(5_000)]
    found = exact_search(queries, documents, 10, doc_ids=doc_ids)
    assert searched == [3]
    assert_same(found, oracle(queries, documents, 10, doc_ids, None))


def test_the_float32_error_bound_holds_where_cancellation_is_worst() -> None:
    """|float32 score - float64 search's score| <= B on pairs built to cancel: large equal and opposite
    terms, whose float32 sum loses every digit of the small exact result."""
    rng = np.random.default_rng(11)
    dim = 384
    for _ in range(20):
        big = rng.standard_normal(dim // 2).astype(np.float32)
        query = np.concatenate([big, big]).astype(np.float32)[None, :]
        signs = np.concatenate([np.ones(dim // 2), -np.ones(dim // 2)]).astype(np.float32)
        documents = query * signs + rng.standard_normal((50, dim)).astype(np.float32) * np.float32(1e-4)
        documents = documents.astype(np.float32)
        float32_scores = (query @ documents.T)[0].astype(np.float64)
        reference = (query.astype(np.float64) @ documents.astype(np.float64).T).astype(np.float32)[0]
        bound = float32_bound(row_norms(query), float(row_norms(documents).max()), dim)[0]
        assert np.all(np.abs(float32_scores - reference.astype(np.float64)) <= bound)
        # the bound is a few ulps of the norms' product, not a loose constant
        assert bound < 1e-4 * float(np.linalg.norm(query) * np.linalg.norm(documents, axis=1).max())


def test_ranking_keys_order_pairs_by_score_then_tie_rank() -> None:
    """The keys both searches (and HNSW's rescoring) rank by: score descending, equal scores by tie rank,
    -0.0 equal to 0.0, whatever the input's float dtype."""
    rng = np.random.default_rng(5)
    scores = rng.choice(np.array([-1.5, -0.0, 0.0, 1e-45, -1e-45, 0.25, 3.0], dtype=np.float32), (4, 500))
    ranks = rng.permutation(500)
    keys = ranking_keys(scores, ranks)
    for row in range(4):
        order = np.lexsort((ranks, scores[row] + np.float32(0.0)))
        np.testing.assert_array_equal(np.argsort(keys[row]), order)
    np.testing.assert_array_equal(ranking_keys(scores.astype(np.float64), ranks), keys)


@pytest.mark.parametrize("kind", ["random", "duplicated", "quantised", "zeros", "near-ties", "float64"])
def test_the_torch_scan_gives_the_same_bits(kind: str) -> None:
    """The float32 scan on a torch device (here torch's CPU: no GPU on the test machine) shortlists by the
    same rule, so the rescored result is the float64 search's bit for bit."""
    pytest.importorskip("torch")
    rng = np.random.default_rng([7, *map(ord, kind)])
    for _ in range(15):
        queries, documents = adversarial_case(rng, kind)
        n_docs = documents.shape[0]
        doc_ids = [f"d{i}" for i in rng.permutation(n_docs).tolist()]
        k = int(rng.integers(1, n_docs + 10))
        allowed, masks = None, None
        if rng.random() < 0.5:
            pool = rng.random((3, n_docs)) < rng.choice([0.02, 0.3, 0.9])
            rows = rng.integers(0, 3, queries.shape[0])
            allowed, masks = Allowed(masks=pool, rows=rows), pool[rows]
        expected = oracle(queries, documents, k, doc_ids, masks)
        assert_same(
            exact_search(queries, documents, k, doc_ids=doc_ids, allowed=allowed, device="cpu"), expected
        )


def test_row_norms_bound_the_norms_from_above_and_closely() -> None:
    rng = np.random.default_rng(13)
    for dtype, low, high in ((np.float32, -20, 5), (np.float64, -20, 5), (np.float16, -2, 2)):
        rows = (rng.standard_normal((3000, 384)) * 10.0 ** rng.uniform(low, high, (3000, 1))).astype(dtype)
        rows[:3] = 0
        # products of float32 and float16 values are exact in float64, and fsum adds them exactly
        exact = np.array(
            [math.sqrt(math.fsum(float(v) ** 2 for v in row)) for row in rows[:200].astype(np.float64)]
        )
        bound = row_norms(rows)[:200]
        assert np.all(bound >= exact)
        assert np.all(bound <= exact * (1 + 1e-4) + 1e-15)
