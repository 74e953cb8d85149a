"""An arm's vectors searched with the golden set's FAISS index (`faiss_index`), as an hnswlib graph is
searched (`dense`): built once per arm with the golden set's seed, searched at the declared ``nprobe`` /
``efSearch`` or at the smallest value that reaches ``recall_target`` on the sampled queries against exact
search on the same vectors, and measured on those queries (ANN recall, latency beside FAISS's flat index,
memory).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.retriever import FaissStats, RecallTargetError, RetrievalTask
from pytest_embeval.core.capacity import Latency
from pytest_embeval.core.step_progress import labelled
from pytest_embeval.search.faiss_index import FaissIndex, FaissIndexError, faiss_flat_seconds
from pytest_embeval.search.hnsw import TargetNotReached, ann_recall

__all__ = ["FaissSearching"]

#: exact search's top ``depth`` (positions) of the sampled query rows, on the vectors the index holds
ExactSample = Callable[[np.ndarray, int], np.ndarray]


class FaissSearching:
    """The FAISS index of one arm: ``documents`` and ``queries`` as the index holds them (float32 unit rows,
    or packed bits with ``dims`` the bits of a vector), ``exact`` its exact search on the ``sample`` rows."""

    def __init__(
        self,
        task: RetrievalTask,
        documents: np.ndarray,
        queries: np.ndarray,
        *,
        exact: ExactSample,
        sample: np.ndarray,
        dims: int | None = None,
    ) -> None:
        self.task = task
        self.documents = documents
        self.queries = queries
        self.exact = exact
        self.sample = sample
        self.dims = dims
        self._index: FaissIndex | None = None
        #: the parameter value searched with, chosen at the first search's depth (None: no parameter)
        self._value: int | None = None
        self._chosen = False
        self._every_query: dict[int, np.ndarray] = {}

    @property
    def factory(self) -> str:
        factory = self.task.index.factory
        assert factory is not None  # a FAISS index spec always has one (golden.loader)
        return factory

    def index(self) -> FaissIndex:
        """The index, built on first use (same factory string and seed for every arm); `EncoderError` when
        FAISS cannot build it over these vectors."""
        if self._index is None:
            if self.dims is None and self.factory.startswith("B"):
                raise EncoderError(
                    f"{self.task.role}: index.faiss {self.factory!r} is a binary index: it holds packed "
                    "bits, which only a precision=binary or precision=ubinary variant stores"
                )
            with labelled(self.task.role):
                try:
                    self._index = FaissIndex(
                        self.documents,
                        doc_ids=self.task.doc_ids,
                        factory=self.factory,
                        seed=self.task.seed,
                        dims=self.dims,
                    )
                except FaissIndexError as error:
                    # The arm's vectors cannot be indexed so (their dimension, their number): its fault.
                    raise EncoderError(f"{self.task.role}: index.faiss: {error}") from None
        return self._index

    def value(self, depth: int) -> int | None:
        """The parameter value this arm searches with: declared, FAISS's default, or with a recall target the
        smallest that reaches it at the first search's depth."""
        if self._chosen:
            return self._value
        index, spec = self.index(), self.task.index
        self._chosen = True
        if spec.recall_target is not None:
            exact = self.exact(self.sample, depth)
            try:
                self._value, _ = index.value_for_recall(self.queries[self.sample], exact, spec.recall_target)
            except TargetNotReached as missed:
                where = f" at the largest {index.parameter}, {missed.ef}" if index.parameter else ""
                raise RecallTargetError(
                    f"{self.task.role}: index.recall_target {missed.target:g} is out of reach: ANN "
                    f"recall@{depth} {missed.recall:.4f} on {self.sample.size} sampled queries{where}; lower "
                    f"the target, or choose another index.faiss than {self.factory!r}"
                ) from None
        elif spec.faiss_parameter is not None:
            self._value = spec.faiss_parameter[1]
        index.set_parameter(self._value)
        return self._value

    def search(self, rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        index = self.index()
        self.value(depth)
        positions, scores = index.search(self.queries[rows], depth)
        if rows.size == self.queries.shape[0] and bool((rows == np.arange(rows.size)).all()):
            self._every_query[depth] = positions
        return positions, scores

    def stats(self, depth: int) -> FaissStats:
        """ANN recall and latency on the sampled queries at ``depth`` (recall from the search the scores
        came from, when every query was searched at that depth), and the index's parameters."""
        index = self.index()
        self.value(depth)
        queries = self.queries[self.sample]
        if depth in self._every_query:
            approximate = self._every_query[depth][self.sample]
        else:
            approximate, _ = index.search(queries, depth)
        spec = self.task.index
        return FaissStats(
            parameters=index.parameters(),
            ann_recall=ann_recall(approximate, self.exact(self.sample, depth)),
            sample=int(self.sample.size),
            latency=Latency.of(index.query_seconds(queries, depth)),
            exact_latency=Latency.of(faiss_flat_seconds(queries, self.documents, depth, dims=self.dims)),
            fixed_bytes=index.fixed_bytes,
            recall_target=spec.recall_target,
            defaulted=index.parameter is not None
            and spec.recall_target is None
            and spec.faiss_parameter is None,
        )
