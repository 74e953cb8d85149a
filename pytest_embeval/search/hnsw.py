"""Approximate search with hnswlib, and what an approximate index costs.

A graph is built single-threaded with a fixed seed (so it is a function of its inputs, and `graphs` can keep
it); it ranks like exact search (`exact`): equal scores by document id, filters as hnswlib's ``filter``
callable, one ``knn_query`` per distinct mask. Measured here: :meth:`HnswIndex.memory_bytes`, per-query
latency (:meth:`HnswIndex.query_seconds` against :func:`flat_query_seconds`, hnswlib's brute-force index, both
single-threaded in the same library), :func:`ann_recall` against exact search, and the smallest ef that
reaches a recall target (:meth:`HnswIndex.ef_for_recall`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pytest_embeval.core.step_progress import step
from pytest_embeval.golden.filters import Allowed
from pytest_embeval.search.exact import (
    SCRATCH_BYTES,
    as_matrix,
    check_block,
    decode_keys,
    empty_result,
    padded,
    query_masks,
    ranking_keys,
    tie_ranks,
    validate_documents,
    validate_queries,
)
from pytest_embeval.search.graphs import GraphStore, graph_key

__all__ = [
    "HnswIndex",
    "TargetNotReached",
    "ann_recall",
    "effective_ef",
    "flat_query_seconds",
    "hnsw_search",
    "smallest_ef",
]


def effective_ef(ef_search: int, k: int) -> int:
    """The candidate-list size an HNSW search of depth ``k`` runs with: hnswlib cannot return k results from
    a shorter list, so a declared ``ef_search`` below k is raised to k."""
    return max(ef_search, k)


#: Documents added to a graph between two counts of its build's progress.
BUILD_BLOCK = 5_000


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

        d = validate_documents(documents, doc_ids)
        for name, value in (("M", M), ("ef_construction", ef_construction)):
            check_block(name, value)
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
        n = d.shape[0]
        index.init_index(max_elements=n, ef_construction=ef_construction, M=M, random_seed=seed)
        index.set_num_threads(1)
        what = f"building HNSW graph of {n:,} vectors (M={M}, ef_construction={ef_construction})"
        with step(what, total=n) as advance:
            # Added block by block to count them: one thread inserts in the same order, into the same graph.
            for start in range(0, n, BUILD_BLOCK):
                stop = min(start + BUILD_BLOCK, n)
                index.add_items(vectors[start:stop], np.arange(start, stop), num_threads=1)
                advance(stop)
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
        q, k_eff = validate_queries(queries, d, k)
        check_block("ef_search", ef_search)
        n_queries = q.shape[0]
        if allowed is not None:
            allowed.check(n_queries, d.shape[0])
        if n_queries == 0 or k_eff == 0:
            return empty_result(n_queries, k_eff)
        rows = np.ascontiguousarray(q, dtype=np.float32)
        positions = self._filtered_labels(rows, k_eff, effective_ef(ef_search, k_eff), allowed)
        found = positions >= 0
        safe = np.where(found, positions, 0)
        # Rescored in float64 -> float32 as exact_search scores, so a pair gets one score in both searches.
        scores = np.empty(positions.shape, dtype=np.float32)
        if d.size * 8 <= SCRATCH_BYTES:
            # A small corpus: every score of a block of queries by one matmul, as exact_search computes them,
            # then the candidates' picked out (a tenth of the time of gathering their vectors).
            d64 = d.astype(np.float64)
            step = max(1, SCRATCH_BYTES // (8 * d.shape[0]))
            for start in range(0, n_queries, step):
                every = q[start : start + step].astype(np.float64) @ d64.T
                picked = np.take_along_axis(every, safe[start : start + step], axis=1)
                scores[start : start + step] = picked.astype(np.float32)
        else:
            step = max(1, SCRATCH_BYTES // (8 * k_eff * d.shape[1]))
            for start in range(0, n_queries, step):
                block = safe[start : start + step]
                scores[start : start + step] = np.einsum(
                    "id,ikd->ik", q[start : start + step].astype(np.float64), d[block].astype(np.float64)
                ).astype(np.float32)
        keys = ranking_keys(scores, self._ranks[safe])
        query_masks(keys, found)
        keys = np.sort(keys, axis=1)[:, ::-1]
        return padded(keys, *decode_keys(keys, np.argsort(self._ranks)))

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
        q, k = validate_queries(queries, self._documents, np.asarray(exact).shape[1])
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
        q, k_eff = validate_queries(queries, self._documents, k)
        check_block("ef_search", ef_search)
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

    d = as_matrix("documents", documents)
    q, k_eff = validate_queries(queries, d, k)
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
