"""Encoder arms and the one validated, normalised embedding path both arms go through (`embed`).

An :class:`Arm` is an encoder plus everything that identifies what it computes: the name shown in reports,
the prompts actually applied, and a fingerprint that keys the embedding cache. Specs become arms in
`model_specs`; nothing here imports torch or sentence-transformers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from pytest_embeval.arms.batching import Batching, completed, plan
from pytest_embeval.arms.usage import TokenUsage
from pytest_embeval.core.step_progress import step

if TYPE_CHECKING:
    from pytest_embeval.arms.devices import DeviceRecord
    from pytest_embeval.arms.tokens import TokenCounter

__all__ = [
    "KINDS",
    "Arm",
    "EncodedBatch",
    "Encoder",
    "EncoderError",
    "Kind",
    "LazyEncoder",
    "canonical_json",
    "embed",
    "error_summary",
    "unit_rows",
    "validate_texts",
]

Kind = Literal["query", "document"]
KINDS: tuple[Kind, ...] = ("query", "document")
#: Specs for a model behind an OpenAI-compatible endpoint start with this (see `endpoint`).
ENDPOINT_PREFIX = "openai:"


class EncoderError(Exception):
    """A model spec cannot be resolved, or an encoder returned bad vectors. The message names the spec."""


class Encoder(Protocol):
    """What the pipeline needs from a model: one embedding row per text, for queries and for documents.

    An encoder may also have a ``batching`` attribute (a `batching.Batching`): how :func:`embed` cuts texts
    into its calls and how many calls it makes at once; and its methods may return an :class:`EncodedBatch`
    (the vectors with the tokens each text cost) instead of an array.
    """

    def encode_query(self, texts: list[str]) -> np.ndarray | EncodedBatch: ...

    def encode_document(self, texts: list[str]) -> np.ndarray | EncodedBatch: ...


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """One call's vectors, and the tokens the endpoint counted for each text (its ``usage`` for the request,
    apportioned to the texts), which the embedding cache keeps so that a cached rerun knows what it saved."""

    vectors: np.ndarray
    tokens: np.ndarray


@dataclass(frozen=True, slots=True)
class Arm:
    """One side of the comparison. The role ("incumbent"/"candidate") is kept by the caller."""

    # What reports show: the spec as the user gave it, or a readable name chosen by whoever built the arm.
    spec: str
    encoder: Encoder
    # Canonical JSON (stable across processes and machines for the same model files): what the embedding
    # cache is keyed by, and what the report shows so two runs can be told apart.
    fingerprint: str
    prompts: Mapping[str, str]
    #: What a million tokens cost this arm, as declared by whoever built it (None: not declared); read by the
    #: capacity projection and by the report's usage costs.
    price_per_million_tokens: float | None = None
    # Counts the tokens the model reads per text (see `tokens`); None: they cannot be counted. Not part of
    # the fingerprint: it changes no vector.
    token_counter: TokenCounter | None = None
    #: The tokens this arm's endpoint counted, for arms billed by the token (`endpoint.openai_arm`); None for
    #: in-process models. ``usage.snapshot()`` is a `usage.UsageCount`: ``tokens`` the endpoint reported for
    #: the requests this process sent, ``requests``, and ``cached_tokens``, what the texts the embedding cache
    #: served had cost when they were embedded (tokens not spent). Snapshots subtract, so what one golden set
    #: used is ``after - before``.
    usage: TokenUsage | None = None
    #: Where an in-process model runs (`devices.DeviceRecord`), for the report; None for an encoder that
    #: does not say (a custom object, an endpoint). Not part of the fingerprint: a model's vectors on the CPU
    #: and on a GPU agree to float32 rounding, so they share cache entries (a dtype other than float32 is
    #: part of the fingerprint).
    device: DeviceRecord | None = None

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the fingerprint, for file names and compact cache keys."""
        return "sha256:" + hashlib.sha256(self.fingerprint.encode("utf-8")).hexdigest()


