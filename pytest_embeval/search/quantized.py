"""Exact top-k in the quantised domain: integer dot products of int8/uint8 codes (`integer_search`) and the
Hamming distance of packed bits (`hamming_search`), with `exact.exact_search`'s contract: ``(positions,
scores)`` of shape ``(n_queries, min(k, n_documents))``, scores descending, equal scores by document id
descending (trec_eval's order), each query among the documents ``allowed`` lets it return, padded with -1
and NaN after its real results. Scores are float64 holding exact integers: the dot product of the codes, and
for bits ``dims - 2 x Hamming distance`` (the dot product of the ±1 vectors the bits stand for).

Integer dot products are computed by float32 BLAS when that is exact: every partial sum of a dot product is
an integer of magnitude at most sum |q_i d_i| <= ||q|| ||d|| (Cauchy-Schwarz), and float32 holds every
integer up to 2**24, so when max ||q|| x max ||d|| <= 2**24 no product, sum or FMA rounds, in any order. For
int8 codes (|c| <= 128) that holds for every matrix of up to 2**24 / 128**2 = 1,024 dimensions; larger ones
are checked on their norms, and searched in float64 (exact to 2**53) when it fails.

Bits are searched by FAISS's ``IndexBinaryFlat`` (the ``[faiss]`` extra), a compiled popcount kernel, in one
search of k. FAISS keeps each query's k smallest (distance, label) pairs, equal distances by the smaller label
(its heap compares labels on a tie, and the flat scan visits labels in order), so the documents are added in
the order of the tie rule, the one preferred on a tie first: FAISS's top k is then this module's, tie groups
cut at k included (`tests/test_quantized_search.py` holds that against a numpy reference on codes of a few
bits, where most distances tie). Codes are padded with zero bytes to a width FAISS has a specialised kernel
for (48 bytes, 384 bits, to 64): a zero byte adds no distance, and FAISS's generic kernel is slower than its
64-byte one on the wider rows. Without FAISS, bits are searched as ±1 int8 vectors by `integer_search`: the
same result, at float32 search's speed (`FaissMissingWarning` says so once).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pytest_embeval.golden.filters import Allowed
from pytest_embeval.search.exact import (
    DEFAULT_BLOCK_SIZE,
    LOWEST32,
    SCRATCH_BYTES,
    check_block,
    empty_result,
    merged_keys,
    raise_first_floors,
    tie_ranks,
    top,
    validate_documents,
)
from pytest_embeval.search.quantization import signs

__all__ = [
    "FAISS_MISSING",
    "FLOAT32_EXACT",
    "FaissMissingWarning",
    "binary_keys",
    "codes_exact_in_float32",
    "faiss_module",
    "float32_exact",
    "hamming_search",
    "integer_keys",
    "integer_search",
    "ranked_keys",
]

#: float32 holds every integer of magnitude up to 2**24 exactly.
FLOAT32_EXACT = 2**24
#: Integer scores are keyed in 32 bits (offset by 2**31): codes whose dot products could reach it are refused.
_KEY_LIMIT = 2**31
_OFFSET = np.int64(2**31)
_LOW32 = np.uint64(0xFFFFFFFF)
_SCORED = np.uint64(1 << 32)
FAISS_MISSING = (
    "faiss is not installed: packed bits were searched as ±1 vectors by numpy's BLAS (the same ranking, at "
    "float32 search's speed); pip install 'pytest-embeval[faiss]' for FAISS's popcount kernel"
)


class FaissMissingWarning(UserWarning):
    """Bits were searched without FAISS: correct, as slow as float32 search."""


def _squared_norms(codes: np.ndarray) -> int:
    """The largest squared L2 norm of a row of integer codes, exactly (a Python int)."""
    largest = 0
    for start in range(0, codes.shape[0], DEFAULT_BLOCK_SIZE):
        # float64 holds every sum of squares of 8- and 16-bit codes below 2**53 exactly.
        block = codes[start : start + DEFAULT_BLOCK_SIZE].astype(np.float64)
        largest = max(largest, int(np.einsum("ij,ij->i", block, block).max(initial=0)))
    return largest


def codes_exact_in_float32(queries: np.ndarray, documents: np.ndarray) -> bool:
    """Whether float32 scores every dot product of these integer codes exactly (`float32_exact` of their
    largest squared norms)."""
    return float32_exact(_squared_norms(queries), _squared_norms(documents))


def float32_exact(query_squares: int, document_squares: int) -> bool:
    """Whether float32 BLAS computes every dot product of rows with these largest squared norms exactly:
    max ||q|| x max ||d|| <= 2**24, compared squared, in integers."""
    return query_squares * document_squares <= FLOAT32_EXACT**2


def integer_keys(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of integer scores (|score| < 2**31): score + 2**31 in the high 32 bits,
    the tie rank in the low 32 bits. Every score has a high part >= 1, so a key of 0 is no document."""
    high = (np.asarray(scores).astype(np.int64) + _OFFSET).astype(np.uint64) << np.uint64(32)
    keys: np.ndarray = high | np.asarray(ranks).astype(np.uint64)
    return keys


