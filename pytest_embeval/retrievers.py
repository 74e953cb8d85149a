"""What an arm is to the pipeline: a retriever that ranks corpus records for queries.

An arm either embeds (a bi-encoder searched with the golden set's vector index), ranks lexically (``bm25``,
`lexical`) or fuses other arms (``rrf:A,B``, `fusion`). The pipeline treats them alike: it `opens` the arm
on the golden set's records and queries (embedding, tokenising, indexing once), then asks the opened
`Searcher` for the top ``depth`` records of any queries, as deep as it needs (folding chunks to documents
may need a second, deeper search), each query restricted to the records its filters allow. Everything after
the first stage (folding, reranking, scoring, the control check) is the same code for every kind of arm.

With ``index.hnsw.recall_target``, an embedding arm searches at the smallest ef that reaches the target on
the sampled queries, against exact search with the same filters (`RecallTargetError` if none does). With
``production``, an embedding arm times its encoder and measures its capacity (`measure`); an arm that
embeds nothing has none. A corpus slice is searched by restricting an opened arm to the slice's records
(`Searcher.restrict`): an embedding arm reuses its vectors, a BM25 arm indexes the slice afresh (its term
statistics are the slice's).

`resolve_arm` turns a model spec into a retriever: ``bm25[?params]``, ``rrf:A,B[?k=N]``, or anything
`encoders.resolve_model` accepts (an embedding arm).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pytest_embeval.capacity import ArmCapacity
from pytest_embeval.encoders import Arm, EncoderError, embed, resolve_model
from pytest_embeval.golden import IndexSpec
from pytest_embeval.graphs import GraphStore
from pytest_embeval.index import (
    Allowed,
    HnswIndex,
    Latency,
    TargetNotReached,
    ann_recall,
    exact_search,
    flat_query_seconds,
)
from pytest_embeval.measure import TimedEncoder, measure_capacity
from pytest_embeval.stats import stable_seed
from pytest_embeval.usage import UsageCount

__all__ = [
    "ANN_SAMPLE",
    "Component",
    "DenseRetriever",
    "Hits",
    "HnswStats",
    "IndexStats",
    "RecallTargetError",
    "RetrievalTask",
    "Retriever",
    "Searcher",
    "ann_sample",
    "components",
    "resolve_arm",
    "spec_parameters",
]

#: Queries per arm on which an approximate index's recall against exact search and its latency are measured.
ANN_SAMPLE = 200

#: progress(role, kind, done, total) while an arm encodes.
Progress = Callable[[str, str, int, int], None]
#: embed(arm, texts, kind, progress=..., role=...) -> unit vectors; injected so the plugin can cache.
Embedder = Callable[..., np.ndarray]


class RecallTargetError(Exception):
    """An arm's index does not reach the declared recall target at any ef: one line naming the arm."""


@dataclass(frozen=True, slots=True)
class Hits:
    """The top records of some queries: ``positions`` (n, depth) int64 rows into the corpus and ``scores``
    float64, best first, padded with -1 and NaN where a query has fewer."""

    positions: np.ndarray
    scores: np.ndarray

    @classmethod
    def empty(cls, n_queries: int, depth: int) -> Hits:
        return cls(np.full((n_queries, depth), -1, dtype=np.int64), np.full((n_queries, depth), np.nan))


@dataclass(frozen=True, slots=True)
class RetrievalTask:
    """What every arm retrieves over: the golden set's records and queries, held constant, and how."""

    doc_ids: Sequence[str]
    #: the text of each record, as both arms embed or tokenise it (`golden.Document.embed_text`)
    doc_texts: Sequence[str]
    query_texts: Sequence[str]
    #: the records each query may return (its filters); None: all of them
    allowed: Allowed | None
    #: the vector index embedding arms search
    index: IndexSpec
    seed: int
    role: str
    embedder: Embedder = embed
    progress: Progress | None = None
    #: time the encoder and measure the arm's capacity (the golden set declares ``production``)
    measure: bool = False
    #: where HNSW graphs built over the same vectors are kept and found (None: built every time)
    graphs: GraphStore | None = None

    def reporter(self, kind: str) -> Callable[[int, int], None] | None:
        progress, role = self.progress, self.role
        if progress is None:
            return None
        return lambda done, total: progress(role, kind, done, total)

    def allowed_for(self, rows: np.ndarray) -> Allowed | None:
        return None if self.allowed is None else self.allowed.select(rows)


