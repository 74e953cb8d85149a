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

A search may be restricted per query (`Allowed`: boolean masks over the documents and each query's mask row,
as per-query filters give them). Exact search masks inside its blocked scan; hnswlib is given the mask as its
``filter`` callable, one ``knn_query`` per distinct mask. A query allowed fewer than k documents gets fewer:
its rows are padded with position -1 and a NaN score, after the real results.

What an approximate index costs is measured here too: :meth:`HnswIndex.memory_bytes`, per-query latency
(:meth:`HnswIndex.query_seconds` against :func:`flat_query_seconds`, hnswlib's brute-force index, both
single-threaded in the same library), :func:`ann_recall` against exact search, and the smallest ef that
reaches a recall target (:meth:`HnswIndex.ef_for_recall`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_embeval.graphs import GraphStore, graph_key
from pytest_embeval.stats import sorted_quantile

__all__ = [
    "Allowed",
    "HnswIndex",
    "Latency",
    "TargetNotReached",
    "ann_recall",
    "effective_ef",
    "equal_scores",
    "exact_search",
    "flat_query_seconds",
    "hnsw_search",
    "smallest_ef",
    "tie_ranks",
    "top_k",
]

DEFAULT_BLOCK_SIZE = 8192
# Scratch memory per (query block x document block) step; about 40 bytes per pair are live at once. 48 MB
# (150 queries a block against 8,192 documents): the peak memory of a run at 200,000 x 1,500 within 1.5 x the
# two arms' vectors, at about the search time of 128 MB (benchmarks/README.md, "At the practice's scale").
_SCRATCH_BYTES = 48 * 2**20
_BYTES_PER_PAIR = 40
_SIGN = np.uint32(0x80000000)
_LOW32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True, slots=True, eq=False)
class Allowed:
    """Which documents each query may return: ``masks`` is (n_masks, n_documents) bool, ``rows`` gives each
    query's mask row (n_queries,)."""

    masks: np.ndarray
    rows: np.ndarray

    def select(self, queries: np.ndarray) -> Allowed:
        """The same masks for a subset of the queries (their row numbers)."""
        return Allowed(masks=self.masks, rows=self.rows[queries])

    def check(self, n_queries: int, n_documents: int) -> None:
        masks, rows = np.asarray(self.masks), np.asarray(self.rows)
        if masks.dtype != np.bool_ or masks.ndim != 2 or masks.shape[1] != n_documents:
            raise ValueError(
                f"allowed.masks must be a bool array of shape (n_masks, {n_documents}), got "
                f"{masks.dtype} {masks.shape}"
            )
        if rows.shape != (n_queries,) or rows.dtype.kind not in "iu":
            raise ValueError(
                f"allowed.rows must be {n_queries} integer mask rows, got {rows.dtype} {rows.shape}"
            )
        if n_queries and (rows.min() < 0 or rows.max() >= masks.shape[0]):
            raise ValueError(
                f"allowed.rows must lie in [0, {masks.shape[0]}), got {rows.min()}..{rows.max()}"
            )


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
    allowed: Allowed | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k of every query (dot products of L2-normalised rows), among the documents
    ``allowed`` lets each query return (all of them when None; padded rows when fewer than k).

    Documents are scanned in blocks of ``block_size`` rows and queries in blocks of ``query_block_size`` (by
    default as many as fit in ~48 MB of scratch), keeping a running top k per query, so memory stays bounded
    for large corpora. The result does not depend on either block size. A masked-out pair keeps only its tie
    rank (`_mask`), below every allowed document's key, and is recognised after the scan.
    """
    d = _validate_documents(documents, doc_ids)
    q, k_eff = _validate_queries(queries, d, k)
    if allowed is not None:
        allowed.check(q.shape[0], d.shape[0])
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
            if allowed is not None:
                block_masks = allowed.masks[:, d_start : d_start + doc_block]
                _mask(keys, block_masks[allowed.rows[q_start : q_start + query_block]])
            merged.append(_top(np.concatenate([best[q_start : q_start + query_block], keys], axis=1), k_eff))
        best = np.concatenate(merged, axis=0)
    keys = np.sort(best, axis=1)[:, ::-1]
    return _padded(keys, *_decode(keys, np.argsort(ranks)))


def top_k(
    scores: np.ndarray, k: int, *, ranks: np.ndarray, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` columns of each row of a score matrix, ranked as :func:`exact_search` ranks (float32
    score descending, equal scores by ``ranks`` descending: `tie_ranks` of the column ids), among the
    columns ``keep`` allows (a bool matrix of the same shape; all when None); padded with -1 and NaN."""
    matrix = np.asarray(scores, dtype=np.float32)
    if matrix.ndim != 2 or ranks.shape != (matrix.shape[1],):
        raise ValueError(f"scores must be (n, {ranks.shape[0]}), got {matrix.shape}")
    k_eff = min(int(k), matrix.shape[1])
    if matrix.shape[0] == 0 or k_eff == 0:
        return _empty_result(matrix.shape[0], k_eff)
    keys = _keys(matrix, ranks)
    if keep is not None:
        _mask(keys, keep)
    best = np.sort(_top(keys, k_eff), axis=1)[:, ::-1]
    return _padded(best, *_decode(best, np.argsort(ranks)))


