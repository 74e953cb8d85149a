"""Models behind an OpenAI-compatible embeddings endpoint as arms: ``openai:MODEL?...`` specs, `openai_arm`.

OpenAI, Azure OpenAI, Text Embeddings Inference, vLLM, Ollama, Infinity and LM Studio all serve the OpenAI
embeddings API (``POST {base_url}/embeddings``). The official ``openai`` client (the ``[openai]`` extra),
imported only when such an arm first sends a request, does the HTTP: it retries connection errors, timeouts
and 408/409/429/5xx answers with exponential backoff (0.5 s doubling up to 8 s, less up to a quarter of
jitter), waits what ``Retry-After`` or ``retry-after-ms`` asks instead when that is at most 120 s, and never
waits longer (current clients then give up, older ones back off as usual). This module configures it
(``max_retries``, ``timeout``, ``base_url``, ``api_key``), never retries on top of it, and turns its typed
errors into one-line messages (`openai_client.OpenAIClient`, which the LLM judge's chat requests share).

Each encoder call is one request: `embedding.embed` cuts the texts by count and by an estimated token budget
and keeps ``concurrency`` requests in flight (see `batching`), and the embedding cache stores each request's
vectors as it returns. The endpoint's ``usage`` is added to `Arm.usage`, and shared among the request's texts
(in proportion to their estimated tokens) for the cache, so a cached rerun can say what it did not spend.

**The key** is read from the environment only (``OPENAI_API_KEY``, or the variable ``api_key_env`` names),
when the first request is sent, and handed to the client: it is in no spec, fingerprint, cache entry, report,
message or log line of ours, and a message that could quote a server's text has it blanked out.

**The fingerprint** (what the cache is keyed by) holds the provider's API, the endpoint (host, port and path
of the base URL: two servers are two models), the model name, the dimensions asked for and the prompts.
A provider can change the weights behind a name without changing the name, which no fingerprint can see: a
cache then keeps serving the old vectors, and ``--embeval-no-cache`` re-embeds everything.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pytest_embeval.arms.batching import Batching, estimate_tokens
from pytest_embeval.arms.embedding import (
    ENDPOINT_PREFIX,
    KINDS,
    Arm,
    EncodedBatch,
    EncoderError,
    canonical_json,
)
from pytest_embeval.arms.openai_client import Connection, EndpointError, OpenAIClient, require_client
from pytest_embeval.arms.usage import TokenUsage, apportion
from pytest_embeval.core.capacity import MAX_PRICE

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_KEY_ENV",
    "EndpointEncoder",
    "EndpointOptions",
    "EndpointSettings",
    "arm_from_spec",
    "connection",
    "openai_arm",
    "spec_parameters",
]

#: Where requests go without ``base_url`` and without ``OPENAI_BASE_URL`` (as the official client does).
DEFAULT_BASE_URL = "https://api.openai.com/v1"
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

#: Texts per request: Text Embeddings Inference refuses more than 32 by default (--max-client-batch-size).
DEFAULT_BATCH_SIZE = 32
#: Estimated tokens per request (`batching.estimate_tokens`), below every provider's cap.
DEFAULT_TOKEN_BUDGET = 16_384
DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_RETRIES = 5
#: Seconds for one request; the client's default (600 s) would let a hung server stall a run for long.
DEFAULT_TIMEOUT = 60.0

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAMETER_NAME = re.compile(r"[a-z_]{1,40}")
_ENCODING_FORMATS = ("float", "base64")


@dataclasses.dataclass(frozen=True, slots=True)
class EndpointSettings:
    """Everything an :class:`EndpointEncoder` sends requests with, validated; never the key itself."""

    model: str
    base_url: str
    api_key_env: str
    dimensions: int | None
    prompts: Mapping[str, str]
    batching: Batching
    max_retries: int
    timeout: float
    encoding_format: str | None

    @property
    def url(self) -> str:
        """What messages name: the URL requests are posted to."""
        return f"{self.base_url}/embeddings"

    @property
    def endpoint(self) -> str:
        """Host, port (when given) and path of the base URL: what the fingerprint holds of it."""
        parts = urllib.parse.urlsplit(self.base_url)
        host = (parts.hostname or "").lower()
        if ":" in host:  # an IPv6 address
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
        return f"{host}{port}{parts.path.rstrip('/')}"


class EndpointEncoder:
    """An `embedding.Encoder` whose every call is one request to an OpenAI-compatible endpoint.

    Calls may come from several threads at once (`embedding.embed` keeps ``batching.concurrency`` in flight);
    the client is built, and the key read, on the first.
    """

    def __init__(self, settings: EndpointSettings, usage: TokenUsage) -> None:
        self.settings = settings
        self.usage = usage
        self.batching = settings.batching
        self._client = OpenAIClient(
            Connection(
                label=f"{ENDPOINT_PREFIX}{settings.model}",
                model=settings.model,
                base_url=settings.base_url,
                api_key_env=settings.api_key_env,
                max_retries=settings.max_retries,
                timeout=settings.timeout,
            )
        )

    def encode_query(self, texts: list[str]) -> EncodedBatch:
        return self._encode(texts, "query")

    def encode_document(self, texts: list[str]) -> EncodedBatch:
        return self._encode(texts, "document")

    def missing_key(self) -> str | None:
        """Why no request could be sent now: the key's variable is not set; None when it is. Asked by the
        plugin before anything runs, so that the command line's arms fail as a usage error, not mid-run."""
        return self._client.missing_key(self.settings.url)

    def __repr__(self) -> str:
        return f"EndpointEncoder({self.settings.model!r} at {self.settings.url})"

    def _encode(self, texts: list[str], kind: str) -> EncodedBatch:
        settings = self.settings
        prompt = settings.prompts[kind]
        inputs = [prompt + text for text in texts]
        try:
            openai, client = self._client.connect(settings.url)
        except EndpointError as error:
            raise EncoderError(str(error)) from None
        options: dict[str, Any] = {"model": settings.model, "input": inputs}
        if settings.dimensions is not None:
            options["dimensions"] = settings.dimensions
        if settings.encoding_format is not None:
            options["encoding_format"] = settings.encoding_format
        try:
            response = client.embeddings.create(**options)
        except openai.OpenAIError as error:
            raise EncoderError(self._client.explain(openai, error, settings.url)) from None
        except ValueError as error:  # the client's own check: "No embedding data received"
            message = f"{settings.url} returned no embeddings ({error})"
            raise EncoderError(self._client.redact(message)) from None
        vectors = self._vectors(response, len(inputs))
        usage = getattr(response, "usage", None)
        tokens = getattr(usage, "prompt_tokens", None)
        spent = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else 0
        self.usage.add(tokens=spent, requests=1)
        return EncodedBatch(vectors=vectors, tokens=apportion(spent, [estimate_tokens(t) for t in inputs]))

    def _vectors(self, response: Any, n: int) -> np.ndarray:
        """The response's vectors as float64 ``(n, d)``, or an `EncoderError` saying what is wrong."""
        url = self.settings.url
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise EncoderError(f"{url} answered without a list of embeddings")
        if len(data) != n:
            raise EncoderError(f"{url} returned {len(data)} embeddings for {n} inputs")
        indices = [getattr(item, "index", None) for item in data]
        if indices != list(range(n)):
            # Which is wrong, the order or the index fields, cannot be told: neither is trusted.
            shown = ", ".join(map(str, indices[:6])) + (", …" if n > 6 else "")
            raise EncoderError(
                f"{url} returned embeddings whose index fields are [{shown}], not 0 to {n - 1} in order"
            )
        # Strings are base64 float32, as asked for with encoding_format=base64 (the client decodes them only
        # when it chose the format itself).
        rows = [_decoded(getattr(item, "embedding", None)) for item in data]
        lengths = sorted({len(row) for row in rows if isinstance(row, list)})
        if len(lengths) != 1 or not all(isinstance(row, list) for row in rows):
            raise EncoderError(
                f"{url} returned embeddings that are not lists of numbers of one length "
                f"(lengths {lengths} for {n} inputs)"
            )
        try:
            vectors = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise EncoderError(f"{url} returned embeddings that are not lists of numbers") from None
        dimensions = self.settings.dimensions
        if dimensions is not None and vectors.shape[1] != dimensions:
            raise EncoderError(
                f"{url} returned {vectors.shape[1]}-dimensional vectors for model {self.settings.model!r}, "
                f"which was asked for dimensions={dimensions}"
            )
        bad = ~np.isfinite(vectors).all(axis=1)
        if bad.any():
            first = int(bad.argmax())
            raise EncoderError(
                f"{url} returned NaN or inf in {int(bad.sum())} of {n} vectors (first: input {first})"
            )
        return vectors


