"""``embeval judge``, ``embeval calibrate`` and ``embeval merge`` with a model's grades, end to end against
the tests' chat server: the afternoon of the README, exit statuses, one-line errors, the key in no output,
and a real ``embeval judge`` process killed mid-run and run again."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai")

from openai_server import ChatReply, EmbeddingServer, Reply, word_vectors
from test_grading import DOCUMENTS, GUIDELINES, QUERIES, judging_set, pool_sheet, script
from test_grading import judge_spec as spec
from test_judge import KEY, KEY_ENV, MODEL, answers

from pytest_embeval.cli.embeval import main
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judging.llm_judge import prompt_digest
from pytest_embeval.judging.pooling import SHEET_COLUMNS
from pytest_embeval.judging.provenance import provenance_path


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with EmbeddingServer(word_vectors(), models=(MODEL,), key=KEY, lifetime=120, max_requests=400) as running:
        running.chat = answers(script())
        yield running


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    golden = judging_set(tmp_path / "golden")
    return golden, pool_sheet(load_golden(golden), tmp_path / "pool.csv")


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    status = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    assert KEY not in out and KEY not in err
    return status, out, err


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def people_sheet(path: Path, pool: Path, grade_of: dict[str, int], names: tuple[str, ...] = ("ana",)) -> Path:
    """The pool's first pairs of each query graded by people (``grade_of``: document -> grade)."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SHEET_COLUMNS)
        for i, row in enumerate(rows(pool)):
            if row["doc_id"] in grade_of:
                cells = {**row, "grade": str(grade_of[row["doc_id"]]), "judge": names[i % len(names)]}
                writer.writerow([cells[name] for name in SHEET_COLUMNS])
    return path


def test_judge_grades_the_sheet_and_says_what_it_spent(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, pool = files
    out = tmp_path / "graded.csv"
    status, printed, err = run(
        capsys,
        "judge",
        golden,
        pool,
        "--model",
        spec(server, price_per_million_tokens="0.15,0.6"),
        "--out",
        out,
    )
    total = len(rows(pool))
    # Progress on standard error (in a log: the start, every ten seconds, the end), results on standard out.
    assert status == 0
    graded = f"embeval judge: pairs graded {total}/{total} \\([0-9,]+/s\\)\n"
    assert re.fullmatch(f"embeval judge: pairs graded 0/{total}\n{graded}", err), err
    name = f"openai:{MODEL}?base_url={server.base_url} prompt:{prompt_digest(GUIDELINES, 2)}"
    lines = printed.splitlines()
    assert lines[0] == f"judge: {name}"
    assert lines[1] == f"pairs on {pool}: {total} (0 graded by an earlier run, not asked again)"
    assert lines[2] == "graded now: 21; left ungraded: 0"
    assert lines[3].startswith(f"this run: {total} requests, ")
    assert lines[3].endswith(" per million)") and "at $0.15 / $0.6" in lines[3]
    assert (
        lines[4]
        == f"graded sheet written to {out}; every request and answer in {tmp_path / 'graded.audit.jsonl'}"
    )
    assert {r["judge"] for r in rows(out)} == {name}


def test_judge_lists_the_pairs_it_left_ungraded_and_exits_1(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, pool = files
    server.chat = answers(
        {**script(), DOCUMENTS["d2"][0]: ["3"], DOCUMENTS["d5"][0]: [ChatReply(refusal="no")]}
    )
    status, printed, _ = run(
        capsys, "judge", golden, pool, "--model", spec(server, attempts=2), "--out", tmp_path / "g.csv"
    )
    assert status == 1
    assert (
        "left ungraded after 2 answer(s) each, never guessed (6 of 6 listed); "
        "the same command asks for them again:" in printed
    )
    listed = [line.split(maxsplit=2) for line in printed.splitlines()[-6:]]
    in_sheet_order = [(row["query_id"], row["doc_id"]) for row in rows(pool) if row["doc_id"] in ("d2", "d5")]
    assert listed == [
        [query, doc, "grade 3 is outside the scale 0..2" if doc == "d2" else "refused: 'no'"]
        for query, doc in in_sheet_order
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            "no-guidelines",
            "{golden}: guidelines: missing key; the judge grades by the written relevance definition people "
            "grade by: write it into a file and name it under 'guidelines:'",
        ),
        ("out-folder", "--out {tmp}: is a folder; name the file, e.g. {tmp}/graded.csv"),
        (
            "bad-spec",
            "model spec 'openai:judge-model': unknown parameter 'temperature'; known: base_url, api_key_env, "
            "price_per_million_tokens, concurrency, attempts, max_tokens, max_retries, timeout",
        ),
        ("same-file", "--out {pool}: is the sheet to grade, which this command reads; name another path"),
        (
            "scale",
            "{golden}: the qrels hold grade 2, above --max-grade 1; "
            "declare the golden set's scale with --max-grade",
        ),
    ],
)
def test_judge_usage_errors_are_one_line_before_any_request(
    server: EmbeddingServer,
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: str,
    message: str,
) -> None:
    golden, pool = files
    args: list[object] = ["judge", golden, pool, "--model", spec(server), "--out", tmp_path / "g.csv"]
    if change == "no-guidelines":
        golden.write_text(golden.read_text().replace("guidelines: judging.md\n", ""))
    elif change == "out-folder":
        args[-1] = tmp_path
    elif change == "bad-spec":
        args[4] = spec(server) + "&temperature=1"
    elif change == "same-file":
        args[-1] = pool
    else:
        qrels = golden.parent / "qrels.tsv"
        qrels.write_text(qrels.read_text() + "q0\td7\t2\n")
        args += ["--max-grade", "1"]
    status, printed, err = run(capsys, *args)
    assert (status, printed) == (2, "")
    expected = message.format(golden=golden, tmp=tmp_path, pool=pool)
    assert err == f"embeval judge: error: {expected}\n"
    assert server.received == []


