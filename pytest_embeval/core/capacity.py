"""What each arm would cost at production size: pure projections from what one run measured.

A run measures, per arm, on the corpus it was given: the vectors (dimension, dtype, bytes), the tokens the
model reads per document, the encoding throughput, the index's memory and its query latency. `project`
scales what scales with the corpus to the ``production`` block of the golden file (documents, queries per
month, memory price) and the arm's ``price_per_million_tokens``. Every projected figure is an `Estimate`:
a value, and in words what it assumes, so a capacity request can quote both. Latency is never projected:
it is reported as measured, on the index it was measured on.

Index memory follows the index's layout exactly: a flat index is ``documents x dimension x bytes per
component``; an hnswlib index adds its graph as `HnswLayout` derives it from hnswlib's own code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_embeval.core.stats import sorted_quantile

__all__ = [
    "GB",
    "MAX_COUNT",
    "MAX_PRICE",
    "ArmCapacity",
    "Estimate",
    "HnswLayout",
    "Latency",
    "Production",
    "Projection",
    "Throughput",
    "TokenCount",
    "flat_index_bytes",
    "project",
]

#: Memory is priced per GB of 10^9 bytes (as cloud price lists count it), and shown in the same unit.
GB = 10**9
#: hnswlib stores every vector as float32, whatever the model computed.
HNSW_COMPONENT_BYTES = 4
_TOKENS_PER_PRICE = 1_000_000
#: The most documents or queries a month a projection takes (10^15: beyond any production index), and the
#: highest price per unit (10^9): every projected byte, token and cost then stays a finite number, which a
#: report can write; a count given as a 400-digit integer is refused, not an overflow.
MAX_COUNT = 10**15
MAX_PRICE = 10**9
_SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Production:
    """The production index the arms are projected to, declared in the golden file before the run."""

    #: chunks (documents) the production index holds
    documents: int
    queries_per_month: int | None = None
    #: in a currency of the user's choice, per GB (10^9 bytes) of index memory and month, per replica
    memory_price_per_gb_month: float | None = None

    def __post_init__(self) -> None:
        _check_count("documents", self.documents, minimum=1, maximum=MAX_COUNT)
        if self.queries_per_month is not None:
            _check_count("queries_per_month", self.queries_per_month, minimum=0, maximum=MAX_COUNT)
        if self.memory_price_per_gb_month is not None:
            _check_price("memory_price_per_gb_month", self.memory_price_per_gb_month)

    def as_dict(self) -> dict[str, int | float]:
        """The declared keys only, as plain JSON types (part of the plan fingerprint)."""
        declared: dict[str, int | float] = {"documents": self.documents}
        if self.queries_per_month is not None:
            declared["queries_per_month"] = self.queries_per_month
        if self.memory_price_per_gb_month is not None:
            declared["memory_price_per_gb_month"] = self.memory_price_per_gb_month
        return declared


@dataclass(frozen=True, slots=True)
class HnswLayout:
    """The bytes of an hnswlib index of ``dimension``-dimensional float32 vectors with parameter ``M``, as
    ``HierarchicalNSW::saveIndex`` writes it and ``indexFileSize()`` counts it (hnswlib/hnswalg.h, 0.8.0).

    * A header of 13 fields: ``offsetLevel0_``, ``max_elements_``, ``cur_element_count``,
      ``size_data_per_element_``, ``label_offset_``, ``offsetData_``, ``maxM_``, ``maxM0_``, ``M_``,
      ``ef_construction_`` (``size_t``) and ``mult_`` (``double``), 8 bytes each, and ``maxlevel_`` (``int``)
      and ``enterpoint_node_`` (``tableint``), 4 bytes each: 96 bytes.
    * Per element, its level-0 block of ``size_data_per_element_ = size_links_level0_ + data_size_ +
      sizeof(labeltype)`` bytes: the level-0 link list ``size_links_level0_ = maxM0_ * sizeof(tableint) +
      sizeof(linklistsizeint)`` with ``maxM0_ = 2 * M`` (8M + 4 bytes), the vector ``data_size_ = dim *
      sizeof(float)`` and the label (``labeltype`` is ``size_t``: 8 bytes).
    * Per element, the ``unsigned int`` length of its upper-level lists (4 bytes), then the lists:
      ``element_levels_[i] * size_links_per_element_`` bytes with ``size_links_per_element_ = maxM_ *
      sizeof(tableint) + sizeof(linklistsizeint)``, ``maxM_ = M`` (4M + 4 bytes).

    An element's level is ``(int)(-log(U) * mult_)`` with ``U`` uniform on (0, 1) and ``mult_ = 1 / log(M)``
    (``getRandomLevel``), so ``P(level >= l) = M**-l`` and the expected number of upper levels is
    ``sum over l >= 1 of M**-l = 1 / (M - 1)``. Everything else is exact.

    The in-process index also holds bookkeeping that is not serialised (the label hash map, a lock and a
    list pointer per element); `memory_assumption` says so wherever the figure is shown.
    """

    dimension: int
    M: int

    HEADER_BYTES = 96
    _TABLEINT = 4
    _LABEL = 8
    _LIST_SIZE = 4

    def __post_init__(self) -> None:
        _check_count("dimension", self.dimension, minimum=1)
        # hnswlib cannot build M = 1: mult_ = 1 / log(1) is infinite, so is every level.
        _check_count("M", self.M, minimum=2)

    @property
    def vector_bytes(self) -> int:
        return self.dimension * HNSW_COMPONENT_BYTES

    @property
    def level0_bytes(self) -> int:
        """``size_data_per_element_``: level-0 links, vector and label."""
        links = 2 * self.M * self._TABLEINT + self._LIST_SIZE
        return links + self.vector_bytes + self._LABEL

    @property
    def upper_level_bytes(self) -> int:
        """``size_links_per_element_``: the link list of one upper level."""
        return self.M * self._TABLEINT + self._LIST_SIZE

    @property
    def expected_upper_levels(self) -> float:
        return 1.0 / (self.M - 1)

    @property
    def element_bytes(self) -> float:
        """Expected bytes per element: level 0, the length of its upper lists, and the expected lists."""
        return self.level0_bytes + self._LIST_SIZE + self.upper_level_bytes * self.expected_upper_levels

    @property
    def graph_bytes_per_element(self) -> float:
        """What the graph adds to each vector: links, label and the expected upper levels."""
        return self.element_bytes - self.vector_bytes

    def index_bytes(self, documents: int) -> float:
        """Expected ``indexFileSize()`` of an index of ``documents`` elements."""
        _check_count("documents", documents, minimum=0)
        return self.HEADER_BYTES + documents * self.element_bytes

    def exact_index_bytes(self, levels: Sequence[int]) -> int:
        """``indexFileSize()`` of an index whose elements drew these levels (``element_levels_``)."""
        upper = sum(int(level) for level in levels)
        per_element = self.level0_bytes + self._LIST_SIZE
        return self.HEADER_BYTES + len(levels) * per_element + upper * self.upper_level_bytes


def flat_index_bytes(documents: int, dimension: int, component_bytes: int) -> int:
    """A flat (exact) index holds the vectors and nothing else."""
    for name, value in (
        ("documents", documents),
        ("dimension", dimension),
        ("component_bytes", component_bytes),
    ):
        _check_count(name, value, minimum=0)
    return documents * dimension * component_bytes


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Tokens the model reads for some texts, counted by its own tokenizer (or reported by its endpoint)."""

    texts: int
    tokens: int
    #: texts longer than the model reads, which it truncates at ``max_length`` (counted at that length)
    truncated: int
    max_length: int | None
    #: how they were counted, in words
    method: str

    @property
    def per_text(self) -> float:
        return self.tokens / self.texts if self.texts else math.nan