# ------------------------------------------------------------------------------------------------ the arm


@dataclasses.dataclass(frozen=True, slots=True)
class EndpointOptions:
    """How an endpoint arm reaches its server and what it asks of it, as given (`openai_arm` checks each,
    naming the spec in a one-line error, into `EndpointSettings`).

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, else OpenAI's; the key is read from the environment
    variable ``api_key_env`` when the first request is sent. ``dimensions`` is asked of models that can
    shorten their vectors (``text-embedding-3-*``). ``prompts`` (``{"query": ..., "document": ...}``) are
    prepended to the texts, as the model card asks (E5: ``"query: "`` / ``"passage: "``). A request holds at
    most ``batch_size`` texts and ``token_budget`` estimated tokens (None: no budget); ``concurrency``
    requests are in flight at once; the client retries each up to ``max_retries`` times and waits
    ``timeout`` seconds for an answer. ``encoding_format`` ("float" or "base64") is sent when given (the
    client asks for base64 and also reads floats)."""

    base_url: str | None = None
    api_key_env: str = DEFAULT_KEY_ENV
    dimensions: int | None = None
    prompts: Mapping[str, str] | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    token_budget: int | None = DEFAULT_TOKEN_BUDGET
    concurrency: int = DEFAULT_CONCURRENCY
    max_retries: int = DEFAULT_MAX_RETRIES
    timeout: float = DEFAULT_TIMEOUT
    encoding_format: str | None = None


