"""One arm's vectors as a collection of a vector database, searched as `hnsw` searches its graph.

An `EngineCollection` is built once (`vector_index.VectorIndex.create`) over the arm's document vectors in
corpus order, with every record's filterable fields, under a fresh name and the run's marker. A search sends
each distinct filter once with the queries it restricts (the engine generates its own filter syntax from
it), checks that every id the engine returned is a record the query's filter allows (an engine whose filter
semantics differ from the golden set's is a fault, not a ranking), and ranks what it returned as the engine
ranked it: by the engine's own similarity (float32), equal similarities by document id as `exact_search`
breaks ties. What the engine decides is what production shows: which documents come back (its index, its
filtering) and in which order (a quantised store ranks by its quantised distances unless it refines them).
An engine that searches exhaustively in float32 returns `exact_search`'s top k but for near-ties a float32
rounding apart; the exact twin of the same vectors is the reference the report measures it against
(`hnsw.ann_recall`, and the metrics of both).

The engine is asked for the ranked depth (100 by default), as `hnsw` searches: a parameter that grows with
the depth asked for (HNSW's candidate list is at least k; LanceDB's refinement reranks k times refine_factor)
searches as production does when it asks for that many.

Measured here as for `hnsw`: per-query latency through the adapter's client (`query_seconds`, one call per
query, as production sends them), and the smallest value of the engine's search parameter reaching a recall
target (`parameter_for_recall`, by `hnsw.smallest_ef`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import numpy as np

from pytest_embeval.golden.filters import Allowed, Filter
from pytest_embeval.search.exact import (
    decode_keys,
    empty_result,
    padded,
    query_masks,
    ranking_keys,
    tie_ranks,
    validate_documents,
    validate_queries,
)
from pytest_embeval.search.hnsw import ann_recall, smallest_ef
from pytest_embeval.search.vector_index import (
    EngineError,
    Found,
    Records,
    SearchParameter,
    TunableIndex,
    VectorIndex,
    collection_name,
    guarded,
    owner_marker,
)

__all__ = ["EngineCollection"]

#: Queries sent in one search call (a request's size stays moderate at any depth).
SEARCH_BLOCK = 256


class EngineCollection:
    """A collection built in ``engine`` over ``documents`` (unit rows, corpus order), for one arm of the
    golden file with digest ``golden``."""

    def __init__(
        self,
        engine: VectorIndex,
        documents: np.ndarray,
        *,
        doc_ids: Sequence[str],
        fields: Sequence[Mapping[str, tuple[str, ...]]],
        golden: str,
        arm: str,
        keep: bool = False,
    ) -> None:
        d = validate_documents(documents, doc_ids)
        if len(fields) != d.shape[0]:
            raise ValueError(f"fields has {len(fields)} records but documents has {d.shape[0]} rows")
        self.engine = engine
        self.keep = keep
        self.name = collection_name(golden, arm)
        self._documents = d
        self._position = {doc_id: i for i, doc_id in enumerate(doc_ids)}
        self._ranks = tie_ranks(doc_ids)
        records = Records(ids=doc_ids, vectors=np.ascontiguousarray(d, dtype=np.float32), fields=fields)
        marker = owner_marker(golden, keep=keep)
        self._dropped = False
        try:
            guarded(
                engine,
                f"creating collection {self.name!r}",
                lambda: engine.create(self.name, records, marker),
            )
        except EngineError:
            self.drop(even_kept=True)  # a half-built collection is not left behind
            raise

    def search(
        self, queries: np.ndarray, k: int, *, allowed: Allowed | None = None, filters: Sequence[Filter] = ()
    ) -> tuple[np.ndarray, np.ndarray]:
        """The engine's top k of each query (each within its filter: ``allowed.masks[row]`` and
        ``filters[row]`` are one filter) and its similarities (float32), equal ones ordered by document id;
        padded with -1 and NaN."""
        q, k_eff = validate_queries(queries, self._documents, k)
        if q.shape[0] == 0 or k_eff == 0:
            return empty_result(q.shape[0], k_eff)
        positions, scores = self._found(q, k_eff, allowed, filters)
        found = positions >= 0
        # Ordered by the engine's similarity, ties by document id, as exact search orders its scores.
        keys = ranking_keys(
            np.where(found, scores, 0.0).astype(np.float32), self._ranks[np.where(found, positions, 0)]
        )
        query_masks(keys, found)
        keys = np.sort(keys, axis=1)[:, ::-1]
        return padded(keys, *decode_keys(keys, np.argsort(self._ranks)))

    def positions(
        self, queries: np.ndarray, k: int, allowed: Allowed | None, filters: Sequence[Filter]
    ) -> np.ndarray:
        """The engine's top k of each query, as document positions in the engine's order, padded with -1:
        one search per distinct filter."""
        return self._found(queries, k, allowed, filters)[0]

    def _found(
        self, queries: np.ndarray, k: int, allowed: Allowed | None, filters: Sequence[Filter]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Positions and the engine's similarities of each query's top k, in the engine's order, padded
        with -1 and NaN."""
        rows = np.ascontiguousarray(queries, dtype=np.float32)
        positions = np.full((rows.shape[0], k), -1, dtype=np.int64)
        scores = np.full((rows.shape[0], k), np.nan)
        for members, mask, wanted in _groups(rows.shape[0], self._documents.shape[0], allowed, filters):
            k_mask = min(k, int(mask.sum())) if mask is not None else k
            if k_mask == 0:
                continue
            for start in range(0, members.size, SEARCH_BLOCK):
                block = members[start : start + SEARCH_BLOCK]
                found = self._search(rows[block], k_mask, wanted)
                positions[block, :k_mask], scores[block, :k_mask] = self._positions(found, k_mask, mask)
        return positions, scores

    def _search(self, rows: np.ndarray, k: int, wanted: Filter | None) -> Sequence[Found]:
        found = guarded(
            self.engine,
            f"searching collection {self.name!r}",
            lambda: self.engine.search(self.name, rows, k, wanted),
        )
        if len(found) != rows.shape[0]:
            self._fault(f"answered {len(found)} results for {rows.shape[0]} queries")
        return found

    def _positions(
        self, found: Sequence[Found], k: int, mask: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Document positions of each query's ids and their similarities (padded with -1 and NaN), checked:
        known, distinct, at most k, a finite similarity each, allowed by the query's filter."""
        positions = np.full((len(found), k), -1, dtype=np.int64)
        scores = np.full((len(found), k), np.nan)
        for row, one in enumerate(found):
            if len(one.scores) != len(one.ids):
                self._fault(f"answered {len(one.ids)} ids with {len(one.scores)} similarities")
            if not np.isfinite(np.asarray(one.scores, dtype=np.float64)).all():
                self._fault(f"answered a similarity that is not a finite number: {list(one.scores)[:k]}")
            if len(one.ids) > k or len(set(one.ids)) != len(one.ids):
                self._fault(
                    f"answered {len(one.ids)} ids ({len(set(one.ids))} distinct) where {k} were asked for"
                )
            for column, doc_id in enumerate(one.ids):
                position = self._position.get(doc_id)
                if position is None:
                    self._fault(f"returned id {doc_id!r}, which is not in collection {self.name!r}")
                if mask is not None and not mask[position]:
                    self._fault(
                        f"returned {doc_id!r} for a query whose filter excludes it: its filter semantics "
                        "differ from the golden set's"
                    )
                positions[row, column] = position
            scores[row, : len(one.scores)] = one.scores
        return positions, scores

    def _fault(self, problem: str) -> NoReturn:
        raise EngineError(self.engine.engine, self.engine.address, problem)

    def search_parameter(self, k: int) -> SearchParameter | None:
        """The engine's search parameter for searches of depth ``k``; None if its adapter has none."""
        engine = self.engine
        if not isinstance(engine, TunableIndex):
            return None
        return guarded(
            self.engine, "reading its search parameter", lambda: engine.search_parameter(self.name, k)
        )

    def set_search_parameter(self, value: int) -> None:
        engine = self.engine
        if isinstance(engine, TunableIndex):
            guarded(
                self.engine,
                f"setting collection {self.name!r}'s search parameter to {value}",
                lambda: engine.set_search_parameter(self.name, value),
            )

    def parameter_for_recall(
        self,
        queries: np.ndarray,
        exact: np.ndarray,
        target: float,
        *,
        allowed: Allowed | None = None,
        filters: Sequence[Filter] = (),
    ) -> tuple[int, float]:
        """The smallest value of the search parameter (and the recall it reaches) at which the engine's top
        k of ``queries`` finds at least ``target`` of ``exact`` (their exact top k, filtered alike), by
        `hnsw.smallest_ef` over the adapter's range; the collection is left searching at that value.
        Raises `hnsw.TargetNotReached` if even its highest value falls short."""
        q, k = validate_queries(queries, self._documents, np.asarray(exact).shape[1])
        parameter = self.search_parameter(k)
        if parameter is None:
            raise ValueError(f"{self.engine.engine}'s adapter has no search parameter to tune")

        def recall_at(value: int) -> float:
            self.set_search_parameter(value)
            return ann_recall(self.positions(q, k, allowed, filters), exact)

        value, recall = smallest_ef(recall_at, target, low=parameter.low, high=parameter.high)
        self.set_search_parameter(value)
        return value, recall

    def parameters(self) -> dict[str, Any]:
        """How the collection is indexed and searched, as the engine reports it."""
        return dict(
            guarded(
                self.engine, f"describing collection {self.name!r}", lambda: self.engine.parameters(self.name)
            )
        )

    def query_seconds(
        self, queries: np.ndarray, k: int, *, allowed: Allowed | None = None, filters: Sequence[Filter] = ()
    ) -> np.ndarray:
        """Wall-clock seconds of one search call per row of ``queries``, through the adapter's client as
        production sends it (with the query's filter), after one untimed call that pays for cold caches; a
        query its filter leaves no document takes 0 s."""
        q, k_eff = validate_queries(queries, self._documents, k)
        rows = np.ascontiguousarray(q, dtype=np.float32)
        seconds = np.zeros(rows.shape[0])
        calls: list[tuple[int, int, Filter | None]] = []
        for members, mask, wanted in _groups(rows.shape[0], self._documents.shape[0], allowed, filters):
            k_mask = min(k_eff, int(mask.sum())) if mask is not None else k_eff
            calls.extend((int(i), k_mask, wanted) for i in members.tolist() if k_mask)
        calls.sort()
        for position, (i, k_mask, wanted) in enumerate(calls):
            if position == 0:
                self._search(rows[i : i + 1], k_mask, wanted)
            start = time.perf_counter()
            self._search(rows[i : i + 1], k_mask, wanted)
            seconds[i] = time.perf_counter() - start
        return seconds

    def drop(self, *, even_kept: bool = False) -> None:
        """Delete the collection (unless it is to be kept); once, and quietly if the engine is gone: the
        run's own fault, if any, is what it reports."""
        if self._dropped or (self.keep and not even_kept):
            return
        self._dropped = True
        # Left behind only if the engine cannot be reached; the next run of this golden file on this host
        # removes it (`vector_index.remove_leftovers`).
        with contextlib.suppress(EngineError):
            guarded(self.engine, f"dropping collection {self.name!r}", lambda: self.engine.drop(self.name))


def _groups(
    n_queries: int, n_documents: int, allowed: Allowed | None, filters: Sequence[Filter]
) -> list[tuple[np.ndarray, np.ndarray | None, Filter | None]]:
    """The query rows of each distinct filter, with its mask and its `Filter` (None for no filter)."""
    if allowed is None:
        return [(np.arange(n_queries), None, None)]
    allowed.check(n_queries, n_documents)
    if len(filters) != allowed.masks.shape[0]:
        raise ValueError(f"{len(filters)} filters for {allowed.masks.shape[0]} masks")
    return [
        (np.flatnonzero(allowed.rows == row), allowed.masks[row], filters[row] or None)
        for row in sorted(set(allowed.rows.tolist()))
    ]