def equal_scores(
    queries: np.ndarray, documents: np.ndarray, targets: np.ndarray, *, block_size: int = DEFAULT_BLOCK_SIZE
) -> list[np.ndarray]:
    """For each query row, the positions (ascending) of every document whose score equals ``targets[row]``,
    scored exactly as :func:`exact_search` scores (float64 products rounded to float32), so a tie group
    that a ranked list cuts off can be completed: only a full scan knows every member of it."""
    d = _matrix("documents", documents)
    q = _matrix("queries", queries)
    wanted = np.asarray(targets, dtype=np.float32)
    if wanted.shape != (q.shape[0],):
        raise ValueError(f"targets must hold one score per query ({q.shape[0]}), got shape {wanted.shape}")
    _check_block("block_size", block_size)
    rows: list[np.ndarray] = []
    columns: list[np.ndarray] = []
    q64 = q.astype(np.float64)
    for start in range(0, d.shape[0], block_size):
        scores = (q64 @ d[start : start + block_size].astype(np.float64).T).astype(np.float32)
        row, column = np.nonzero(scores == wanted[:, None])
        rows.append(row)
        columns.append(column.astype(np.int64) + start)
    # Blocks come in document order and nonzero() is row-major within one: a stable sort by row keeps
    # each query's positions ascending.
    row_of = np.concatenate([np.empty(0, dtype=np.intp), *rows])
    positions = np.concatenate([np.empty(0, dtype=np.int64), *columns])
    order = np.argsort(row_of, kind="stable")
    counts = np.bincount(row_of, minlength=q.shape[0])
    return np.split(positions[order], np.cumsum(counts)[:-1])


