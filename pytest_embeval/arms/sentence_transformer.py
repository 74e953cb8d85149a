"""sentence-transformers models as encoder arms, loaded only when a text must actually be encoded.

A local folder is fingerprinted from its files alone (weights and configuration hashed, prompts and maximum
sequence length read from its JSON files), so a run whose embeddings are all cached never imports torch or
sentence-transformers. A model named on the Hub is loaded offline only; remote code is never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_embeval.arms.batching import Batching
from pytest_embeval.arms.devices import Placement
from pytest_embeval.arms.devices import placement as place
from pytest_embeval.arms.embedding import Arm, EncoderError, LazyEncoder, canonical_json, error_summary
from pytest_embeval.files.digests import file_sha256

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


__all__ = [
    "BatchHalvedWarning",
    "SentenceTransformerEncoder",
    "arm_from_model",
    "folder_dimension",
    "folder_identity",
    "load_model",
    "out_of_memory",
    "sentence_transformer_arm",
    "weights_digest",
]


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


class BatchHalvedWarning(UserWarning):
    """A model ran out of GPU memory and its batches were halved (said once per model)."""


class SentenceTransformerEncoder:
    """Adapts a ``SentenceTransformer`` to :class:`Encoder`.

    ``encode_query`` / ``encode_document`` apply the model's own configured prompts (its model card's).
    :func:`embed` batches already (``batching``: ``batch_size`` texts a call), so each call is encoded as one
    model batch, and normalisation is left to :func:`embed` so that every arm is normalised by the same code.
    A call that runs out of GPU memory is encoded again in halves, and later calls at that size: the first
    halving is said once (`BatchHalvedWarning`), and one text that does not fit raises as any fault does.
    """

    __slots__ = ("_said", "batching", "fitting", "label", "model")

    def __init__(self, model: SentenceTransformer, *, batch_size: int = 64, label: str = "") -> None:
        self.model = model
        self.batching = Batching(size=batch_size)
        #: the texts a call is known to fit in memory: ``batch_size`` until a batch runs out of memory
        self.fitting = batch_size
        self.label = label
        self._said = False

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self._fitted(self.model.encode_query, texts)

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return self._fitted(self.model.encode_document, texts)

    def _fitted(self, method: Callable[..., Any], texts: list[str]) -> np.ndarray:
        parts: list[np.ndarray] = []
        start = 0
        while start < len(texts) or not parts:
            chunk = texts[start : start + self.fitting]
            try:
                parts.append(np.asarray(method(chunk, **self._options(chunk))))
            except Exception as error:
                if self.fitting == 1 or not out_of_memory(error):
                    raise
                self._halve()
                continue
            start += len(chunk)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _halve(self) -> None:
        before, self.fitting = self.fitting, max(1, self.fitting // 2)
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()  # the failed batch's blocks, so that the half fits
        if not self._said:
            self._said = True
            warnings.warn(
                BatchHalvedWarning(
                    f"{self.label or 'model'}: out of GPU memory at a batch of {before} texts; encoding "
                    f"goes on in batches of {self.fitting} (halved again if needed)"
                ),
                stacklevel=2,
            )

    @staticmethod
    def _options(texts: list[str]) -> dict[str, Any]:
        return {
            "batch_size": max(1, len(texts)),
            "convert_to_numpy": True,
            "normalize_embeddings": False,
            "show_progress_bar": False,
        }


def out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is a device running out of memory: torch's ``OutOfMemoryError`` (CUDA), or the
    RuntimeError that other backends (MPS) raise for it."""
    torch = sys.modules.get("torch")
    kinds = tuple(
        kind
        for kind in (
            getattr(torch, "OutOfMemoryError", None),
            getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None),
        )
        if isinstance(kind, type)
    )
    if kinds and isinstance(error, kinds):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def sentence_transformer_arm(
    folder: str | os.PathLike[str],
    *,
    name: str | None = None,
    load: Callable[[], SentenceTransformer] | None = None,
    placement: Placement | None = None,
) -> Arm:
    """An arm for a local sentence-transformers model folder, fingerprinted from its files and loaded only
    when something must be encoded (a run whose embeddings are all cached never imports torch).

    ``name`` is what reports show (default: ``folder`` as given). ``placement`` says on which device, in
    which dtype and in batches of how many texts the model runs (default: `devices.placement`'s, ``auto``).
    ``load`` builds the model (default: `load_model`, ``SentenceTransformer(folder, device=…,
    trust_remote_code=False)`` in that dtype); it must load this very folder.
    When the files do not settle how the model behaves (no ``modules.json``, a module type other than a
    sentence-transformers Transformer or StaticEmbedding, no maximum sequence length in the module config),
    the model is loaded now and fingerprinted as loaded, from the same files.
    """
    spec = os.fspath(folder)
    label = name if name is not None else spec
    placed = placement or place()
    loader: Callable[[], SentenceTransformer] = load or (lambda: load_model(spec, placed))
    root = Path(spec)
    described = _describe_folder(root)
    files = folder_identity(root) if described is not None else None
    if described is None or files is None:
        return arm_from_model(loader(), spec=label, name=label, source=root, batch_size=placed.batch_size)
    prompts, max_seq_length = described
    fingerprint = _sentence_transformer_fingerprint(
        {"class": "SentenceTransformer", **files},
        prompts=prompts,
        max_seq_length=max_seq_length,
        truncate_dim=None,
        dtype=placed.dtype,
    )
    encoder = LazyEncoder(
        lambda: SentenceTransformerEncoder(loader(), batch_size=placed.batch, label=label),
        label,
        batching=Batching(size=placed.batch),
    )
    from pytest_embeval.arms.tokens import folder_counter

    return Arm(
        spec=label,
        encoder=encoder,
        fingerprint=fingerprint,
        prompts=prompts,
        token_counter=folder_counter(root, prompts, max_seq_length),
        device=placed.record(),
        dimension=folder_dimension(root),
    )