def openai_arm(
    model: str,
    options: EndpointOptions | None = None,
    *,
    price_per_million_tokens: float | None = None,
    name: str | None = None,
) -> Arm:
    """An arm for ``model`` behind an OpenAI-compatible embeddings endpoint, reached and asked as ``options``
    say (default: `EndpointOptions`' defaults); nothing is sent (nor imported) until a text must be encoded.

    ``price_per_million_tokens`` is what reports cost the endpoint's token counts at. ``name`` is what
    reports show (default ``"openai:MODEL"``).
    """
    settings = _endpoint_settings(model, options if options is not None else EndpointOptions())
    label = f"{ENDPOINT_PREFIX}{model}"
    if price_per_million_tokens is not None and not (
        _is_number(price_per_million_tokens) and 0 <= price_per_million_tokens <= MAX_PRICE
    ):
        raise EncoderError(
            f"model spec {label!r}: price_per_million_tokens must be a number from 0 to {MAX_PRICE:,}, "
            f"got {price_per_million_tokens!r}"
        )
    usage = TokenUsage()
    fingerprint = canonical_json(
        {
            "provider": "openai-compatible",
            "endpoint": settings.endpoint,
            "model": model,
            "dimensions": settings.dimensions,
            "prompts": settings.prompts,
            "normalize": "l2",
        }
    )
    return Arm(
        spec=name if name is not None else label,
        encoder=EndpointEncoder(settings, usage),
        fingerprint=fingerprint,
        prompts=settings.prompts,
        price_per_million_tokens=None
        if price_per_million_tokens is None
        else float(price_per_million_tokens),
        usage=usage,
    )