def ranked_keys(keys: np.ndarray, position_of_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's keys best first, decoded: positions (-1 for no document) and float64 scores (NaN)."""
    ordered = np.sort(keys, axis=1)[:, ::-1]
    empty = ordered < _SCORED
    positions = position_of_rank[(ordered & _LOW32).astype(np.int64)].astype(np.int64)
    scores = ((ordered >> np.uint64(32)).astype(np.int64) - _OFFSET).astype(np.float64)
    positions[empty] = -1
    scores[empty] = np.nan
    return positions, scores


def _codes(name: str, array: np.ndarray) -> np.ndarray:
    matrix = np.asarray(array)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows x dimension), got shape {matrix.shape}")
    if matrix.dtype.kind not in "iu" or matrix.dtype.itemsize > 2:
        raise ValueError(f"{name} must hold 8- or 16-bit integer codes, got dtype {matrix.dtype}")
    return matrix


def _checked(
    queries: np.ndarray, documents: np.ndarray, k: int, doc_ids: Sequence[str], allowed: Allowed | None
) -> tuple[np.ndarray, np.ndarray, int]:
    d = _codes("documents", documents)
    validate_documents(d, doc_ids)
    q = _codes("queries", queries)
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]} but documents have dimension {d.shape[1]}")
    check_block("k", k)
    if allowed is not None:
        allowed.check(q.shape[0], d.shape[0])
    return q, d, min(int(k), d.shape[0])