@dataclass(frozen=True, slots=True)
class Throughput:
    """Documents the model encoded in this run, and the seconds its encoder calls took."""

    texts: int
    seconds: float
    #: tokens of those texts, when the model's tokens could be counted
    tokens: int | None

    @property
    def texts_per_second(self) -> float:
        return self.texts / self.seconds if self.seconds > 0 else math.nan

    @property
    def tokens_per_second(self) -> float | None:
        if self.tokens is None:
            return None
        return self.tokens / self.seconds if self.seconds > 0 else math.nan


@dataclass(frozen=True, slots=True)
class ArmCapacity:
    """What one arm's run measured, on the index it built."""

    documents: int
    dimension: int
    dtype: str
    bytes_per_vector: int
    #: exact: the vectors; hnsw: hnswlib's own count of the index (`HnswIndex.memory_bytes`)
    index_bytes: int
    #: "exact" or "hnsw"; M is the graph's parameter for hnsw
    index_kind: str
    M: int | None
    document_tokens: TokenCount | None
    query_tokens: TokenCount | None
    #: None when the run encoded no document (every vector came from the embedding cache)
    throughput: Throughput | None
    #: per-query search latency on this index, and the ef it was searched with (hnsw)
    latency: Latency
    latency_ef: int | None
    price_per_million_tokens: float | None


@dataclass(frozen=True, slots=True)
class Estimate:
    """A projected figure and what it assumes; ``value`` is None when it cannot be projected (the
    assumption then says what is missing)."""

    value: float | None
    assumes: str