def test_judge_stops_on_an_endpoint_fault_with_what_to_do(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, pool = files
    server.script.extend([Reply(), Reply(), Reply(status=401, message=f"bad key {KEY}")])
    out = tmp_path / "g.csv"
    status, _, err = run(capsys, "judge", golden, pool, "--model", spec(server), "--out", out)
    assert status == 2
    assert err == f"embeval judge: pairs graded 0/{len(rows(pool))}\n" + (
        f"embeval judge: error: {server.base_url}/chat/completions refused the API key in ${KEY_ENV} "
        f"(401 Unauthorized); 2 of {len(rows(pool))} pairs are in {out}: run the same command again to grade "
        f"the other {len(rows(pool)) - 2}\n"
    )
    assert len(rows(out)) == 2


def afternoon(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path, Path]:
    """People grade d1..d6 of every query (18 pairs) as the model does; the model grades the pool (21).
    Returns the golden file, the people's sheet and the model's."""
    golden, pool = files
    people = people_sheet(
        tmp_path / "people.csv", pool, {"d1": 1, "d2": 2, "d3": 0, "d4": 1, "d5": 2, "d6": 0}
    )
    model = tmp_path / "model.csv"
    assert run(capsys, "judge", golden, pool, "--model", spec(server), "--out", model)[0] == 0
    return golden, people, model


def test_calibrate_records_a_usable_judge_and_merge_takes_it_after_the_people(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, people, model = afternoon(server, files, tmp_path, capsys)
    record = tmp_path / "calibration.json"
    status, printed, _ = run(capsys, "calibrate", people, model, "--record", record)
    assert status == 0, printed
    assert "verdict: usable" in printed
    saved = json.loads(record.read_text())
    assert (saved["verdict"], saved["n"], saved["people"]) == ("usable", 18, ["ana"])
    status, printed, err = run(capsys, "merge", golden, people, model, "--calibration", record)
    assert (status, err) == (0, ""), err
    judge = rows(model)[0]["judge"]
    assert "a model's grades set aside (people graded the pair, or the qrels judge it): 18" in printed
    pool_pairs = len(rows(model))
    assert (
        f"judgments by model {judge}: {pool_pairs - 18} of {pool_pairs}, "
        f"calibrated: {record} (usable, weighted kappa" in printed
    )
    merged = load_golden(golden)
    assert [merged.qrels["q1"][doc] for doc in ("d1", "d2", "d3", "d7")] == [1, 2, 0, 1]
    sidecar = provenance_path(golden.parent / "qrels.tsv")
    lines = [json.loads(line) for line in sidecar.read_text().splitlines()]
    assert len(lines) == pool_pairs
    by_kind = {kind: sum(1 for line in lines if line["kind"] == kind) for kind in ("person", "model")}
    assert by_kind == {"person": 18, "model": pool_pairs - 18}
    assert all(line["calibration"]["file"] == str(record) for line in lines if line["kind"] == "model")
    assert not any(line.get("accepted_uncalibrated") for line in lines)


def test_merge_refuses_an_uncalibrated_model_unless_told_and_records_the_flag(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, _, model = afternoon(server, files, tmp_path, capsys)
    qrels = (golden.parent / "qrels.tsv").read_text()
    judge = rows(model)[0]["judge"]
    status, printed, err = run(capsys, "merge", golden, model)
    assert (status, printed) == (2, "")
    assert err == (
        f"embeval merge: error: model judge {judge!r} ({len(rows(model))} rows) has not passed calibration: "
        "no --calibration record is for it; calibrate it (embeval calibrate PEOPLE.csv MODEL.csv --record "
        "CALIBRATION.json, then --calibration CALIBRATION.json) or pass --accept-uncalibrated, which is "
        "recorded with every such judgment\nembeval merge: error: nothing was merged\n"
    )
    assert (golden.parent / "qrels.tsv").read_text() == qrels
    status, printed, _ = run(capsys, "merge", golden, model, "--accept-uncalibrated")
    assert status == 0
    assert "UNCALIBRATED (--accept-uncalibrated, recorded with each)" in printed
    lines = [
        json.loads(line) for line in provenance_path(golden.parent / "qrels.tsv").read_text().splitlines()
    ]
    assert lines and all(
        line["accepted_uncalibrated"] is True and line["calibration"] is None for line in lines
    )


def test_a_failed_calibration_is_refused_by_merge(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden, pool = files
    # people grade 2 what the model grades 1: the model grades lower, systematically
    people = people_sheet(
        tmp_path / "people.csv",
        pool,
        {"d0": 0, "d1": 2, "d2": 2, "d3": 0, "d4": 2, "d5": 2, "d6": 0, "d7": 2},
    )
    model = tmp_path / "model.csv"
    run(capsys, "judge", golden, pool, "--model", spec(server), "--out", model)
    record = tmp_path / "calibration.json"
    status, printed, _ = run(capsys, "calibrate", people, model, "--record", record)
    assert status == 1
    assert "verdict: systematic disagreement" in printed
    assert "the model grades 2 as 1 in 9 of 15 pairs people graded 2 (lower), and 1 as 2 in 0 of 0" in printed
    status, _, err = run(capsys, "merge", golden, model, "--calibration", record)
    assert status == 2
    assert f"its calibration {record} found systematic disagreement" in err


def test_calibrate_refuses_sheets_the_wrong_way_round(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, people, model = afternoon(server, files, tmp_path, capsys)
    status, _, err = run(capsys, "calibrate", model, people)
    judge = rows(model)[0]["judge"]
    assert (status, err) == (
        2,
        f"embeval calibrate: error: {model}: graded by a model ({judge!r}): "
        "calibrate a model against people\n",
    )


def test_a_killed_judge_resumes_with_only_the_missing_pairs(
    server: EmbeddingServer, files: tuple[Path, Path], tmp_path: Path
) -> None:
    golden, pool = files
    out = tmp_path / "graded.csv"
    server.delay = 0.3
    command = [
        sys.executable,
        "-c",
        "import sys; from pytest_embeval.cli.embeval import main; sys.exit(main())",
        "judge",
        str(golden),
        str(pool),
        "--model",
        spec(server, concurrency=2),
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not out.exists() or len(rows(out)) < 4):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    output, _ = process.communicate(timeout=30)
    time.sleep(0.5)  # requests sent before the kill are all recorded by the server
    assert KEY not in output
    written = {r["pair_id"] for r in rows(out)}
    total = {r["pair_id"]: r for r in rows(pool)}
    assert 4 <= len(written) < len(total)
    server.delay = 0.0
    first_run = len(server.received)
    finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert KEY not in finished.stdout + finished.stderr
    asked = [request.body["messages"][1]["content"] for request in server.received[first_run:]]
    missing = [row for pair, row in total.items() if pair not in written]
    assert len(asked) == len(missing)
    assert sorted(asked) == sorted(
        f"<query>\n{QUERIES[row['query_id']]}\n</query>\n\n<document>\nTitle {row['doc_id']}\n"
        f"{DOCUMENTS[row['doc_id']][0]}\n</document>"
        for row in missing
    )
    assert [r["pair_id"] for r in rows(out)] == list(total)
    for path in (out, tmp_path / "graded.audit.jsonl"):
        assert KEY not in path.read_text()