def load_model(spec: str, placement: Placement | None = None) -> SentenceTransformer:
    """The sentence-transformers model ``spec`` names, on ``placement``'s device and in its dtype (default:
    the CPU, float32), never trusting remote code; `EncoderError` (one line) when it cannot be loaded."""
    placed = placement or Placement()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EncoderError(
            f"model spec {spec!r} names a sentence-transformers model, but sentence-transformers cannot be "
            f"imported: {error_summary(exc)}"
        ) from exc
    try:
        model = SentenceTransformer(spec, device=placed.device, trust_remote_code=False)
        if placed.dtype != "float32":
            import torch

            model = model.to(dtype=getattr(torch, placed.dtype))
        return model
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
            f"could not load sentence-transformers model {spec!r}: {where} ({error_summary(exc)})"
        ) from exc


def arm_from_model(
    model: SentenceTransformer,
    *,
    spec: str | None,
    name: str | None,
    source: Path | None,
    batch_size: int | None = None,
) -> Arm:
    """The arm of a loaded model: fingerprinted from its folder when it has one, else from what it holds;
    on the device and in the dtype it was loaded on (``batch_size`` texts a call, None: the device's
    default)."""
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
    dtype = str(getattr(model, "dtype", "")).removeprefix("torch.")
    fingerprint = _sentence_transformer_fingerprint(
        identity,
        prompts=prompts,
        max_seq_length=max_seq_length if _is_int(max_seq_length) else None,
        truncate_dim=truncate_dim if _is_int(truncate_dim) else None,
        dtype=dtype,
    )
    from pytest_embeval.arms.tokens import model_counter

    placed = Placement(
        device=str(getattr(model, "device", "cpu")), dtype=dtype or "float32", batch_size=batch_size
    )
    label = spec if spec is not None else name
    return Arm(
        spec=label,
        encoder=SentenceTransformerEncoder(model, batch_size=placed.batch, label=label),
        fingerprint=fingerprint,
        prompts=prompts,
        token_counter=model_counter(model, prompts),
        device=placed.record(),
        dimension=_model_dimension(model),
    )


def _model_dimension(model: SentenceTransformer) -> int | None:
    """The dimension of a loaded model's vectors, as it reports it (None if it does not)."""
    # sentence-transformers 5.2 renamed the method (the old name warns); older releases have only the old one.
    method = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    try:
        dimension = method()
    except Exception:  # a model without the method, or a module that cannot tell
        return None
    return dimension if isinstance(dimension, int) and not isinstance(dimension, bool) else None


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
    return canonical_json(payload)


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


def folder_dimension(folder: Path) -> int | None:
    """The dimension of the vectors a model folder's model will return, read from its files as
    ``get_sentence_embedding_dimension`` finds it (the last module that sets one: a Dense layer's
    ``out_features``, a Pooling module's word dimension times its pooling modes, a StaticEmbedding's
    embedding width); None when the files do not say."""
    modules = _read_json(folder / "modules.json")
    if not isinstance(modules, list):
        return None
    for module in reversed(modules):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1] if isinstance(module, dict) else ""
        path = folder / str(module.get("path") or "") if isinstance(module, dict) else folder
        config = _read_json(path / "config.json")
        if kind == "Dense" and isinstance(config, dict) and _is_int(config.get("out_features")):
            return int(config["out_features"])
        if kind == "Pooling" and isinstance(config, dict) and _is_int(config.get("word_embedding_dimension")):
            modes = [value for key, value in config.items() if key.startswith("pooling_mode_")]
            return int(config["word_embedding_dimension"]) * max(1, sum(1 for mode in modes if mode is True))
        if kind == "StaticEmbedding":
            return _safetensors_width(path / "model.safetensors")
    return None


def _safetensors_width(path: Path) -> int | None:
    """The second dimension of the one 2-D tensor in a safetensors file's header (a static model's
    embedding matrix), or None."""
    try:
        with path.open("rb") as file:
            size = int.from_bytes(file.read(8), "little")
            header = json.loads(file.read(size)) if 0 < size < 2**24 else None
    except (OSError, ValueError):
        return None
    shapes = [
        entry.get("shape")
        for name, entry in (header or {}).items()
        if name != "__metadata__" and isinstance(entry, dict)
    ]
    widths = [shape[1] for shape in shapes if isinstance(shape, list) and len(shape) == 2]
    return widths[0] if len(widths) == 1 and isinstance(widths[0], int) else None


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
