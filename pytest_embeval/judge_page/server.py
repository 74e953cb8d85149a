"""The judging page's server: the standard library's ``ThreadingHTTPServer`` on the loopback address,
serving one static page (``static/``) and a small JSON API, and writing each grade into the sheets as it is
given (`judging.sheet_edits`).

Safe by default, because any page the judge's browser opens, and any local process, can reach a loopback
port:

* it binds ``127.0.0.1`` only (never a public address), on a free port unless one is named;
* every path starts with a per-session token (``/<token>/``, 192 random bits), printed with the address:
  a request without it is refused (403), static files included, so no other page or process can read the
  pairs or post grades;
* the ``Host`` header must name the loopback address and this port (403 otherwise): a rebound DNS name
  that resolves to 127.0.0.1 does not get in even with a guessed path;
* a write must be a ``POST`` of ``application/json`` (a cross-site form cannot send it without asking
  first) from no other origin, at most 64 KiB;
* every response carries a strict Content-Security-Policy (scripts, styles and requests from this origin
  only; no inline script, no frames, no forms), ``nosniff`` and ``no-referrer``; the page builds its DOM
  with ``textContent``, so a document holding ``<script>`` shows it as text;
* nothing comes from the network: the page's script and style are package data.

Each connection is served by its own thread, with a socket timeout so that an idle or trickling client
holds a thread for at most `_SOCKET_TIMEOUT` seconds; writes are serialised by a lock (and, across
processes, by the sheet's own lock).
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_embeval.judge_page.pairs import Marks, Workbook, marks_of
from pytest_embeval.judging.pooling import SheetError, SheetRecords
from pytest_embeval.judging.rankings import Pair
from pytest_embeval.judging.sheet_edits import Cells, current, edit_sheet

__all__ = ["LOOPBACK", "JudgingServer", "JudgingState", "Mark"]

LOOPBACK = "127.0.0.1"
#: The largest request body accepted (a note and a grade fit many times over).
MAX_BODY = 64 * 1024
#: The longest note kept.
MAX_NOTE = 4000
#: The most marks one request may carry (a page sends what it gave while the last write was on its way).
MAX_MARKS = 500
#: The most pairs one request for texts returns.
MAX_PAIRS = 200
_SOCKET_TIMEOUT = 30
#: What every response says about itself: see the module's docstring.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
#: The page's static files, by the name the page asks for.
_STATIC = {
    "": ("index.html", "text/html; charset=utf-8"),
    "page.js": ("page.js", "text/javascript; charset=utf-8"),
    "page.css": ("page.css", "text/css; charset=utf-8"),
}


@dataclass(frozen=True, slots=True)
class Mark:
    """A grade ("" clears it) and a note for the pair at ``position``; None leaves either as it is."""

    position: int
    grade: str | None = None
    notes: str | None = None


class JudgingState:
    """The workbook, and the sheets as read or written last; `mark` writes marks into them (thread-safe)."""

    def __init__(self, workbook: Workbook, sheets: Sequence[SheetRecords]) -> None:
        self.workbook = workbook
        self._sheets = list(sheets)
        self._lock = threading.Lock()
        self.marks = marks_of(workbook, self._sheets)

    def mark(self, marks: Sequence[Mark]) -> Marks:
        """Write each mark's grade ("" clears it) and note (None leaves either as it is) into every sheet
        that lists its pair, in order (a later mark of a pair wins), one write per sheet; return the marks
        as the sheets hold them now, other pages' grades included."""
        with self._lock:
            edits: dict[int, dict[Pair, Cells]] = {}
            for mark in marks:
                pair = self.workbook.pairs[mark.position]
                judge = self.workbook.judge if mark.grade and self.workbook.judge else None
                for index in pair.sheets:
                    earlier = edits.setdefault(index, {}).get(pair.pair, Cells())
                    edits[index][pair.pair] = Cells(
                        grade=_later(earlier.grade, mark.grade),
                        judge=_later(earlier.judge, judge),
                        notes=_later(earlier.notes, mark.notes),
                    )
            for index, path in enumerate(self.workbook.sheets):
                if index in edits:
                    self._sheets[index] = edit_sheet(path, edits[index], known=self._sheets[index])
                else:  # another page may have graded it meanwhile
                    self._sheets[index] = current(self._sheets[index])
            self.marks = marks_of(self.workbook, self._sheets)
            return self.marks


