"""The official ``openai`` client, as every endpoint of ours uses it (an embedding arm's, the LLM judge's).

The client does the HTTP, the retries with backoff and ``Retry-After``, and the timeouts (``max_retries`` and
``timeout`` from the spec); it is imported only when the first request is sent (the ``[openai]`` extra).
Its typed errors become one `EndpointError` line each: unreachable, timed out, the key refused, no such
model, throttled past the retries, or an unusable answer, with the retries it took and never the key.
"""

from __future__ import annotations

import dataclasses
import http
import importlib
import importlib.util
import os
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

__all__ = ["EXTRA_HINT", "Connection", "EndpointError", "OpenAIClient", "require_client"]


EXTRA_HINT = "pip install 'pytest-embeval[openai]'"


#: Statuses the client retries (`_base_client.BaseClient._should_retry`): past them it has given up.
_RETRIED = frozenset({408, 409, 429})


class EndpointError(Exception):
    """A one-line problem with an endpoint spec, its key, or a request to it; it never holds the key.

    Each user of an endpoint turns it into its own error: an arm's into an `EncoderError`, the LLM judge's
    (`judge`) into a `JudgeError`."""


@dataclasses.dataclass(frozen=True, slots=True)
class Connection:
    """What the official client is built with, validated (`connection`): the endpoint, where its key is read
    from (never the key), and how the client retries and waits."""

    #: ``openai:MODEL``, what messages name the spec by
    label: str
    model: str
    base_url: str
    api_key_env: str
    max_retries: int
    timeout: float


class OpenAIClient:
    """The official client of one `Connection`, shared by the threads that send its requests; it is built,
    and the key read from the environment, when the first request is sent."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._lock = threading.Lock()
        self._openai: ModuleType | None = None
        self._client: Any = None

    def connect(self, url: str) -> tuple[ModuleType, Any]:
        """The ``openai`` module and the client; `EndpointError` when the client or the key is missing
        (naming ``url``, where the request was to go)."""
        with self._lock:
            if self._client is None:
                openai = _import_openai(self.connection.label)
                where = self.connection
                missing = self.missing_key(url)
                if missing is not None:
                    raise EndpointError(missing)
                # The key goes from the environment to the client, through no variable of ours.
                self._client = openai.OpenAI(
                    api_key=os.environ[where.api_key_env],
                    base_url=where.base_url,
                    max_retries=where.max_retries,
                    timeout=where.timeout,
                )
                self._openai = openai
            assert self._openai is not None
            return self._openai, self._client

    def missing_key(self, url: str) -> str | None:
        """Why no request to ``url`` could be sent now: the key's variable is not set; None when it is."""
        env = self.connection.api_key_env
        if os.environ.get(env):
            return None
        return (
            f"the API key for {url} is read from ${env}, which is not set (for a server that needs no key, "
            "set it to any value)"
        )

    def explain(self, openai: ModuleType, error: Exception, url: str) -> str:
        """One line for an error of the client on a request to ``url``, naming the URL (and the key's
        variable, never the key), redacted."""
        where = self.connection
        env = where.api_key_env
        retries = _retries_taken(error, where.max_retries)
        if isinstance(error, openai.APITimeoutError):
            line = f"no answer from {url} within {where.timeout:g} s, {_times(retries)}"
        elif isinstance(error, openai.APIConnectionError):
            line = f"cannot reach {url} ({_cause(error)}), {_times(retries)}"
        elif isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
            line = f"{url} refused the API key in ${env} ({_status(error.status_code)})"
        elif isinstance(error, openai.NotFoundError):
            line = (
                f"{url} has no model {where.model!r} ({_status(404)}): check the model name and the base URL"
            )
        elif isinstance(error, openai.APIStatusError):
            status = error.status_code
            if status in _RETRIED or status >= 500:
                line = (
                    f"{url} answered {_status(status)}; gave up after {retries} of {where.max_retries} "
                    "retries"
                )
            else:
                line = f"{url} answered {_status(status)}: {_server_message(error)}"
        else:
            line = f"{url} gave an unusable answer: {type(error).__name__}: {_first_line(str(error))}"
        return self.redact(line)

    def redact(self, message: str) -> str:
        """``message`` with the key, should it hold it (a server's text quoted), blanked out."""
        key = os.environ.get(self.connection.api_key_env, "")
        return message.replace(key, "***") if len(key) >= 4 else message


def require_client(label: str) -> None:
    """The one-line error for a missing client, at resolve time, without importing it."""
    if importlib.util.find_spec("openai") is None:
        raise EndpointError(f"model spec {label!r} needs the openai client: {EXTRA_HINT}")


def _import_openai(label: str) -> ModuleType:
    try:
        return importlib.import_module("openai")
    except ImportError as error:
        raise EndpointError(f"model spec {label!r} needs the openai client ({error}): {EXTRA_HINT}") from None


def _retries_taken(error: Exception, default: int) -> int:
    """Retries the client made before this error: it numbers each attempt in a request header."""
    response = getattr(error, "response", None)
    request = getattr(response, "request", None) or getattr(error, "request", None)
    headers = getattr(request, "headers", None)
    value = headers.get("x-stainless-retry-count") if headers is not None else None
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _times(retries: int) -> str:
    return f"{retries} {'retry' if retries == 1 else 'retries'}"


def _status(code: int) -> str:
    try:
        return f"{code} {http.HTTPStatus(code).phrase}"
    except ValueError:
        return str(code)


def _cause(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    if cause is None:
        return _first_line(str(error))
    return f"{type(cause).__name__}: {_first_line(str(cause))}"


def _server_message(error: Any) -> str:
    """The server's message for a refused request (OpenAI's ``{"error": {"message": ...}}``, or its text)."""
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, Mapping) else inner
        if message is None:
            message = body.get("message") or body.get("detail") or body
        return _first_line(str(message))
    return _first_line(str(body if body is not None else getattr(error, "message", error)))


def _first_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
