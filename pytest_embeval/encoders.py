"""Model specs -> encoders, and the one validated, normalised embedding path both arms go through.

An :class:`Arm` is an encoder plus everything that identifies what it computes: the name shown in reports,
the prompts actually applied, and a fingerprint that keys the embedding cache. Nothing here imports torch or
sentence-transformers at module level: they are imported only when a sentence-transformers model is loaded.

A local sentence-transformers folder is fingerprinted from its files alone (weights and configuration hashed,
prompts and maximum sequence length read from its JSON files), and the model is loaded only when something
must actually be encoded: a run whose embeddings are all cached never imports torch.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from pytest_embeval.batching import Batching, completed, plan
from pytest_embeval.digests import file_sha256
from pytest_embeval.usage import TokenUsage

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from pytest_embeval.tokens import TokenCounter

__all__ = [
    "KINDS",
    "Arm",
    "EncodedBatch",
    "Encoder",
    "EncoderError",
    "Kind",
    "LazyEncoder",
    "SentenceTransformerEncoder",
    "embed",
    "folder_identity",
    "import_attr",
    "resolve_model",
    "sentence_transformer_arm",
    "unit_rows",
    "validate_texts",
    "weights_digest",
]

Kind = Literal["query", "document"]
KINDS: tuple[Kind, ...] = ("query", "document")
#: Specs for a model behind an OpenAI-compatible endpoint start with this (see `endpoint`).
ENDPOINT_PREFIX = "openai:"

# Weight files of a model folder. ONNX / OpenVINO exports in hub repos are alternative backends that the torch
# backend never reads, and they are large, so they are not hashed.
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
_SKIPPED_DIRS = frozenset({"onnx", "openvino"})
_OFFLINE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})
# Where a sentence-transformers Transformer module keeps its settings: the current name first, then the
# legacy ones sentence-transformers still reads, in its own order.
_TRANSFORMER_CONFIGS = (
    "sentence_bert_config.json",
    "sentence_roberta_config.json",
    "sentence_distilbert_config.json",
    "sentence_camembert_config.json",
    "sentence_albert_config.json",
    "sentence_xlm-roberta_config.json",
    "sentence_xlnet_config.json",
)


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

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the fingerprint, for file names and compact cache keys."""
        return "sha256:" + hashlib.sha256(self.fingerprint.encode("utf-8")).hexdigest()


class LazyEncoder:
    """An :class:`Encoder` that builds the real one on its first ``encode_*`` call.

    Lets an arm be fingerprinted, and its cached embeddings served, without loading the model: a run whose
    texts are all cached never calls ``load``.
    """

    __slots__ = ("_encoder", "_load", "label")

    def __init__(self, load: Callable[[], Encoder], label: str) -> None:
        self._load = load
        self._encoder: Encoder | None = None
        self.label = label

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    def get(self) -> Encoder:
        """The real encoder, loaded now if it was not yet."""
        if self._encoder is None:
            self._encoder = self._load()
        return self._encoder

    def encode_query(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        return self.get().encode_query(texts)

    def encode_document(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        return self.get().encode_document(texts)

    def __repr__(self) -> str:
        return f"LazyEncoder({self.label!r}, {'loaded' if self.loaded else 'not loaded'})"


@dataclass(frozen=True, slots=True)
class SentenceTransformerEncoder:
    """Adapts a ``SentenceTransformer`` to :class:`Encoder`.

    ``encode_query`` / ``encode_document`` apply the model's own configured prompts (its model card's).
    :func:`embed` batches already, so each call is encoded as one model batch, and normalisation is left to
    :func:`embed` so that every arm is normalised by the same code.
    """

    model: SentenceTransformer

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.encode_query(texts, **self._options(texts)))

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.encode_document(texts, **self._options(texts)))

    @staticmethod
    def _options(texts: list[str]) -> dict[str, Any]:
        return {
            "batch_size": max(1, len(texts)),
            "convert_to_numpy": True,
            "normalize_embeddings": False,
            "show_progress_bar": False,
        }


# ---------------------------------------------------------------------------------------------- resolve_model