def integer_search(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int,
    *,
    doc_ids: Sequence[str],
    allowed: Allowed | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of integer codes (int8, uint8) by their dot products, ranked as `exact.exact_search`
    ranks (see the module): float32 BLAS where `float32_exact` proves it exact, float64 otherwise."""
    q, d, k_eff = _checked(queries, documents, k, doc_ids, allowed)
    check_block("block_size", block_size)
    if q.shape[0] == 0 or k_eff == 0:
        positions, scores = empty_result(q.shape[0], k_eff)
        return positions, scores.astype(np.float64)
    query_squares, document_squares = _squared_norms(q), _squared_norms(d)
    if query_squares * document_squares >= _KEY_LIMIT**2:
        raise ValueError("integer codes this large could reach dot products of 2**31: search them as floats")
    dtype = np.float32 if float32_exact(query_squares, document_squares) else np.float64
    return _scan(q.astype(dtype), lambda rows: d[rows].astype(dtype), d.shape[0], k_eff, doc_ids, allowed)


def _scan(
    q: np.ndarray,
    document_block: Callable[[slice], np.ndarray],
    n_documents: int,
    k: int,
    doc_ids: Sequence[str],
    allowed: Allowed | None,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> tuple[np.ndarray, np.ndarray]:
    """The exact top k of float rows ``q`` against documents whose dot products are exact integers,
    ``document_block(rows)`` giving a block of them as floats of ``q``'s dtype.

    Each query keeps a floor, the score of its k-th best key once it has k (its first block's k-th best score
    before that): a pair below it cannot enter, so of each block only the pairs at or above it are made into
    keys (one comparison per pair)."""
    ranks = tie_ranks(doc_ids)
    n_queries = q.shape[0]
    doc_block = min(block_size, n_documents)
    query_block = max(1, SCRATCH_BYTES // ((q.dtype.itemsize + 2) * doc_block))
    best = np.zeros((n_queries, k), dtype=np.uint64)
    # Below every integer score, above a masked pair's -inf.
    floor = np.full(n_queries, LOWEST32, dtype=np.float64)
    for d_start in range(0, n_documents, doc_block):
        columns = slice(d_start, d_start + doc_block)
        block = document_block(columns)
        block_ranks = ranks[columns]
        for q_start in range(0, n_queries, query_block):
            rows = slice(q_start, q_start + query_block)
            scores = q[rows] @ block.T
            if allowed is not None:
                np.copyto(scores, -np.inf, where=~allowed.masks[allowed.rows[rows], columns])
            raise_first_floors(floor[rows], scores, k)
            best[rows] = merged_keys(best[rows], scores, floor[rows], block_ranks, integer_keys)
            smallest = best[rows].min(axis=1)
            full = smallest >= _SCORED
            kept = (smallest[full] >> np.uint64(32)).astype(np.int64) - _OFFSET
            floor[rows][full] = kept
    return ranked_keys(best, np.argsort(ranks))


def hamming_search(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int,
    *,
    dims: int,
    doc_ids: Sequence[str],
    allowed: Allowed | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k of packed bits (``binary`` int8 or ``ubinary`` uint8 codes, ``dims`` bits a row) by
    Hamming distance, scored ``dims - 2 x distance``, ranked as `integer_search` ranks: by FAISS's
    ``IndexBinaryFlat``, or without FAISS by `integer_search`'s scan of the ±1 vectors
    (`FaissMissingWarning`)."""
    q, d, k_eff = _checked(queries, documents, k, doc_ids, allowed)
    if not 1 <= dims <= 8 * d.shape[1]:
        raise ValueError(f"dims must be between 1 and {8 * d.shape[1]} for {d.shape[1]} bytes, got {dims}")
    if q.shape[0] == 0 or k_eff == 0:
        positions, scores = empty_result(q.shape[0], k_eff)
        return positions, scores.astype(np.float64)
    faiss = faiss_module()
    if faiss is None:
        warnings.warn(FaissMissingWarning(FAISS_MISSING), stacklevel=2)
        unpacked = signs(q, dims).astype(np.float32)
        return _scan(
            unpacked,
            lambda rows: signs(d[rows], dims).astype(np.float32),
            d.shape[0],
            k_eff,
            doc_ids,
            allowed,
        )
    # Label j is the document the tie rule ranks j-th: a larger tie rank first.
    position_of_label = np.argsort(-tie_ranks(doc_ids), kind="stable")
    width = _kernel_width(d.shape[1])
    index = faiss.IndexBinaryFlat(8 * width)
    # A binary code's top bit is flipped in every byte of every row alike: the distances are the same.
    index.add(_padded_bytes(d[position_of_label], width))
    packed = _padded_bytes(q, width)
    positions = np.full((q.shape[0], k_eff), -1, dtype=np.int64)
    scores = np.full((q.shape[0], k_eff), np.nan)
    for members, mask in _mask_groups(q.shape[0], allowed):
        params = selector = None
        if mask is not None:
            # The bitmap and the selector are kept referenced here for as long as FAISS reads them.
            bitmap = np.packbits(mask[position_of_label], bitorder="little")
            selector = faiss.IDSelectorBitmap(d.shape[0], faiss.swig_ptr(bitmap))
            params = faiss.SearchParameters(sel=selector)
        distances, labels = index.search(packed[members], k_eff, params=params)
        found = labels >= 0
        positions[members] = np.where(found, position_of_label[np.where(found, labels, 0)], -1)
        scores[members] = np.where(found, dims - 2 * distances.astype(np.float64), np.nan)
    return positions, scores


#: Code widths in bytes that FAISS's Hamming distance has a specialised kernel for (``HammingComputer4`` to
#: ``HammingComputer64``); wider codes, and widths in between, go through its generic one.
_FAISS_KERNEL_BYTES = (4, 8, 16, 20, 32, 64)


def _kernel_width(code_bytes: int) -> int:
    """The width codes of ``code_bytes`` are searched at: the smallest specialised one that holds them (the
    same width when none does)."""
    return next((width for width in _FAISS_KERNEL_BYTES if width >= code_bytes), code_bytes)


def _padded_bytes(codes: np.ndarray, width: int) -> np.ndarray:
    """Rows of codes as contiguous uint8 bytes, padded with zero bytes to ``width``."""
    rows = codes.view(np.uint8)
    if rows.shape[1] == width:
        return np.ascontiguousarray(rows)
    padded = np.zeros((rows.shape[0], width), dtype=np.uint8)
    padded[:, : rows.shape[1]] = rows
    return padded


def _mask_groups(n_queries: int, allowed: Allowed | None) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The query rows searched together: all of them, or those sharing each distinct filter mask."""
    if allowed is None:
        return [(np.arange(n_queries), None)]
    return [
        (np.flatnonzero(allowed.rows == mask_row), allowed.masks[mask_row])
        for mask_row in sorted(set(allowed.rows.tolist()))
    ]


def binary_keys(
    index: Any, packed: np.ndarray, k: int, dims: int, ranks: np.ndarray, search_width: int
) -> np.ndarray:
    """The top-k keys (`integer_keys` of ``dims - 2 x distance``; 0: no document) of each row of ``packed``
    among the ``search_width`` candidates an approximate FAISS binary ``index`` returns for it: equal
    distances ranked by document id among the members the index found."""
    keys = np.zeros((packed.shape[0], k), dtype=np.uint64)
    width = min(index.ntotal, search_width)
    if width == 0:
        return keys
    distances, labels = index.search(packed, width)
    found = labels >= 0
    scored = integer_keys(dims - 2 * distances.astype(np.int64), ranks[np.where(found, labels, 0)])
    scored[~found] = 0
    keys[:, : min(k, width)] = top(scored, k)
    return keys


def faiss_module() -> Any:
    """The faiss module, or None when it is not installed."""
    if "faiss" in sys.modules:
        return sys.modules["faiss"]
    try:
        import faiss
    except ImportError:
        return None
    return faiss
