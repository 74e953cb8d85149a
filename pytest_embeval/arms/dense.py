"""An embedding arm: a bi-encoder's vectors searched with the golden set's declared index (exact, an
hnswlib graph, or a collection in a vector database, each approximate one with its recall against exact
search measured on a sample of the queries), and the capacity figures one run measures of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from pytest_embeval.arms.capacity_measurement import TimedEncoder, measure_capacity
from pytest_embeval.arms.embedding import Arm, EncoderError
from pytest_embeval.arms.faiss_search import FaissSearching
from pytest_embeval.arms.retriever import (
    EngineStats,
    Hits,
    HnswStats,
    IndexStats,
    RecallTargetError,
    RetrievalTask,
    Retriever,
    Searcher,
)
from pytest_embeval.arms.usage import UsageCount
from pytest_embeval.core.capacity import ArmCapacity, FaissLayout, Latency
from pytest_embeval.core.stats import stable_seed
from pytest_embeval.core.step_progress import counting, labelled, step
from pytest_embeval.golden.schema import IndexSpec
from pytest_embeval.search.engine_search import EngineCollection
from pytest_embeval.search.exact import exact_search
from pytest_embeval.search.hnsw import HnswIndex, TargetNotReached, ann_recall, flat_query_seconds
from pytest_embeval.search.quantization import VectorShape

__all__ = ["ANN_SAMPLE", "DenseRetriever", "DenseSearcher", "ann_sample"]


#: Queries per arm on which an approximate index's recall against exact search and its latency are measured.
ANN_SAMPLE = 200


def ann_sample(n_queries: int, seed: int) -> np.ndarray:
    """Sorted query rows on which ANN recall and latency are measured: all of them up to `ANN_SAMPLE`, else a
    seeded draw, so both arms (and every run with the same seed and query count) measure the same queries."""
    if n_queries <= ANN_SAMPLE:
        return np.arange(n_queries)
    rng = np.random.default_rng(stable_seed(seed, "ann-sample"))
    return np.sort(rng.choice(n_queries, size=ANN_SAMPLE, replace=False))


def _every_row(rows: np.ndarray, n_queries: int) -> bool:
    """Whether ``rows`` are every query row, in order."""
    return rows.size == n_queries and bool((rows == np.arange(n_queries)).all())


@dataclass(frozen=True, slots=True)
class DenseRetriever:
    """An embedding arm: the bi-encoder embeds records and queries, the golden set's index ranks them."""

    arm: Arm
    kind: str = field(default="dense", init=False)
    parts: tuple[Retriever, ...] = field(default=(), init=False)

    @property
    def spec(self) -> str:
        return self.arm.spec

    @property
    def fingerprint(self) -> str:
        return self.arm.fingerprint

    @property
    def prompts(self) -> Mapping[str, str]:
        return self.arm.prompts

    def open(self, task: RetrievalTask) -> Searcher:
        searcher = self.embedded(task)
        searcher.build()
        return searcher

    def embedded(self, task: RetrievalTask) -> DenseSearcher:
        """The arm's vectors of the task's documents and queries, embedded (through ``task.embedder``, the
        embedding cache's in a plugin run), ready to search."""
        # Encoding is timed only when a capacity is to be measured; the timer changes nothing else.
        timer = TimedEncoder(self.arm.encoder) if task.measure else None
        encoding = self.arm if timer is None else dataclasses.replace(self.arm, encoder=timer)
        before = self._usage()
        # Steps inside (the model loaded on first use, the texts the cache lacked) are this arm's.
        with labelled(task.role), counting("encoding document texts") as advance:
            documents = task.embedder(encoding, task.doc_texts, "document", progress=advance, role=task.role)
        after_documents = self._usage()
        with labelled(task.role), counting("encoding query texts") as advance:
            queries = task.embedder(encoding, task.query_texts, "query", progress=advance, role=task.role)
        after = self._usage()
        if queries.shape[1] != documents.shape[1]:
            raise EncoderError(
                f"{task.role} encoder {self.arm.spec!r} returned {queries.shape[1]}-dimensional query "
                f"vectors but {documents.shape[1]}-dimensional document vectors: they cannot be compared"
            )
        # What the endpoint counted for each kind of text: an endpoint arm's tokens for its capacity.
        usage = None
        if before is not None and after_documents is not None and after is not None:
            usage = (after_documents - before, after - after_documents)
        return DenseSearcher(task, self.arm, documents, queries, timer, usage)

    def _usage(self) -> UsageCount | None:
        """What the arm's endpoint has counted so far (None for an in-process arm)."""
        return self.arm.usage.snapshot() if self.arm.usage is not None else None