def effective_ef(ef_search: int, k: int) -> int:
    """The candidate-list size an HNSW search of depth ``k`` runs with: hnswlib cannot return k results from
    a shorter list, so a declared ``ef_search`` below k is raised to k."""
    return max(ef_search, k)


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
        store: GraphStore | None = None,
    ) -> None:
        """``store``: where a graph built over the same vectors with the same parameters is loaded from
        rather than built again, and where this one is kept (`graphs`)."""
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
        if not d.shape[0]:
            return
        vectors = np.ascontiguousarray(d, dtype=np.float32)
        key = ""
        if store is not None:
            key = graph_key(vectors, M=M, ef_construction=ef_construction, seed=seed)
            self._index = store.load(key, dim=d.shape[1], n=d.shape[0])
            if self._index is not None:
                return
        index = hnswlib.Index(space="ip", dim=d.shape[1])
        index.init_index(max_elements=d.shape[0], ef_construction=ef_construction, M=M, random_seed=seed)
        index.set_num_threads(1)
        index.add_items(vectors, np.arange(d.shape[0]), num_threads=1)
        self._index = index
        if store is not None:
            store.save(key, index)

    def search(
        self, queries: np.ndarray, k: int, *, ef_search: int = 128, allowed: Allowed | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k, scored and ranked exactly like :func:`exact_search` ranks its candidates; with
        ``allowed``, hnswlib searches with each distinct mask as its filter (rows padded as exact_search
        pads them)."""
        d = self._documents
        q, k_eff = _validate_queries(queries, d, k)
        _check_block("ef_search", ef_search)
        n_queries = q.shape[0]
        if allowed is not None:
            allowed.check(n_queries, d.shape[0])
        if n_queries == 0 or k_eff == 0:
            return _empty_result(n_queries, k_eff)
        rows = np.ascontiguousarray(q, dtype=np.float32)
        positions = self._filtered_labels(rows, k_eff, effective_ef(ef_search, k_eff), allowed)
        found = positions >= 0
        safe = np.where(found, positions, 0)
        # Rescored in float64 -> float32 as exact_search scores, so a pair gets one score in both searches.
        scores = np.empty(positions.shape, dtype=np.float32)
        if d.size * 8 <= _SCRATCH_BYTES:
            # A small corpus: every score of a block of queries by one matmul, as exact_search computes them,
            # then the candidates' picked out (a tenth of the time of gathering their vectors).
            d64 = d.astype(np.float64)
            step = max(1, _SCRATCH_BYTES // (8 * d.shape[0]))
            for start in range(0, n_queries, step):
                every = q[start : start + step].astype(np.float64) @ d64.T
                picked = np.take_along_axis(every, safe[start : start + step], axis=1)
                scores[start : start + step] = picked.astype(np.float32)
        else:
            step = max(1, _SCRATCH_BYTES // (8 * k_eff * d.shape[1]))
            for start in range(0, n_queries, step):
                block = safe[start : start + step]
                scores[start : start + step] = np.einsum(
                    "id,ikd->ik", q[start : start + step].astype(np.float64), d[block].astype(np.float64)
                ).astype(np.float32)
        keys = _keys(scores, self._ranks[safe])
        _mask(keys, found)
        keys = np.sort(keys, axis=1)[:, ::-1]
        return _padded(keys, *_decode(keys, np.argsort(self._ranks)))

    def parameters(self) -> dict[str, int]:
        """The graph's parameters as the built hnswlib index reports them (``ef``: as last searched), and the
        seed it was built with. An empty corpus has no hnswlib index: its ``ef`` is 0."""
        if self._index is None:
            return {"M": self.M, "ef_construction": self.ef_construction, "ef": 0, "seed": self.seed}
        return {
            "M": int(self._index.M),
            "ef_construction": int(self._index.ef_construction),
            "ef": int(self._index.ef),
            "seed": self.seed,
        }

    def memory_bytes(self) -> int:
        """Size of the hnswlib index: hnswlib's own count of what it serialises (exactly the size of a
        ``save_index`` file): per document the float32 vector, its label and its level-0 links (2·M), plus
        the upper-level links. It leaves out hnswlib's label hash map and visited-list scratch, and the float
        copy of the documents this class keeps for exact rescoring."""
        return 0 if self._index is None else int(self._index.index_file_size())

    def ef_for_recall(
        self, queries: np.ndarray, exact: np.ndarray, target: float, *, allowed: Allowed | None = None
    ) -> tuple[int, float]:
        """The smallest ef (and the recall it reaches) at which the top k of ``queries`` finds at least
        ``target`` of ``exact``, their exact top k (``(n_queries, k)`` positions, from `exact_search` with
        the same ``allowed`` masks), by `smallest_ef` between k (hnswlib's least) and the corpus size (a
        search that large visits every document it can reach). Raises `TargetNotReached` if even that
        falls short."""
        q, k = _validate_queries(queries, self._documents, np.asarray(exact).shape[1])
        if self._index is None or k == 0 or q.shape[0] == 0:
            raise ValueError("a recall target needs documents, queries and k >= 1")
        if allowed is not None:
            allowed.check(q.shape[0], self._documents.shape[0])
        rows = np.ascontiguousarray(q, dtype=np.float32)

        def recall_at(ef: int) -> float:
            return ann_recall(self._filtered_labels(rows, k, ef, allowed), exact)

        return smallest_ef(recall_at, target, low=k, high=max(k, self._documents.shape[0]))

    def _filtered_labels(self, rows: np.ndarray, k: int, ef: int, allowed: Allowed | None) -> np.ndarray:
        """hnswlib's top k of float32 ``rows`` at ``ef``; with ``allowed``, one search per distinct mask with
        the mask as hnswlib's filter, each query padded with -1 past the documents it reached."""
        if allowed is None:
            return self._labels(rows, k, ef)
        positions = np.full((rows.shape[0], k), -1, dtype=np.int64)
        for mask_row in sorted(set(allowed.rows.tolist())):
            mask = allowed.masks[mask_row]
            members = np.flatnonzero(allowed.rows == mask_row)
            k_mask = min(k, int(mask.sum()))
            if k_mask:
                # A bound method of a list of bools: hnswlib calls it per visited node, without a Python
                # frame of ours in between.
                permitted = mask.tolist().__getitem__
                positions[members, :k_mask] = self._labels(rows[members], k_mask, ef, permitted)
        return positions

    def _labels(
        self, rows: np.ndarray, k: int, ef: int, permitted: Callable[[int], bool] | None = None
    ) -> np.ndarray:
        """hnswlib's top k of float32 ``rows`` at ``ef``, as int64 positions (padded with -1).

        hnswlib fails the whole batch when its graph search reaches fewer than k documents for any query.
        Without a filter that means a disconnected graph (degenerate data: many equal similarities), an
        error. With one it is expected (a selective filter leaves few permitted documents within reach), so
        each query is then searched alone for as many as it reaches, found by bisection on k: at a fixed ef,
        a smaller k returns the top of the same candidate list.
        """
        self._index.set_ef(ef)
        try:
            labels, _ = self._index.knn_query(rows, k=k, num_threads=1, filter=permitted)
            positions: np.ndarray = np.asarray(labels, dtype=np.int64)
            return positions
        except RuntimeError as error:
            if permitted is None:
                raise ValueError(
                    f"hnswlib reached fewer than k={k} documents for some queries (M={self.M}, "
                    f"ef_construction={self.ef_construction}, ef={ef}): the graph is too sparse for these "
                    "vectors; raise M or ef_construction, or use exact search"
                ) from error
        result = np.full((rows.shape[0], k), -1, dtype=np.int64)
        for i in range(rows.shape[0]):
            reached, unreached = 0, k + 1
            while unreached - reached > 1:
                middle = (reached + unreached) // 2
                try:
                    labels, _ = self._index.knn_query(
                        rows[i : i + 1], k=middle, num_threads=1, filter=permitted
                    )
                except RuntimeError:
                    unreached = middle
                else:
                    reached = middle
                    result[i, :middle] = labels[0]
                    result[i, middle:] = -1
        return result

    def query_seconds(
        self, queries: np.ndarray, k: int, *, ef_search: int = 128, allowed: Allowed | None = None
    ) -> np.ndarray:
        """Wall-clock seconds of one single-threaded hnswlib query per row of ``queries`` (the graph search
        alone, without the exact rescoring and tie ordering :meth:`search` adds), with each query's mask as
        hnswlib's filter when ``allowed`` is given."""
        q, k_eff = _validate_queries(queries, self._documents, k)
        _check_block("ef_search", ef_search)
        if self._index is None or k_eff == 0:
            return np.zeros(q.shape[0])
        self._index.set_ef(effective_ef(ef_search, k_eff))
        rows = np.ascontiguousarray(q, dtype=np.float32)
        index = self._index
        return _time_each(
            lambda i, permitted: index.knn_query(rows[i : i + 1], k=k_eff, num_threads=1, filter=permitted),
            rows.shape[0],
            allowed,
        )


