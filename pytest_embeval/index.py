"""Top-k retrieval over normalised embeddings: exact (blocked numpy) and approximate (hnswlib).

Both searches return ``(positions, scores)``: int64 row numbers into ``documents`` and float32 cosine scores,
each of shape ``(n_queries, min(k, n_documents))``, ranked the way trec_eval ranks a run: score descending,
equal scores by document id descending (``strcmp(b, a)``), so a TREC run file written from them evaluates
identically under trec_eval.

Scores are computed in float64 and rounded to float32. A float32 matrix product gives different last bits
for the same (query, document) pair depending on how many rows are multiplied at once (BLAS switches kernels),
which would make the ranking depend on the block size; float64 rounded to float32 does not, in practice.

Ranking uses one unsigned 64-bit key per (query, document): the float32 score mapped to an order-preserving
integer in the high 32 bits, the document's rank in sorted-id order in the low 32 bits. Keys are unique within
a query, so "the k largest keys" is exactly trec_eval's top k, even when equal scores straddle position k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["HnswIndex", "exact_search", "hnsw_search", "tie_ranks"]

DEFAULT_BLOCK_SIZE = 8192
# Scratch memory per (query block x document block) step; about 40 bytes per pair are live at once.
_SCRATCH_BYTES = 128 * 2**20
_BYTES_PER_PAIR = 40
_SIGN = np.uint32(0x80000000)
_LOW32 = np.uint64(0xFFFFFFFF)


def tie_ranks(doc_ids: Sequence[str]) -> np.ndarray:
    """int64 rank of each id in ascending Python string order (a larger id has a larger rank).

    Python compares strings by code point, the byte order of their UTF-8 encoding: trec_eval's strcmp.
    """
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    ranks = np.empty(len(doc_ids), dtype=np.int64)
    ranks[order] = np.arange(len(doc_ids), dtype=np.int64)
    return ranks


def exact_search(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int,
    *,
    doc_ids: Sequence[str],
    block_size: int = DEFAULT_BLOCK_SIZE,
    query_block_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k of every query (dot products of L2-normalised rows).

    Documents are scanned in blocks of ``block_size`` rows and queries in blocks of ``query_block_size`` (by
    default as many as fit in ~128 MB of scratch), keeping a running top k per query, so memory stays bounded
    for large corpora. The result does not depend on either block size.
    """
    d = _validate_documents(documents, doc_ids)
    q, k_eff = _validate_queries(queries, d, k)
    _check_block("block_size", block_size)
    if query_block_size is not None:
        _check_block("query_block_size", query_block_size)
    n_queries, n_docs = q.shape[0], d.shape[0]
    if n_queries == 0 or k_eff == 0:
        return _empty_result(n_queries, k_eff)

    ranks = tie_ranks(doc_ids)
    doc_block = min(block_size, n_docs)
    query_block = query_block_size or max(1, _SCRATCH_BYTES // (_BYTES_PER_PAIR * (doc_block + k_eff)))
    best = np.zeros((n_queries, 0), dtype=np.uint64)
    # Documents outermost: each document block is converted to float64 once.
    for d_start in range(0, n_docs, doc_block):
        d_block = d[d_start : d_start + doc_block].astype(np.float64)
        block_ranks = ranks[d_start : d_start + doc_block]
        merged: list[np.ndarray] = []
        for q_start in range(0, n_queries, query_block):
            q_block = q[q_start : q_start + query_block].astype(np.float64)
            scores = (q_block @ d_block.T).astype(np.float32)
            keys = _keys(scores, block_ranks)
            merged.append(_top(np.concatenate([best[q_start : q_start + query_block], keys], axis=1), k_eff))
        best = np.concatenate(merged, axis=0)
    return _decode(np.sort(best, axis=1)[:, ::-1], np.argsort(ranks))


class HnswIndex:
    """An hnswlib graph over normalised document vectors (inner product), built single-threaded with a fixed
    seed so that two builds on the same data give the same graph and the same results."""

    def __init__(
        self,
        documents: np.ndarray,
        *,
        doc_ids: Sequence[str],
        M: int = 16,
        ef_construction: int = 200,
        seed: int = 0,
    ) -> None:
        import hnswlib

        d = _validate_documents(documents, doc_ids)
        for name, value in (("M", M), ("ef_construction", ef_construction)):
            _check_block(name, value)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        self.M = M
        self.ef_construction = ef_construction
        self.seed = seed
        self._documents = d
        self._ranks = tie_ranks(doc_ids)
        self._index: Any = None
        if d.shape[0]:
            index = hnswlib.Index(space="ip", dim=d.shape[1])
            index.init_index(max_elements=d.shape[0], ef_construction=ef_construction, M=M, random_seed=seed)
            index.set_num_threads(1)
            index.add_items(np.ascontiguousarray(d, dtype=np.float32), np.arange(d.shape[0]), num_threads=1)
            self._index = index

    def search(self, queries: np.ndarray, k: int, *, ef_search: int = 128) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k, scored and ranked exactly like :func:`exact_search` ranks its candidates."""
        d = self._documents
        q, k_eff = _validate_queries(queries, d, k)
        _check_block("ef_search", ef_search)
        n_queries = q.shape[0]
        if n_queries == 0 or k_eff == 0:
            return _empty_result(n_queries, k_eff)
        # hnswlib cannot return k results with a smaller candidate list.
        self._index.set_ef(max(ef_search, k_eff))
        labels, _ = self._index.knn_query(np.ascontiguousarray(q, dtype=np.float32), k=k_eff, num_threads=1)
        positions = labels.astype(np.int64)
        # Rescored in float64 -> float32 as exact_search scores, so a pair gets one score in both searches.
        scores = np.empty(positions.shape, dtype=np.float32)
        step = max(1, _SCRATCH_BYTES // (8 * k_eff * d.shape[1]))
        for start in range(0, n_queries, step):
            block = positions[start : start + step]
            scores[start : start + step] = np.einsum(
                "id,ikd->ik", q[start : start + step].astype(np.float64), d[block].astype(np.float64)
            ).astype(np.float32)
        keys = np.sort(_keys(scores, self._ranks[positions]), axis=1)[:, ::-1]
        return _decode(keys, np.argsort(self._ranks))


def hnsw_search(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int,
    *,
    doc_ids: Sequence[str],
    M: int = 16,
    ef_construction: int = 200,
    ef_search: int = 128,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Build an :class:`HnswIndex` over ``documents`` and search it once; same result shapes and tie rule as
    :func:`exact_search`."""
    index = HnswIndex(documents, doc_ids=doc_ids, M=M, ef_construction=ef_construction, seed=seed)
    return index.search(queries, k, ef_search=ef_search)


# ------------------------------------------------------------------------------------------------- internals


def _keys(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys: float32 score in the high 32 bits, tie rank in the low 32 bits."""
    # Adding +0.0 turns -0.0 into +0.0: trec_eval sees them as equal scores, so they must get equal keys.
    bits = (scores.astype(np.float32) + np.float32(0.0)).view(np.uint32)
    # Negative scores: flip every bit (larger magnitude sorts lower); others: set the sign bit. The arithmetic
    # shift builds that mask without branching (this runs on every (query, document) pair).
    flip = (bits.view(np.int32) >> 31).view(np.uint32) | _SIGN
    keys: np.ndarray = (bits ^ flip).astype(np.uint64)
    keys <<= np.uint64(32)
    keys |= ranks.astype(np.uint64)
    return keys


def _decode(keys: np.ndarray, position_of_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    high = (keys >> np.uint64(32)).astype(np.uint32)
    bits = np.where(high & _SIGN, high ^ _SIGN, ~high).astype(np.uint32)
    positions = position_of_rank[(keys & _LOW32).astype(np.int64)]
    return positions.astype(np.int64), bits.view(np.float32)


def _empty_result(n_queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty((n_queries, k), dtype=np.int64), np.empty((n_queries, k), dtype=np.float32)


def _top(keys: np.ndarray, k: int) -> np.ndarray:
    """The k largest keys of each row, in no particular order."""
    n = keys.shape[1]
    if n <= k:
        return keys
    top: np.ndarray = np.partition(keys, n - k, axis=1)[:, n - k :]
    return top


def _check_block(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _validate_documents(documents: np.ndarray, doc_ids: Sequence[str]) -> np.ndarray:
    d = _matrix("documents", documents)
    if len(doc_ids) != d.shape[0]:
        raise ValueError(f"doc_ids has {len(doc_ids)} ids but documents has {d.shape[0]} rows")
    if d.shape[0] > 2**32:
        raise ValueError(f"at most 2**32 documents are supported, got {d.shape[0]}")
    seen: set[str] = set()
    for position, doc_id in enumerate(doc_ids):
        if not isinstance(doc_id, str):
            raise ValueError(f"doc_ids[{position}] is {type(doc_id).__name__}, not str: {doc_id!r}")
        if doc_id in seen:
            raise ValueError(f"doc_ids must be unique: {doc_id!r} appears more than once")
        seen.add(doc_id)
    return d


def _validate_queries(queries: np.ndarray, documents: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """The query matrix and the effective k, min(k, number of documents)."""
    q = _matrix("queries", queries)
    if q.shape[1] != documents.shape[1]:
        raise ValueError(
            f"queries have dimension {q.shape[1]} but documents have dimension {documents.shape[1]}"
        )
    _check_block("k", k)
    return q, min(int(k), documents.shape[0])


def _matrix(name: str, array: np.ndarray) -> np.ndarray:
    matrix = np.asarray(array)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows x dimension), got shape {matrix.shape}")
    if matrix.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {matrix.dtype}")
    # Row blocks keep the temporary boolean array small for large corpora.
    for start in range(0, matrix.shape[0], 65536):
        bad = ~np.isfinite(matrix[start : start + 65536]).all(axis=1)
        if bad.any():
            raise ValueError(f"{name} contain NaN or inf (first in row {start + int(np.argmax(bad))})")
    return matrix
