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

Parameters combine (``?dims=512&precision=binary&rescore=4``), and join a model spec's own
(``NAME?device=cpu&dims=256``). A variant's fingerprint is its model's and its parameters; its vectors are
keyed by its model's alone, so a run of a model and its variants, and a rerun, encode each text once.
"""

from __future__ import annotations

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
from pytest_embeval.search.exact import (
    SCRATCH_BYTES,
    decode_keys,
    exact_search,
    padded,
    query_masks,
    ranking_keys,
    tie_ranks,
)
from pytest_embeval.search.faiss_index import code_query_seconds
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
    "QUANTISED",
    "VARIANT_PARAMETERS",
    "QuantisedSearcher",
    "Variant",
    "VariantRetriever",
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
}


@dataclass(frozen=True, slots=True)
class Variant:
    """The shape asked of a model's vectors: its first ``dims`` dimensions (None: all), ``precision`` and
    ``rescore``."""

    dims: int | None = None
    precision: str = "float32"
    rescore: int | None = None

    def as_dict(self) -> dict[str, int | str | None]:
        return {"dims": self.dims, "precision": self.precision, "rescore": self.rescore}

    def suffix(self) -> str:
        """The parameters as a spec writes them (``?dims=256&precision=binary``), in this order."""
        pairs = [
            f"{name}={value}"
            for name, value in (("dims", self.dims), ("precision", self.precision), ("rescore", self.rescore))
            if value is not None and not (name == "precision" and value == "float32")
        ]
        return "?" + "&".join(pairs)


def _problem(spec: str, text: str) -> EncoderError:
    return EncoderError(f"model spec {spec!r}: {text}")


def _count(spec: str, name: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise _problem(spec, f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def split_variant(spec: str) -> tuple[str, Variant | None]:
    """The model spec without its variant parameters (its own ``?`` parameters kept, in order), and the
    `Variant` they ask for (None: none given). A bad value is an `EncoderError` naming the spec: an unknown
    precision, a count below 1, a parameter given twice, ``rescore`` without a quantised precision."""
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
    base = model + ("?" + "&".join(kept) if kept else "")
    return base, Variant(dims=dims, precision=precision, rescore=rescore)


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


def _check_index(spec: str, precision: str, task: RetrievalTask) -> None:
    """A stored precision is searched exactly in its own domain, or (bits) by a FAISS binary index; hnswlib
    and FAISS's float indexes hold float vectors: `EncoderError` naming the spec otherwise."""
    index = task.index
    if precision == "float32" or index.kind == "exact":
        return
    if index.kind == "faiss" and precision in BITS and str(index.factory).startswith("B"):
        return
    if precision in BITS:
        wanted = "exact, or a FAISS binary index (index: {faiss: 'BIVF1024'}, 'BHNSW32', 'BFlat')"
    else:
        wanted = "exact (a FAISS factory string stores its own precision: 'IVF1024,SQ8', 'HNSW32,SQfp16')"
    declared = f"faiss {index.factory!r}" if index.kind == "faiss" else index.kind
    raise EncoderError(
        f"{task.role} model spec {spec!r}: precision={precision} vectors cannot be searched with the golden "
        f"set's index ({declared}): use {wanted}"
    )


def variant(
    base: Arm | DenseRetriever,
    *,
    dims: int | None = None,
    precision: str = "float32",
    rescore: int | None = None,
) -> VariantRetriever:
    """The arm of ``base``'s vectors in another shape (what ``SPEC?dims=…&precision=…&rescore=…`` resolves
    to), for a ``conftest.py`` fixture; checked as a spec's parameters are."""
    retriever = base if isinstance(base, DenseRetriever) else DenseRetriever(base)
    suffix = Variant(dims=dims, precision=precision, rescore=rescore).suffix()
    if suffix == "?":
        raise ValueError("a variant changes dims, precision or rescore: none was given")
    spec = retriever.spec + (suffix if "?" not in retriever.spec else "&" + suffix[1:])
    _, checked = split_variant(spec)
    assert checked is not None  # the suffix names at least one parameter
    return variant_arm(retriever, checked, spec)


def variant_arm(retriever: DenseRetriever, asked: Variant, spec: str) -> VariantRetriever:
    """``retriever``'s model as the variant ``asked``; `EncoderError` when ``dims`` exceeds a dimension the
    model declares before anything is encoded (others are checked on the first vectors)."""
    dimension = retriever.arm.dimension
    if asked.dims is not None and dimension is not None and asked.dims > dimension:
        raise _problem(spec, f"dims={asked.dims} but the model's vectors have {dimension} dimensions")
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
        # A slice keeps the largest corpus's calibration: its codes are the same vectors' codes.
        return QuantisedSearcher(task, self.arm, self.codes[rows], self.query_codes, self.queries, self.shape)

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
    and the parameters asked (None for any other arm)."""
    if not isinstance(retriever, VariantRetriever):
        return None
    base = retriever.arm
    return {"model": base.spec, "model_fingerprint": base.fingerprint, **retriever.variant.as_dict()}