def flat_query_seconds(
    queries: np.ndarray, documents: np.ndarray, k: int, *, allowed: Allowed | None = None
) -> np.ndarray:
    """Wall-clock seconds of one single-threaded exact (brute-force) query per row of ``queries`` (with its
    mask as the filter when ``allowed`` is given).

    Timed on hnswlib's ``BFIndex``, a flat scan with the same distance code as :class:`HnswIndex`, so the two
    latencies compare like with like. :func:`exact_search` is not what is timed: it scores in float64 for
    a reproducible ranking, which no serving system does.
    """
    import hnswlib

    d = _matrix("documents", documents)
    q, k_eff = _validate_queries(queries, d, k)
    if d.shape[0] == 0 or k_eff == 0:
        return np.zeros(q.shape[0])
    flat = hnswlib.BFIndex(space="ip", dim=d.shape[1])
    flat.init_index(max_elements=d.shape[0])
    flat.add_items(np.ascontiguousarray(d, dtype=np.float32), np.arange(d.shape[0]))
    rows = np.ascontiguousarray(q, dtype=np.float32)
    return _time_each(
        lambda i, permitted: flat.knn_query(rows[i : i + 1], k=k_eff, num_threads=1, filter=permitted),
        rows.shape[0],
        allowed,
    )


class TargetNotReached(Exception):
    """No ef up to the largest tried reaches the recall target; ``recall`` is what the largest reached."""

    def __init__(self, target: float, recall: float, ef: int) -> None:
        self.target, self.recall, self.ef = target, recall, ef
        super().__init__(f"ANN recall {recall:.4f} at the largest ef {ef} is below the target {target:g}")

    def __reduce__(self) -> tuple[type[TargetNotReached], tuple[float, float, int]]:
        return TargetNotReached, (self.target, self.recall, self.ef)