def resolve_model(spec_or_object: str | object) -> Arm:
    """Turn a model spec into an :class:`Arm`.

    Accepted forms:

    * an :class:`Arm` (returned as is);
    * an object with ``encode_query`` and ``encode_document`` (a ``SentenceTransformer`` included);
    * ``"openai:MODEL[?dimensions=N&base_url=...&api_key_env=...]"``: a model behind an OpenAI-compatible
      embeddings endpoint, see `endpoint.openai_arm` (nothing is sent until something must be encoded);
    * ``"module:attr"`` (``attr`` may be dotted) naming such an object, a class, or a factory called with no
      arguments;
    * a local sentence-transformers folder: see :func:`sentence_transformer_arm` (loaded on first use);
    * any other string: a sentence-transformers model name, loaded now on CPU with
      ``trust_remote_code=False``. Whether the Hub may be contacted is the user's ``HF_HUB_OFFLINE`` choice.
    """
    if isinstance(spec_or_object, Arm):
        return spec_or_object
    if isinstance(spec_or_object, str):
        return _resolve_string(spec_or_object)
    return _arm_from_object(spec_or_object, spec=None)


def _resolve_string(raw: str) -> Arm:
    spec = raw.strip()
    if not spec:
        raise EncoderError(
            f"empty model spec {raw!r}: give a sentence-transformers model name or path, or 'module:attr'"
        )
    if spec.startswith(ENDPOINT_PREFIX):
        from pytest_embeval.endpoint import arm_from_spec

        return arm_from_spec(spec)
    # An existing path wins over the module:attr reading (a Windows drive letter contains a colon).
    if ":" in spec and not os.path.exists(spec):
        return _arm_from_object(import_attr(spec), spec=spec)
    folder = os.path.expanduser(spec)
    if os.path.isdir(folder):
        return sentence_transformer_arm(folder, name=spec)
    if _names_a_path(spec):
        raise EncoderError(f"model spec {spec!r}: no such model folder: {os.path.abspath(folder)}")
    model = _load_sentence_transformer(spec)
    return _arm_from_sentence_transformer(model, spec=spec, name=spec, source=None)


def import_attr(
    spec: str, ready: Callable[[object], bool] | None = None, what: str = "the encoder"
) -> object:
    """The object ``module:attr`` names; a class, or a callable that is not ``ready`` for use (by default: not
    an encoder), is called with no arguments to build it. Raises `EncoderError` naming the spec."""
    ready = ready or _is_encoder
    module_name, _, attr_path = spec.partition(":")
    if not _is_dotted_identifier(module_name) or not _is_dotted_identifier(attr_path):
        raise EncoderError(
            f"invalid model spec {spec!r}: expected 'module:attr' with a dotted module path and attribute "
            "(e.g. 'mypackage.encoders:make_encoder'), or a sentence-transformers model name or path"
        )
    try:
        obj: object = importlib.import_module(module_name)
    except Exception as exc:
        raise EncoderError(
            f"model spec {spec!r}: cannot import module {module_name!r}: {_summary(exc)}"
        ) from exc
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise EncoderError(
                f"model spec {spec!r}: module {module_name!r} has no attribute {attr_path!r}"
            ) from exc
    if isinstance(obj, type) or (callable(obj) and not ready(obj)):
        try:
            obj = obj()
        except Exception as exc:
            raise EncoderError(
                f"model spec {spec!r}: calling {attr_path!r}() to build {what} raised {_summary(exc)}"
            ) from exc
    return obj


def _names_a_path(spec: str) -> bool:
    """Whether a spec can only be a path: a Hugging Face model id is ``name`` or ``owner/name``."""
    return spec.startswith(("/", "./", "../", "~", "\\")) or "\\" in spec or spec.count("/") > 1


