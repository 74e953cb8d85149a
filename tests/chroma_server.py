"""A real Chroma server for the tests: ``chroma run`` (the ``chromadb`` package's command) on 127.0.0.1, a
free port and a temporary folder, ready once its heartbeat answers, stopped (and its folder left to pytest's
tmp_path) by the caller; and a small HTTP proxy in front of any server that delays, refuses or cuts it off
on command, bounded in requests and in time, for the engine's faults.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from openai_server import free_port

#: Seconds a server gets to answer its first heartbeat (its start takes about 1 s on an idle machine).
READY_WITHIN = 60.0


def chroma_command() -> str:
    """The ``chroma`` command beside this interpreter (a virtualenv's), or on PATH; skips where there is
    none (the ``[chroma]`` extra is not installed)."""
    beside = Path(sys.executable).with_name("chroma")
    if beside.is_file():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        pytest.skip("needs the chroma command (pip install 'pytest-embeval[chroma]')")
    return found


class ChromaServer:
    """``chroma run --host 127.0.0.1 --port PORT --path FOLDER``, started and stopped by a test."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / "chroma.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    chroma_command(),
                    "run",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--path",
                    str(folder),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + READY_WITHIN
        while True:
            try:
                httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).raise_for_status()
                return
            except httpx.HTTPError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    tail = self.log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(
                        f"chroma run did not answer within {READY_WITHIN:g} s:\n{tail}"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Ends the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class _QuietServer(ThreadingHTTPServer):
    """A server whose handler threads die quietly when a client hangs up on them (a client that gave up on
    a slow answer), instead of printing a traceback into the run under test's output."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class FaultyProxy:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream`` (``http://host:port``) that passes requests on
    until told otherwise: ``delay`` seconds before answering requests whose path contains ``delay_on``;
    ``refuse_on``: a part of ``"METHOD path"`` answered 500 with a Chroma-style error instead; and
    ``when(part, action)``: ``action()`` run once, as the first request whose path contains ``part``
    arrives, before it is passed on (to kill the server behind it mid-run). Bounded: past ``max_requests``
    it answers 503; it stops by itself after ``lifetime`` seconds."""

    def __init__(self, upstream: str, *, max_requests: int = 2000, lifetime: float = 120.0) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self.upstream = (host, int(port))
        self.delay = 0.0
        self.delay_on = ""
        self.refuse_on = ""
        self.requests: list[tuple[str, str]] = []
        self._trigger: tuple[str, Callable[[], None]] | None = None
        self._lock = threading.Lock()
        self.max_requests = max_requests
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                    count = len(proxy.requests)
                    trigger = proxy._trigger
                    if trigger is not None and trigger[0] in self.path:
                        proxy._trigger = None
                    else:
                        trigger = None
                if trigger is not None:
                    trigger[1]()
                if count > proxy.max_requests:
                    return self._answer(503, b'{"error":"proxy: too many requests"}')
                if proxy.refuse_on and proxy.refuse_on in f"{self.command} {self.path}":
                    return self._answer(
                        500, b'{"error":"InternalError","message":"refused by the test proxy"}'
                    )
                if proxy.delay and proxy.delay_on in self.path:
                    time.sleep(proxy.delay)
                try:
                    connection = http.client.HTTPConnection(*proxy.upstream, timeout=30)
                    headers = {
                        k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")
                    }
                    connection.request(self.command, self.path, body=body or None, headers=headers)
                    answer = connection.getresponse()
                    data = answer.read()
                    connection.close()
                except OSError:
                    # The server behind is gone: so is the connection the client made.
                    self.close_connection = True
                    self.connection.close()
                    return None
                return self._answer(answer.status, data, answer.getheader("Content-Type"))

            def _answer(self, status: int, data: bytes, kind: str | None = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(lifetime, self.close)
        self._timer.daemon = True
        self._timer.start()

    def when(self, part: str, action: Callable[[], None]) -> None:
        """Run ``action`` once, as the first request whose path contains ``part`` arrives."""
        with self._lock:
            self._trigger = (part, action)

    def close(self) -> None:
        self._timer.cancel()
        self.server.shutdown()
        self.server.server_close()
