"""A small OpenAI-compatible embeddings server for the tests, on 127.0.0.1, that can be told to misbehave.

``POST /v1/embeddings`` answers as the OpenAI API does (``data`` with ``index`` and ``embedding``, as floats
or base64 as asked; ``usage``), with the vectors of a function the test gives. Given a ``chat`` function, it
also answers ``POST /v1/chat/completions`` (one choice, ``usage`` with prompt and completion tokens), as a
chat model does for the LLM judge: the function gets the model and the messages and returns the answer's
text, or a `ChatReply` (a refusal, no content, another finish reason). Every request is recorded
(arrival time, body, headers) and the most requests in flight at once are counted. ``script`` holds
`Reply` objects, used one per request in arrival order before normal answers resume: a status with headers
(a 429 with ``Retry-After``), or a change to the normal answer (a row dropped, NaN, indices swapped). It
ignores ``dimensions`` unless made with ``dimensions=True``: then the vector function gets the request's.

The server is bounded: after ``max_requests`` it answers 503 with ``x-should-retry: false`` (the client then
gives up at once), and it shuts down by itself after ``lifetime`` seconds.
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

#: embed(model, inputs) -> (len(inputs), d) vectors; with ``dimensions`` on the server, also given the
#: request's ``dimensions`` (None when not asked for)
Embed = Callable[..., np.ndarray]
Answer = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Received:
    at: float
    path: str
    model: str
    inputs: list[str]
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def retry_count(self) -> int:
        """The client's attempt number for this request (0: the first attempt)."""
        return int(self.headers.get("x-stainless-retry-count", "0"))


@dataclasses.dataclass(frozen=True)
class ChatReply:
    """A chat answer other than plain text: ``content`` (None: none), a ``refusal``, a ``finish_reason``."""

    content: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"


#: chat(model, messages) -> the answer's text, or a ChatReply
Chat = Callable[[str, list[dict[str, Any]]], "str | ChatReply"]


@dataclasses.dataclass(frozen=True)
class Reply:
    """One scripted answer: ``status`` (with ``headers`` and an OpenAI-style error ``message``), or, for 200,
    the normal answer passed through ``change`` first."""

    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    message: str = "scripted failure"
    change: Callable[[Answer], Answer] | None = None
    delay: float = 0.0


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def word_vectors(dim: int = 8) -> Embed:
    """Deterministic vectors: a Gaussian seeded by the crc32 of each input."""
    import zlib

    def embed(model: str, inputs: list[str]) -> np.ndarray:
        return np.array(
            [np.random.default_rng(zlib.crc32(text.encode("utf-8"))).standard_normal(dim) for text in inputs],
            dtype=np.float32,
        )

    return embed


class EmbeddingServer:
    """Use as a context manager: ``with EmbeddingServer(embed) as server: ... server.base_url ...``."""

    def __init__(
        self,
        embed: Embed,
        *,
        models: tuple[str, ...] = ("test-model",),
        key: str = "sk-test-0123456789abcdef",
        port: int = 0,
        delay: float = 0.0,
        max_requests: int = 2000,
        lifetime: float = 300.0,
        dimensions: bool = False,
        chat: Chat | None = None,
    ) -> None:
        self.embed = embed
        self.chat = chat
        self.dimensions = dimensions
        self.models = models
        self.key = key
        self.delay = delay
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.script: collections.deque[Reply] = collections.deque()
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime, self._httpd.shutdown)
        self._timer.daemon = True

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def texts(self) -> list[str]:
        """Every input the server was sent, in arrival order (retries included)."""
        with self._lock:
            return [text for request in self.received for text in request.inputs]

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    # ----------------------------------------------------------------------------------------- handling

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(400, "invalid JSON", "invalid_request_error")
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        with self._lock:
            self.received.append(
                Received(time.monotonic(), path, str(body.get("model")), inputs, body, headers)
            )
            count = len(self.received)
            reply = self.script.popleft() if self.script else None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay + (reply.delay if reply else 0.0))
            if count > self.max_requests:
                status, extra, data = _error(503, "request budget of the test server spent", "server_error")
                return status, {**extra, "x-should-retry": "false"}, data
            if path not in ("/v1/embeddings", "/v1/chat/completions") or (
                path == "/v1/chat/completions" and self.chat is None
            ):
                return _error(404, f"no route {path}", "invalid_request_error")
            if headers.get("authorization") != f"Bearer {self.key}":
                return _error(401, "Incorrect API key provided", "invalid_request_error")
            if reply is not None and reply.status != 200:
                status, extra, data = _error(reply.status, reply.message, "scripted")
                return status, {**extra, **reply.headers}, data
            model = str(body.get("model"))
            if model not in self.models:
                return _error(404, f"The model `{model}` does not exist", "invalid_request_error")
            if path == "/v1/chat/completions":
                assert self.chat is not None
                answer = _chat_answer(model, body.get("messages") or [], self.chat)
                if reply is not None and reply.change is not None:
                    answer = reply.change(answer)
                return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode("utf-8")
            asked = body.get("dimensions") if self.dimensions else None
            shortened = self.embed(model, inputs, asked) if self.dimensions else self.embed(model, inputs)
            vectors = np.asarray(shortened, dtype=np.float32)
            as_base64 = body.get("encoding_format") == "base64"
            answer: Answer = {
                "object": "list",
                "model": model,
                "data": [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
                        if as_base64
                        else [float(x) for x in row],
                    }
                    for i, row in enumerate(vectors)
                ],
                "usage": {"prompt_tokens": _tokens(inputs), "total_tokens": _tokens(inputs)},
            }
            if reply is not None and reply.change is not None:
                answer = reply.change(answer)
            return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode("utf-8")
        finally:
            with self._lock:
                self.in_flight -= 1