def _endpoint_settings(model: str, given: EndpointOptions) -> EndpointSettings:
    """``given`` checked into the settings an `EndpointEncoder` sends requests with, or an `EncoderError`
    naming the spec and the first option that is wrong."""
    try:
        where = connection(
            model,
            base_url=given.base_url,
            api_key_env=given.api_key_env,
            max_retries=given.max_retries,
            timeout=given.timeout,
        )
    except EndpointError as error:
        raise EncoderError(str(error)) from None
    label = where.label

    def check(condition: bool, problem: str) -> None:
        if not condition:
            raise EncoderError(f"model spec {label!r}: {problem}")

    check(
        given.dimensions is None or _is_int(given.dimensions, 1),
        f"dimensions must be an integer >= 1, got {given.dimensions!r}",
    )
    check(
        given.encoding_format is None or given.encoding_format in _ENCODING_FORMATS,
        f"encoding_format must be 'float' or 'base64', got {given.encoding_format!r}",
    )
    try:
        batching = Batching(
            size=given.batch_size, token_budget=given.token_budget, concurrency=given.concurrency
        )
    except ValueError as error:
        raise EncoderError(f"model spec {label!r}: {error}") from None
    return EndpointSettings(
        model=model,
        base_url=where.base_url,
        api_key_env=given.api_key_env,
        dimensions=given.dimensions,
        prompts=_prompts(given.prompts, label),
        batching=batching,
        max_retries=given.max_retries,
        timeout=where.timeout,
        encoding_format=given.encoding_format,
    )


def connection(
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str = DEFAULT_KEY_ENV,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: float = DEFAULT_TIMEOUT,
) -> Connection:
    """The validated `Connection` to ``model`` (``base_url`` defaults to ``$OPENAI_BASE_URL``, else OpenAI's),
    or an `EndpointError` naming the spec; also when the ``openai`` client is not installed (it is not
    imported here)."""
    label = f"{ENDPOINT_PREFIX}{model}"
    if not isinstance(model, str) or not model.strip() or model != model.strip():
        raise EndpointError(
            f"model spec {label!r}: the model name must be a non-empty string without surrounding spaces"
        )

    def check(condition: bool, problem: str) -> None:
        if not condition:
            raise EndpointError(f"model spec {label!r}: {problem}")

    check(
        isinstance(api_key_env, str) and _ENV_NAME.fullmatch(api_key_env) is not None,
        "api_key_env must be the name of an environment variable (letters, digits and underscores), "
        "not a key: the key is read from that variable",
    )
    check(_is_int(max_retries, 0), f"max_retries must be an integer >= 0, got {max_retries!r}")
    check(_is_number(timeout) and timeout > 0, f"timeout must be a number of seconds > 0, got {timeout!r}")
    url = _base_url(base_url, label)
    require_client(label)
    return Connection(
        label=label,
        model=model,
        base_url=url,
        api_key_env=api_key_env,
        max_retries=max_retries,
        timeout=float(timeout),
    )


#: What a spec's parameters are read as; ``query_prompt`` / ``document_prompt`` become the prompts.
_SPEC_PARAMETERS: dict[str, Callable[[str], object]] = {
    "dimensions": int,
    "base_url": str,
    "api_key_env": str,
    "query_prompt": str,
    "document_prompt": str,
    "price_per_million_tokens": float,
    "batch_size": int,
    "token_budget": int,
    "concurrency": int,
    "max_retries": int,
    "timeout": float,
    "encoding_format": str,
}