def smallest_ef(
    recall_at: Callable[[int], float], target: float, *, low: int, high: int
) -> tuple[int, float]:
    """The smallest ef in ``[low, high]`` with ``recall_at(ef) >= target``, and that recall.

    Recall does not fall as ef grows (a longer candidate list explores a superset of the graph, in
    practice), so ef is doubled from ``low`` until the target is reached, then the last doubling is bisected:
    about 2·log2(ef / low) evaluations. The ef returned was measured to reach the target. Raises
    `TargetNotReached` when ``recall_at(high)`` does not.
    """
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target!r}")
    if isinstance(low, bool) or not isinstance(low, int) or low < 1 or high < low:
        raise ValueError(f"need 1 <= low <= high, got low={low!r}, high={high!r}")
    measured: dict[int, float] = {}

    def reaches(ef: int) -> bool:
        if ef not in measured:
            measured[ef] = recall_at(ef)
        return measured[ef] >= target

    below, ef = low - 1, low
    while not reaches(ef):
        if ef == high:
            raise TargetNotReached(target, measured[ef], ef)
        below, ef = ef, min(2 * ef, high)
    # The target is reached at ef and not at `below` (or below is under low): bisect between them.
    while ef - below > 1:
        middle = (below + ef) // 2
        if reaches(middle):
            ef = middle
        else:
            below = middle
    return ef, measured[ef]


@dataclass(frozen=True, slots=True)
class Latency:
    """Per-query search latency over a sample of queries, in milliseconds."""

    p50_ms: float
    p95_ms: float

    @classmethod
    def of(cls, seconds: np.ndarray) -> Latency:
        """Median and 95th percentile (numpy's linear interpolation) of per-query times in seconds."""
        if len(seconds) == 0:
            raise ValueError("no timings to summarise")
        ordered = np.sort(np.asarray(seconds, dtype=np.float64) * 1000.0)
        return cls(p50_ms=sorted_quantile(ordered, 0.5), p95_ms=sorted_quantile(ordered, 0.95))