def _chat_answer(model: str, messages: list[dict[str, Any]], chat: Chat) -> Answer:
    said = chat(model, messages)
    reply = said if isinstance(said, ChatReply) else ChatReply(content=said)
    asked = _tokens([str(message.get("content") or "") for message in messages])
    answered = _tokens([reply.content or reply.refusal or ""])
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {"prompt_tokens": asked, "completion_tokens": answered, "total_tokens": asked + answered},
    }


def _tokens(inputs: list[str]) -> int:
    """What the test server bills: one token per word."""
    return sum(len(text.split()) for text in inputs)


def _error(status: int, message: str, kind: str) -> tuple[int, dict[str, str], bytes]:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode("utf-8")


def _handler(server: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, extra, data = server.answer(self.path, headers, raw)
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests read `received`

    return Handler


# Changes to a normal answer, for `Reply(change=...)`.


def drop_last(answer: Answer) -> Answer:
    return {**answer, "data": answer["data"][:-1]}


def swap_first_two(answer: Answer) -> Answer:
    data = list(answer["data"])
    data[0], data[1] = data[1], data[0]
    return {**answer, "data": data}


def duplicate_index(answer: Answer) -> Answer:
    data = [dict(item) for item in answer["data"]]
    data[-1]["index"] = 0
    return {**answer, "data": data}


def nan_in_first(answer: Answer) -> Answer:
    data = [dict(item) for item in answer["data"]]
    first = data[0]["embedding"]
    if isinstance(first, str):
        row = np.frombuffer(base64.b64decode(first), dtype="<f4").copy()
        row[0] = np.nan
        data[0]["embedding"] = base64.b64encode(row.tobytes()).decode("ascii")
    else:
        data[0]["embedding"] = [float("nan"), *first[1:]]
    return {**answer, "data": data}


def without_usage(answer: Answer) -> Answer:
    return {key: value for key, value in answer.items() if key != "usage"}


def fake_model_vectors(query_prompt: str = "query: ") -> Embed:
    """The vectors of fake_models.py's models, served under their names: inputs that start with
    ``query_prompt`` are queries (the arm's spec sets that prompt), the others documents."""
    import fake_models

    def embed(model: str, inputs: list[str]) -> np.ndarray:
        encoder = getattr(fake_models, model)
        rows = [
            encoder.encode_query([text.removeprefix(query_prompt)])[0]
            if text.startswith(query_prompt)
            else encoder.encode_document([text])[0]
            for text in inputs
        ]
        return np.stack(rows)

    return embed


class TruncatedStatic:
    """The demo's static model with its vectors cut to their first ``dimensions``, in process: what a server
    serves when asked for ``dimensions`` (as ``text-embedding-3-*`` shorten theirs), so that the endpoint arm
    ``openai:static-minilm-pca256?dimensions=128`` has an in-process twin, ``openai_server:truncated``."""

    def __init__(self, dimensions: int = 128) -> None:
        self.dimensions = dimensions
        self.name = f"static-minilm-pca256, first {dimensions} dimensions"
        self._model: Any = None

    def vectors(self, model: str, inputs: list[str], dimensions: int | None = None) -> np.ndarray:
        if self._model is None:
            from pathlib import Path

            from pytest_embeval.arms import demo

            self._model = demo.static_minilm(demo.default_static_cache(Path(__file__).resolve().parents[1]))
        vectors = np.asarray(self._model.encode(inputs, convert_to_numpy=True, show_progress_bar=False))
        return vectors[:, : dimensions or vectors.shape[1]]

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self.vectors("", texts, self.dimensions)

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return self.vectors("", texts, self.dimensions)


truncated = TruncatedStatic(128)