def arm_from_spec(spec: str) -> Arm:
    """The arm of ``openai:MODEL[?name=value&...]``, with `EndpointOptions`' fields and `openai_arm`'s
    ``price_per_million_tokens`` as parameters (``query_prompt`` and ``document_prompt`` for the prompts),
    percent-encoded as in a URL query string (a literal ``+`` is ``%2B``; ``+`` is a space). Unknown
    parameters and bad values are one-line errors, which never quote a value that could be a key."""
    try:
        model, options = spec_parameters(
            spec, _SPEC_PARAMETERS, example="openai:text-embedding-3-small?dimensions=256"
        )
    except EndpointError as error:
        raise EncoderError(str(error)) from None
    prompts = {kind: str(options.pop(f"{kind}_prompt", "")) for kind in KINDS}
    price = options.pop("price_per_million_tokens", None)
    return openai_arm(
        model,
        EndpointOptions(prompts=prompts, **options),  # type: ignore[arg-type]
        price_per_million_tokens=price,  # type: ignore[arg-type]
        name=spec,
    )


def spec_parameters(
    spec: str, parameters: Mapping[str, Callable[[str], object]], *, example: str
) -> tuple[str, dict[str, object]]:
    """The model name and the parameters of ``openai:MODEL[?name=value&...]``, each read by its entry in
    ``parameters`` (``int``, ``float``, ``str`` or a function raising ``ValueError``); ``example`` is a
    whole spec shown in the message for a spec without a model name. Unknown or repeated parameters and bad
    values are one-line `EndpointError` messages, which never quote a value that could be a key."""
    model, _, query = spec[len(ENDPOINT_PREFIX) :].partition("?")
    label = f"{ENDPOINT_PREFIX}{model}"
    if not model:
        raise EndpointError(
            f"model spec {label!r}: no model name after {ENDPOINT_PREFIX!r} (e.g. {example!r})"
        )
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise EndpointError(
            f"model spec {label!r}: the parameters after '?' must be name=value pairs joined by '&'"
        ) from None
    options: dict[str, object] = {}
    for key, value in pairs:
        shown = repr(key) if _PARAMETER_NAME.fullmatch(key) else "a parameter"
        if key not in parameters:
            hint = " (the key is read from the environment: api_key_env=VARIABLE)" if "key" in key else ""
            raise EndpointError(
                f"model spec {label!r}: unknown parameter {shown}{hint}; known: {', '.join(parameters)}"
            )
        if key in options:
            raise EndpointError(f"model spec {label!r}: parameter {shown} is given twice")
        read = parameters[key]
        try:
            options[key] = read(value)
        except ValueError as error:
            kind = "an integer" if read is int else "a number" if read is float else str(error)
            raise EndpointError(f"model spec {label!r}: {key} must be {kind}, got {value!r}") from None
    return model, options


# ---------------------------------------------------------------------------------------------- internals


def _base_url(given: str | None, label: str) -> str:
    url = given if given is not None else os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    source = "base_url" if given is not None else f"${BASE_URL_ENV}" if os.environ.get(BASE_URL_ENV) else None
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a port out of range or not a number)
    except (ValueError, TypeError):
        raise EndpointError(f"model spec {label!r}: {source} is not a URL") from None
    if parts.username is not None or parts.password is not None:
        # Never quoted: it holds a credential.
        raise EndpointError(
            f"model spec {label!r}: {source} must not hold a user name or password; the key is read from "
            "the environment (api_key_env=VARIABLE)"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise EndpointError(
            f"model spec {label!r}: {source} must be an http(s) URL without query or fragment, such as "
            f"'http://127.0.0.1:8080/v1', got {url!r}"
        )
    return url.rstrip("/")


def _prompts(prompts: Mapping[str, str] | None, label: str) -> dict[str, str]:
    given = dict(prompts or {})
    unknown = sorted(set(given) - set(KINDS))
    if unknown or not all(isinstance(value, str) for value in given.values()):
        raise EncoderError(
            f"model spec {label!r}: prompts must map 'query' and 'document' to strings, got {sorted(given)}"
        )
    return {kind: given.get(kind, "") for kind in KINDS}


def _is_int(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _decoded(embedding: object) -> object:
    if not isinstance(embedding, str):
        return embedding
    try:
        return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4").tolist()
    except ValueError:
        return embedding  # not base64 of float32: reported as not a list of numbers