def _is_dotted_identifier(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _is_encoder(obj: object) -> bool:
    return callable(getattr(obj, "encode_query", None)) and callable(getattr(obj, "encode_document", None))


def _is_sentence_transformer(obj: object) -> bool:
    # If sentence_transformers was never imported, obj cannot be one of its models: no import needed.
    module = sys.modules.get("sentence_transformers")
    cls = getattr(module, "SentenceTransformer", None)
    return isinstance(cls, type) and isinstance(obj, cls)


def _arm_from_object(obj: object, *, spec: str | None) -> Arm:
    if isinstance(obj, Arm):
        return obj
    if _is_sentence_transformer(obj):
        model: SentenceTransformer = obj  # type: ignore[assignment]
        return _arm_from_sentence_transformer(model, spec=spec, name=None, source=None)
    label = spec if spec is not None else _object_label(obj)
    if not _is_encoder(obj):
        hint = (
            " (it has encode(): sentence-transformers >= 5 provides encode_query/encode_document)"
            if callable(getattr(obj, "encode", None))
            else ""
        )
        raise EncoderError(
            f"model spec {label!r} resolved to {_qualname(obj)}, which has no encode_query/encode_document "
            f"methods{hint}"
        )
    prompts = _declared_prompts(obj)
    identity: dict[str, object]
    fingerprint_attr = getattr(obj, "fingerprint", None)
    name_attr = getattr(obj, "name", None)
    if isinstance(fingerprint_attr, str) and fingerprint_attr:
        identity = {"fingerprint": fingerprint_attr}
    elif isinstance(name_attr, str) and name_attr:
        identity = {"name": name_attr}
    else:
        identity = {"class": _qualname(obj), "spec": label}
    fingerprint = _canonical({**identity, "prompts": prompts, "normalize": "l2"})
    encoder: Encoder = obj  # type: ignore[assignment]
    count_tokens = getattr(obj, "count_tokens", None)
    counter = None
    if callable(count_tokens):
        from pytest_embeval.tokens import EncoderCounter

        counter = EncoderCounter(count_tokens)
    return Arm(spec=label, encoder=encoder, fingerprint=fingerprint, prompts=prompts, token_counter=counter)


def _object_label(obj: object) -> str:
    name = getattr(obj, "name", None)
    return name if isinstance(name, str) and name else _qualname(obj)


def _qualname(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _declared_prompts(obj: object) -> dict[str, str]:
    """Prompts a custom encoder says it applies (a ``prompts`` mapping); none otherwise."""
    declared = getattr(obj, "prompts", None)
    prompts = {"query": "", "document": ""}
    if isinstance(declared, Mapping):
        for key in prompts:
            value = declared.get(key)
            if isinstance(value, str):
                prompts[key] = value
    return prompts


def _summary(exc: BaseException) -> str:
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


def sentence_transformer_arm(
    folder: str | os.PathLike[str],
    *,
    name: str | None = None,
    load: Callable[[], SentenceTransformer] | None = None,
) -> Arm:
    """An arm for a local sentence-transformers model folder, fingerprinted from its files and loaded only
    when something must be encoded (a run whose embeddings are all cached never imports torch).

    ``name`` is what reports show (default: ``folder`` as given). ``load`` builds the model (default:
    ``SentenceTransformer(folder, device="cpu", trust_remote_code=False)``); it must load this very folder.
    When the files do not settle how the model behaves (no ``modules.json``, a module type other than a
    sentence-transformers Transformer or StaticEmbedding, no maximum sequence length in the module config),
    the model is loaded now and fingerprinted as loaded, from the same files.
    """
    spec = os.fspath(folder)
    label = name if name is not None else spec
    loader: Callable[[], SentenceTransformer] = load or (lambda: _load_sentence_transformer(spec))
    root = Path(spec)
    described = _describe_folder(root)
    files = folder_identity(root) if described is not None else None
    if described is None or files is None:
        return _arm_from_sentence_transformer(loader(), spec=label, name=label, source=root)
    prompts, max_seq_length = described
    fingerprint = _sentence_transformer_fingerprint(
        {"class": "SentenceTransformer", **files},
        prompts=prompts,
        max_seq_length=max_seq_length,
        truncate_dim=None,
        dtype="float32",
    )
    encoder = LazyEncoder(lambda: SentenceTransformerEncoder(loader()), label)
    from pytest_embeval.tokens import folder_counter

    return Arm(
        spec=label,
        encoder=encoder,
        fingerprint=fingerprint,
        prompts=prompts,
        token_counter=folder_counter(root, prompts, max_seq_length),
    )


def _load_sentence_transformer(spec: str) -> SentenceTransformer:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EncoderError(
            f"model spec {spec!r} names a sentence-transformers model, but sentence-transformers cannot be "
            f"imported: {_summary(exc)}"
        ) from exc
    try:
        return SentenceTransformer(spec, device="cpu", trust_remote_code=False)
    except Exception as exc:
        if os.path.isdir(spec):
            where = "the folder exists but does not hold a loadable sentence-transformers model"
        elif os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in _OFFLINE_VALUES:
            where = (
                "it is not a local folder and could not be loaded offline (HF_HUB_OFFLINE is set): "
                "not found in the Hugging Face cache"
            )
        else:
            where = "it is not a local folder and could not be found or downloaded from the Hugging Face Hub"
        raise EncoderError(
            f"could not load sentence-transformers model {spec!r}: {where} ({_summary(exc)})"
        ) from exc


def _arm_from_sentence_transformer(
    model: SentenceTransformer, *, spec: str | None, name: str | None, source: Path | None
) -> Arm:
    config = getattr(getattr(model, "transformers_model", None), "config", None)
    config_path = getattr(config, "_name_or_path", None) or None
    card = getattr(model, "model_card_data", None)
    card_name = getattr(card, "model_id", None) or getattr(card, "model_name", None) or None
    if name is None:
        name = config_path or card_name or type(model).__name__
    if source is None and config_path is not None and os.path.isdir(config_path):
        source = Path(config_path)

    identity: dict[str, object] = {"class": type(model).__name__}
    files = folder_identity(source) if source is not None else None
    revision = getattr(config, "_commit_hash", None)
    if files is not None:
        identity.update(files)
    else:
        if isinstance(revision, str) and revision:
            identity.update(name=name, revision=revision)
        else:
            identity["weights"] = {"<state_dict>": _state_dict_digest(model)}
        # Module configuration (pooling mode, dense layers, ...) changes embeddings without touching the
        # weights; with no folder to hash, its repr stands in (stable for a given sentence-transformers).
        identity["modules"] = "sha256:" + hashlib.sha256(repr(model).encode("utf-8")).hexdigest()[:16]

    prompts = _applied_prompts(model)
    max_seq_length = getattr(model, "max_seq_length", None)
    truncate_dim = getattr(model, "truncate_dim", None)
    fingerprint = _sentence_transformer_fingerprint(
        identity,
        prompts=prompts,
        max_seq_length=max_seq_length if _is_int(max_seq_length) else None,
        truncate_dim=truncate_dim if _is_int(truncate_dim) else None,
        dtype=str(getattr(model, "dtype", "")).removeprefix("torch."),
    )
    from pytest_embeval.tokens import model_counter

    return Arm(
        spec=spec if spec is not None else name,
        encoder=SentenceTransformerEncoder(model),
        fingerprint=fingerprint,
        prompts=prompts,
        token_counter=model_counter(model, prompts),
    )


def _sentence_transformer_fingerprint(
    identity: Mapping[str, object],
    *,
    prompts: Mapping[str, str],
    max_seq_length: int | None,
    truncate_dim: int | None,
    dtype: str,
) -> str:
    payload = {
        **identity,
        "prompts": dict(prompts),
        "normalize": "l2",
        # None: no truncation (StaticEmbedding reports math.inf).
        "max_seq_length": max_seq_length,
        "truncate_dim": truncate_dim,
    }
    # Only a model loaded in another dtype than its float32 checkpoint says so, so that the common case keys
    # alike whether the model was loaded by the user or fingerprinted from its folder without loading.
    if dtype != "float32":
        payload["dtype"] = dtype
    return _canonical(payload)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _applied_prompts(model: SentenceTransformer) -> dict[str, str]:
    """The prompts ``encode_query`` / ``encode_document`` prepend, resolved exactly as they resolve them."""
    configured: Mapping[str, Any] = getattr(model, "prompts", None) or {}
    return _pick_prompts(configured, getattr(model, "default_prompt_name", None))


def _pick_prompts(configured: Mapping[str, Any], default_name: object) -> dict[str, str]:
    def pick(candidates: tuple[str, ...]) -> str:
        for key in candidates:
            if key in configured:
                return str(configured[key] or "")
        if isinstance(default_name, str):
            return str(configured.get(default_name) or "")
        return ""

    return {"query": pick(("query",)), "document": pick(("document", "passage", "corpus"))}


def _describe_folder(folder: Path) -> tuple[dict[str, str], int | None] | None:
    """The prompts and maximum sequence length the folder's model will have once loaded, read from its
    files as sentence-transformers reads them; None when the files alone do not settle them."""
    modules = _read_json(folder / "modules.json")
    if not isinstance(modules, list) or not modules or not all(isinstance(m, dict) for m in modules):
        return None
    types = [module.get("type") for module in modules]
    # A module from another package is custom code, which is never trusted: let loading report it.
    if not all(isinstance(t, str) and t.startswith("sentence_transformers.") for t in types):
        return None
    first_class = str(types[0]).rsplit(".", 1)[-1]
    max_seq_length: int | None
    if first_class == "StaticEmbedding":
        max_seq_length = None  # a bag of token vectors: nothing is truncated
    elif first_class == "Transformer":
        module_dir = folder / str(modules[0].get("path") or "")
        config = next((c for c in map(_read_json, (module_dir / n for n in _TRANSFORMER_CONFIGS)) if c), None)
        if not isinstance(config, dict):
            return None
        processor = config.get("processor_kwargs") or config.get("tokenizer_args") or {}
        # The processor's own model_max_length wins over max_seq_length, as in Transformer.__init__.
        value = processor.get("model_max_length") if isinstance(processor, dict) else None
        value = value if value is not None else config.get("max_seq_length")
        if not _is_int(value):
            return None  # derived from the tokenizer and the architecture at load time
        max_seq_length = value
    else:
        return None

    settings = _read_json(folder / "config_sentence_transformers.json") or {}
    if not isinstance(settings, dict):
        return None
    saved = settings.get("prompts") or {}
    default_name = settings.get("default_prompt_name")
    if not isinstance(saved, dict) or not all(v is None or isinstance(v, str) for v in saved.values()):
        return None
    # A SentenceTransformer starts with empty "query" and "document" prompts and takes the saved ones over.
    configured = {"query": "", "document": "", **{k: v or "" for k, v in saved.items()}}
    return _pick_prompts(configured, default_name), max_seq_length


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def folder_identity(folder: Path) -> dict[str, object] | None:
    """``{"weights": ..., "config": ...}`` of a model folder: content hashes only, no path; None without
    weight files."""
    weights = weights_digest(folder)
    if not weights:
        return None
    config = hashlib.sha256()
    for rel, path in _model_files(folder):
        if path.suffix not in _WEIGHT_SUFFIXES and path.suffix != ".md":
            config.update(f"{rel}\0{file_sha256(path)}\n".encode())
    return {"weights": weights, "config": "sha256:" + config.hexdigest()}


def _model_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """``(relative posix path, path)`` of the files that make up a model folder, sorted.

    Dotfiles and dot-folders (``.gitattributes``, the Hub's ``.cache`` metadata) are not the model, and
    ONNX / OpenVINO exports are alternative backends that the torch backend never reads.
    """
    root = folder.resolve()
    found = []
    for path in root.rglob("*"):
        parts = path.relative_to(root).parts
        if any(part.startswith(".") for part in parts) or _SKIPPED_DIRS.intersection(parts[:-1]):
            continue
        if path.is_file():
            found.append((Path(*parts).as_posix(), path))
    yield from sorted(found)


_weights_cache: dict[tuple[str, tuple[tuple[str, int, int], ...]], dict[str, str]] = {}


def weights_digest(folder: Path) -> dict[str, str]:
    """``{relative path: "sha256:<hex>"}`` of the weight files under a model folder ({} if there are none).

    Cached for the process per folder and file (size, mtime), so a folder rebuilt in place is hashed again.
    """
    files = [(rel, path) for rel, path in _model_files(folder) if path.suffix in _WEIGHT_SUFFIXES]
    stats = tuple((rel, (st := path.stat()).st_size, st.st_mtime_ns) for rel, path in files)
    key = (str(folder.resolve()), stats)
    cached = _weights_cache.get(key)
    if cached is None:
        cached = {rel: "sha256:" + file_sha256(path) for rel, path in files}
        _weights_cache[key] = cached
    return dict(cached)


def _state_dict_digest(model: SentenceTransformer) -> str:
    """Hash of the in-memory tensors, for models built in memory (no folder, no Hub revision)."""
    import torch

    digest = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{key}\0{flat.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return "sha256:" + digest.hexdigest()


def _canonical(payload: Mapping[str, object]) -> str:
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
    ``progress(done, total)`` follows each batch, and ``on_batch`` gets each batch whose vectors are all
    valid as soon as it returns (the embedding cache stores it then, so an interrupted run keeps it). The
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
            raise EncoderError(f"{who} failed on {_batch_where(rows, kind)}: {_summary(exc)}") from exc

    out: np.ndarray | None = None
    bad_rows: list[int] = []
    zero_rows: list[int] = []
    done = 0
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
            f"{_summary(exc)}"
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
