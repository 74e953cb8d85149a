"""Variants of an embedding arm: the same model's vectors in another shape,
``SPEC?dims=N&precision=P&rescore=K``, derived from its float vectors (the embedding cache's, under the
model's own key), never encoded again.

* ``dims=N``: the first N dimensions, re-normalised (`quantization.truncated`; Matryoshka models are trained
  for it). A variant of float32 vectors is searched as any embedding arm is, with the golden set's index.
* ``precision=float16|int8|uint8|binary|ubinary``: the vectors (queries and documents) stored in that
  precision, value for value as sentence-transformers' ``quantize_embeddings`` stores them; int8 and uint8
  with ranges calibrated on the golden set's corpus (each dimension's minimum and maximum over its document
  vectors), recorded in the report. Searched exactly in the quantised domain (`quantized`: integer dot
  products, Hamming distance over packed bits) with the same tie rule and top-k contract as float search, or,
  for bits, with a FAISS binary index (``index: {faiss: "BIVF256"}``).
* ``rescore=K`` (with int8, uint8, binary or ubinary): the codes retrieve the top ``K x k`` (k: the deepest
  cutoff the golden set scores, the top k a service asks for), and those are rescored with the float query
  against the stored codes mapped back onto the float axis (`quantization.dequantized`: ``code * step + min``
  for int8/uint8, the 0/1 bits for binary), as sentence-transformers' ``semantic_search_faiss`` and
  ``semantic_search_usearch`` rescore: nothing beyond the codes is stored. The ranking holds those ``K x k``
  documents (fewer than the depth other arms rank when ``K x k`` is smaller).

* ``faiss=FACTORY`` with at most one of ``nprobe=N``, ``efSearch=N`` or ``recall_target=R`` (the golden
  file's ``index:`` keys): the arm's own FAISS index, searched instead of the golden set's, so that one run
  holds arms on several indexes (``?faiss=IVF64,PQ16x4&nprobe=4`` beside exact arms). It is built as a
  golden set's FAISS index is (`faiss_search`: the same code, the golden set's seed, the recall target
  reached against this arm's exact search), and its parameters are the arm's, in its fingerprint, its
  record and the control it is checked against; the other arms keep the golden set's index. The rules of
  precision and index are the golden set's: bits need a binary factory string (``BIVF64``), a binary
  factory string needs bits, float16 and int8 are searched exactly; and FAISS is not offered with filters.

Parameters combine (``?dims=512&precision=binary&rescore=4``), and join a model spec's own
(``NAME?device=cpu&dims=256``). A variant's fingerprint is its model's and its parameters; its vectors are
keyed by its model's alone, so a run of a model and its variants, and a rerun, encode each text once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_embeval.arms.capacity_measurement import TimedEncoder, measure_capacity
from pytest_embeval.arms.dense import DenseRetriever, DenseSearcher, ann_sample
from pytest_embeval.arms.embedding import Arm, EncoderError, Kind, canonical_json
from pytest_embeval.arms.faiss_search import FaissSearching
from pytest_embeval.arms.retriever import Embedder, Hits, IndexStats, RetrievalTask, Retriever, Searcher
from pytest_embeval.arms.usage import UsageCount
from pytest_embeval.core.capacity import ArmCapacity, FaissLayout, Latency
from pytest_embeval.golden.schema import FAISS_FILTERS, FAISS_PARAMETERS, HNSW_RECALL_TARGET, IndexSpec
from pytest_embeval.search.exact import (
    SCRATCH_BYTES,
    decode_keys,
    exact_search,
    padded,
    query_masks,
    ranking_keys,
    tie_ranks,
)
from pytest_embeval.search.faiss_index import (
    FAISS_EXTRA,
    FaissIndexError,
    check_factory,
    code_query_seconds,
    require_faiss,
)
from pytest_embeval.search.quantization import (
    BITS,
    CALIBRATED,
    PRECISIONS,
    VectorShape,
    calibration_ranges,
    dequantized,
    quantize,
    signs,
    truncated,
)
from pytest_embeval.search.quantized import codes_exact_in_float32, hamming_search, integer_search

__all__ = [
    "INDEX_PARAMETERS",
    "QUANTISED",
    "VARIANT_PARAMETERS",
    "QuantisedSearcher",
    "Variant",
    "VariantRetriever",
    "index_parameters",
    "own_index",
    "shared_embedder",
    "split_variant",
    "variant",
    "variant_record",
]

#: The precisions whose candidates ``rescore`` rescores: the ones that lose more than float16's rounding.
QUANTISED = (*CALIBRATED, *BITS)
#: What a variant's ``?`` part may say, beside its model spec's own parameters.
VARIANT_PARAMETERS = {
    "dims": "the first N dimensions, an integer >= 1",
    "precision": " | ".join(PRECISIONS),
    "rescore": f"rescore K x k candidates with the float query, an integer >= 1 ({'/'.join(QUANTISED)})",
    "faiss": "the arm's own FAISS index, a factory string such as IVF64,PQ16x4",
    "nprobe": "with faiss, an integer >= 1",
    "efSearch": "with faiss, an integer >= 1",
    "recall_target": "with faiss, a number in (0, 1]",
}
#: The golden file's ``index:`` keys a variant takes for an index of its own: the factory string, then at
#: most one of its search parameter or the recall target that chooses it for the arm.
INDEX_PARAMETERS = ("faiss", *FAISS_PARAMETERS, HNSW_RECALL_TARGET)


@dataclass(frozen=True, slots=True)
class Variant:
    """The shape asked of a model's vectors: its first ``dims`` dimensions (None: all), ``precision`` and
    ``rescore``, and the arm's own ``index`` (a FAISS index; None: the golden set's)."""

    dims: int | None = None
    precision: str = "float32"
    rescore: int | None = None
    index: IndexSpec | None = None

    def as_dict(self) -> dict[str, object]:
        shape: dict[str, object] = {"dims": self.dims, "precision": self.precision, "rescore": self.rescore}
        # Only when given: a variant searched with the golden set's index keeps the fingerprint it had.
        return shape if self.index is None else {**shape, "index": index_parameters(self.index)}

    def suffix(self) -> str:
        """The parameters as a spec writes them (``?dims=256&precision=binary&faiss=BIVF64&nprobe=4``), in
        this order."""
        pairs = [
            f"{name}={value}"
            for name, value in (("dims", self.dims), ("precision", self.precision), ("rescore", self.rescore))
            if value is not None and not (name == "precision" and value == "float32")
        ]
        if self.index is not None:
            pairs += [f"{name}={value}" for name, value in index_parameters(self.index).items()]
        return "?" + "&".join(pairs)


def index_parameters(index: IndexSpec) -> dict[str, str | int | float]:
    """A FAISS `IndexSpec` as the golden file's ``index:`` keys write it (``faiss``, then ``nprobe``,
    ``efSearch`` or ``recall_target``)."""
    return {name: value for name, value in index.as_dict().items() if name != "kind"}


def _problem(spec: str, text: str) -> EncoderError:
    return EncoderError(f"model spec {spec!r}: {text}")


def _count(spec: str, name: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise _problem(spec, f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _fraction(spec: str, name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 0 < number <= 1:
        raise _problem(spec, f"{name} must be a number in (0, 1], got {value!r}")
    return number


def _own_index(spec: str, given: dict[str, str], precision: str) -> IndexSpec | None:
    """The arm's own FAISS index its parameters declare, checked as the golden file's ``index:`` is and
    against the precision it holds (None: none declared)."""
    searched = [name for name in INDEX_PARAMETERS[1:] if name in given]
    if "faiss" not in given:
        if searched:
            name = searched[0]
            raise _problem(
                spec, f"{name}={given[name]} needs faiss=FACTORY: it sets the arm's own FAISS index's search"
            )
        return None
    factory = given["faiss"]
    if len(searched) > 1:
        raise _problem(
            spec, f"give one of {', '.join(searched)}: the recall target chooses the parameter per arm"
        )
    binary = factory.startswith("B")
    if binary and precision not in BITS:
        raise _problem(
            spec,
            f"faiss={factory} is a binary index: it holds packed bits, which only precision=binary or "
            "precision=ubinary stores",
        )
    index = IndexSpec("faiss", factory=factory)
    problem = _shape_problem(precision, index, "its own")
    if problem is not None:
        raise _problem(spec, problem)
    try:
        require_faiss()
    except ImportError:
        raise _problem(spec, f"faiss={factory} needs FAISS, which is not installed: {FAISS_EXTRA}") from None
    if not searched:
        return index
    name = searched[0]
    if name == HNSW_RECALL_TARGET:
        return dataclasses.replace(index, recall_target=_fraction(spec, name, given[name]))
    return dataclasses.replace(index, faiss_parameter=(name, _count(spec, name, given[name])))


def split_variant(spec: str) -> tuple[str, Variant | None]:
    """The model spec without its variant parameters (its own ``?`` parameters kept, in order), and the
    `Variant` they ask for (None: none given). A bad value is an `EncoderError` naming the spec: an unknown
    precision, a count below 1, a parameter given twice, ``rescore`` without a quantised precision, an own
    index's search parameter without ``faiss`` or one its precision cannot be searched with (`_own_index`)."""
    model, question, query = spec.partition("?")
    if not question:
        return spec, None
    kept: list[str] = []
    given: dict[str, str] = {}
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name not in VARIANT_PARAMETERS:
            kept.append(pair)
            continue
        if name in given:
            raise _problem(spec, f"parameter {name!r} given twice")
        if not value:
            raise _problem(spec, f"parameter {name!r} needs a value ({VARIANT_PARAMETERS[name]})")
        given[name] = value
    if not given:
        return spec, None
    precision = given.get("precision", "float32")
    if precision not in ("float32", *PRECISIONS):
        raise _problem(spec, f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    dims = _count(spec, "dims", given["dims"]) if "dims" in given else None
    rescore = _count(spec, "rescore", given["rescore"]) if "rescore" in given else None
    if rescore is not None and precision not in QUANTISED:
        raise _problem(
            spec,
            f"rescore={rescore} needs a quantised precision ({', '.join(QUANTISED)}): it rescores what the "
            f"codes retrieved with the float query, and {precision} vectors are searched at full precision",
        )
    index = _own_index(spec, given, precision)
    base = model + ("?" + "&".join(kept) if kept else "")
    return base, Variant(dims=dims, precision=precision, rescore=rescore, index=index)


@dataclass(frozen=True, slots=True)
class VariantRetriever(DenseRetriever):
    """An embedding arm in another shape: ``arm`` is its model's (what is embedded, and the cache key),
    ``variant`` the shape, ``given`` the spec reports show."""

    variant: Variant = field(default_factory=Variant)
    given: str = ""

    @property
    def spec(self) -> str:
        return self.given

    @property
    def fingerprint(self) -> str:
        return canonical_json({"model": self.arm.fingerprint, "variant": self.variant.as_dict()})

    def open(self, task: RetrievalTask) -> Searcher:
        if self.variant.index is not None:
            task = _own_task(task, self.variant.index, self.spec)
        opened = self.embedded(task)
        dimension = int(opened.documents.shape[1])
        variant = self.variant
        dims = dimension if variant.dims is None else variant.dims
        if dims > dimension:
            raise EncoderError(
                f"{task.role} model spec {self.spec!r}: dims={dims} but the model's vectors have {dimension} "
                "dimensions"
            )
        _check_index(self.spec, variant.precision, task)
        documents, queries = truncated(opened.documents, dims), truncated(opened.queries, dims)
        if variant.precision == "float32":
            searcher = DenseSearcher(
                task, self.arm, documents, queries, opened.timer, opened.usage, shape=VectorShape(dims)
            )
            searcher.build()
            return searcher
        ranges = calibration_ranges(documents) if variant.precision in CALIBRATED else None
        shape = VectorShape(dims, variant.precision, variant.rescore, ranges)
        quantised = QuantisedSearcher(
            task,
            self.arm,
            quantize(documents, shape.precision, ranges),
            quantize(queries, shape.precision, ranges),
            queries,
            shape,
            timer=opened.timer,
            usage=opened.usage,
        )
        if task.index.kind == "faiss":
            quantised.faiss_index().index()
        return quantised


def _own_task(task: RetrievalTask, index: IndexSpec, spec: str) -> RetrievalTask:
    """``task`` searched with the arm's own ``index`` instead of the golden set's (outside any vector
    database it opened); `EncoderError` naming the spec when the golden set's queries have filters, which
    FAISS is not offered with, before anything is embedded."""
    if task.allowed is not None:
        raise EncoderError(f"{task.role} model spec {spec!r}: faiss={index.factory}: {FAISS_FILTERS}")
    return dataclasses.replace(task, index=index, engine=None)


def own_index(retriever: Retriever) -> IndexSpec | None:
    """The index an arm declares for itself (a variant's ``faiss=``), searched instead of the golden
    set's; None for every other arm."""
    return retriever.variant.index if isinstance(retriever, VariantRetriever) else None


def _shape_problem(precision: str, index: IndexSpec, whose: str) -> str | None:
    """Why vectors stored in ``precision`` cannot be searched with ``index`` (``whose`` index it is, for
    the message), or None: a stored precision is searched exactly in its own domain, or (bits) by a FAISS
    binary index; hnswlib and FAISS's float indexes hold float vectors."""
    if precision == "float32" or index.kind == "exact":
        return None
    if index.kind == "faiss" and precision in BITS and str(index.factory).startswith("B"):
        return None
    if precision in BITS:
        wanted = "exact, or a FAISS binary index (index: {faiss: 'BIVF1024'}, 'BHNSW32', 'BFlat')"
    else:
        wanted = "exact (a FAISS factory string stores its own precision: 'IVF1024,SQ8', 'HNSW32,SQfp16')"
    declared = f"faiss {index.factory!r}" if index.kind == "faiss" else index.kind
    return f"precision={precision} vectors cannot be searched with {whose} index ({declared}): use {wanted}"


def _check_index(spec: str, precision: str, task: RetrievalTask) -> None:
    """`EncoderError` naming the spec when the task's index cannot search ``precision`` (`_shape_problem`)."""
    problem = _shape_problem(precision, task.index, "the golden set's")
    if problem is not None:
        raise EncoderError(f"{task.role} model spec {spec!r}: {problem}")


def variant(
    base: Arm | DenseRetriever,
    *,
    dims: int | None = None,
    precision: str = "float32",
    rescore: int | None = None,
    index: IndexSpec | None = None,
) -> VariantRetriever:
    """The arm of ``base``'s vectors in another shape (what ``SPEC?dims=…&precision=…&rescore=…`` resolves
    to), searched with its own FAISS ``index`` when given (``…&faiss=…``), for a ``conftest.py`` fixture;
    checked as a spec's parameters are."""
    retriever = base if isinstance(base, DenseRetriever) else DenseRetriever(base)
    suffix = Variant(dims=dims, precision=precision, rescore=rescore, index=index).suffix()
    if suffix == "?":
        raise ValueError("a variant changes dims, precision, rescore or the index: none was given")
    spec = retriever.spec + (suffix if "?" not in retriever.spec else "&" + suffix[1:])
    _, checked = split_variant(spec)
    assert checked is not None  # the suffix names at least one parameter
    return variant_arm(retriever, checked, spec)


def variant_arm(retriever: DenseRetriever, asked: Variant, spec: str) -> VariantRetriever:
    """``retriever``'s model as the variant ``asked``; `EncoderError` when ``dims`` exceeds a dimension the
    model declares before anything is encoded, or FAISS cannot build its own index over vectors of that
    many dimensions (others are checked on the first vectors)."""
    dimension = retriever.arm.dimension
    if asked.dims is not None and dimension is not None and asked.dims > dimension:
        raise _problem(spec, f"dims={asked.dims} but the model's vectors have {dimension} dimensions")
    if asked.index is not None and asked.index.factory is not None and dimension is not None:
        try:
            check_factory(asked.index.factory, asked.dims or dimension, binary=asked.precision in BITS)
        except FaissIndexError as error:
            raise _problem(spec, str(error)) from None
    return VariantRetriever(retriever.arm, variant=asked, given=spec)


class QuantisedSearcher:
    """Exact search (or a FAISS binary index) over a variant's codes, with rescoring when it asks for it."""

    def __init__(
        self,
        task: RetrievalTask,
        arm: Arm,
        codes: np.ndarray,
        query_codes: np.ndarray,
        queries: np.ndarray,
        shape: VectorShape,
        *,
        timer: TimedEncoder | None = None,
        usage: tuple[UsageCount, UsageCount] | None = None,
    ) -> None:
        self.task = task
        self.arm = arm
        #: the stored document codes and the query codes they are searched with
        self.codes = codes
        self.query_codes = query_codes
        #: the float queries (first ``dims``, re-normalised) that rescoring scores with
        self.queries = queries
        self.shape = shape
        self.timer = timer
        self.usage = usage
        self._faiss: FaissSearching | None = None
        self._stats: dict[int, IndexStats] = {}
        self._ranks: np.ndarray | None = None

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> QuantisedSearcher:
        # A slice keeps the largest corpus's calibration (its codes are the same vectors' codes) and the
        # index this arm was opened with (its own, when it declares one).
        sliced = dataclasses.replace(task, index=self.task.index)
        codes = self.codes[rows]
        return QuantisedSearcher(sliced, self.arm, codes, self.query_codes, self.queries, self.shape)

    def exact_twin(self) -> None:
        """None: a variant's codes are searched here, never in a vector database (`_check_index`)."""
        return None

    def close(self) -> None:
        """Nothing built outside this process."""

    def _window(self, depth: int) -> int:
        """Candidates the codes retrieve: ``depth``, or with rescoring K x the golden set's deepest cutoff."""
        if self.shape.rescore is None:
            return depth
        return self.shape.rescore * (self.task.cutoff or depth)

    def _sample(self) -> np.ndarray:
        return ann_sample(self.query_codes.shape[0], self.task.seed)

    def _exact(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k of the query rows by their codes (`quantized`), float64 scores."""
        queries, allowed, ids = self.query_codes[rows], self.task.allowed_for(rows), self.task.doc_ids
        if self.shape.precision in BITS:
            return hamming_search(queries, self.codes, k, dims=self.shape.dims, doc_ids=ids, allowed=allowed)
        if self.shape.precision in CALIBRATED:
            return integer_search(queries, self.codes, k, doc_ids=ids, allowed=allowed)
        positions, scores = exact_search(queries, self.codes, k, doc_ids=ids, allowed=allowed)
        return positions, scores.astype(np.float64)

    def faiss_index(self) -> FaissSearching:
        if self._faiss is None:
            self._faiss = FaissSearching(
                self.task,
                self.codes,
                self.query_codes,
                exact=lambda rows, depth: self._exact(rows, depth)[0],
                sample=self._sample(),
                dims=self.shape.dims,
            )
        return self._faiss

    def search(self, rows: np.ndarray, depth: int) -> Hits:
        window = min(self._window(depth), self.codes.shape[0])
        if self.task.index.kind == "faiss":
            positions, scores = self.faiss_index().search(rows, window)
        else:
            positions, scores = self._exact(rows, window)
        if self.shape.rescore is not None:
            positions, scores = self._rescored(rows, positions)
        width = min(depth, self.codes.shape[0])
        if positions.shape[1] >= width:
            return Hits(positions[:, :width], scores[:, :width])
        short = Hits.empty(rows.size, width)
        short.positions[:, : positions.shape[1]] = positions
        short.scores[:, : positions.shape[1]] = scores
        return short

    def _rescored(self, rows: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The candidates of each query ranked by the float query's dot product with their dequantised codes
        (float64, rounded to float32 as exact search scores), equal scores by id, padding kept last."""
        if self._ranks is None:
            self._ranks = tie_ranks(self.task.doc_ids)
        ranks, position_of_rank = self._ranks, np.argsort(self._ranks)
        found = candidates >= 0
        safe = np.where(found, candidates, 0)
        positions = np.empty(candidates.shape, dtype=np.int64)
        scores = np.empty(candidates.shape, dtype=np.float64)
        step = max(1, SCRATCH_BYTES // (8 * max(1, candidates.shape[1]) * self.shape.dims))
        for start in range(0, rows.size, step):
            block = slice(start, start + step)
            stored = dequantized(self.codes[safe[block]], self.shape)
            exact = np.einsum("id,ikd->ik", self.queries[rows[block]].astype(np.float64), stored)
            keys = ranking_keys(exact.astype(np.float32), ranks[safe[block]])
            query_masks(keys, found[block])
            keys = np.sort(keys, axis=1)[:, ::-1]
            found_positions, found_scores = padded(keys, *decode_keys(keys, position_of_rank))
            positions[block], scores[block] = found_positions, found_scores
        return positions, scores

    def vectors(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Vectors whose dot products are this arm's scores, for completing tie groups: ±1 for bits, the
        codes for int8/uint8 (when float32 scores them exactly) and float16; None with rescoring (its
        ranking is of candidates, not of the corpus)."""
        if self.shape.rescore is not None:
            return None
        if self.shape.precision in BITS:
            return signs(self.query_codes, self.shape.dims), signs(self.codes, self.shape.dims)
        if self.shape.precision in CALIBRATED:
            exact = codes_exact_in_float32(self.query_codes, self.codes)
            return (self.query_codes, self.codes) if exact else None
        return self.query_codes, self.codes

    def index_stats(self, depth: int) -> IndexStats:
        if depth not in self._stats:
            dims = self.shape.dims
            if self.task.index.kind == "faiss":
                searching = self.faiss_index()
                stats = searching.stats(self._window(depth))
                memory = searching.index().memory_bytes()
                self._stats[depth] = IndexStats(dims, memory, faiss=stats, shape=self.shape)
            else:
                memory = self.codes.shape[0] * self.shape.bytes_per_vector
                self._stats[depth] = IndexStats(dims, memory, shape=self.shape)
        return self._stats[depth]

    def capacity(self, depth: int) -> ArmCapacity | None:
        if not self.task.measure:
            return None
        stats = self.index_stats(depth)
        layout, value = None, None
        if stats.faiss is not None:
            searching = self.faiss_index()
            parameter = searching.index().parameter
            layout = FaissLayout(searching.factory, stats.faiss.fixed_bytes, parameter)
            value = None if parameter is None else int(stats.faiss.parameters[parameter])
            latency = stats.faiss.latency
        else:
            sample = self._sample()
            seconds, _ = code_query_seconds(
                self.query_codes[sample],
                self.codes,
                min(self._window(depth), self.codes.shape[0]),
                precision=self.shape.precision,
                dims=self.shape.dims,
            )
            latency = Latency.of(seconds)
        return measure_capacity(
            self.arm,
            documents=self.codes,
            document_texts=self.task.doc_texts,
            query_texts=self.task.query_texts,
            timer=self.timer,
            document_usage=None if self.usage is None else self.usage[0],
            query_usage=None if self.usage is None else self.usage[1],
            index=stats.kind,
            index_bytes=stats.memory_bytes,
            M=None,
            latency=latency,
            latency_ef=value,
            faiss=layout,
            shape=self.shape,
        )


def shared_embedder(embedder: Embedder, retrievers: Sequence[Retriever]) -> Embedder:
    """``embedder``, computing once per run the vectors that a variant and another of ``retrievers`` embed
    with the same model (a model and its variants, two variants of one model): kept for the run by model
    fingerprint, kind and texts. Other models are passed through, so nothing is kept that is not reused
    (and a run of one model against itself reads its vectors twice from the cache, as it always has)."""
    arms: dict[str, list[DenseRetriever]] = {}
    for retriever in retrievers:
        if isinstance(retriever, DenseRetriever):
            arms.setdefault(retriever.arm.fingerprint, []).append(retriever)
    shared = {
        fingerprint
        for fingerprint, those in arms.items()
        if len(those) > 1 and any(isinstance(one, VariantRetriever) for one in those)
    }
    if not shared:
        return embedder
    kept: dict[tuple[str, Kind], tuple[tuple[str, ...], np.ndarray]] = {}

    def embed_once(arm: Arm, texts: Sequence[str], kind: Kind, **options: Any) -> np.ndarray:
        if arm.fingerprint not in shared:
            return embedder(arm, texts, kind, **options)
        key, written = (arm.fingerprint, kind), tuple(texts)
        found = kept.get(key)
        if found is not None and found[0] == written:
            return found[1]
        vectors = embedder(arm, texts, kind, **options)
        kept[key] = (written, vectors)
        return vectors

    return embed_once


def variant_record(retriever: Retriever) -> dict[str, Any] | None:
    """What a report says of a variant arm beside its index's ``vectors``: its model's spec and fingerprint,
    and the parameters asked, its own ``index`` among them when it declares one (None for any other
    arm)."""
    if not isinstance(retriever, VariantRetriever):
        return None
    base = retriever.arm
    return {"model": base.spec, "model_fingerprint": base.fingerprint, **retriever.variant.as_dict()}