def _later(earlier: str | None, later: str | None) -> str | None:
    return earlier if later is None else later


class JudgingServer(ThreadingHTTPServer):
    """The page of one workbook on ``127.0.0.1:port`` (0: a free port), behind a fresh token."""

    daemon_threads = True

    def __init__(self, state: JudgingState, port: int = 0) -> None:
        super().__init__((LOOPBACK, port), _Handler)
        self.state = state
        self.token = secrets.token_urlsafe(24)
        self.port: int = self.server_address[1]
        self.hosts = {f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.static = {
            name: ((resources.files(__package__) / "static" / file).read_bytes(), kind)
            for name, (file, kind) in _STATIC.items()
        }

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/{self.token}/"


class _Refused(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    server: JudgingServer
    protocol_version = "HTTP/1.1"  # keep-alive: the page's requests reuse one connection
    server_version = "embeval-judge-page"
    sys_version = ""
    timeout = _SOCKET_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the address and the summary, not every request."""

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def _answer(self, method: str) -> None:
        try:
            route, query = self._route()
            if method == "GET":
                self._get(route, query)
            elif route == "api/mark":
                self._mark()
            else:
                raise _Refused(HTTPStatus.METHOD_NOT_ALLOWED, f"{method} {route or '/'} is not allowed")
        except _Refused as refusal:
            self._refuse(refusal.status, str(refusal))

    def _refuse(self, status: HTTPStatus, message: str) -> None:
        # A refused request's body may be unread: the connection cannot carry another request.
        self.close_connection = True
        self._send(status, json.dumps({"error": message}).encode(), "application/json")

    def _route(self) -> tuple[str, Mapping[str, list[str]]]:
        """The path after the token, and the query; refuses a request without the token or for a host
        other than this server's."""
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in self.server.hosts:
            raise _Refused(HTTPStatus.FORBIDDEN, "forbidden: wrong Host header")
        parts = urlsplit(self.path)
        token, _, route = parts.path.removeprefix("/").partition("/")
        if not hmac.compare_digest(token.encode(), self.server.token.encode()):
            raise _Refused(HTTPStatus.FORBIDDEN, "forbidden: open the address the server printed")
        return route, parse_qs(parts.query)

    def _get(self, route: str, query: Mapping[str, list[str]]) -> None:
        if route in self.server.static:
            body, kind = self.server.static[route]
            self._send(HTTPStatus.OK, body, kind)
        elif route == "favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "text/plain")
        elif route == "api/session":
            self._json(_session(self.server.state))
        elif route == "api/pairs":
            first, count = _integer(query, "from"), _integer(query, "count")
            self._json({"pairs": _pairs(self.server.state, first, min(count, MAX_PAIRS))})
        else:
            raise _Refused(HTTPStatus.NOT_FOUND, f"no {route!r} here")

    def _mark(self) -> None:
        origin = self.headers.get("Origin")
        if origin is not None and origin not in self.server.origins:
            raise _Refused(HTTPStatus.FORBIDDEN, "forbidden: another origin")
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise _Refused(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise _Refused(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
        if int(length) > MAX_BODY:
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"at most {MAX_BODY} bytes")
        try:
            body = json.loads(self.rfile.read(int(length)))
        except (ValueError, UnicodeDecodeError):
            raise _Refused(HTTPStatus.BAD_REQUEST, "the body is not JSON") from None
        state = self.server.state
        workbook = state.workbook
        marks = _mark_request(body, len(workbook.pairs), workbook.scale.max_grade)
        try:
            written = state.mark(marks)
        except SheetError as error:  # the sheet went missing, or was made unreadable, meanwhile
            problem = error.problems[0]
        except OSError as error:  # a full disk, a read-only folder
            problem = str(error.strerror or error)
        else:
            self._json(_marks(written))
            return
        raise _Refused(HTTPStatus.INTERNAL_SERVER_ERROR, f"not saved: {problem}")

    def _json(self, payload: Mapping[str, Any]) -> None:
        self._send(HTTPStatus.OK, json.dumps(payload, ensure_ascii=False).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def _integer(query: Mapping[str, list[str]], name: str) -> int:
    values = query.get(name, [])
    if len(values) != 1 or not values[0].isdigit():
        raise _Refused(HTTPStatus.BAD_REQUEST, f"{name} must be one integer >= 0")
    return int(values[0])


def _mark_request(body: Any, pairs: int, max_grade: int) -> list[Mark]:
    """The marks of a request ``{"marks": [{"position": 3, "grade": "2", "notes": "…"}, …]}`` (grade and
    notes optional; grade "" clears it): what a page gave since its last request was answered."""
    if not isinstance(body, dict) or set(body) != {"marks"} or not isinstance(body["marks"], list):
        raise _Refused(HTTPStatus.BAD_REQUEST, 'expected {"marks": [{position, grade?, notes?}, ...]}')
    if not 1 <= len(body["marks"]) <= MAX_MARKS:
        raise _Refused(HTTPStatus.BAD_REQUEST, f"send 1 to {MAX_MARKS} marks at a time")
    scale = [str(value) for value in range(max_grade + 1)]
    marks = []
    for mark in body["marks"]:
        if not isinstance(mark, dict) or set(mark) - {"position", "grade", "notes"}:
            raise _Refused(HTTPStatus.BAD_REQUEST, "a mark is {position, grade?, notes?}")
        position, grade, notes = mark.get("position"), mark.get("grade"), mark.get("notes")
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < pairs:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"position must be an integer in 0..{pairs - 1}")
        if grade is not None and grade not in ["", *scale]:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"grade must be one of {', '.join(scale)} or empty")
        if notes is not None and (not isinstance(notes, str) or len(notes) > MAX_NOTE):
            raise _Refused(HTTPStatus.BAD_REQUEST, f"notes must be text of at most {MAX_NOTE} characters")
        if grade is None and notes is None:
            raise _Refused(HTTPStatus.BAD_REQUEST, "nothing to write: give a grade or notes")
        marks.append(Mark(position, grade, notes))
    return marks


def _marks(marks: Marks) -> dict[str, Any]:
    return {"grades": list(marks.grades), "notes": list(marks.notes)}


def _session(state: JudgingState) -> dict[str, Any]:
    """What the page needs before the first pair: no texts (they come in windows, `_pairs`)."""
    workbook, marks = state.workbook, state.marks
    guidelines = workbook.guidelines
    return {
        "sheets": [path.name for path in workbook.sheets],
        "calibration": workbook.calibration,
        "shared": workbook.shared,
        "total": len(workbook.pairs),
        "judge": workbook.judge,
        "golden": workbook.golden.name if workbook.golden is not None else None,
        "guidelines": None if guidelines is None else {"name": guidelines.path.name, "text": guidelines.text},
        "scale": [{"grade": str(grade), "label": label} for grade, label in enumerate(workbook.scale.labels)],
        "resume": next((i for i, grade in enumerate(marks.grades) if not grade), len(marks.grades)),
        **_marks(marks),
    }


def _pairs(state: JudgingState, first: int, count: int) -> list[dict[str, Any]]:
    """The texts of the pairs at positions ``first`` .. ``first + count - 1``: nothing that names an arm, a
    rank or a model (the sheet holds none)."""
    return [
        {
            "position": position,
            "query": pair.query_text,
            "title": pair.doc_title,
            "text": pair.doc_text,
            "seed": pair.seed,
            "shared": pair.shared,
        }
        for position, pair in enumerate(state.workbook.pairs[first : first + count], start=first)
    ]
