"""What an arm is to the pipeline: a retriever that ranks corpus records for queries.

An arm either embeds (a bi-encoder searched with the golden set's vector index), ranks lexically (``bm25``,
`bm25`) or fuses other arms (``rrf:A,B``, `fusion`). The pipeline treats them alike: it `opens` the arm
on the golden set's records and queries (embedding, tokenising, indexing once), then asks the opened
`Searcher` for the top ``depth`` records of any queries, as deep as it needs (folding chunks to documents
may need a second, deeper search), each query restricted to the records its filters allow. Everything after
the first stage (folding, reranking, scoring, the control check) is the same code for every kind of arm.

With ``index.hnsw.recall_target``, an embedding arm searches at the smallest ef that reaches the target on the
sampled queries, against exact search with the same filters (`RecallTargetError` if none does). With a vector
database as the index, an embedding arm builds its collection in the engine the golden set opened
(`RetrievalTask.engine`), offers its exact twin (`Searcher.exact_twin`) and drops the collection when it is
closed (`Searcher.close`). With
``production``, an embedding arm times its encoder and measures its capacity (`capacity_measurement`); an arm
that embeds nothing has none. A corpus slice is searched by restricting an opened arm to the slice's records
(`Searcher.restrict`): an embedding arm reuses its vectors, a BM25 arm indexes the slice afresh (its term
statistics are the slice's).

`resolve_arm` turns a model spec into a retriever: ``bm25[?params]``, ``rrf:A,B[?k=N]``, or anything
`model_specs.resolve_model` accepts (an embedding arm).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pytest_embeval.arms.embedding import embed
from pytest_embeval.core.capacity import ArmCapacity, Latency
from pytest_embeval.golden.filters import Allowed, Filter
from pytest_embeval.golden.schema import IndexSpec
from pytest_embeval.search.graphs import GraphStore
from pytest_embeval.search.vector_index import OpenedEngine

__all__ = [
    "EngineStats",
    "Hits",
    "HnswStats",
    "IndexStats",
    "RecallTargetError",
    "RetrievalTask",
    "Retriever",
    "Searcher",
    "spec_parameters",
]


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
    #: time the encoder and measure the arm's capacity (the golden set declares ``production``)
    measure: bool = False
    #: where HNSW graphs built over the same vectors are kept and found (None: built every time)
    graphs: GraphStore | None = None
    #: the filter of each of ``allowed``'s mask rows, from which an engine generates its filter syntax
    filters: Sequence[Filter] = ()
    #: each record's filterable fields, which an engine's collection stores
    doc_fields: Sequence[Mapping[str, tuple[str, ...]]] = ()
    #: the vector database ``index`` declares, opened once for the golden set; None for exact and hnsw
    engine: OpenedEngine | None = None

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
class EngineStats:
    """How an arm's collection in a vector database compares with exact search of the same vectors,
    measured on a sample of its queries, as `HnswStats` measures a graph."""

    #: the engine, where it is and what its adapter reports of its version
    engine: str
    address: str
    version: str
    collection: str
    #: as the engine reports them: how the collection is indexed, and the search parameter as searched
    parameters: Mapping[str, Any]
    #: the parameter a recall target tunes (``ef_search``, ``nprobes``); None for an adapter with none
    search_parameter: str | None
    #: mean share of the exact top-depth documents the engine returned (both filtered alike)
    ann_recall: float
    sample: int
    #: per query, through the adapter's client
    latency: Latency
    exact_latency: Latency
    recall_target: float | None = None
    filtered: bool = False
    #: left in the engine after the run
    kept: bool = False


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What one embedding arm's index held and cost; ``hnsw`` and ``engine`` are None for exact search."""

    dimension: int
    #: exact and an engine: the float32 document vectors (an engine's own overhead is not visible through
    #: its client); hnsw: `HnswIndex.memory_bytes` (vectors, labels and graph)
    memory_bytes: int
    hnsw: HnswStats | None = None
    engine: EngineStats | None = None

    @property
    def kind(self) -> str:
        if self.engine is not None:
            return self.engine.engine
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
        """What serving this arm costs (`capacity_measurement`), when the task asked to measure it and the
        arm embeds."""
        ...

    def vectors(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The query and record vectors an embedding arm searched (to scan for scores equal to a ranked
        one); None for an arm that embeds nothing itself."""
        ...

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> Searcher:
        """This arm on a subset of its records (``rows``, positions among them, sorted): ``task`` holds that
        subset's records, the same queries, and the filters over the subset."""
        ...

    def exact_twin(self) -> Searcher | None:
        """This arm searched exactly on the same vectors, when it searches a vector database (the twin the
        report splits Δ with); None otherwise."""
        ...

    def close(self) -> None:
        """Drop what the arm built outside this process (an engine's collections)."""
        ...


class EmbedsNothing:
    """The `Searcher` answers of an arm with no vectors of its own (BM25, a fusion): no index to measure,
    no capacity to project, no vectors to scan for tied scores, no exact twin, nothing to drop."""

    def index_stats(self, depth: int) -> None:
        return None

    def capacity(self, depth: int) -> None:
        return None

    def vectors(self) -> None:
        return None

    def exact_twin(self) -> None:
        return None

    def close(self) -> None:
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


# -------------------------------------------------------------------------------------------- dense arms


# --------------------------------------------------------------------------------------------- resolving


def spec_parameters(spec: str, query: str, known: Mapping[str, str]) -> dict[str, str]:
    """The ``name=value`` pairs of a spec's ``?`` part, split on ``&`` and taken as written (no URL
    decoding, so ``method=bm25+`` keeps its plus). ``known`` maps each accepted name to what it takes, for
    the one-line error naming an unknown, repeated or empty parameter."""
    from pytest_embeval.arms.embedding import EncoderError

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