@dataclass(frozen=True, slots=True)
class Projection:
    """One arm at ``documents``; the query-side figures are None unless ``queries_per_month`` is declared."""

    documents: int
    index_bytes: Estimate
    embedding_tokens: Estimate
    embedding_cost: Estimate
    memory_cost_per_month: Estimate
    query_tokens_per_month: Estimate | None = None
    query_cost_per_month: Estimate | None = None
    search_core_hours_per_month: Estimate | None = None


def memory_assumption(capacity: ArmCapacity) -> str:
    """How index memory is counted for this arm's index kind."""
    if capacity.index_kind == "hnsw":
        layout = HnswLayout(capacity.dimension, _hnsw_m(capacity))
        return (
            f"hnswlib's layout: {layout.vector_bytes} B float32 vector + "
            f"{layout.graph_bytes_per_element:.2f} B graph per document (M={layout.M}: {2 * layout.M} "
            "level-0 links, label, 1/(M-1) expected upper levels), as index_file_size() counts it; "
            "not counted: hnswlib's label map and per-element locks"
        )
    return (
        f"flat index: {capacity.bytes_per_vector} B per vector ({capacity.dimension} x {capacity.dtype}), "
        "nothing else"
    )


def project(capacity: ArmCapacity, production: Production) -> Projection:
    """Scale one arm's measured capacity to ``production``; see `Estimate` for what each figure assumes."""
    n = production.documents
    index_bytes = _projected_index_bytes(capacity, n)
    memory = Estimate(index_bytes, f"{memory_assumption(capacity)}; one replica")
    tokens = _scaled_tokens(capacity.document_tokens, n, "documents")
    price = capacity.price_per_million_tokens
    projection = Projection(
        documents=n,
        index_bytes=memory,
        embedding_tokens=tokens,
        embedding_cost=_cost(tokens, price, "embedding every document once"),
        memory_cost_per_month=_memory_cost(index_bytes, production.memory_price_per_gb_month),
    )
    if production.queries_per_month is None:
        return projection
    queries = production.queries_per_month
    query_tokens = _scaled_tokens(capacity.query_tokens, queries, "queries a month")
    seconds = capacity.latency.p50_ms / 1000.0 * queries
    core_hours = Estimate(
        seconds / _SECONDS_PER_HOUR,
        f"{queries:,} queries a month at the single-threaded p50 latency measured here "
        f"({capacity.latency.p50_ms:.3g} ms on {capacity.documents:,} documents; not scaled to {n:,}), "
        "one core each",
    )
    return Projection(
        documents=n,
        index_bytes=projection.index_bytes,
        embedding_tokens=projection.embedding_tokens,
        embedding_cost=projection.embedding_cost,
        memory_cost_per_month=projection.memory_cost_per_month,
        query_tokens_per_month=query_tokens,
        query_cost_per_month=_cost(query_tokens, price, "embedding every query"),
        search_core_hours_per_month=core_hours,
    )


# ------------------------------------------------------------------------------------------------- internals


def _hnsw_m(capacity: ArmCapacity) -> int:
    if capacity.M is None:
        raise ValueError("an hnsw arm's capacity needs its M")
    return capacity.M


def _projected_index_bytes(capacity: ArmCapacity, documents: int) -> float:
    if capacity.index_kind == "hnsw":
        return HnswLayout(capacity.dimension, _hnsw_m(capacity)).index_bytes(documents)
    return float(documents * capacity.bytes_per_vector)


def _scaled_tokens(count: TokenCount | None, texts: int, what: str) -> Estimate:
    if count is None or count.texts == 0:
        return Estimate(None, "the model's tokens could not be counted (no tokenizer or usage figures)")
    truncated = f", {count.truncated:,} of them cut at {count.max_length}" if count.truncated else ""
    return Estimate(
        count.per_text * texts,
        f"{texts:,} {what} with this run's mean of {count.per_text:.1f} tokens ({count.method}; "
        f"{count.texts:,} texts counted{truncated})",
    )


def _cost(tokens: Estimate, price: float | None, what: str) -> Estimate:
    if price is None:
        return Estimate(None, "no price_per_million_tokens for this model")
    if tokens.value is None:
        return Estimate(None, tokens.assumes)
    return Estimate(tokens.value / _TOKENS_PER_PRICE * price, f"{what} at {price:g} per million tokens")


def _memory_cost(index_bytes: float, price: float | None) -> Estimate:
    if price is None:
        return Estimate(None, "no production.memory_price_per_gb_month declared")
    return Estimate(
        index_bytes / GB * price,
        f"the projected index memory at {price:g} per GB-month (GB = 10^9 bytes), one replica",
    )


def _check_count(name: str, value: object, *, minimum: int, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer from {minimum} to {maximum:,}, got {value!r}")


def _check_price(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_PRICE
    ):
        raise ValueError(f"{name} must be a number from 0 to {MAX_PRICE:,}, got {value!r}")


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
