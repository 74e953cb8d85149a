"""Model specs resolved to encoder arms: a sentence-transformers name or folder
(`sentence_transformer`), ``openai:MODEL?…`` (`endpoint`), ``module:attr`` naming a factory or an object with
``encode_query`` / ``encode_document``, or such an object itself. An object's ``name``, ``fingerprint`` and
declared prompts identify it in reports and cache keys.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pytest_embeval.arms.devices import (
    DEFAULT_DEVICE,
    DEVICE_CHOICES,
    DTYPES,
    DeviceError,
    Placement,
    parse_device,
    parse_dtype,
    placement,
)
from pytest_embeval.arms.embedding import (
    ENDPOINT_PREFIX,
    Arm,
    Encoder,
    EncoderError,
    canonical_json,
    error_summary,
)
from pytest_embeval.arms.retriever import spec_parameters
from pytest_embeval.arms.sentence_transformer import (
    arm_from_model,
    load_model,
    sentence_transformer_arm,
)
from pytest_embeval.core.step_progress import step

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


__all__ = ["MODEL_PARAMETERS", "import_attr", "resolve_model"]


#: What a sentence-transformers spec's ``?`` part may say: ``NAME_OR_FOLDER?device=cuda:1&dtype=float16``.
MODEL_PARAMETERS = {
    "device": DEVICE_CHOICES,
    "dtype": " or ".join(DTYPES),
    "batch_size": "texts per model call, an integer >= 1",
}


def resolve_model(spec_or_object: str | object, *, device: str = DEFAULT_DEVICE) -> Arm:
    """Turn a model spec into an :class:`Arm`.

    Accepted forms:

    * an :class:`Arm` (returned as is);
    * an object with ``encode_query`` and ``encode_document`` (a ``SentenceTransformer`` included);
    * ``"openai:MODEL[?dimensions=N&base_url=...&api_key_env=...]"``: a model behind an OpenAI-compatible
      embeddings endpoint, see `endpoint.openai_arm` (nothing is sent until something must be encoded);
    * ``"module:attr"`` (``attr`` may be dotted) naming such an object, a class, or a factory called with no
      arguments;
    * a local sentence-transformers folder: see :func:`sentence_transformer_arm` (loaded on first use);
    * any other string: a sentence-transformers model name, loaded now with ``trust_remote_code=False``.
      Whether the Hub may be contacted is the user's ``HF_HUB_OFFLINE`` choice.

    A sentence-transformers spec (a folder or a name) may end in ``?device=…&dtype=…&batch_size=…``
    (`MODEL_PARAMETERS`); ``device`` is the device of a spec that does not say (``auto``: CUDA, else MPS,
    else the CPU). A device this machine does not have is an `EncoderError` now, before anything is loaded.
    """
    if isinstance(spec_or_object, Arm):
        return spec_or_object
    if isinstance(spec_or_object, str):
        return _resolve_string(spec_or_object, device)
    return _arm_from_object(spec_or_object, spec=None)


def _placement(spec: str, device: str) -> tuple[str, Placement]:
    """The model part of a sentence-transformers spec, and where its ``?`` part (if any) places it."""
    model, _, query = spec.partition("?")
    given = spec_parameters(spec, query, MODEL_PARAMETERS) if query or spec.endswith("?") else {}
    batch_size = given.get("batch_size")
    if batch_size is not None and (not batch_size.isdigit() or int(batch_size) < 1):
        raise EncoderError(f"model spec {spec!r}: batch_size must be an integer >= 1, got {batch_size!r}")
    try:
        dtype = parse_dtype(given["dtype"]) if "dtype" in given else None
        placed = placement(
            parse_device(given.get("device", device)), dtype, int(batch_size) if batch_size else None
        )
    except DeviceError as error:
        raise EncoderError(f"model spec {spec!r}: {error}") from None
    return model, placed


def _resolve_string(raw: str, device: str) -> Arm:
    spec = raw.strip()
    if not spec:
        raise EncoderError(
            f"empty model spec {raw!r}: give a sentence-transformers model name or path, or 'module:attr'"
        )
    if spec.startswith(ENDPOINT_PREFIX):
        from pytest_embeval.arms.endpoint import arm_from_spec

        return arm_from_spec(spec)
    # An existing path wins over the module:attr reading (a Windows drive letter contains a colon), and
    # over the reading of a "?" as parameters.
    if ":" in spec.partition("?")[0] and not os.path.exists(spec):
        if "?" in spec:
            raise EncoderError(
                f"model spec {spec!r}: parameters after '?' ({', '.join(MODEL_PARAMETERS)}) are for "
                "sentence-transformers models; a module:attr encoder places and batches itself"
            )
        return _arm_from_object(import_attr(spec), spec=spec)
    name, placed = (spec, placement(device)) if os.path.exists(spec) else _placement(spec, device)
    folder = os.path.expanduser(name)
    if os.path.isdir(folder):
        return sentence_transformer_arm(folder, name=spec, placement=placed)
    if _names_a_path(name):
        raise EncoderError(f"model spec {spec!r}: no such model folder: {os.path.abspath(folder)}")
    with step(f"loading model {name}"):
        model = load_model(name, placed)
    return arm_from_model(model, spec=spec, name=name, source=None, batch_size=placed.batch_size)


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
            f"model spec {spec!r}: cannot import module {module_name!r}: {error_summary(exc)}"
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
                f"model spec {spec!r}: calling {attr_path!r}() to build {what} raised {error_summary(exc)}"
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
        return arm_from_model(model, spec=spec, name=None, source=None)
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
    fingerprint = canonical_json({**identity, "prompts": prompts, "normalize": "l2"})
    encoder: Encoder = obj  # type: ignore[assignment]
    count_tokens = getattr(obj, "count_tokens", None)
    counter = None
    if callable(count_tokens):
        from pytest_embeval.arms.tokens import EncoderCounter

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
