"""Exact search in the quantised domain: int8/uint8 codes by integer dot products and packed bits by Hamming
distance, ranked like float search (score descending, equal scores by document id descending), against a
plain numpy integer reference and FAISS's ``IndexBinaryFlat``."""

from __future__ import annotations

import sys
import warnings

import faiss
import numpy as np
import pytest

from pytest_embeval.golden.filters import Allowed
from pytest_embeval.search.quantization import calibration_ranges, quantize, signs
from pytest_embeval.search.quantized import (
    FAISS_MISSING,
    FLOAT32_EXACT,
    FaissMissingWarning,
    float32_exact,
    hamming_search,
    integer_search,
)


def shuffled_ids(n: int, seed: int) -> list[str]:
    """Ids whose string order is not the row order, so the tie rule is exercised."""
    return [f"doc-{i:05d}" for i in np.random.default_rng(seed).permutation(n)]


def reference(
    scores: np.ndarray, ids: list[str], k: int, allowed: Allowed | None = None
) -> tuple[list[list[int]], list[list[int]]]:
    """Each row's top k by (score, id) descending, in plain Python over exact integer scores."""
    positions, values = [], []
    for row in range(scores.shape[0]):
        candidates = range(scores.shape[1])
        if allowed is not None:
            candidates = [j for j in candidates if allowed.masks[allowed.rows[row], j]]
        ranked = sorted(candidates, key=lambda j: (int(scores[row, j]), ids[j]), reverse=True)[:k]
        positions.append(ranked)
        values.append([int(scores[row, j]) for j in ranked])
    return positions, values


def check(found: tuple[np.ndarray, np.ndarray], expected: tuple[list[list[int]], list[list[int]]]) -> None:
    positions, scores = found
    for row, (want_positions, want_scores) in enumerate(zip(*expected, strict=True)):
        got = positions[row][positions[row] >= 0].tolist()
        assert got == want_positions, row
        assert scores[row, : len(got)].tolist() == want_scores
        assert np.isnan(scores[row, len(got) :]).all()