class DenseSearcher:
    """Exact search, one HNSW graph or one collection in a vector database (built on first use) over an
    embedding arm's vectors."""

    def __init__(
        self,
        task: RetrievalTask,
        arm: Arm,
        documents: np.ndarray,
        queries: np.ndarray,
        timer: TimedEncoder | None = None,
        usage: tuple[UsageCount, UsageCount] | None = None,
        shape: VectorShape | None = None,
    ) -> None:
        self.task = task
        self.arm = arm
        self.documents = documents
        self.queries = queries
        self.timer = timer
        #: an endpoint arm's counts while its documents and its queries were embedded
        self.usage = usage
        #: a variant's first dimensions (`variants`); None: the model's vectors as they are
        self.shape = shape
        self._hnsw: HnswIndex | None = None
        self._collection: EngineCollection | None = None
        #: whether the collection's search parameter was chosen for the recall target (once)
        self._engine_tuned = False
        self._faiss: FaissSearching | None = None
        #: the ef searched with: ef_search, or the one reaching the recall target (chosen on first search)
        self._ef: int | None = None
        #: measured once per depth: the capacity reuses the latency the report shows
        self._stats: dict[int, IndexStats] = {}
        #: by depth, the graph's positions for every query in order (from the search the scores come from),
        #: and exact search's on the sampled queries: what the recall measurement compares, searched once
        self._every_query: dict[int, np.ndarray] = {}
        self._exact_sample: dict[int, np.ndarray] = {}

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> DenseSearcher:
        # The slice is searched with the index this arm was opened with (a variant's own, when it declares
        # one: `variants.VariantRetriever.open`).
        sliced = dataclasses.replace(task, index=self.task.index, engine=self.task.engine)
        return DenseSearcher(sliced, self.arm, self.documents[rows], self.queries, shape=self.shape)

    def vectors(self) -> tuple[np.ndarray, np.ndarray] | None:
        # An engine's similarities are its own (float32, or quantised): a tie group it cut off at the depth
        # cannot be completed by a scan of exact scores.
        return None if self.task.engine is not None else (self.queries, self.documents)

    def exact_twin(self) -> DenseSearcher | None:
        """Exact search of these vectors, when this arm searches a vector database."""
        if self.task.engine is None:
            return None
        twin = dataclasses.replace(self.task, index=IndexSpec("exact"), engine=None, measure=False)
        return DenseSearcher(twin, self.arm, self.documents, self.queries)

    def close(self) -> None:
        """Drop this arm's collection from the engine (unless it is to be kept)."""
        if self._collection is not None:
            self._collection.drop()

    def _engine(self) -> EngineCollection:
        """The arm's collection, built on first use, in the engine the golden set opened for its arms."""
        if self._collection is None:
            opened = self.task.engine
            if opened is None:
                raise ValueError(f"index {self.task.index.kind!r} needs an opened engine")
            fields = self.task.doc_fields or [{}] * len(self.task.doc_ids)
            what = f"building {opened.index.engine} collection of {self.documents.shape[0]:,} vectors"
            with labelled(self.task.role), step(what):
                self._collection = EngineCollection(
                    opened.index,
                    self.documents,
                    doc_ids=self.task.doc_ids,
                    fields=fields,
                    golden=opened.golden,
                    arm=self.task.role,
                    keep=opened.keep,
                )
        return self._collection

    def _tuned(self, depth: int) -> EngineCollection:
        """The arm's collection, with a recall target searching at the smallest value of the engine's
        search parameter that reaches it on the sampled queries, chosen at its first search's depth (as
        ``_ef_for`` chooses an ef)."""
        collection, spec = self._engine(), self.task.index.engine
        if spec is None or spec.recall_target is None or self._engine_tuned:
            return collection
        self._engine_tuned = True
        sample = self._sample()
        exact = self._exact_on_sample(sample, depth)
        key = f"index.{spec.engine}.recall_target" if spec.engine != "service" else "index.recall_target"
        if collection.search_parameter(depth) is None:
            raise RecallTargetError(
                f"{self.task.role}: {key}: {collection.engine.engine}'s adapter offers no search parameter "
                "to tune for this collection (TunableIndex)"
            )
        try:
            collection.parameter_for_recall(
                self.queries[sample],
                exact,
                spec.recall_target,
                allowed=self.task.allowed_for(sample),
                filters=self.task.filters,
            )
        except TargetNotReached as missed:
            parameter = collection.search_parameter(depth)
            name = "its search parameter" if parameter is None else parameter.name
            raise RecallTargetError(
                f"{self.task.role}: {key} {missed.target:g} is out of reach: recall@{depth} "
                f"{missed.recall:.4f} against exact search on {sample.size} sampled queries at the largest "
                f"{name}, {missed.ef}; lower the target, or change how the collection is indexed"
            ) from None
        return collection

    def _graph(self) -> HnswIndex:
        if self._hnsw is None:
            spec = self.task.index
            # The golden seed, not the arm, seeds the build: both arms get the same construction randomness.
            with labelled(self.task.role):
                self._hnsw = HnswIndex(
                    self.documents,
                    doc_ids=self.task.doc_ids,
                    M=spec.M,
                    ef_construction=spec.ef_construction,
                    seed=self.task.seed,
                    store=self.task.graphs,
                )
        return self._hnsw

    def build(self) -> None:
        """Build the golden set's FAISS index now, so that vectors it cannot index are this arm's fault
        (`EncoderError`) when it is opened; other indexes are built on first use."""
        if self.task.index.kind == "faiss":
            self._faiss_index().index()

    def _faiss_index(self) -> FaissSearching:
        if self._faiss is None:
            self._faiss = FaissSearching(
                self.task, self.documents, self.queries, exact=self._exact_on_sample, sample=self._sample()
            )
        return self._faiss

    def _sample(self) -> np.ndarray:
        return ann_sample(self.queries.shape[0], self.task.seed)

    def _ef_for(self, depth: int) -> int:
        """The ef this arm searches with, chosen at its first search's depth: the declared ef_search, or
        with a recall target the smallest ef that reaches it on the sampled queries (each filtered as the
        queries are, against exact search filtered alike)."""
        if self._ef is not None:
            return self._ef
        spec = self.task.index
        if spec.recall_target is None:
            self._ef = spec.ef_search
            return self._ef
        sample = self._sample()
        queries, allowed = self.queries[sample], self.task.allowed_for(sample)
        exact = self._exact_on_sample(sample, depth)
        try:
            self._ef, _ = self._graph().ef_for_recall(queries, exact, spec.recall_target, allowed=allowed)
        except TargetNotReached as missed:
            raise RecallTargetError(
                f"{self.task.role}: index.hnsw.recall_target {missed.target:g} is out of reach: ANN "
                f"recall@{depth} {missed.recall:.4f} on {sample.size} sampled queries at the largest ef, "
                f"{missed.ef} (every document); lower the target, or raise M ({spec.M}) or ef_construction "
                f"({spec.ef_construction})"
            ) from None
        return self._ef

    def search(self, rows: np.ndarray, depth: int) -> Hits:
        allowed = self.task.allowed_for(rows)
        if self.task.engine is not None:
            positions, scores = self._tuned(depth).search(
                self.queries[rows], depth, allowed=allowed, filters=self.task.filters
            )
            if _every_row(rows, self.queries.shape[0]):
                self._every_query[depth] = positions
        elif self.task.index.kind == "hnsw":
            positions, scores = self._graph().search(
                self.queries[rows], depth, ef_search=self._ef_for(depth), allowed=allowed
            )
            if _every_row(rows, self.queries.shape[0]):
                self._every_query[depth] = positions
        elif self.task.index.kind == "faiss":
            positions, scores = self._faiss_index().search(rows, depth)
        else:
            positions, scores = exact_search(
                self.queries[rows],
                self.documents,
                depth,
                doc_ids=self.task.doc_ids,
                allowed=allowed,
                device=self._scan_device(),
            )
        return Hits(positions, scores.astype(np.float64))

    def _scan_device(self) -> str | None:
        """The GPU this arm's model runs on, for exact search's float32 scan, when the documents fit in its
        memory (the result is the same bits wherever the scan runs); None: numpy on the CPU."""
        device = self.arm.device.device if self.arm.device is not None else "cpu"
        if not device.startswith("cuda"):
            return None
        from pytest_embeval.search.torch_scan import fits_on_device

        return device if fits_on_device(self.documents, device) else None

    def index_stats(self, depth: int) -> IndexStats:
        if depth not in self._stats:
            self._stats[depth] = self._measure(depth)
        return self._stats[depth]

    def _measure(self, depth: int) -> IndexStats:
        dimension = int(self.documents.shape[1])
        if self.task.engine is not None:
            return self._measure_engine(depth)
        if self.task.index.kind == "faiss":
            searching = self._faiss_index()
            stats = searching.stats(depth)
            memory = searching.index().memory_bytes()
            return IndexStats(dimension=dimension, memory_bytes=memory, faiss=stats, shape=self.shape)
        if self.task.index.kind != "hnsw":
            # A flat index holds the float32 vectors and nothing else.
            memory = int(self.documents.shape[0] * dimension * 4)
            return IndexStats(dimension=dimension, memory_bytes=memory, shape=self.shape)
        graph, ef = self._graph(), self._ef_for(depth)
        sample = self._sample()
        queries, allowed = self.queries[sample], self.task.allowed_for(sample)
        if depth in self._every_query:
            # The search the scores come from, with the same ef: each query's result is its own, whichever
            # other queries were searched with it.
            approximate = self._every_query[depth][sample]
        else:
            approximate, _ = graph.search(queries, depth, ef_search=ef, allowed=allowed)
        exact = self._exact_on_sample(sample, depth)
        hnsw = HnswStats(
            parameters=graph.parameters(),
            ann_recall=ann_recall(approximate, exact),
            sample=int(sample.size),
            latency=Latency.of(graph.query_seconds(queries, depth, ef_search=ef, allowed=allowed)),
            exact_latency=Latency.of(flat_query_seconds(queries, self.documents, depth, allowed=allowed)),
            recall_target=self.task.index.recall_target,
            filtered=allowed is not None,
        )
        return IndexStats(dimension=dimension, memory_bytes=graph.memory_bytes(), hnsw=hnsw, shape=self.shape)

    def _measure_engine(self, depth: int) -> IndexStats:
        """The collection against exact search on the sampled queries, and its latency through the
        engine's client; its memory is counted as the float32 vectors it holds at least."""
        collection, spec = self._tuned(depth), self.task.index.engine
        opened = self.task.engine
        assert spec is not None and opened is not None  # only called for an engine index
        sample = self._sample()
        queries, allowed = self.queries[sample], self.task.allowed_for(sample)
        if depth in self._every_query:
            approximate = self._every_query[depth][sample]
        else:
            approximate, _ = collection.search(queries, depth, allowed=allowed, filters=self.task.filters)
        parameter = collection.search_parameter(depth)
        engine = EngineStats(
            engine=opened.index.engine,
            address=opened.index.address,
            version=opened.index.version,
            collection=collection.name,
            parameters=collection.parameters(),
            search_parameter=None if parameter is None else parameter.name,
            ann_recall=ann_recall(approximate, self._exact_on_sample(sample, depth)),
            sample=int(sample.size),
            latency=Latency.of(
                collection.query_seconds(queries, depth, allowed=allowed, filters=self.task.filters)
            ),
            exact_latency=Latency.of(flat_query_seconds(queries, self.documents, depth, allowed=allowed)),
            recall_target=spec.recall_target,
            filtered=allowed is not None,
            kept=opened.keep,
        )
        n, dimension = self.documents.shape
        return IndexStats(dimension=int(dimension), memory_bytes=int(n * dimension * 4), engine=engine)

    def _exact_on_sample(self, sample: np.ndarray, depth: int) -> np.ndarray:
        """Exact search's positions for the sampled queries (filtered as they are), computed once per depth
        for choosing the ef and measuring recall."""
        if depth not in self._exact_sample:
            self._exact_sample[depth], _ = exact_search(
                self.queries[sample],
                self.documents,
                depth,
                doc_ids=self.task.doc_ids,
                allowed=self.task.allowed_for(sample),
            )
        return self._exact_sample[depth]

    def capacity(self, depth: int) -> ArmCapacity | None:
        if not self.task.measure:
            return None
        stats = self.index_stats(depth)
        parameter = None
        if stats.hnsw is not None:
            latency, ef = stats.hnsw.latency, stats.hnsw.parameters["ef"]
        elif stats.engine is not None:
            latency, ef = stats.engine.latency, None
        elif stats.faiss is not None:
            latency, ef, parameter = stats.faiss.latency, None, self._faiss_index().index().parameter
            if parameter is not None:
                ef = int(stats.faiss.parameters[parameter])
        else:  # exact search is timed here, on hnswlib's flat index, on the queries hnsw would sample
            sample = self._sample()
            allowed = self.task.allowed_for(sample)
            seconds = flat_query_seconds(self.queries[sample], self.documents, depth, allowed=allowed)
            latency, ef = Latency.of(seconds), None
        return measure_capacity(
            self.arm,
            documents=self.documents,
            document_texts=self.task.doc_texts,
            query_texts=self.task.query_texts,
            timer=self.timer,
            document_usage=None if self.usage is None else self.usage[0],
            query_usage=None if self.usage is None else self.usage[1],
            index=stats.kind,
            index_bytes=stats.memory_bytes,
            M=self.task.index.M if stats.hnsw is not None else None,
            latency=latency,
            latency_ef=ef,
            faiss=(
                None
                if stats.faiss is None
                else FaissLayout(self._faiss_index().factory, stats.faiss.fixed_bytes, parameter)
            ),
            shape=self.shape,
        )
