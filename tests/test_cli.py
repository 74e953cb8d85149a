"""The `embeval` console script: each command, its output, its errors and its exit status."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import CliResult
from test_judging import QRELS, TOP_A, TOP_B, query_ids, rankings, write_golden, write_sheet_text

from pytest_embeval.cli.seeds_and_refresh import file_day
from pytest_embeval.judging.agreement import agreement, agreement_lines
from pytest_embeval.judging.merging import sheet_grades
from pytest_embeval.judging.pooling import SHEET_COLUMNS, read_sheet

Result = CliResult


def write_report(path: Path, arms: dict[str, dict[str, list[str]]], **golden: Any) -> Path:
    """A JSON report in the plugin's shape (only the keys the commands read, plus a decoy golden set)."""
    record = {
        "name": "judge",
        "path": "judge.yaml",
        "metric": "recall@5",
        "queries": [{"id": qid, "ranked": {arm: arms[arm][qid] for arm in arms}} for qid in query_ids()],
        "strata": [{"stratum": "overall", "sd": 0.3}, {"stratum": "language=en", "sd": None}],
        **golden,
    }
    report = {"schema_version": 1, "golden_sets": [{"name": "other", "path": "other.yaml"}, record]}
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def sheet_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def grade_sheet(source: Path, target: Path, grade: Callable[[dict[str, str]], str], judge: str) -> Path:
    """Fill in a pooled sheet as a judge would, keeping every column."""
    rows = [{**row, "grade": grade(row), "judge": judge} for row in sheet_rows(source)]
    write_sheet_text(target, [[row[c] for c in SHEET_COLUMNS] for row in rows])
    return target


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    """A golden set and a report whose two arms' top 20s share 18 documents."""
    golden = write_golden(tmp_path)
    report = write_report(
        tmp_path / "report.json", {"incumbent": rankings(TOP_A), "candidate": rankings(TOP_B)}
    )
    return golden, report


def test_help_lists_every_command(embeval: Callable[..., Result]) -> None:
    status, out, _ = embeval("--help")
    assert status == 0
    for command in ("pool", "merge", "agreement", "coverage", "plan"):
        assert command in out
        status, out_command, _ = embeval(command, "--help")
        assert status == 0 and f"usage: embeval {command}" in out_command
    status, _, err = embeval()
    assert status == 2 and "the following arguments are required: COMMAND" in err


def test_every_commands_help_renders_without_a_literal_percent_sign_or_a_traceback(
    embeval: Callable[..., Result],
) -> None:
    import argparse

    from pytest_embeval.cli.embeval import _parser

    (subcommands,) = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert {"plan", "embed", "judge"} <= set(subcommands.choices)
    for command in ["", *subcommands.choices]:
        status, out, err = embeval(*([command] if command else []), "--help")
        assert status == 0 and out.startswith("usage: embeval"), (command, err)
        assert "%%" not in out and "Traceback" not in out + err, (command, out)
    assert "80% power" in embeval("plan", "--help")[1]
    assert "b % N + 1" in " ".join(embeval("embed", "--help")[1].split())


# ------------------------------------------------------------------------------------------------- pool


def test_pool_from_a_report_writes_a_blind_sheet(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    sheet = tmp_path / "sheet.csv"
    status, out, err = embeval("pool", golden, "--from-report", report, "--out", sheet)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "pooled 2 arms at depth 20 over 6 queries of judge",
        "union per query: mean 22.0, min 22, max 22 (132 pairs)",
        "already judged: 6; on excluded sheets: 0",
        "to judge: 126 pairs (6 queries; mean 21.0, max 22 per query)",
        f"sheet written to {sheet} (126 pairs, 6 queries)",
        "grade every row in the 'grade' column and write your name in 'judge'",
        # the golden set names no guidelines: the judges are told
        f"no guidelines: {golden} names no written relevance definition, so each judge grades by their "
        "own; write one (a sentence per grade, with an example) and name it under 'guidelines:'",
    ]
    rows = sheet_rows(sheet)
    assert len(rows) == 126 and list(rows[0]) == list(SHEET_COLUMNS)
    text = sheet.read_text(encoding="utf-8")
    assert "incumbent" not in text and "candidate" not in text

    status, _, err = embeval("pool", golden, "--from-report", report, "--out", sheet)
    assert status == 2
    assert err == (
        f"embeval pool: error: --out {sheet} exists (it may hold grades); "
        "choose another name or pass --force\n"
    )
    status, _, _ = embeval("pool", golden, "--from-report", report, "--out", sheet, "--force", "--seed", "7")
    assert status == 0 and sheet.read_text(encoding="utf-8") == text  # the golden set's seed is 7