def tied_vectors(n: int, d: int, distinct: int, seed: int) -> np.ndarray:
    """n unit vectors drawn from only ``distinct`` different ones: their codes tie in groups."""
    rng = np.random.default_rng(seed)
    pool = rng.standard_normal((distinct, d)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    return pool[rng.integers(0, distinct, n)]


@pytest.mark.parametrize("precision", ["int8", "uint8"])
@pytest.mark.parametrize("distinct", [40, 100_000])
def test_integer_top_k_equals_a_numpy_integer_reference(precision: str, distinct: int) -> None:
    documents, queries = tied_vectors(700, 48, distinct, 0), tied_vectors(30, 48, distinct, 1)
    ranges = calibration_ranges(documents)
    d_codes, q_codes = quantize(documents, precision, ranges), quantize(queries, precision, ranges)
    ids = shuffled_ids(700, 2)
    exact_scores = q_codes.astype(np.int64) @ d_codes.astype(np.int64).T
    check(integer_search(q_codes, d_codes, 25, doc_ids=ids), reference(exact_scores, ids, 25))


def test_integer_search_with_filters_pads_after_the_allowed_documents() -> None:
    documents, queries = tied_vectors(300, 16, 20, 3), tied_vectors(12, 16, 20, 4)
    ranges = calibration_ranges(documents)
    d_codes, q_codes = quantize(documents, "int8", ranges), quantize(queries, "int8", ranges)
    ids = shuffled_ids(300, 5)
    rng = np.random.default_rng(6)
    masks = rng.random((3, 300)) < np.array([[0.5], [0.02], [0.0]])
    allowed = Allowed(masks=masks, rows=rng.integers(0, 3, 12))
    exact_scores = q_codes.astype(np.int64) @ d_codes.astype(np.int64).T
    check(
        integer_search(q_codes, d_codes, 10, doc_ids=ids, allowed=allowed),
        reference(exact_scores, ids, 10, allowed),
    )


def test_float32_is_exact_up_to_1024_int8_dimensions_and_larger_codes_are_searched_in_float64() -> None:
    # |c| <= 128: the largest squared norm of 1,024 components is 128**2 * 1024 = 2**24 per side.
    assert float32_exact(128**2 * 1024, 128**2 * 1024)
    assert not float32_exact(128**2 * 1025, 128**2 * 1025)
    assert FLOAT32_EXACT == 2**24
    # 2,048 dimensions of -128 and 127: dot products past 2**24, where float32 would merge neighbours.
    rng = np.random.default_rng(7)
    q_codes = rng.choice(np.array([-128, 127], dtype=np.int8), size=(5, 2048))
    noise = rng.choice(np.array([-128, 127, 126], dtype=np.int8), size=(200, 2048))
    # Documents mostly like the first query: their scores near 2048 * 128**2, a few units apart.
    d_codes = np.where(rng.random((200, 2048)) < 0.9, q_codes[0], noise)
    exact_scores = q_codes.astype(np.int64) @ d_codes.astype(np.int64).T
    assert np.abs(exact_scores).max() > FLOAT32_EXACT
    ids = shuffled_ids(200, 8)
    check(integer_search(q_codes, d_codes, 20, doc_ids=ids), reference(exact_scores, ids, 20))


@pytest.mark.parametrize("precision", ["binary", "ubinary"])
@pytest.mark.parametrize("dims", [64, 77])
def test_binary_top_k_is_index_binary_flat_s_with_ties_by_id(precision: str, dims: int) -> None:
    documents, queries = tied_vectors(900, dims, 300, 9), tied_vectors(40, dims, 300, 10)
    d_codes, q_codes = quantize(documents, precision), quantize(queries, precision)
    ids = shuffled_ids(900, 11)
    positions, scores = hamming_search(q_codes, d_codes, 15, dims=dims, doc_ids=ids)
    # FAISS's own top 15: the same distances (its tie members are its own choice).
    flat = faiss.IndexBinaryFlat(8 * d_codes.shape[1])
    flat.add(np.ascontiguousarray(d_codes.view(np.uint8)))
    distances, _ = flat.search(np.ascontiguousarray(q_codes.view(np.uint8)), 15)
    np.testing.assert_array_equal(scores, dims - 2 * distances.astype(np.float64))
    # Which members of a tied group: the documented rule, on the ±1 vectors' dot products.
    plus_minus = signs(q_codes, dims).astype(np.int64) @ signs(d_codes, dims).astype(np.int64).T
    check((positions, scores), reference(plus_minus, ids, 15))


def test_a_tie_group_of_identical_documents_is_cut_by_id() -> None:
    # 200 identical documents: the 10 FAISS returns of the group are the 10 largest ids.
    documents = np.vstack([tied_vectors(200, 32, 1, 12), tied_vectors(100, 32, 100, 13)])
    codes = quantize(documents, "ubinary")
    query = codes[:1]
    ids = shuffled_ids(300, 14)
    positions, scores = hamming_search(query, codes, 10, dims=32, doc_ids=ids)
    assert scores[0].tolist() == [32.0] * 10
    assert positions[0].tolist() == sorted(range(200), key=ids.__getitem__, reverse=True)[:10]


def numpy_hamming_top(
    q_bytes: np.ndarray,
    d_bytes: np.ndarray,
    k: int,
    dims: int,
    ids: list[str],
    allowed: Allowed | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The reference for many documents: numpy's popcount of every pair, ranked by (score, id) descending
    with one lexsort (ids by their string order), masked pairs left out."""
    distances = np.bitwise_count(q_bytes[:, None, :] ^ d_bytes[None, :, :]).sum(axis=2, dtype=np.int64)
    scores = dims - 2 * distances
    id_order = np.argsort(np.argsort(np.array(ids)))
    positions = np.full((q_bytes.shape[0], k), -1, dtype=np.int64)
    values = np.full((q_bytes.shape[0], k), np.nan)
    for row in range(q_bytes.shape[0]):
        candidates = np.arange(d_bytes.shape[0])
        if allowed is not None:
            candidates = candidates[allowed.masks[allowed.rows[row]]]
        ranked = candidates[np.lexsort((-id_order[candidates], -scores[row, candidates]))][:k]
        positions[row, : ranked.size] = ranked
        values[row, : ranked.size] = scores[row, ranked]
    return positions, values


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("n_bytes", "n_documents", "k"),
    # Widths searched as they are (8, 20), padded to FAISS's kernels (3 to 4, 6 to 8, 24 to 32, 48 to 64) and
    # wider than any (70); documents past FAISS's scan block of 65,536; k past most tie groups' sizes.
    [
        (3, 2000, 50),
        (6, 3000, 100),
        (8, 1500, 7),
        (20, 800, 30),
        (24, 900, 64),
        (48, 70_000, 100),
        (70, 600, 25),
    ],
)
def test_faiss_keeps_the_tie_rule_at_every_width_with_one_search_of_k(
    threads: int, n_bytes: int, n_documents: int, k: int
) -> None:
    # Random bytes with most bits shared: distances bunch into a few values, so nearly every k-th distance
    # is a tie group that FAISS must cut by the rule.
    rng = np.random.default_rng([n_bytes, n_documents, k])
    base = rng.integers(0, 256, size=n_bytes, dtype=np.uint8)
    flips = rng.random((n_documents + 12, n_bytes * 8)) < 0.03
    codes = np.packbits(np.unpackbits(base)[None, :] ^ flips, axis=1).astype(np.uint8)
    d_bytes, q_bytes = codes[:n_documents], codes[n_documents:]
    ids = shuffled_ids(n_documents, n_bytes)
    dims = 8 * n_bytes
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        positions, scores = hamming_search(q_bytes, d_bytes, k, dims=dims, doc_ids=ids)
    finally:
        faiss.omp_set_num_threads(previous)
    want_positions, want_scores = numpy_hamming_top(q_bytes, d_bytes, k, dims, ids)
    kth = want_scores[:, -1:]
    # The case is one of ties: most queries' k-th score is shared beyond k.
    assert ((dims - 2 * np.bitwise_count(q_bytes[:, None, :] ^ d_bytes[None]).sum(axis=2)) == kth).sum(
        axis=1
    ).mean() > 2
    np.testing.assert_array_equal(positions, want_positions)
    np.testing.assert_array_equal(scores, want_scores)


def test_filtered_binary_search_keeps_the_tie_rule_through_the_label_order() -> None:
    rng = np.random.default_rng(23)
    codes = rng.integers(0, 4, size=(1212, 2), dtype=np.uint8)
    d_bytes, q_bytes = codes[:1200], codes[1200:]
    ids = shuffled_ids(1200, 24)
    masks = rng.random((3, 1200)) < np.array([[0.5], [0.004], [1.0]])
    allowed = Allowed(masks=masks, rows=rng.integers(0, 3, 12))
    found = hamming_search(q_bytes, d_bytes, 40, dims=16, doc_ids=ids, allowed=allowed)
    want = numpy_hamming_top(q_bytes, d_bytes, 40, 16, ids, allowed)
    np.testing.assert_array_equal(found[0], want[0])
    np.testing.assert_array_equal(found[1], want[1])


def test_binary_search_with_filters_equals_the_reference() -> None:
    documents, queries = tied_vectors(400, 40, 60, 15), tied_vectors(20, 40, 60, 16)
    d_codes, q_codes = quantize(documents, "binary"), quantize(queries, "binary")
    ids = shuffled_ids(400, 17)
    rng = np.random.default_rng(18)
    masks = rng.random((4, 400)) < np.array([[0.6], [0.03], [0.0], [1.0]])
    allowed = Allowed(masks=masks, rows=rng.integers(0, 4, 20))
    plus_minus = signs(q_codes, 40).astype(np.int64) @ signs(d_codes, 40).astype(np.int64).T
    check(
        hamming_search(q_codes, d_codes, 12, dims=40, doc_ids=ids, allowed=allowed),
        reference(plus_minus, ids, 12, allowed),
    )


def test_without_faiss_bits_are_searched_by_numpy_with_the_same_result_and_one_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    documents, queries = tied_vectors(500, 64, 80, 19), tied_vectors(25, 64, 80, 20)
    d_codes, q_codes = quantize(documents, "ubinary"), quantize(queries, "ubinary")
    ids = shuffled_ids(500, 21)
    with_faiss = hamming_search(q_codes, d_codes, 20, dims=64, doc_ids=ids)
    # None in sys.modules makes `import faiss` raise ImportError, as on a machine without it.
    monkeypatch.setitem(sys.modules, "faiss", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        without = hamming_search(q_codes, d_codes, 20, dims=64, doc_ids=ids)
    assert [str(w.message) for w in caught if w.category is FaissMissingWarning] == [FAISS_MISSING]
    np.testing.assert_array_equal(without[0], with_faiss[0])
    np.testing.assert_array_equal(without[1], with_faiss[1])


def test_bad_inputs_are_refused_with_the_offending_value() -> None:
    codes = np.zeros((4, 8), dtype=np.int8)
    ids = ["a", "b", "c", "d"]
    with pytest.raises(ValueError, match="documents must hold 8- or 16-bit integer codes, got dtype float32"):
        integer_search(codes, codes.astype(np.float32), 2, doc_ids=ids)
    with pytest.raises(ValueError, match="queries have dimension 4 but documents have dimension 8"):
        integer_search(codes[:, :4], codes, 2, doc_ids=ids)
    with pytest.raises(ValueError, match="dims must be between 1 and 64 for 8 bytes, got 65"):
        hamming_search(codes, codes, 2, dims=65, doc_ids=ids)
