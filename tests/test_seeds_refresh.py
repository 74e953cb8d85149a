"""Seeds from tickets and clicks (``embeval pool --seeds``, ``--trust-seeds``, coverage's seeded@k and the
one-arm warning), the age of judgments (``shelf_life``, dated merges) and refresh (``embeval refresh``,
``embeval merge --refresh``): each output, each bad input's one line and exit status."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest
from suite_helpers import CliResult
from test_cli import sheet_rows, write_report
from test_judging import TOP_A, TOP_B, rankings, write_golden

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.shelf_life import ShelfLife, parse_shelf_life
from pytest_embeval.judging.provenance import Source, golden_sources, judgments_age
from pytest_embeval.judging.refresh import draw_refresh
from pytest_embeval.judging.seeds import one_arm_seeds

Embeval = Callable[..., CliResult]
DAY = "2026-01-05"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    """The judging tests' golden set (q0..q5, d00..d29) and a report whose incumbent ranks d00..d19 and
    candidate d00..d17, d20, d21 for every query."""
    golden = write_golden(tmp_path)
    report = write_report(
        tmp_path / "report.json", {"incumbent": rankings(TOP_A), "candidate": rankings(TOP_B)}
    )
    return golden, report


def write_seeds(path: Path, rows: list[str], header: str = "query_id\tdoc_id\tsource") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def fill(sheet: Path, target: Path, judge: str, grade: Callable[[dict[str, str]], str]) -> Path:
    """Grade every row of a sheet as a judge would in a spreadsheet, keeping every column."""
    rows = [{**row, "grade": grade(row), "judge": judge} for row in sheet_rows(sheet)]
    with target.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return target


def provenance(golden: Path) -> dict[tuple[str, str], dict[str, object]]:
    lines = (golden.parent / "judge" / "qrels.provenance.jsonl").read_text(encoding="utf-8").splitlines()
    return {(r["query_id"], r["doc_id"]): r for r in map(json.loads, lines)}


# ------------------------------------------------------------------------------------------------ seeds


def test_seeds_join_the_sheet_marked_with_their_source_and_merge_as_confirmed_seeds(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    seeds = write_seeds(
        tmp_path / "seeds.tsv", ["q1\td18\tclick", "q1\td25\tticket", "q0\td00\tticket", "q1\td18\tticket"]
    )
    sheet = tmp_path / "sheet.csv"
    status, out, err = embeval("pool", golden, "--from-report", report, "--seeds", seeds, "--out", sheet)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"seeds from {seeds}: 3 (click 1, ticket 2); already judged or on an excluded sheet: 1"
    assert "seeds on the sheet, marked for the judges to confirm: 2 (click 1, ticket 1)" in lines
    rows = sheet_rows(sheet)
    assert list(rows[0])[-1] == "seed"
    marked = {(row["query_id"], row["doc_id"]): row["seed"] for row in rows if row["seed"]}
    # d25 is in neither arm's top 20: a seed joins the pool all the same; the judged q0/d00 does not.
    assert marked == {("q1", "d18"): "click", ("q1", "d25"): "ticket"}

    graded = fill(sheet, tmp_path / "graded.csv", "ana", lambda row: "1" if row["seed"] else "0")
    status, out, _ = embeval("merge", golden, graded, "--judged-on", DAY)
    assert status == 0 and f"judged on {DAY} (--judged-on)" in out.splitlines()
    lines = provenance(golden)
    assert lines[("q1", "d18")] == {
        "query_id": "q1",
        "doc_id": "d18",
        "grade": 1,
        "judge": "ana",
        "kind": "person",
        "judged_on": DAY,
        "seed": "click",
    }
    assert "seed" not in lines[("q1", "d00")] and lines[("q1", "d00")]["judged_on"] == DAY


def test_trusted_seeds_enter_the_qrels_except_what_only_one_arm_showed(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(
        "".join(
            json.dumps(seed) + "\n"
            for seed in [
                {"query_id": "q1", "doc_id": "d05", "source": "click"},  # both arms' top 20
                {
                    "query_id": "q2",
                    "doc_id": "d25",
                    "source": "ticket",
                    "grade": 2,
                    "judged_on": "2025-12-01",
                },
                {"query_id": "q1", "doc_id": "d18", "source": "click"},  # the incumbent's only
                {"query_id": "q3", "doc_id": "d20", "source": "click"},  # the candidate's only
            ]
        ),
        encoding="utf-8",
    )
    qrels = golden.parent / "judge" / "qrels.tsv"
    before = qrels.read_text(encoding="utf-8")
    sheet = tmp_path / "sheet.csv"
    status, out, err = embeval(
        "pool", golden, "--from-report", report, "--seeds", seeds, "--trust-seeds", "--judged-on", DAY,
        "--out", sheet,
    )  # fmt: skip
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == [
        f"seeds from {seeds}: 4 (click 3, ticket 1); already judged or on an excluded sheet: 0",
        "trusted into the qrels: 2; in only one arm's top 20, so on the sheet to confirm all the same: 2 "
        "(a seed never stands in for a graded judgment of what only one arm showed)",
    ]
    assert (
        lines[-1]
        == f"appended 2 trusted seeds to {qrels} (their source in {qrels.parent / 'qrels.provenance.jsonl'})"
    )
    assert qrels.read_text(encoding="utf-8") == before + "q1\td05\t1\nq2\td25\t2\n"
    marked = {(row["query_id"], row["doc_id"]): row["seed"] for row in sheet_rows(sheet) if row["seed"]}
    assert marked == {("q1", "d18"): "click", ("q3", "d20"): "click"}
    assert ("q1", "d05") not in {(row["query_id"], row["doc_id"]) for row in sheet_rows(sheet)}
    assert provenance(golden) == {
        ("q1", "d05"): {
            "query_id": "q1", "doc_id": "d05", "grade": 1, "judge": "seed:click", "kind": "seed",
            "judged_on": DAY, "seed": "click",
        },
        ("q2", "d25"): {
            "query_id": "q2", "doc_id": "d25", "grade": 2, "judge": "seed:ticket", "kind": "seed",
            "judged_on": "2025-12-01", "seed": "ticket",
        },
    }  # fmt: skip
    record = load_golden(golden)
    assert sum(source.by_seed for source in golden_sources(record).values()) == 2


def test_coverage_splits_seeded_from_judged(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    seeds = write_seeds(tmp_path / "seeds.tsv", ["q1\td03\tticket", "q4\td21\tticket"])
    status, _, _ = embeval(
        "pool",
        golden,
        "--from-report",
        report,
        "--seeds",
        seeds,
        "--trust-seeds",
        "--out",
        tmp_path / "s.csv",
    )
    assert status == 0  # q4/d21 is the candidate's only: on the sheet, not trusted
    status, out, err = embeval("coverage", golden, "--from-report", report)
    # Top 5 of both arms is d00..d04: q0 holds d00, d01; q1 d01 and the seed d03; q2..q4 one judged each.
    assert out.splitlines() == [
        "stratum      n  incumbent judged@5  candidate judged@5  incumbent seeded@5  candidate seeded@5",
        "-----------  -  ------------------  ------------------  ------------------  ------------------",
        "overall      6                 23%                 23%                  3%                  3%",
        "language=en  3                 33%                 33%                  7%                  7%",
        "language=es  3                 13%                 13%                  0%                  0%",
    ]
    assert (status, err) == (0, "")


def test_coverage_warns_when_the_seeds_lie_in_one_arms_rankings_only(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    seeds = write_seeds(tmp_path / "seeds.tsv", ["q1\td03\tclick", "q2\td19\tclick", "q3\td18\tclick"])
    sheet = tmp_path / "s.csv"
    embeval("pool", golden, "--from-report", report, "--seeds", seeds, "--out", sheet)
    embeval("merge", golden, fill(sheet, tmp_path / "g.csv", "ana", lambda row: "1" if row["seed"] else "0"))
    status, _, err = embeval("coverage", golden, "--from-report", report)
    assert status == 0  # a heuristic: it warns, it does not fail the check
    assert err == (
        "WARNING: the seeds (click) lie in incumbent's rankings only: of the 3 seeded pairs an arm ranks, "
        "incumbent ranks all and candidate ranks 1; seeds taken from what one system surfaced (a click log) "
        "favour it, so judge the other arms' results too (embeval pool) and read judged@k apart from "
        "seeded@k\n"
    )


def test_one_arm_seeds_needs_every_ranked_seed_in_one_arm_and_some_missing_from_another() -> None:
    arms = {"a": {"q": ["d1", "d2", "d3"]}, "b": {"q": ["d1", "d4"]}}
    assert one_arm_seeds({("q", "d1"): "click"}, arms) is None  # both rank it
    assert one_arm_seeds({("q", "d2"): "click", ("q", "d4"): "click"}, arms) is None  # one each
    assert one_arm_seeds({("q", "d9"): "ticket"}, arms) is None  # nobody ranks it
    assert one_arm_seeds({("q", "d2"): "click"}, {"a": arms["a"]}) is None  # one arm: nothing to compare
    warning = one_arm_seeds({("q", "d1"): "click", ("q", "d3"): "click", ("q", "d9"): "ticket"}, arms)
    assert warning is not None and warning.startswith(
        "the seeds (click, ticket) lie in a's rankings only: of the 2 seeded pairs an arm ranks, a ranks all "
        "and b ranks 1;"
    )


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("seeds.tsv", "", "empty seed file (expected a TSV header 'query_id\\tdoc_id\\tsource', or JSON "
         "lines)"),
        ("seeds.tsv", "query_id\tdoc_id\tsource\n", "no seeds, only a header"),
        (
            "seeds.tsv",
            "query_id\tdoc_id\nq1\td05\n",
            ":1: missing column(s) 'source' (a seed file's header is query_id<TAB>doc_id<TAB>source, "
            "optionally with grade and judged_on)",
        ),
        ("seeds.tsv", "query_id\tdoc_id\tsource\nq9\td05\tclick\n",
         ":2: unknown query 'q9' (not in golden set 'judge')"),
        ("seeds.jsonl", '{"query_id": "q1", "doc_id": "d99", "source": "click"}\n',
         ":1: unknown document 'd99' (not in the corpus of 'judge')"),
        ("seeds.jsonl", '{"query_id": "q1", "doc_id": "d05"}\n', ":1: missing or empty 'source'"),
        ("seeds.jsonl", '{"query_id": "q1", "doc_id": "d05", "source": "click", "url": "x"}\n',
         ":1: unknown key 'url'"),
        ("seeds.tsv", "query_id\tdoc_id\tsource\tgrade\nq1\td05\tclick\t0\n",
         ":2: grade '0' is not an integer in 1..2 (a seed claims relevance)"),
        ("seeds.tsv", "query_id\tdoc_id\tsource\tjudged_on\nq1\td05\tclick\t5/1/2026\n",
         ":2: judged_on: expected a date YYYY-MM-DD, got '5/1/2026'"),
    ],
)  # fmt: skip
def test_a_bad_seed_file_is_one_line_exit_2_and_nothing_written(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path], name: str, text: str, problem: str
) -> None:
    golden, report = setup
    seeds = tmp_path / name
    seeds.write_text(text, encoding="utf-8")
    qrels = golden.parent / "judge" / "qrels.tsv"
    before = qrels.read_text(encoding="utf-8")
    sheet = tmp_path / "sheet.csv"
    status, out, err = embeval(
        "pool", golden, "--from-report", report, "--seeds", seeds, "--trust-seeds", "--out", sheet
    )
    separator = "" if problem.startswith(":") else ": "
    assert (status, out, err) == (2, "", f"embeval pool: error: {seeds}{separator}{problem}\n")
    assert not sheet.exists() and qrels.read_text(encoding="utf-8") == before
    assert not (qrels.parent / "qrels.provenance.jsonl").exists()


def test_trust_seeds_needs_seeds_and_a_missing_seed_file_is_one_line(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, report = setup
    pool = ("pool", golden, "--from-report", report, "--out", tmp_path / "s.csv")
    assert embeval(*pool, "--trust-seeds") == (
        2,
        "",
        "embeval pool: error: --trust-seeds needs --seeds SEEDS.tsv\n",
    )
    missing = tmp_path / "none.tsv"
    assert embeval(*pool, "--seeds", missing) == (2, "", f"embeval pool: error: {missing}: file not found\n")
    status, _, err = embeval(*pool, "--seeds", missing, "--judged-on", "2026-13-01")
    assert status == 2 and err.endswith("--judged-on: expected a date YYYY-MM-DD, got '2026-13-01'\n")
    status, _, err = embeval("merge", golden, tmp_path / "graded.csv", "--judged-on", "2999-01-01")
    assert status == 2 and "argument --judged-on: 2999-01-01 is in the future (today is 20" in err
    assert not (tmp_path / "s.csv").exists()


# ------------------------------------------------------------------------------------------- shelf life


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12 months", ShelfLife(12, "months")),
        ("1 year", ShelfLife(1, "years")),
        ("365d", ShelfLife(365, "days")),
        ("26 Weeks", ShelfLife(26, "weeks")),
        ("18mo", ShelfLife(18, "months")),
    ],
)
def test_shelf_life_reads_a_count_and_a_calendar_unit(text: str, expected: ShelfLife) -> None:
    assert parse_shelf_life(text) == expected


def test_shelf_life_counts_calendar_months_and_days() -> None:
    assert ShelfLife(12, "months").expires(date(2025, 3, 31)) == date(2026, 3, 31)
    assert ShelfLife(1, "months").expires(date(2025, 1, 31)) == date(2025, 2, 28)
    assert ShelfLife(1, "years").expires(date(2024, 2, 29)) == date(2025, 2, 28)
    assert ShelfLife(365, "days").expires(date(2024, 1, 1)) == date(2024, 12, 31)  # a leap year
    assert ShelfLife(2, "weeks").expires(date(2025, 12, 25)) == date(2026, 1, 8)
    assert str(ShelfLife(1, "years")) == "1 year" and str(ShelfLife(12, "months")) == "12 months"


def test_the_median_judgment_decides_the_age_and_any_undated_one_leaves_it_unknown() -> None:
    life = ShelfLife(12, "months")
    days = ["2025-01-10", "2024-06-01", "2025-05-02", "2025-03-01"]
    age = judgments_age(days, today=date(2026, 3, 1), shelf_life=life)
    # Sorted: 2024-06-01, 2025-01-10, 2025-03-01, 2025-05-02; the earlier middle one of an even count.
    assert age == {
        "today": "2026-03-01",
        "dated": 4,
        "undated": 0,
        "oldest": "2024-06-01",
        "median": "2025-01-10",
        "newest": "2025-05-02",
        "median_age_days": 415,
        "shelf_life": "12 months",
        "expires": "2026-01-10",
        "stale": True,
    }
    assert judgments_age(days, today=date(2026, 1, 9), shelf_life=life)["stale"] is False
    assert judgments_age(days, today=date(2026, 1, 10), shelf_life=life)["stale"] is True
    unknown = judgments_age([*days, None], today=date(2026, 3, 1), shelf_life=life)
    assert (unknown["median"], unknown["stale"], unknown["oldest"], unknown["undated"]) == (
        None,
        None,
        "2024-06-01",
        1,
    )


# ---------------------------------------------------------------------------------------------- refresh


def dated(days: dict[tuple[str, str], str]) -> dict[tuple[str, str], Source]:
    return {pair: Source("ana", "person", judged_on=day) for pair, day in days.items()}


def test_refresh_draws_in_proportion_over_the_strata_the_oldest_first(tmp_path: Path) -> None:
    # 12 judged pairs: q0..q2 (en) 2 each, q3..q5 (es) 2 each; language is the one stratum field.
    qrels = [(f"q{q}", f"d{d:02d}", 1) for q in range(6) for d in (q, q + 10)]
    golden = load_golden(write_golden(tmp_path, qrels=qrels))
    days = {(q, d): f"2025-0{1 + int(q[1:]) % 6}-0{1 + int(d[1:]) // 10}" for q, d, _ in qrels}
    del days[("q4", "d14")]  # undated: taken before any dated pair of its group
    sources = dated(days)
    drawn = draw_refresh(golden, sources, fraction=0.25, order="oldest", seed=3)
    # 0.25 x 12 = 3 pairs: en 6 x 3/12 = 1.5, es 1.5; largest remainders, ties to the first group (en).
    assert [(g.name, g.judged, g.drawn, g.undated) for g in drawn.groups] == [
        ("language=en", 6, 2, 0),
        ("language=es", 6, 1, 1),
    ]
    pairs = {(row.query_id, row.doc_id) for row in drawn.pool.rows}
    assert pairs == {("q0", "d00"), ("q0", "d10"), ("q4", "d14")}  # en's oldest are q0's (January)
    again = draw_refresh(golden, sources, fraction=0.25, order="random", seed=3)
    assert again == draw_refresh(golden, sources, fraction=0.25, order="random", seed=3)
    draws = {
        frozenset((row.query_id, row.doc_id) for row in refreshed.pool.rows)
        for refreshed in (
            draw_refresh(golden, sources, fraction=0.5, order="random", seed=s) for s in range(8)
        )
    }
    assert len(draws) > 1  # the seed decides the random draw
    assert all(sum(q in ("q0", "q1", "q2") for q, _ in draw) == 3 for draw in draws)  # stratified: 3 + 3


def test_refresh_then_merge_reports_the_drift_and_keeps_the_old_grade(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path]
) -> None:
    golden, _ = setup
    sheet = tmp_path / "refresh.csv"
    status, out, err = embeval("refresh", golden, "--fraction", "1", "--out", sheet)
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == (
        "drew 6 of the 6 judged pairs of judge (100%, the oldest first) to re-judge, stratified like the set "
        "over language:"
    )
    assert (
        "6 of the drawn pairs carry no date (merged before dates were recorded, or typed in): --oldest "
        "takes them first, in a seeded random order"
    ) in out.splitlines()
    assert [row["grade"] for row in sheet_rows(sheet)] == [""] * 6  # blind: no old grade on the sheet
    # Old: q0/d00 2, q0/d01 0, q1/d01 1, q2/d02 2, q3/d03 1, q4/d04 2; the new grades move q1/d01 and q4/d04.
    old = {"q0/d00": "2", "q0/d01": "0", "q1/d01": "1", "q2/d02": "2", "q3/d03": "1", "q4/d04": "2"}
    new = {**old, "q1/d01": "2", "q4/d04": "1"}
    graded = fill(
        sheet, tmp_path / "graded.csv", "ben", lambda row: new[f"{row['query_id']}/{row['doc_id']}"]
    )
    qrels = golden.parent / "judge" / "qrels.tsv"
    status, _, err = embeval("merge", golden, graded)
    assert (
        status == 2 and "are already judged 1 in the qrels, this row grades 2" in err
    )  # not without --refresh
    status, out, err = embeval("merge", golden, graded, "--refresh", "--judged-on", DAY)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    # By hand: observed weighted disagreement 2/6; both margins (1, 2, 3) over grades 0, 1, 2, so chance
    # gives (1*2*1 + 1*3*2 + 2*1*1 + 2*3*1 + 3*1*2 + 3*2*1) / 36 = 28/36; kappa 1 - (2/6)/(28/36) = 0.571.
    assert lines[3] == (
        "re-judged 6 pairs of judge: 2 grades changed (1 up, 1 down); weighted kappa of the new grades with "
        "the old: 0.571 (the drift of relevance)"
    )
    assert lines[-2:] == [
        f"replaced 6 grades in {qrels}; the old ones are kept under 'previous'",
        f"where each came from: {qrels.parent / 'qrels.provenance.jsonl'}",
    ]
    assert qrels.read_text(encoding="utf-8").splitlines() == [
        "query-id\tcorpus-id\tscore", "q0\td00\t2", "q0\td01\t0", "q1\td01\t2", "q2\td02\t2", "q3\td03\t1",
        "q4\td04\t1",
    ]  # fmt: skip
    assert provenance(golden)[("q1", "d01")] == {
        "query_id": "q1",
        "doc_id": "d01",
        "grade": 2,
        "judge": "ben",
        "kind": "person",
        "judged_on": DAY,
        "previous": [{"grade": 1, "judge": None, "kind": "unrecorded", "judged_on": None}],
    }
    record = load_golden(golden)
    assert {source.judged_on for source in golden_sources(record).values()} == {DAY}


def test_weighted_kappa_of_the_drift_matches_scikit_learn() -> None:
    from sklearn.metrics import cohen_kappa_score

    # The refresh test's old and new grades, in sheet order.
    old, new = [2, 0, 1, 2, 1, 2], [2, 0, 2, 2, 1, 1]
    assert round(cohen_kappa_score(old, new, labels=[0, 1, 2], weights="linear"), 3) == 0.571


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--fraction", "0"], "argument --fraction: expected a number in (0, 1], got '0'"),
        (["--fraction", "1.5"], "argument --fraction: expected a number in (0, 1], got '1.5'"),
        (["--oldest", "--random"], "argument --random: not allowed with argument --oldest"),
    ],
)
def test_bad_refresh_options_are_one_line_and_exit_2(
    embeval: Embeval, tmp_path: Path, setup: tuple[Path, Path], args: list[str], problem: str
) -> None:
    golden, _ = setup
    status, _, err = embeval("refresh", golden, *args, "--out", tmp_path / "r.csv")
    assert status == 2 and err.splitlines()[-1].endswith(problem)
    assert not (tmp_path / "r.csv").exists()


def test_refresh_of_a_set_without_judgments_is_one_line(embeval: Embeval, tmp_path: Path) -> None:
    golden = write_golden(tmp_path, qrels=())
    out = tmp_path / "r.csv"
    assert embeval("refresh", golden, "--out", out) == (
        2,
        "",
        "embeval refresh: error: judge: no judgments to refresh\n",
    )
    assert not out.exists()