class LazyEncoder:
    """An :class:`Encoder` that builds the real one on its first ``encode_*`` call.

    Lets an arm be fingerprinted, and its cached embeddings served, without loading the model: a run whose
    texts are all cached never calls ``load``.
    """

    __slots__ = ("_encoder", "_load", "batching", "label")

    def __init__(self, load: Callable[[], Encoder], label: str, batching: Batching | None = None) -> None:
        self._load = load
        self._encoder: Encoder | None = None
        self.label = label
        #: how `embed` calls the encoder (the loaded one's, known before loading); None: embed's default
        self.batching = batching

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    def get(self) -> Encoder:
        """The real encoder, loaded now if it was not yet (a progress step naming it)."""
        if self._encoder is None:
            with step(f"loading model {self.label}"):
                self._encoder = self._load()
        return self._encoder

    def encode_query(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        return self.get().encode_query(texts)

    def encode_document(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        return self.get().encode_document(texts)

    def __repr__(self) -> str:
        return f"LazyEncoder({self.label!r}, {'loaded' if self.loaded else 'not loaded'})"


# ---------------------------------------------------------------------------------------------- resolve_model


def error_summary(exc: BaseException) -> str:
    """The first line of an exception, after its class name unless it is one of ours (it says what it is)."""
    lines = str(exc).strip().splitlines()
    if isinstance(exc, EncoderError) and lines:
        return lines[0]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


# ------------------------------------------------------------------------------------- sentence-transformers
#
# A sentence-transformers fingerprint is canonical JSON of:
#   class           "SentenceTransformer" (the class that encodes)
#   weights         {relative path: sha256} of the weight files, when the model has a folder; with it
#   config          sha256 over every other file of the folder (configs, tokenizer, pooling, ...), docs and
#                   dotfiles excluded: no path and no name, so a cache shared across machines hits;
#   otherwise name, "revision" (a Hub commit) or weights {"<state_dict>": sha256 of the tensors}, and
#   modules         a hash of the module configuration as loaded (the model has no folder to read it from);
#   prompts, normalize, max_seq_length, truncate_dim, and dtype when it is not float32.
# For a folder, the files alone give the same JSON as the loaded model (tests check it): the prompts and the
# maximum sequence length are read as sentence-transformers reads them, truncate_dim is only a load-time
# argument (never passed here), and a folder loads in its checkpoint's dtype, which the weight hashes pin.


def canonical_json(payload: Mapping[str, object]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ----------------------------------------------------------------------------------------------------- embed


def validate_texts(texts: Sequence[str], kind: str) -> None:
    """Raise ``ValueError`` unless ``kind`` is "query" or "document" and every text is a ``str``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'query' or 'document', got {kind!r}")
    if all(type(text) is str for text in texts):
        return
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{position}] is {type(text).__name__}, not str: {text!r}")


#: ``on_batch(rows, vectors, tokens)``: the rows of one call (positions in the texts), their unit vectors, and
#: the tokens each cost (None when the encoder does not say).
OnBatch = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], None]


def embed(
    arm: Arm,
    texts: Sequence[str],
    kind: Kind,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = 64,
    role: str | None = None,
    on_batch: OnBatch | None = None,
) -> np.ndarray:
    """Encode ``texts`` as queries or documents: float32 ``(len(texts), d)``, rows L2-normalised.

    The encoder is called in batches of ``batch_size``, longest texts first (as sentence-transformers orders
    one ``encode`` call), so a batch pads to similar lengths: in corpus order, batches of mixed lengths made
    MiniLM 13 % slower on nfcorpus. An encoder with a ``batching`` attribute (`batching.Batching`, e.g. an
    endpoint's) is called as that says instead: by count and token budget, several calls at once.
    ``progress(done, total)`` comes before the first batch and after each, and ``on_batch`` gets each batch
    whose vectors are all valid as soon as it returns (the embedding cache stores it then, so an interrupted
    run keeps it). The
    output is validated (2-D, one row per text, one dimension for all batches, finite, no zero vector) and
    any problem raises :class:`EncoderError` naming ``role`` (e.g. "candidate"), the spec and the kind. No
    texts: an empty ``(0, 0)`` array, without calling the model.
    """
    validate_texts(texts, kind)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    total = len(texts)
    if total == 0:
        return np.empty((0, 0), dtype=np.float32)

    who = f"{role} encoder {arm.spec!r}" if role else f"encoder {arm.spec!r}"
    method = arm.encoder.encode_query if kind == "query" else arm.encoder.encode_document
    batching = getattr(arm.encoder, "batching", None)
    if not isinstance(batching, Batching):
        batching = Batching(size=batch_size)
    batches = plan(texts, batching)

    def call(rows: np.ndarray) -> np.ndarray | EncodedBatch:
        try:
            return method([texts[row] for row in rows.tolist()])
        except Exception as exc:
            raise EncoderError(f"{who} failed on {_batch_where(rows, kind)}: {error_summary(exc)}") from exc

    out: np.ndarray | None = None
    bad_rows: list[int] = []
    zero_rows: list[int] = []
    done = 0
    if progress is not None:
        progress(0, total)  # the first batch (and a model loading for it) takes time too
    for number, raw in completed(call, batches, batching.concurrency):
        rows = batches[number]
        tokens = raw.tokens if isinstance(raw, EncodedBatch) else None
        vectors = _as_float_matrix(
            raw.vectors if isinstance(raw, EncodedBatch) else raw, who=who, kind=kind, rows=len(rows)
        )
        if out is None:
            out = np.empty((total, vectors.shape[1]), dtype=np.float32)
        elif vectors.shape[1] != out.shape[1]:
            raise EncoderError(
                f"{who} returned {vectors.shape[1]}-dimensional vectors for {_batch_where(rows, kind)} "
                f"but {out.shape[1]}-dimensional ones before"
            )
        out[rows], finite, norms = unit_rows(vectors)
        valid = finite & (norms > 0.0)
        bad_rows.extend(rows[~finite].tolist())
        zero_rows.extend(rows[finite & (norms == 0.0)].tolist())
        if on_batch is not None and valid.all():
            on_batch(rows, out[rows], tokens)
        done += len(rows)
        if progress is not None:
            progress(done, total)
    assert out is not None  # total > 0, so at least one batch ran
    if bad_rows:
        raise EncoderError(
            f"{who} returned NaN or inf in {len(bad_rows)} of {total} {kind} vectors "
            f"(first: row {min(bad_rows)})"
        )
    if zero_rows:
        raise EncoderError(
            f"{who} returned an all-zero vector for {len(zero_rows)} of {total} {kind} texts "
            f"(first: row {min(zero_rows)}); it cannot be normalised for cosine similarity"
        )
    return out


def unit_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(unit, finite, norms)``: the rows L2-normalised in float64 and rounded to float32, as every arm's
    vectors are (a row that is not finite, or zero, is left as it is for the caller to report), which rows
    are finite, and their norms. Also how `embeval import` normalises vectors computed elsewhere."""
    matrix = np.asarray(vectors, dtype=np.float64)
    finite = np.isfinite(matrix).all(axis=1)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    valid = finite & (norms > 0.0)
    unit = (matrix / np.where(valid, norms, 1.0)[:, None]).astype(np.float32)
    return unit, np.asarray(finite, dtype=bool), norms


def _batch_where(rows: np.ndarray, kind: str) -> str:
    return f"a batch of {len(rows)} {kind} texts (first: row {rows.min()})"


def _as_float_matrix(raw: object, *, who: str, kind: str, rows: int) -> np.ndarray:
    try:
        array = np.asarray(raw)
    except Exception as exc:
        raise EncoderError(
            f"{who} returned {type(raw).__name__} for {rows} {kind} texts, which is not an array: "
            f"{error_summary(exc)}"
        ) from exc
    if array.ndim != 2 or array.shape[0] != rows:
        raise EncoderError(
            f"{who} returned shape {array.shape} for {rows} {kind} texts; expected ({rows}, d)"
        )
    if array.shape[1] == 0:
        raise EncoderError(f"{who} returned 0-dimensional vectors for {rows} {kind} texts")
    if array.dtype.kind not in "biuf":
        raise EncoderError(f"{who} returned {array.dtype} values for {kind} texts; expected real numbers")
    # Validated and normalised in float64, so that tiny but valid vectors do not underflow to a zero norm.
    return array.astype(np.float64)