def test_pool_consensus_failures_writes_a_sheet_to_rejudge_them(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    golden = write_golden(tmp_path)
    strata = [
        {"stratum": "overall", "consensus_failures": ["q0", "q3"]},
        {"stratum": "language=en", "consensus_failures": ["q0"]},
    ]
    arms = {"incumbent": rankings(TOP_A), "candidate": rankings(TOP_B)}
    report = write_report(tmp_path / "report.json", arms, strata=strata)
    sheet = tmp_path / "rejudge.csv"
    status, out, err = embeval(
        "pool", golden, "--from-report", report, "--consensus-failures", "--out", sheet
    )
    assert (status, err) == (0, "")
    rows = sheet_rows(sheet)
    # only the two queries, every pooled pair of theirs (the judged ones too), blind
    assert {row["query_id"] for row in rows} == {"q0", "q3"}
    assert len(rows) == 2 * 22
    assert {("q0", "d00"), ("q0", "d01"), ("q3", "d03")} <= {(row["query_id"], row["doc_id"]) for row in rows}
    assert all(row["grade"] == "" for row in rows)
    assert out.splitlines()[-1] == (
        "judged pairs are on the sheet again, blind: where a new grade differs from the qrels, revise the "
        "qrels by hand (embeval merge never overwrites a judgment)"
    )


def test_pool_consensus_failures_needs_a_report_that_lists_them(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    sheet = tmp_path / "rejudge.csv"
    status, _, err = embeval("pool", golden, "--model", "x:y", "--consensus-failures", "--out", sheet)
    assert (status, err) == (
        2,
        "embeval pool: error: --consensus-failures needs --from-report REPORT.json: the report lists them\n",
    )
    status, _, err = embeval("pool", golden, "--from-report", report, "--consensus-failures", "--out", sheet)
    assert (status, err) == (
        2,
        f"embeval pool: error: {report}: no consensus_failures in the report "
        "(written by an older embeval?)\n",
    )
    none = write_report(
        tmp_path / "none.json",
        {"incumbent": rankings(TOP_A), "candidate": rankings(TOP_B)},
        strata=[{"stratum": "overall", "consensus_failures": []}],
    )
    status, out, _ = embeval("pool", golden, "--from-report", none, "--consensus-failures", "--out", sheet)
    assert status == 0 and not sheet.exists()
    assert out.startswith("no consensus failures in the report")


def test_pool_split_hands_whole_queries_to_each_judge(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    whole = tmp_path / "whole.csv"
    assert embeval("pool", golden, "--from-report", report, "--out", whole)[0] == 0
    status, out, err = embeval(
        "pool", golden, "--from-report", report, "--out", tmp_path / "s.csv", "--split", "4"
    )
    assert (status, err) == (0, "")
    parts = [tmp_path / f"s.{i}-of-4.csv" for i in (1, 2, 3, 4)]
    assert [f"sheet written to {p} ({len(sheet_rows(p))} pairs" in out for p in parts] == [True] * 4
    rows = [row for p in parts for row in sheet_rows(p)]
    assert rows == sheet_rows(whole)  # every pair once, in the same order
    queries = [{row["query_id"] for row in sheet_rows(p)} for p in parts]
    assert sum(len(q) for q in queries) == len(set().union(*queries)) == 6  # no query on two sheets
    status, _, err = embeval(
        "pool", golden, "--from-report", report, "--out", tmp_path / "s.csv", "--split", "7"
    )
    assert (status, err) == (
        2,
        "embeval pool: error: cannot split 6 queries with pairs to judge into 7 sheets\n",
    )


def test_pool_from_a_run_adds_known_answers_the_models_missed(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    first = tmp_path / "first.csv"
    assert embeval("pool", golden, "--from-report", report, "--out", first)[0] == 0
    hints = tmp_path / "hints.run"
    hints.write_text("q4 Q0 d29 1 1.0 authors\nq4 Q0 d00 2 0.5 authors\n", encoding="utf-8")
    sheet = tmp_path / "hints.csv"
    status, out, err = embeval(
        "pool", golden, "--from-report", report, "--from-run", hints, "--exclude", first, "--out", sheet
    )
    assert (status, err) == (0, "")
    assert "to judge: 1 pairs" in out
    assert [(row["query_id"], row["doc_id"]) for row in sheet_rows(sheet)] == [("q4", "d29")]
    hints.write_text("q4 Q0 nope 1 1.0 authors\n", encoding="utf-8")
    status, _, err = embeval(
        "pool", golden, "--from-run", hints, "--from-report", report, "--out", sheet, "--force"
    )
    assert (status, err) == (
        2,
        f"embeval pool: error: {hints}:1: unknown document 'nope' (not in the corpus of 'judge')\n",
    )


def test_pool_leaves_out_pairs_on_excluded_sheets(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    first = tmp_path / "first.csv"
    assert embeval("pool", golden, "--from-report", report, "--out", first, "--depth", "10")[0] == 0
    status, out, _ = embeval(
        "pool",
        golden,
        "--from-report",
        report,
        "--out",
        tmp_path / "second.csv",
        "--exclude",
        first,
        "--per-query",
    )
    assert status == 0
    assert "already judged: 6; on excluded sheets: 54" in out
    assert "q5        22       0       10        12" in out.splitlines()
    second = {(r["query_id"], r["doc_id"]) for r in sheet_rows(tmp_path / "second.csv")}
    assert not second & {(r["query_id"], r["doc_id"]) for r in sheet_rows(first)}
    assert {doc for _, doc in second} == {f"d{i:02d}" for i in range(10, 22)}


def test_pool_writes_a_calibration_sample(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    sheet = tmp_path / "calibration.csv"
    status, out, _ = embeval("pool", golden, "--from-report", report, "--sample", "100", "--out", sheet)
    assert status == 0 and "a calibration sample of 100 of the 126 pairs to judge, drawn evenly" in out
    assert len(sheet_rows(sheet)) == 100


def test_pool_with_models_needs_no_report(embeval: Callable[..., Result], tmp_path: Path) -> None:
    golden = write_golden(tmp_path)
    sheet = tmp_path / "sheet.csv"
    status, out, _ = embeval(
        "pool",
        golden,
        "--model",
        "fake_models:good",
        "--model",
        "fake_models:bad",
        "--depth",
        "1",
        "--out",
        sheet,
    )
    assert status == 0
    # Depth 1: good ranks doc i first for query i, bad ranks doc i+1 unless i % 4 == 0 (q0, q4).
    assert "union per query: mean 1.7, min 1, max 2 (10 pairs)" in out
    pairs = {(row["query_id"], row["doc_id"]) for row in sheet_rows(sheet)}
    assert pairs == {("q1", "d02"), ("q2", "d03"), ("q3", "d04"), ("q5", "d05"), ("q5", "d06")}


def test_a_model_whose_query_and_document_vectors_differ_in_dimension_is_one_line(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    golden = write_golden(tmp_path)
    status, _, err = embeval("pool", golden, "--model", "fake_models:narrow", "--out", tmp_path / "s.csv")
    assert (status, err) == (
        2,
        "embeval pool: error: encoder 'fake_models:narrow' returned 64-dimensional query vectors but "
        "128-dimensional document vectors: they cannot be compared\n",
    )


def test_nothing_new_to_pool_writes_no_sheet(embeval: Callable[..., Result], tmp_path: Path) -> None:
    golden = write_golden(tmp_path, qrels=[(q, f"d{i:02d}", 1) for q in query_ids() for i in range(2)])
    report = write_report(tmp_path / "r.json", {"incumbent": rankings([0, 1]), "candidate": rankings([1, 0])})
    status, out, _ = embeval(
        "pool", golden, "--from-report", report, "--out", tmp_path / "s.csv", "--depth", "2"
    )
    assert status == 0
    assert out.splitlines()[-1] == (
        "nothing new to judge: every pooled pair is judged or on an excluded sheet; no sheet written"
    )
    assert not (tmp_path / "s.csv").exists()


def test_pool_input_errors(embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]) -> None:
    golden, report = setup
    out = tmp_path / "s.csv"
    shallow = write_report(
        tmp_path / "shallow.json", {"incumbent": rankings(range(5)), "candidate": rankings(range(5))}
    )
    cases = [
        (
            [golden, "--out", out],
            "give the arms to pool: --from-report REPORT.json (no model needed) or --model SPEC",
        ),
        (
            [golden, "--from-report", tmp_path / "none.json", "--out", out],
            f"{tmp_path / 'none.json'}: file not found",
        ),
        (
            [golden, "--from-report", shallow, "--out", out],
            "arm 'incumbent' ranks only 5 documents for query 'q0', fewer than the pool depth 20",
        ),
        (
            [golden, "--from-report", report, "--out", tmp_path],
            f"--out {tmp_path}: is a folder; name the file, e.g. {tmp_path / 'sheet.csv'}",
        ),
        (
            [golden, "--from-report", report, "--out", tmp_path / "no" / "s.csv"],
            f"--out {tmp_path / 'no' / 's.csv'}: folder {tmp_path / 'no'} does not exist",
        ),
        (
            [golden, "--from-report", report, "--out", out, "--exclude", tmp_path / "none.csv"],
            f"{tmp_path / 'none.csv'}: file not found",
        ),
    ]
    for args, message in cases:
        assert embeval("pool", *args) == (2, "", f"embeval pool: error: {message}\n")
    status, _, err = embeval("pool", tmp_path / "missing.yaml", "--from-report", report, "--out", out)
    assert status == 2 and err.startswith(f"embeval pool: error: {tmp_path / 'missing.yaml'}: file not found")
    status, _, err = embeval("pool", golden, "--from-report", report, "--out", out, "--depth", "0")
    assert status == 2 and "argument --depth: expected a positive integer, got '0'" in err
    assert not out.exists()


# ------------------------------------------------------------------------------------------------ merge


def test_merge_appends_validated_grades_to_the_qrels(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    pooled = tmp_path / "pool.csv"
    embeval("pool", golden, "--from-report", report, "--out", pooled, "--depth", "2")
    sheet = grade_sheet(
        pooled, tmp_path / "ann.csv", lambda row: "1" if row["doc_id"] == "d00" else "0", "ann"
    )
    qrels = tmp_path / "judge" / "qrels.tsv"
    before = qrels.read_text(encoding="utf-8")

    status, out, err = embeval("merge", golden, sheet, "--dry-run")
    assert (status, err) == (0, "")
    assert out.splitlines()[-1] == f"would append 9 judgments to {qrels} (--dry-run: nothing written)"
    assert qrels.read_text(encoding="utf-8") == before

    status, out, _ = embeval("merge", golden, sheet)
    assert status == 0
    assert out.splitlines() == [
        "1 sheet(s), judges: ann (9 rows)",
        "already in the qrels with the same grade: 0",
        f"judged on {file_day(sheet)} (the sheets' dates)",
        f"appended 9 judgments to {qrels}",
        f"where each came from: {qrels.with_name('qrels.provenance.jsonl')}",
    ]
    added = [
        *("q1\td00\t1", "q2\td00\t1", "q2\td01\t0", "q3\td00\t1", "q3\td01\t0"),
        *("q4\td00\t1", "q4\td01\t0", "q5\td00\t1", "q5\td01\t0"),
    ]
    assert qrels.read_text(encoding="utf-8") == before + "".join(line + "\n" for line in added)

    status, out, _ = embeval("merge", golden, sheet)
    assert status == 0 and out.splitlines()[-2:] == [
        "already in the qrels with the same grade: 9",
        f"nothing new to merge into {qrels}",
    ]


MALFORMED = [
    pytest.param(
        ("q1", "d10", ""), "row 3: empty grade: grade the pair (0..2) or delete the row", id="empty"
    ),
    pytest.param(("q9", "d10", "1"), "row 3: unknown query 'q9' (not in golden set 'judge')", id="query"),
    pytest.param(
        ("q1", "x", "1"), "row 3: unknown document 'x' (not in the corpus of 'judge')", id="document"
    ),
    pytest.param(("q1", "d10", "5"), "row 3: grade 5 is outside the scale 0..2", id="scale"),
    pytest.param(
        ("q1", "d11", "2"),
        "row 3: judge 'ann' graded query 'q1' and document 'd11' 2 here and 1 on row 2",
        id="twice",
    ),
    pytest.param(
        ("q0", "d00", "0"),
        "row 3: query 'q0' and document 'd00' are already judged 2 in the qrels, this row grades 0 "
        "(to revise a judgment, edit the qrels file)",
        id="judged",
    ),
]


@pytest.mark.parametrize(("row", "message"), MALFORMED)
def test_merge_refuses_malformed_sheets_and_writes_nothing(
    embeval: Callable[..., Result], tmp_path: Path, row: tuple[str, str, str], message: str
) -> None:
    golden = write_golden(tmp_path)
    qrels = tmp_path / "judge" / "qrels.tsv"
    before = qrels.read_bytes()
    q, d, g = row
    sheet = write_sheet_text(
        tmp_path / "s.csv",
        [["", "q1", "", "d11", "", "", "1", "ann", ""], ["", q, "", d, "", "", g, "ann", ""]],
    )
    assert embeval("merge", golden, sheet) == (
        2,
        "",
        f"embeval merge: error: {sheet}: {message}\nembeval merge: error: nothing was merged\n",
    )
    assert qrels.read_bytes() == before


def test_merge_refuses_a_bad_header_and_inline_golden_sets(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    golden = write_golden(tmp_path)
    sheet = write_sheet_text(tmp_path / "s.csv", [["q1", "d10", "1"]], header=["query_id", "doc", "grade"])
    expected = (
        f"embeval merge: error: {sheet}: row 1: missing column(s) 'doc_id' (a judging sheet's header is "
        f"{','.join(SHEET_COLUMNS)})\n"
    )
    assert embeval("merge", golden, sheet) == (2, "", expected)
    inline = tmp_path / "inline.yaml"
    inline.write_text(
        "corpus: judge/corpus.jsonl\nqueries: [{id: q1, text: x, relevant: {d00: 1}}]\nmetric: recall@5\n",
        encoding="utf-8",
    )
    status, _, err = embeval("merge", inline, sheet)
    assert status == 2 and err.startswith(f"embeval merge: error: {inline}: the judgments are inline")


def test_merge_resolves_judges_only_when_asked(embeval: Callable[..., Result], tmp_path: Path) -> None:
    golden = write_golden(tmp_path)
    ann = write_sheet_text(tmp_path / "ann.csv", [["", "q1", "", "d10", "", "", "2", "ann", ""]])
    bob = write_sheet_text(tmp_path / "bob.csv", [["", "q1", "", "d10", "", "", "1", "bob", ""]])
    status, _, err = embeval("merge", golden, ann, bob)
    assert status == 2 and "reconcile the grades or pass --resolve max|min|first" in err
    status, out, _ = embeval("merge", golden, ann, bob, "--resolve", "min")
    assert status == 0 and "judges disagreed on 1 pair(s), resolved by --resolve min" in out
    assert (tmp_path / "judge" / "qrels.tsv").read_text(encoding="utf-8").endswith("q1\td10\t1\n")


# -------------------------------------------------------------------------------------------- agreement


def two_judges(tmp_path: Path, first: Sequence[int], second: Sequence[int]) -> tuple[Path, Path]:
    def sheet(name: str, grades: Sequence[int]) -> Path:
        rows = [["", f"q{i % 6}", "", f"d{i:02d}", "", "", str(g), name, ""] for i, g in enumerate(grades)]
        return write_sheet_text(tmp_path / f"{name}.csv", rows)

    return sheet("ann", first), sheet("bob", second)


def test_agreement_reports_kappa_and_applies_the_threshold(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    a, b = two_judges(tmp_path, [0, 0, 0, 0, 1, 1, 1, 2, 2, 2], [0, 0, 0, 1, 1, 1, 0, 2, 2, 1])
    status, out, _ = embeval("agreement", a, b, "--list", "0")
    result = agreement(sheet_grades(read_sheet(a)), sheet_grades(read_sheet(b)))
    assert status == 0
    assert out.splitlines() == agreement_lines(result, str(a), str(b))
    weighted = f"{result.weighted_kappa:.3f}"
    status, out, _ = embeval("agreement", a, b, "--min-kappa", "0.5")
    assert status == 0 and out.splitlines()[-1] == f"OK: weighted kappa {weighted} >= --min-kappa 0.5"
    status, out, err = embeval("agreement", a, b, "--min-kappa", "0.9")
    assert status == 1 and err == f"FAIL: weighted kappa {weighted} is below --min-kappa 0.9\n"
    status, _, err = embeval("agreement", a, b, "--min-kappa", "0.9", "--max-grade", "1")
    assert status == 2 and f"{a}: row 9: grade 2 is outside the scale 0..1" in err


def test_agreement_degenerate_cases(embeval: Callable[..., Result], tmp_path: Path) -> None:
    a, b = two_judges(tmp_path, [1, 1, 1], [1, 1, 1])
    status, out, err = embeval("agreement", a, b, "--min-kappa", "0.6")
    assert status == 1
    assert "kappa is undefined: both judges graded every pair 1; judge a sample with varied grades" in out
    assert err == "FAIL: weighted kappa is undefined, so agreement above 0.6 cannot be shown\n"
    c = write_sheet_text(tmp_path / "c.csv", [["", "q9", "", "d99", "", "", "1", "", ""]])
    assert embeval("agreement", a, c) == (
        2,
        "",
        f"embeval agreement: error: {a} and {c}: no pair was graded by both judges "
        "(pairs are matched by query_id and doc_id)\n",
    )
    status, _, err = embeval("agreement", a, b, "--min-kappa", "2")
    assert status == 2 and "argument --min-kappa: expected a number in [-1, 1], got '2'" in err


# --------------------------------------------------------------------------------------- coverage, plan


def test_coverage_warns_about_an_unpooled_arm(embeval: Callable[..., Result], tmp_path: Path) -> None:
    golden = write_golden(tmp_path)
    judged = {q: [d for qq, d, _ in QRELS if qq == q] for q in query_ids()}
    incumbent = {q: [*docs, *(f"d{i}" for i in range(20, 25))] for q, docs in judged.items()}
    report = write_report(tmp_path / "r.json", {"incumbent": incumbent, "candidate": rankings(range(10, 20))})
    status, out, err = embeval("coverage", golden, "--from-report", report, "--k", "1")
    assert status == 1
    assert out.splitlines()[2] == "overall      6                 83%                  0%"
    assert err.startswith(
        "WARNING: candidate's top 1 is less judged than another arm's by more than 10 points"
    )
    assert f"Fix: embeval pool {golden} --from-report {report} --out SHEET.csv" in err


def test_coverage_defaults_to_the_primary_metrics_k(
    embeval: Callable[..., Result], setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    status, out, _ = embeval("coverage", golden, "--from-report", report)
    assert status == 0
    assert out.splitlines()[0] == "stratum      n  incumbent judged@5  candidate judged@5"


def test_plan_prints_the_seed_figures_and_uses_observed_sd(
    embeval: Callable[..., Result], tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    status, out, _ = embeval("plan", golden)
    assert status == 0
    assert out.splitlines()[3].split() == ["overall", "5", "0.150", "assumed", "0.188", "442", "437"]
    status, out, _ = embeval("plan", golden, "--from-report", report, "--sd", "0.2")
    assert status == 0
    lines = [line.split() for line in out.splitlines()[3:6]]
    assert [line[2:4] for line in lines] == [
        ["0.300", "observed"],
        ["0.200", "assumed"],
        ["0.200", "assumed"],
    ]
    other = write_report(tmp_path / "other.json", {"a": rankings([0])}, metric="ndcg@10")
    assert embeval("plan", golden, "--from-report", other) == (
        2,
        "",
        f"embeval plan: error: {other}: the report measured 'ndcg@10', the golden set's metric is "
        "'recall@5'; its standard deviations do not apply\n",
    )
    status, _, err = embeval("plan", golden, "--sd", "-1")
    assert status == 2 and "argument --sd: expected a number in [0, 1], got '-1'" in err


def test_the_installed_script_runs(tmp_path: Path) -> None:
    golden = write_golden(tmp_path)
    script = Path(sys.executable).with_name("embeval")
    result = subprocess.run([script, "plan", golden], capture_output=True, text=True, check=False, timeout=60)
    assert (result.returncode, result.stderr) == (0, "")
    assert "442" in result.stdout


# ------------------------------------------------------------------------------------------ end to end


def test_a_run_pooled_judged_and_merged_is_fully_covered(
    pytester: pytest.Pytester, golden: Callable[..., Path], embeval: Callable[..., Result]
) -> None:
    """The judging afternoon on the plugin's own JSON report: coverage warns, pool, grade, merge, rerun."""
    golden_path = golden()
    run_args = ["--embeval", "-p", "no:cacheprovider", "--embeval-json=report.json"]
    models = ["--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad"]
    pytester.runpytest(*run_args, *models)
    report = pytester.path / "report.json"
    status, _, err = embeval("coverage", golden_path, "--from-report", report)
    assert status == 1 and "candidate has not been pooled" in err

    sheet = pytester.path / "sheet.csv"
    status, out, _ = embeval("pool", golden_path, "--from-report", report, "--depth", "1", "--out", sheet)
    assert status == 0
    assert "union per query: mean 1.8, min 1, max 2 (84 pairs)" in out  # bad misses 3 of 4 queries
    graded = grade_sheet(sheet, pytester.path / "graded.csv", lambda row: "0", "ann")
    assert embeval("merge", golden_path, graded)[0] == 0

    pytester.runpytest(*run_args, *models)
    assert embeval("coverage", golden_path, "--from-report", report)[0] == 0
