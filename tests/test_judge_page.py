"""The judging page's server without a browser: its API, what it refuses, what it writes and when, two
pages on one sheet, a killed server, and ``embeval judge-page``'s errors (the browser's side is
tests/test_judge_page_browser.py)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from judge_page_support import (
    HOSTILE,
    LABELS,
    PageServer,
    api,
    grades_of,
    in_order,
    request,
    sheet_cells,
    write_calibration_sheets,
    write_judging_set,
    write_pool_sheet,
)

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judge_page.pairs import open_workbook
from pytest_embeval.judge_page.server import MAX_BODY, SECURITY_HEADERS, JudgingServer, JudgingState
from pytest_embeval.judging.grade_scale import grade_scale
from pytest_embeval.judging.merging import sheet_grades
from pytest_embeval.judging.pooling import read_sheet
from pytest_embeval.judging.sheet_edits import Cells, edit_sheet

Result = tuple[int, str, str]


def start(
    sheet: Path, golden_path: Path | None, *, judge: str = "", calibration: Path | None = None
) -> JudgingServer:
    """A server of the sheet in this process, serving on a thread until `shutdown`."""
    golden = load_golden(golden_path) if golden_path is not None else None
    scale = grade_scale(golden, None, default_max_grade=2)
    workbook, sheets = open_workbook(sheet, calibration=calibration, golden=golden, scale=scale, judge=judge)
    server = JudgingServer(JudgingState(workbook, sheets))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def shutdown(server: JudgingServer) -> None:
    server.shutdown()
    server.server_close()


@pytest.fixture
def golden_path(tmp_path: Path) -> Path:
    return write_judging_set(tmp_path)


@pytest.fixture
def sheet(golden_path: Path, tmp_path: Path) -> Path:
    return write_pool_sheet(golden_path, tmp_path / "pool.csv")


@pytest.fixture
def served(sheet: Path, golden_path: Path) -> Iterator[JudgingServer]:
    server = start(sheet, golden_path, judge="ana")
    yield server
    shutdown(server)


def call(server: JudgingServer, method: str, route: str, body: Any = None) -> Any:
    return api(server.port, server.token, method, route, body)


# ------------------------------------------------------------------------------------------- refusals


def refusals(server: JudgingServer) -> list[tuple[str, str, dict[str, str], Any, bytes | None, int]]:
    """(method, path, headers, JSON body, raw body, expected status) for requests the server refuses."""
    port, token = server.port, server.token
    mark = f"/{token}/api/mark"
    grade = {"marks": [{"position": 0, "grade": "2"}]}
    return [
        # no token, a wrong one, a prefix of it, the token as a query parameter
        ("GET", "/", {}, None, None, 403),
        ("GET", "/favicon.ico", {}, None, None, 403),
        ("GET", f"/{'x' * len(token)}/", {}, None, None, 403),
        ("GET", f"/{token[:-1]}/", {}, None, None, 403),
        ("GET", f"/?token={token}", {}, None, None, 403),
        ("GET", f"/{'x' * len(token)}/api/session", {}, None, None, 403),
        ("POST", "/api/mark", {}, grade, None, 403),
        ("POST", f"/{token}x/api/mark", {}, grade, None, 403),
        # the right token, but a Host header that is not this server's (DNS rebinding), or none
        ("GET", f"/{token}/", {"Host": f"judge.example:{port}"}, None, None, 403),
        ("GET", f"/{token}/", {"Host": f"127.0.0.1:{port + 1}"}, None, None, 403),
        ("GET", f"/{token}/", {"Host": "127.0.0.1"}, None, None, 403),
        ("GET", f"/{token}/", {"Host": ""}, None, None, 403),
        ("POST", mark, {"Host": f"attacker.example:{port}"}, grade, None, 403),
        # a write from another origin, or not as JSON (what a cross-site form could send)
        ("POST", mark, {"Origin": "http://attacker.example"}, grade, None, 403),
        ("POST", mark, {"Origin": "null"}, grade, None, 403),
        ("POST", mark, {"Content-Type": "text/plain"}, grade, None, 415),
        ("POST", mark, {"Content-Type": "application/x-www-form-urlencoded"}, grade, None, 415),
        # bodies: none, too long, not JSON, not a mark, off the scale, out of range, empty
        ("POST", mark, {"Content-Type": "application/json"}, None, None, 411),
        ("POST", mark, {"Content-Type": "application/json"}, None, b"x" * (MAX_BODY + 1), 413),
        ("POST", mark, {"Content-Type": "application/json"}, None, b"{not json", 400),
        ("POST", mark, {}, [0, "2"], None, 400),
        ("POST", mark, {}, {"position": 0, "grade": "2"}, None, 400),
        ("POST", mark, {}, {"marks": []}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 0, "grade": "1"}] * 501}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 0, "grade": "3"}]}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 0, "grade": 2}]}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 28, "grade": "1"}]}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": True, "grade": "1"}]}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 0}]}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 0, "grade": "1", "arm": "candidate"}]}, None, 400),
        ("POST", mark, {}, {"marks": [{"position": 0, "notes": "x" * 4001}]}, None, 400),
        # one bad mark among good ones: none is written
        (
            "POST",
            mark,
            {},
            {"marks": [{"position": 1, "grade": "1"}, {"position": 0, "grade": "7"}]},
            None,
            400,
        ),
        # what is not there: other files (no folder is served), other methods
        ("GET", f"/{token}/../pyproject.toml", {}, None, None, 404),
        ("GET", f"/{token}/static/page.js", {}, None, None, 404),
        ("GET", f"/{token}/api/pairs?from=x&count=3", {}, None, None, 400),
        ("GET", f"/{token}/api/pairs?from=0", {}, None, None, 400),
        ("POST", f"/{token}/", {}, grade, None, 405),
        ("POST", f"/{token}/api/session", {}, grade, None, 405),
    ]


def test_every_request_without_the_token_or_from_elsewhere_is_refused_and_writes_nothing(
    served: JudgingServer, sheet: Path
) -> None:
    before = sheet.read_bytes()
    for method, path, headers, body, raw, status in refusals(served):
        got, answer_headers, answer = request(served.port, method, path, body, headers=headers, raw=raw)
        assert got == status, (method, path, headers, body, answer)
        assert answer_headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]
        assert HOSTILE not in answer.decode()  # nothing of the sheet
    assert sheet.read_bytes() == before
    # the same requests, right: served
    assert request(served.port, "GET", f"/{served.token}/")[0] == 200
    assert (
        request(served.port, "GET", f"/{served.token}/", headers={"Host": f"localhost:{served.port}"})[0]
        == 200
    )
    origin = {"Origin": f"http://127.0.0.1:{served.port}"}
    assert (
        request(
            served.port,
            "POST",
            f"/{served.token}/api/mark",
            {"marks": [{"position": 0, "grade": "2"}]},
            headers=origin,
        )[0]
        == 200
    )


def test_it_listens_on_the_loopback_address_only(served: JudgingServer) -> None:
    assert served.server_address[0] == "127.0.0.1"
    addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    for address in addresses - {"127.0.0.1", "127.0.1.1"}:
        with pytest.raises(OSError), socket.create_connection((address, served.port), timeout=2):
            pass


def test_every_response_carries_a_strict_policy_and_the_page_has_no_inline_script_or_network_asset(
    served: JudgingServer,
) -> None:
    for route in ("", "page.js", "page.css", "api/session", "api/pairs?from=0&count=2"):
        status, headers, _ = request(served.port, "GET", f"/{served.token}/{route}")
        assert status == 200, route
        for name, value in SECURITY_HEADERS.items():
            assert headers[name.lower()] == value, (route, name)
    policy = SECURITY_HEADERS["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
    page = request(served.port, "GET", f"/{served.token}/")[2].decode()
    script = request(served.port, "GET", f"/{served.token}/page.js")[2].decode()
    style = request(served.port, "GET", f"/{served.token}/page.css")[2].decode()
    assert re.findall(r"<script[^>]*>", page) == ['<script src="page.js" defer>']  # no inline script
    assert re.search(r"\son[a-z]+\s*=", page) is None and "style=" not in page  # no handler, no inline style
    for text in (page, script, style):
        assert "http://" not in text and "https://" not in text and "//cdn" not in text  # offline
    # the script never turns a text into HTML
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert sink not in script, sink


# ------------------------------------------------------------------------------------------------ API


def test_the_session_and_pairs_are_blind_in_the_sheets_order(served: JudgingServer, sheet: Path) -> None:
    session = call(served, "GET", "api/session")
    assert set(session) == {
        "sheets", "calibration", "shared", "total", "judge", "golden", "guidelines", "scale", "resume",
        "grades", "notes",
    }  # fmt: skip
    assert (session["total"], session["resume"], session["shared"]) == (28, 0, 0)
    assert session["scale"] == [{"grade": str(g), "label": label} for g, label in enumerate(LABELS)]
    assert session["guidelines"]["name"] == "judging.md"
    assert session["grades"] == session["notes"] == [""] * 28
    pairs = call(served, "GET", "api/pairs?from=0&count=200")["pairs"]
    assert [pair["position"] for pair in pairs] == list(range(28))
    assert {key for pair in pairs for key in pair} == {"position", "query", "title", "text", "seed", "shared"}
    rows = sheet_cells(sheet)
    assert [(p["query"], p["title"], p["text"]) for p in pairs] == [
        (r["query_text"], r["doc_title"], r["doc_text"]) for r in rows
    ]
    # nothing names an arm, a rank or a model: the pool's arms were named incumbent and candidate
    everything = json.dumps([session, pairs]).lower()
    for word in ("incumbent", "candidate", "rank", "arm", "model", "score"):
        assert word not in everything, word
    assert call(served, "GET", "api/pairs?from=26&count=5")["pairs"][-1]["position"] == 27
    assert call(served, "GET", "api/pairs?from=40&count=5")["pairs"] == []


def test_each_grade_is_in_the_sheet_when_its_answer_comes_and_reopening_resumes_at_the_first_ungraded(
    served: JudgingServer, sheet: Path, golden_path: Path
) -> None:
    order = in_order(sheet)
    for position, grade in [(0, "2"), (1, "0"), (2, "1"), (4, "1")]:
        answer = call(served, "POST", "api/mark", {"marks": [{"position": position, "grade": grade}]})
        assert grades_of(sheet)[order[position]] == grade  # written before the answer
        assert answer["grades"][position] == grade
    call(served, "POST", "api/mark", {"marks": [{"position": 2, "notes": 'two, "quoted"\nlines'}]})
    call(served, "POST", "api/mark", {"marks": [{"position": 1, "grade": ""}]})  # undone
    rows = {(r["query_id"], r["doc_id"]): r for r in sheet_cells(sheet)}
    assert [(rows[order[i]]["grade"], rows[order[i]]["judge"]) for i in range(5)] == [
        ("2", "ana"), ("", "ana"), ("1", "ana"), ("", ""), ("1", "ana"),
    ]  # fmt: skip
    assert rows[order[2]]["notes"] == 'two, "quoted"\nlines'
    again = start(sheet, golden_path)
    try:
        session = call(again, "GET", "api/session")
        assert session["resume"] == 1
        assert session["grades"][:5] == ["2", "", "1", "", "1"]
        assert session["notes"][2] == 'two, "quoted"\nlines'
    finally:
        shutdown(again)


def test_marks_given_while_a_write_was_on_its_way_come_together_and_apply_in_order(
    served: JudgingServer, sheet: Path
) -> None:
    order = in_order(sheet)
    marks = [
        {"position": 0, "grade": "2"},
        {"position": 1, "grade": "1"},
        {"position": 0, "notes": "checked twice"},
        {"position": 1, "grade": ""},  # undone
        {"position": 3, "grade": "0"},
    ]
    answer = call(served, "POST", "api/mark", {"marks": marks})
    assert answer["grades"][:4] == ["2", "", "", "0"] and answer["notes"][0] == "checked twice"
    rows = {(r["query_id"], r["doc_id"]): r for r in sheet_cells(sheet)}
    assert [(rows[order[i]]["grade"], rows[order[i]]["notes"]) for i in range(4)] == [
        ("2", "checked twice"), ("", ""), ("", ""), ("0", ""),
    ]  # fmt: skip


def test_mid_session_the_sheet_is_valid_for_merge_and_agreement_at_every_moment(
    served: JudgingServer, sheet: Path, golden_path: Path, tmp_path: Path, embeval: Callable[..., Result]
) -> None:
    """A reader checks the sheet over and over while every pair is graded; halfway, `embeval merge` names
    only the pairs not graded yet and `embeval agreement` compares what is graded."""
    problems: list[BaseException] = []
    done = threading.Event()
    reads = 0

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            try:
                sheet_grades(read_sheet(sheet))
                reads += 1
            except BaseException as error:  # pragma: no cover - reported below
                problems.append(error)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for position in range(14):
            call(served, "POST", "api/mark", {"marks": [{"position": position, "grade": str(position % 3)}]})
        status, out, err = embeval("merge", golden_path, sheet, "--dry-run")
        ungraded = [
            f"{sheet}: row {row}: empty grade: grade the pair (0..2) or delete the row"
            for row in range(16, 30)
        ]
        assert (status, out) == (2, "")
        assert err.splitlines() == [
            f"embeval merge: error: {line}" for line in [*ungraded, "nothing was merged"]
        ]
        copy = tmp_path / "copy.csv"
        shutil.copy(sheet, copy)
        status, out, err = embeval("agreement", sheet, copy)
        assert (status, err) == (0, "") and "pairs graded by both: 14 (only" in out
        for position in range(14, 28):
            call(served, "POST", "api/mark", {"marks": [{"position": position, "grade": str(position % 3)}]})
    finally:
        done.set()
        reader.join()
    assert problems == [] and reads > 0
    status, out, err = embeval("merge", golden_path, sheet, "--dry-run")
    assert (status, err) == (0, "") and "judges: ana (28 rows)" in out


def test_two_pages_on_one_sheet_keep_each_others_grades(sheet: Path, golden_path: Path) -> None:
    """Two servers (two processes' worth of state) grade one sheet at once, interleaved: every grade of
    both is in the sheet, and each page learns of the other's from the sheet when it writes."""
    first, second = start(sheet, golden_path, judge="ana"), start(sheet, golden_path, judge="ana")
    try:
        failures: list[BaseException] = []

        def grade(server: JudgingServer, positions: range) -> None:
            try:
                for position in positions:
                    call(
                        server,
                        "POST",
                        "api/mark",
                        {"marks": [{"position": position, "grade": str(position % 3)}]},
                    )
            except BaseException as error:  # pragma: no cover - reported below
                failures.append(error)

        threads = [
            threading.Thread(target=grade, args=(first, range(0, 28, 2))),
            threading.Thread(target=grade, args=(second, range(1, 28, 2))),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        order = in_order(sheet)
        assert grades_of(sheet) == {order[i]: str(i % 3) for i in range(28)}
        # a pair both grade keeps the grade written last
        call(first, "POST", "api/mark", {"marks": [{"position": 5, "grade": "0"}]})
        answer = call(second, "POST", "api/mark", {"marks": [{"position": 5, "grade": "1"}]})
        assert grades_of(sheet)[order[5]] == "1" and answer["grades"] == [
            str(i % 3) if i != 5 else "1" for i in range(28)
        ]
    finally:
        shutdown(first)
        shutdown(second)


def test_a_killed_server_loses_at_most_the_grade_it_was_writing(sheet: Path, golden_path: Path) -> None:
    """Grades are posted one after another and the server is killed (SIGKILL) in the middle: every grade it
    confirmed is in the sheet, at most the one in flight besides, and the sheet is whole."""
    server = PageServer(sheet, "--golden", golden_path, "--judge", "ana")
    confirmed: list[int] = []
    sent: list[int] = []

    def grade() -> None:
        for position in range(28):
            sent.append(position)
            try:
                status, _, _ = request(
                    server.port,
                    "POST",
                    f"/{server.token}/api/mark",
                    {"marks": [{"position": position, "grade": "2"}]},
                )
            except OSError:
                return
            if status == 200:
                confirmed.append(position)

    thread = threading.Thread(target=grade)
    try:
        thread.start()
        deadline = time.monotonic() + 60
        while len(confirmed) < 10 and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.001)
        server.kill()
        thread.join(timeout=60)
    finally:
        server.kill()
    assert len(confirmed) >= 10
    order = in_order(sheet)
    graded = {order.index(pair) for pair, grade in sheet_grades(read_sheet(sheet)).items() if grade == 2}
    assert set(confirmed) <= graded <= set(confirmed) | {sent[-1]}
    # started again, it resumes at the first pair not in the sheet
    again = PageServer(sheet, "--golden", golden_path)
    try:
        assert api(again.port, again.token, "GET", "api/session")["resume"] == min(set(range(28)) - graded)
    finally:
        again.kill()


def test_a_calibration_pair_on_both_sheets_is_shown_once_and_graded_on_both(
    golden_path: Path, tmp_path: Path
) -> None:
    ana, _, own = write_calibration_sheets(golden_path, tmp_path, shared=6)
    server = start(own, golden_path, calibration=ana)
    try:
        session = call(server, "GET", "api/session")
        calibration_pairs, own_pairs = in_order(ana), in_order(own)
        both = [pair for pair in calibration_pairs if pair in own_pairs]
        assert both
        assert (session["shared"], session["total"]) == (6, 6 + len(own_pairs) - len(both))
        assert session["sheets"] == ["calibration-ana.csv", "pool.1-of-2.csv"]
        pairs = call(server, "GET", "api/pairs?from=0&count=200")["pairs"]
        assert [pair["shared"] for pair in pairs] == [True] * 6 + [False] * (session["total"] - 6)
        position = calibration_pairs.index(both[0])
        call(server, "POST", "api/mark", {"marks": [{"position": position, "grade": "2"}]})
        assert grades_of(ana)[both[0]] == grades_of(own)[both[0]] == "2"
    finally:
        shutdown(server)
    # graded on one sheet only (in a spreadsheet, say), a pair on both is not done: the page shows it again
    only_calibration = next(pair for pair in calibration_pairs if pair not in own_pairs)
    edit_sheet(ana, {both[1]: Cells(grade="1"), only_calibration: Cells(grade="0")})
    server = start(own, golden_path, calibration=ana)
    try:
        grades = call(server, "GET", "api/session")["grades"]
        assert grades[calibration_pairs.index(both[1])] == ""
        assert grades[calibration_pairs.index(only_calibration)] == "0"
        assert grades[calibration_pairs.index(both[0])] == "2"
    finally:
        shutdown(server)


def test_without_the_golden_set_the_texts_are_the_sheets_and_there_are_no_guidelines(
    sheet: Path, tmp_path: Path
) -> None:
    server = start(sheet, None)
    try:
        session = call(server, "GET", "api/session")
        assert session["guidelines"] is None and session["golden"] is None
        assert [entry["label"] for entry in session["scale"]] == [
            "not relevant",
            "partly relevant",
            "relevant",
        ]
        pairs = call(server, "GET", "api/pairs?from=0&count=200")["pairs"]
        assert [pair["text"] for pair in pairs] == [row["doc_text"] for row in sheet_cells(sheet)]
    finally:
        shutdown(server)


# ------------------------------------------------------------------------------------------------ CLI


def test_the_command_prints_the_address_the_scale_and_what_is_missing_and_stops_on_ctrl_c(
    sheet: Path, golden_path: Path, tmp_path: Path
) -> None:
    server = PageServer(sheet, "--golden", golden_path, "--judge", "ana")
    api(server.port, server.token, "POST", "api/mark", {"marks": [{"position": 0, "grade": "1"}]})
    lines = server.stop()
    assert lines == [
        f"judging page for {sheet}: 28 pairs, 0 graded",
        f"grades 0..2, by the labels {golden_path.parent / 'page' / 'judging.md'} names: 0 not relevant, "
        "1 partly relevant, 2 answers it",
        f"open {server.url} in a browser on this machine (Ctrl-C stops; each grade is saved at once)",
        "stopped: 1 of 28 pairs graded",
    ]
    assert server.url.startswith("http://127.0.0.1:") and len(server.token) == 32
    bare = write_judging_set(tmp_path / "bare", guidelines=False)
    bare_sheet = write_pool_sheet(bare, tmp_path / "bare.csv")
    for arguments, note in [
        ((bare_sheet, "--golden", bare), f"no guidelines: {bare} names no written relevance definition"),
        ((bare_sheet,), "no guidelines: without --golden GOLDEN.yaml the page cannot show"),
    ]:
        server = PageServer(*arguments, "--max-grade", "3")
        printed = server.stop(signal.SIGTERM)  # as a shell's background job is stopped
        assert printed[-1] == "stopped: 0 of 28 pairs graded"
        assert printed[1] == (
            "grades 0..3, by their usual names: "
            "0 not relevant, 1 related, 2 highly relevant, 3 perfectly relevant"
        )
        assert printed[2].startswith(note)


def test_open_hands_the_address_to_the_default_browser(sheet: Path, tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    record = f"import pathlib, sys; pathlib.Path({str(opened)!r}).write_text(sys.argv[1])"
    # webbrowser runs $BROWSER with the address for %s
    server = PageServer(sheet, "--open", env={"BROWSER": f"{sys.executable} -c {shlex.quote(record)} %s"})
    try:
        deadline = time.monotonic() + 30
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert opened.read_text() == server.url
    finally:
        server.stop()


def test_bad_input_is_one_line_naming_the_file_and_row(
    embeval: Callable[..., Result], sheet: Path, golden_path: Path, tmp_path: Path
) -> None:
    rows = sheet.read_text(encoding="utf-8").splitlines(keepends=True)
    off_scale = tmp_path / "off-scale.csv"
    off_scale.write_text(rows[0] + rows[1].replace(",,,", ",5,,", 1), encoding="utf-8")
    unknown = tmp_path / "unknown.csv"
    unknown.write_text(rows[0] + rows[1].replace(",d0", ",x0", 1), encoding="utf-8")
    textless = tmp_path / "textless.csv"
    textless.write_text("query_id,doc_id,grade\nq0,d00,\n", encoding="utf-8")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        cases = [
            ((tmp_path / "missing.csv",), f"{tmp_path / 'missing.csv'}: file not found"),
            ((off_scale, "--golden", golden_path), f"{off_scale}: row 2: grade 5 is outside the scale 0..2"),
            ((unknown, "--golden", golden_path), f"{unknown}: row 2: unknown document"),
            ((textless,), f"{textless}: row 1: no column 'query_text'; give the golden set"),
            (
                (sheet, "--max-grade", "10"),
                "--max-grade 10: the page grades by one digit key, so 0..9 at most",
            ),
            ((sheet, "--judge", "openai:gpt-4o-mini"), "--judge 'openai:gpt-4o-mini' names a model"),
            ((sheet, "--calibration", sheet), f"--calibration {sheet} is the sheet itself"),
            ((sheet, "--port", str(taken)), f"--port {taken}: cannot listen on 127.0.0.1: "),
            ((sheet, "--golden", tmp_path / "nope.yaml"), f"{tmp_path / 'nope.yaml'}: file not found"),
        ]
        for arguments, message in cases:
            status, out, err = embeval("judge-page", *arguments)
            assert (status, out) == (2, ""), arguments
            assert err.startswith(f"embeval judge-page: error: {message}"), (arguments, err)
            assert "Traceback" not in err
        status, _, err = embeval("judge-page", sheet, "--port", "70000")
        assert status == 2 and "expected a port number 0..65535, got '70000'" in err
    finally:
        busy.close()
    assert sheet.read_text(encoding="utf-8") == "".join(rows)