def ann_recall(approximate: np.ndarray, exact: np.ndarray) -> float:
    """Mean over queries of the share of the exact top k that the approximate top k found.

    Both are ``(n_queries, k)`` document positions, as the searches return them, padded with -1 where a
    query was allowed fewer than k documents: each query's share is of the documents its exact search found,
    and a query whose exact search found none is left out (NaN if every query is). A document tied with
    the exact k-th score but ranked below it by the id rule counts as a miss; with real embeddings such ties
    are vanishingly rare.
    """
    a, e = np.asarray(approximate), np.asarray(exact)
    if a.shape != e.shape or a.ndim != 2:
        raise ValueError(f"approximate and exact must have the same 2-D shape, got {a.shape} and {e.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"recall needs at least one query and k >= 1, got shape {a.shape}")
    expected = (e >= 0).sum(axis=1)
    # A row's positions are distinct: sorted together, a document both found is a pair of equal neighbours
    # (padding is -1 in one and -2 in the other, and never counts).
    both = np.sort(np.concatenate([np.where(a >= 0, a, -1), np.where(e >= 0, e, -2)], axis=1), axis=1)
    found = ((both[:, 1:] == both[:, :-1]) & (both[:, 1:] >= 0)).sum(axis=1)
    measured = expected > 0
    if not measured.any():
        return float("nan")
    return float(np.mean(found[measured] / expected[measured]))


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


def _time_each(
    search: Callable[[int, Callable[[int], bool] | None], object], n_queries: int, allowed: Allowed | None
) -> np.ndarray:
    """Seconds per call ``search(i, filter)`` for each query row i, after one untimed call that pays for
    cold caches and lazy allocation, which would otherwise land on the first query. With ``allowed``, each
    query is searched with its mask as hnswlib's filter; a query its filter leaves no document takes 0 s,
    and one whose search reaches fewer permitted documents than asked for is timed all the same."""
    seconds = np.zeros(n_queries)
    if n_queries == 0:
        return seconds
    permitted = None if allowed is None else [mask.tolist().__getitem__ for mask in allowed.masks]
    counts = None if allowed is None else allowed.masks.sum(axis=1).tolist()
    rows = None if allowed is None else allowed.rows.tolist()

    def one(i: int) -> None:
        if permitted is None or counts is None or rows is None:
            search(i, None)
        elif counts[rows[i]]:
            with contextlib.suppress(RuntimeError):
                search(i, permitted[rows[i]])

    one(0)
    for i in range(n_queries):
        start = time.perf_counter()
        one(i)
        seconds[i] = time.perf_counter() - start
    return seconds


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


#: `_mask`'s keys by the mask's bool: masked out keeps the tie rank alone, allowed keeps the whole key.
_KEPT_BITS = np.array([0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
#: Keys below this have no score bits: masked out. A finite float32 score maps to 0x00800000 or more.
_SCORED = np.uint64(1 << 32)


def _mask(keys: np.ndarray, keep: np.ndarray) -> None:
    """Clear the score bits of the keys ``keep`` rejects, in place, so they sort below every kept key.

    Their tie ranks stay, so masked keys remain distinct: np.partition slows down tenfold on a row of
    many equal values (a selective filter would otherwise leave mostly zeros).
    """
    np.bitwise_and(keys, _KEPT_BITS[keep.view(np.uint8)], out=keys)


def _padded(keys: np.ndarray, positions: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decoded results with a masked key (a masked-out or missing document) as position -1 and score NaN."""
    empty = keys < _SCORED
    if empty.any():
        positions[empty] = -1
        scores[empty] = np.nan
    return positions, scores


def _empty_result(n_queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty((n_queries, k), dtype=np.int64), np.empty((n_queries, k), dtype=np.float32)


def _top(keys: np.ndarray, k: int) -> np.ndarray:
    """The k largest keys of each row, in no particular order, in an array of their own: a slice of the
    partitioned row block would keep all of it alive (exact search holds one per query block until a
    document block ends: 100 MB at 1,500 queries x 8,192 documents, instead of 1 MB)."""
    n = keys.shape[1]
    if n <= k:
        return keys
    top: np.ndarray = np.partition(keys, n - k, axis=1)[:, n - k :].copy()
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
    if all(type(doc_id) is str for doc_id in doc_ids) and len(set(doc_ids)) == len(doc_ids):
        return d  # the common case, checked at C speed
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