@dataclass(frozen=True, slots=True)
class HnswStats:
    """How an arm's HNSW index compares with exact search, measured on a sample of its queries."""

    #: as the built hnswlib index reports them: M, ef_construction, ef (as searched), seed
    parameters: Mapping[str, int]
    #: mean share of the exact top-depth documents the index returned (both filtered alike)
    ann_recall: float
    sample: int
    latency: Latency
    exact_latency: Latency
    #: the recall target this arm's ef was chosen to reach; None: searched at the declared ef_search
    recall_target: float | None = None
    #: whether the sample was searched with the queries' filters (hnswlib's filter callable)
    filtered: bool = False


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What one embedding arm's index held and cost; ``hnsw`` is None for exact search."""

    dimension: int
    #: exact: the float32 document vectors; hnsw: `HnswIndex.memory_bytes` (vectors, labels and graph)
    memory_bytes: int
    hnsw: HnswStats | None = None

    @property
    def kind(self) -> str:
        return "exact" if self.hnsw is None else "hnsw"


class Searcher(Protocol):
    """An arm opened on a golden set: ranks the records of any of its queries, to any depth."""

    def search(self, rows: np.ndarray, depth: int) -> Hits:
        """The top ``depth`` records of the queries at ``rows`` (golden order), each within what its
        filters allow; scores descending, equal scores by record id descending (trec_eval's order)."""
        ...

    def index_stats(self, depth: int) -> IndexStats | None:
        """This arm's own vector index, measured at ``depth``; None for an arm that does not embed."""
        ...

    def capacity(self, depth: int) -> ArmCapacity | None:
        """What serving this arm costs (`measure`), when the task asked to measure it and the arm embeds."""
        ...

    def vectors(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The query and record vectors an embedding arm searched (to scan for scores equal to a ranked
        one); None for an arm that embeds nothing itself."""
        ...

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> Searcher:
        """This arm on a subset of its records (``rows``, positions among them, sorted): ``task`` holds that
        subset's records, the same queries, and the filters over the subset."""
        ...


class EmbedsNothing:
    """The `Searcher` answers of an arm with no vectors of its own (BM25, a fusion): no index to measure,
    no capacity to project, no vectors to scan for tied scores."""

    def index_stats(self, depth: int) -> None:
        return None

    def capacity(self, depth: int) -> None:
        return None

    def vectors(self) -> None:
        return None


@runtime_checkable
class Retriever(Protocol):
    """An arm: identified like an embedding model (what reports show, what caches are keyed by)."""

    @property
    def spec(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...

    @property
    def prompts(self) -> Mapping[str, str]: ...

    #: "dense", "bm25" or "rrf"
    @property
    def kind(self) -> str: ...

    #: the arms it fuses, for a fused arm; () otherwise
    @property
    def parts(self) -> tuple[Retriever, ...]: ...

    def open(self, task: RetrievalTask) -> Searcher: ...


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


# -------------------------------------------------------------------------------------------- dense arms


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

    def open(self, task: RetrievalTask) -> DenseSearcher:
        # Encoding is timed only when a capacity is to be measured; the timer changes nothing else.
        timer = TimedEncoder(self.arm.encoder) if task.measure else None
        encoding = self.arm if timer is None else dataclasses.replace(self.arm, encoder=timer)
        before = self._usage()
        documents = task.embedder(
            encoding, task.doc_texts, "document", progress=task.reporter("document"), role=task.role
        )
        after_documents = self._usage()
        queries = task.embedder(
            encoding, task.query_texts, "query", progress=task.reporter("query"), role=task.role
        )
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
    """Exact search or one HNSW graph (built on first use) over an embedding arm's vectors."""

    def __init__(
        self,
        task: RetrievalTask,
        arm: Arm,
        documents: np.ndarray,
        queries: np.ndarray,
        timer: TimedEncoder | None = None,
        usage: tuple[UsageCount, UsageCount] | None = None,
    ) -> None:
        self.task = task
        self.arm = arm
        self.documents = documents
        self.queries = queries
        self.timer = timer
        #: an endpoint arm's counts while its documents and its queries were embedded
        self.usage = usage
        self._hnsw: HnswIndex | None = None
        #: the ef searched with: ef_search, or the one reaching the recall target (chosen on first search)
        self._ef: int | None = None
        #: measured once per depth: the capacity reuses the latency the report shows
        self._stats: dict[int, IndexStats] = {}
        #: by depth, the graph's positions for every query in order (from the search the scores come from),
        #: and exact search's on the sampled queries: what the recall measurement compares, searched once
        self._every_query: dict[int, np.ndarray] = {}
        self._exact_sample: dict[int, np.ndarray] = {}

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> DenseSearcher:
        return DenseSearcher(task, self.arm, self.documents[rows], self.queries)

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        return self.queries, self.documents

    def _graph(self) -> HnswIndex:
        if self._hnsw is None:
            spec = self.task.index
            # The golden seed, not the arm, seeds the build: both arms get the same construction randomness.
            self._hnsw = HnswIndex(
                self.documents,
                doc_ids=self.task.doc_ids,
                M=spec.M,
                ef_construction=spec.ef_construction,
                seed=self.task.seed,
                store=self.task.graphs,
            )
        return self._hnsw

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
        if self.task.index.kind == "hnsw":
            positions, scores = self._graph().search(
                self.queries[rows], depth, ef_search=self._ef_for(depth), allowed=allowed
            )
            if _every_row(rows, self.queries.shape[0]):
                self._every_query[depth] = positions
        else:
            positions, scores = exact_search(
                self.queries[rows], self.documents, depth, doc_ids=self.task.doc_ids, allowed=allowed
            )
        return Hits(positions, scores.astype(np.float64))

    def index_stats(self, depth: int) -> IndexStats:
        if depth not in self._stats:
            self._stats[depth] = self._measure(depth)
        return self._stats[depth]

    def _measure(self, depth: int) -> IndexStats:
        dimension = int(self.documents.shape[1])
        if self.task.index.kind != "hnsw":
            # A flat index holds the float32 vectors and nothing else.
            return IndexStats(dimension=dimension, memory_bytes=int(self.documents.shape[0] * dimension * 4))
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
        return IndexStats(dimension=dimension, memory_bytes=graph.memory_bytes(), hnsw=hnsw)

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
        if stats.hnsw is not None:
            latency, ef = stats.hnsw.latency, stats.hnsw.parameters["ef"]
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
        )


# --------------------------------------------------------------------------------------------- resolving


def _named(spec: str, prefix: str) -> bool:
    """Whether ``spec`` is the scheme ``prefix`` rather than a path that happens to start with it."""
    return spec.startswith(prefix) and not os.path.exists(spec)


def resolve_arm(spec_or_object: str | object) -> Retriever:
    """An arm from a model spec or object: a `Retriever` as is; ``bm25`` / ``bm25?k1=…&b=…`` (`lexical`);
    ``rrf:A,B[?k=N]`` (`fusion`); anything else through `encoders.resolve_model`, as an embedding arm.
    Raises `encoders.EncoderError` (one line naming the spec) when it cannot be resolved."""
    if isinstance(spec_or_object, Retriever) and not isinstance(spec_or_object, Arm):
        return spec_or_object
    if isinstance(spec_or_object, str):
        spec = spec_or_object.strip()
        if spec == "bm25" or _named(spec, "bm25?"):
            from pytest_embeval.lexical import bm25_arm

            return bm25_arm(spec)
        if _named(spec, "rrf:"):
            from pytest_embeval.fusion import rrf_arm

            return rrf_arm(spec, resolve_arm)
    return DenseRetriever(resolve_model(spec_or_object))


@dataclass(frozen=True, slots=True)
class Component:
    """One arm inside a fused arm, as the report shows it."""

    spec: str
    kind: str
    fingerprint: str
    prompts: Mapping[str, str]
    index: IndexStats | None
    parts: tuple[Component, ...]


def components(retriever: Retriever, searcher: Any, depth: int) -> tuple[Component, ...]:
    """The arms a fused arm fuses, with their own indexes measured at ``depth``; () for other arms.
    ``searcher`` is what ``retriever.open`` returned (a fused searcher keeps its parts' searchers)."""
    parts: Sequence[Searcher] = getattr(searcher, "parts", ())
    return tuple(
        Component(
            spec=part.spec,
            kind=part.kind,
            fingerprint=part.fingerprint,
            prompts=part.prompts,
            index=opened.index_stats(depth),
            parts=components(part, opened, depth),
        )
        for part, opened in zip(retriever.parts, parts, strict=True)
    )


def spec_parameters(spec: str, query: str, known: Mapping[str, str]) -> dict[str, str]:
    """The ``name=value`` pairs of a spec's ``?`` part, split on ``&`` and taken as written (no URL
    decoding, so ``method=bm25+`` keeps its plus). ``known`` maps each accepted name to what it takes, for
    the one-line error naming an unknown, repeated or empty parameter."""
    from pytest_embeval.encoders import EncoderError

    accepted = ", ".join(f"{name} ({what})" for name, what in known.items())
    values: dict[str, str] = {}
    for pair in query.split("&") if query else []:
        name, equals, value = pair.partition("=")
        if name not in known:
            raise EncoderError(f"model spec {spec!r}: unknown parameter {name!r} (accepted: {accepted})")
        if not equals or not value:
            raise EncoderError(f"model spec {spec!r}: parameter {name!r} needs a value ({known[name]})")
        if name in values:
            raise EncoderError(f"model spec {spec!r}: parameter {name!r} given twice")
        values[name] = value
    return values
