"""The judging workflow's pure functions: pooling, sheets, merging, agreement, coverage and planning."""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
import yaml
from sklearn.metrics import cohen_kappa_score

from pytest_embeval.core.stats import minimum_detectable_effect, paired_n
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.agreement import agreement, agreement_lines, cohen_kappa
from pytest_embeval.judging.coverage import CoverageRow, coverage, coverage_lines, coverage_warnings
from pytest_embeval.judging.merging import (
    Judgment,
    Resolve,
    append_qrels,
    merge_sheets,
    qrels_file,
    sheet_grades,
)
from pytest_embeval.judging.planning import observed_sd, plan, plan_lines
from pytest_embeval.judging.pooling import (
    SHEET_COLUMNS,
    Sheet,
    SheetError,
    pair_id,
    pool_from_rankings,
    pool_lines,
    read_sheet,
    sample_pool,
    sheet_pairs,
    sheet_text,
    write_sheet,
)
from pytest_embeval.judging.rankings import (
    ReportError,
    find_golden_record,
    load_report,
    rankings_from_record,
    read_trec_run,
)

#: The documents are "doc <i>" (as tests/fake_models.py expects); one title holds what CSV must quote.
TRICKY_TITLE = 'Línea, "uno"\nsegunda'
DOCUMENTS = 30
#: Queries q0..q5 ("<language> <i>"): q0-q2 English, q3-q5 Spanish.
LANGUAGES = {"en": range(0, 3), "es": range(3, 6)}
#: q5 has no judgment at all; q0 has a judged non-relevant document.
QRELS = (
    ("q0", "d00", 2),
    ("q0", "d01", 0),
    ("q1", "d01", 1),
    ("q2", "d02", 2),
    ("q3", "d03", 1),
    ("q4", "d04", 2),
)


def write_golden(
    root: Path, *, qrels: Sequence[tuple[str, str, int]] = QRELS, name: str = "judge", **settings: Any
) -> Path:
    """A small golden set (YAML + JSONL + TSV) under root; settings override the YAML keys."""
    data = root / name
    data.mkdir(parents=True, exist_ok=True)
    documents = [
        {"_id": f"d{i:02d}", "title": TRICKY_TITLE if i == 5 else f"Title {i}", "text": f"doc {i}"}
        for i in range(DOCUMENTS)
    ]
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    queries = [
        {"_id": f"q{i}", "text": f"{language} {i}", "language": language}
        for language, numbers in LANGUAGES.items()
        for i in numbers
    ]
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{g}" for q, d, g in qrels)]
    (data / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plan: dict[str, Any] = {
        "name": name,
        "corpus": f"{name}/corpus.jsonl",
        "queries": f"{name}/queries.jsonl",
        "qrels": f"{name}/qrels.tsv",
        "strata": ["language"],
        "metric": "recall@5",
        "tie_margin": 0.02,
        "confidence": 0.95,
        "min_queries": 2,
        "seed": 7,
    }
    plan.update(settings)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def query_ids() -> list[str]:
    return [f"q{i}" for numbers in LANGUAGES.values() for i in numbers]


def rankings(docs: Sequence[int], **per_query: Sequence[int]) -> dict[str, list[str]]:
    """Every query ranks ``docs`` (indices), unless given its own."""
    return {qid: [f"d{i:02d}" for i in per_query.get(qid, docs)] for qid in query_ids()}


def write_sheet_text(path: Path, rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(SHEET_COLUMNS if header is None else header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def graded(path: Path, grades: Sequence[tuple[str, str, str, str]]) -> Sheet:
    """A sheet of (query id, doc id, grade, judge) rows, without pair ids."""
    return read_sheet(write_sheet_text(path, [["", q, "", d, "", "", g, j, ""] for q, d, g, j in grades]))


@pytest.fixture
def golden(tmp_path: Path) -> GoldenSet:
    return load_golden(write_golden(tmp_path))


# ------------------------------------------------------------------------------------------------- pool

#: Two arms whose top 20s share 18 documents: 0..19 and 0..17 + 20, 21.
TOP_A = list(range(20))
TOP_B = [*range(18), 20, 21]


def test_two_arms_sharing_18_of_their_top_20_pool_a_union_of_22(golden: GoldenSet) -> None:
    pool = pool_from_rankings(golden, {"a": rankings(TOP_A), "b": rankings(TOP_B)}, depth=20)
    assert [query.union for query in pool.queries] == [22] * 6
    judged = {qid: len(docs) for qid, docs in golden.qrels.items()}
    assert [len(query.rows) for query in pool.queries] == [22 - judged[q] for q in query_ids()]
    assert [query.judged for query in pool.queries] == [judged[q] for q in query_ids()]
    assert len(pool.rows) == 6 * 22 - len(QRELS)
    assert pool_lines(pool) == [
        "pooled 2 arms at depth 20 over 6 queries of judge",
        "union per query: mean 22.0, min 22, max 22 (132 pairs)",
        "already judged: 6; on excluded sheets: 0",
        "to judge: 126 pairs (6 queries; mean 21.0, max 22 per query)",
    ]


def test_a_trec_run_is_ranked_by_score_with_trec_eval_ties(golden: GoldenSet, tmp_path: Path) -> None:
    run = tmp_path / "hints.run"
    run.write_text("q1 Q0 d03 1 0.5 hand\nq1 Q0 d09 2 0.9 hand\nq1 Q0 d10 3 0.5 hand\n\nq4 Q0 d07 1 1 hand\n")
    assert read_trec_run(run, golden) == {"q1": ["d09", "d10", "d03"], "q4": ["d07"]}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 Q0 d03 1 0.5", "expected 'qid Q0 docid rank score tag', got 5 fields"),
        ("q9 Q0 d03 1 0.5 x", "unknown query 'q9' (not in golden set 'judge')"),
        ("q1 Q0 d99 1 0.5 x", "unknown document 'd99' (not in the corpus of 'judge')"),
        ("q1 Q0 d03 1 high x", "score 'high' is not a number"),
        ("q1 Q0 d01 1 0.5 x", "document 'd01' listed twice for query 'q1'"),
    ],
)
def test_a_malformed_trec_run_names_the_line(
    golden: GoldenSet, tmp_path: Path, line: str, problem: str
) -> None:
    run = tmp_path / "bad.run"
    run.write_text(f"q1 Q0 d01 1 0.9 x\n{line}\n")
    with pytest.raises(ReportError) as error:
        read_trec_run(run, golden)
    assert str(error.value) == f"{run}:2: {problem}"


def test_runs_join_the_pool_for_the_queries_they_cover(golden: GoldenSet) -> None:
    hand = {"q3": ["d25", "d03"], "q5": ["d26"]}  # d03 is judged for q3 already
    pool = pool_from_rankings(golden, {"a": rankings(range(5))}, depth=5, runs={"hand": hand})
    new = {(row.query_id, row.doc_id) for row in pool.rows} - {
        (q, f"d{i:02d}") for q in query_ids() for i in range(5)
    }
    assert new == {("q3", "d25"), ("q5", "d26")}
    assert [query.union for query in pool.queries] == [5, 5, 5, 6, 5, 6]
    assert pool.arms == ("a", "hand")


def test_pool_reads_only_each_arms_top_depth(golden: GoldenSet) -> None:
    deep = rankings([*range(5), 29, 28])
    pool = pool_from_rankings(golden, {"a": deep}, depth=5)
    assert {row.doc_id for row in pool.rows} <= {f"d{i:02d}" for i in range(5)}
    assert [query.union for query in pool.queries] == [5] * 6


def test_pool_leaves_out_judged_pairs_and_pairs_on_excluded_sheets(golden: GoldenSet) -> None:
    pool = pool_from_rankings(
        golden, {"a": rankings([0, 1, 2])}, depth=3, exclude={("q1", "d00"), ("q5", "d02"), ("q5", "d29")}
    )
    pairs = {(row.query_id, row.doc_id) for row in pool.rows}
    assert not pairs & {(q, d) for q, d, _ in QRELS}
    assert ("q1", "d00") not in pairs and ("q5", "d02") not in pairs
    q1, q5 = pool.queries[1], pool.queries[5]
    assert (q1.union, q1.judged, q1.pending, len(q1.rows)) == (3, 1, 1, 1)
    assert (q5.union, q5.judged, q5.pending, len(q5.rows)) == (3, 0, 1, 2)


def test_a_third_candidate_pools_only_what_is_new(tmp_path: Path) -> None:
    path = write_golden(tmp_path)
    first = {"incumbent": rankings([0, 1, 2, 3]), "candidate": rankings([0, 1, 4, 5])}
    pool = pool_from_rankings(load_golden(path), first, depth=4)
    sheet = graded(tmp_path / "round1.csv", [(r.query_id, r.doc_id, "0", "ann") for r in pool.rows])
    golden = load_golden(path)
    append_qrels(qrels_file(golden), merge_sheets(golden, [sheet]).new, qrels_format="beir")
    third = {**first, "third": rankings([1, 4, 6, 7])}
    pool = pool_from_rankings(load_golden(path), third, depth=4)
    assert {(row.query_id, row.doc_id) for row in pool.rows} == {
        (qid, doc) for qid in query_ids() for doc in ("d06", "d07")
    }


def test_pool_is_blind_to_arm_order_names_and_ranks(golden: GoldenSet) -> None:
    a, b = rankings(TOP_A), rankings(TOP_B)
    reference = sheet_text(pool_from_rankings(golden, {"incumbent": a, "candidate": b}))
    assert sheet_text(pool_from_rankings(golden, {"candidate": b, "incumbent": a})) == reference
    renamed = pool_from_rankings(golden, {"x": b, "y": a})
    assert sheet_text(renamed) == reference
    # Reversing an arm's ranks within its top 20 changes nothing: the order does not encode rank.
    reversed_a = {qid: list(reversed(docs)) for qid, docs in a.items()}
    assert sheet_text(pool_from_rankings(golden, {"i": reversed_a, "c": b})) == reference
    for forbidden in ("incumbent", "candidate"):
        assert forbidden not in reference
    assert reference.splitlines()[0] == ",".join(SHEET_COLUMNS)


def test_pool_order_is_a_seeded_shuffle(golden: GoldenSet) -> None:
    arms = {"a": rankings(TOP_A), "b": rankings(TOP_B)}
    pool = pool_from_rankings(golden, arms)
    assert pool.seed == golden.seed == 7
    assert pool_from_rankings(golden, arms, seed=7) == pool
    other = pool_from_rankings(golden, arms, seed=8)
    assert [r.doc_id for r in other.rows] != [r.doc_id for r in pool.rows]
    assert sorted(other.rows, key=lambda r: r.pair_id) == sorted(pool.rows, key=lambda r: r.pair_id)
    for query in pool.queries:
        docs = [row.doc_id for row in query.rows]
        assert docs != sorted(docs)  # neither document-id order ...
        assert docs != [d for d in a_then_b(arms, query.query_id) if d in docs]  # ... nor either arm's ranks
    # Queries stay in golden-file order, so a judge reads one query's documents together.
    assert [q for q in dict.fromkeys(r.query_id for r in pool.rows)] == query_ids()


def test_a_calibration_sample_is_seeded_and_keeps_sheet_order(golden: GoldenSet) -> None:
    pool = pool_from_rankings(golden, {"a": rankings(TOP_A), "b": rankings(TOP_B)})
    sample = sample_pool(pool, 50)
    assert len(sample.rows) == 50 and sample.sampled_from == 126
    assert sample_pool(pool, 50) == sample
    order = {row.pair_id: i for i, row in enumerate(pool.rows)}
    positions = [order[row.pair_id] for row in sample.rows]
    assert positions == sorted(positions)
    assert [q.union for q in sample.queries] == [22] * 6
    assert len(sample_pool(pool, 1000).rows) == 126


def test_a_calibration_sample_is_drawn_evenly_over_the_best_rank(golden: GoldenSet) -> None:
    # Documents 0..17 are at ranks 1..18 in both arms; 18, 19 (arm a) and 20, 21 (arm b) at ranks 19, 20.
    # So each of ranks 1..18 has one pair per query (less what is judged), ranks 19 and 20 two.
    pool = pool_from_rankings(golden, {"a": rankings(TOP_A), "b": rankings(TOP_B)})
    best = {
        (q.query_id, row.doc_id): rank
        for q in pool.queries
        for row, rank in zip(q.rows, q.best_ranks, strict=True)
    }
    assert best[("q1", "d00")] == 1 and best[("q1", "d19")] == best[("q1", "d21")] == 20
    assert Counter(best.values()) == {
        1: 5,
        2: 4,
        3: 5,
        4: 5,
        5: 5,
        **dict.fromkeys(range(6, 19), 6),
        19: 12,
        20: 12,
    }

    def per_rank(size: int) -> Counter[int]:
        sample = sample_pool(pool, size)
        return Counter(best[(row.query_id, row.doc_id)] for row in sample.rows)

    # 50 over 20 ranks: two from each, and a third from each of the top ten.
    assert per_rank(50) == {**dict.fromkeys(range(1, 11), 3), **dict.fromkeys(range(11, 21), 2)}
    # Ranks 1..18 run out after all their 102 pairs; ranks 19 and 20 take the rest in turn.
    assert per_rank(121) == {**{r: n for r, n in Counter(best.values()).items() if r <= 18}, 19: 10, 20: 9}
    assert pool_lines(sample_pool(pool, 50))[-1] == (
        "a calibration sample of 50 of the 126 pairs to judge, drawn evenly over the best rank any arm gave "
        "them: " + ", ".join(f"rank {r}: {3 if r <= 10 else 2}" for r in range(1, 21))
    )


def a_then_b(arms: Mapping[str, Mapping[str, Sequence[str]]], qid: str) -> list[str]:
    return list(dict.fromkeys([*arms["a"][qid], *arms["b"][qid]]))


def test_sheet_rows_carry_texts_and_a_stable_opaque_pair_id(tmp_path: Path, golden: GoldenSet) -> None:
    pool = pool_from_rankings(golden, {"a": rankings([5, 6])}, depth=2)
    path = tmp_path / "sheet.csv"
    write_sheet(path, pool)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 12
    tricky = next(row for row in rows if row["query_id"] == "q0" and row["doc_id"] == "d05")
    assert tricky == {
        "pair_id": pair_id("judge", "q0", "d05"),
        "query_id": "q0",
        "query_text": "en 0",
        "doc_id": "d05",
        "doc_title": TRICKY_TITLE,
        "doc_text": "doc 5",
        "grade": "",
        "judge": "",
        "notes": "",
    }
    assert len({row["pair_id"] for row in rows}) == 12
    assert all(len(row["pair_id"]) == 12 and int(row["pair_id"], 16) >= 0 for row in rows)
    back = read_sheet(path)
    assert [(r.row, r.query_id, r.doc_id, r.grade) for r in back.rows][:2] == [
        (2, rows[0]["query_id"], rows[0]["doc_id"], ""),
        (3, rows[1]["query_id"], rows[1]["doc_id"], ""),
    ]


def test_pair_id_depends_on_golden_set_query_and_document() -> None:
    ids = {
        pair_id("a", "q1", "d1"),
        pair_id("b", "q1", "d1"),
        pair_id("a", "q1", "d2"),
        pair_id("a", "q2", "d1"),
        pair_id("a", "q1d", "1"),
    }
    assert len(ids) == 5
    assert pair_id("a", "q1", "d1") == pair_id("a", "q1", "d1")


@pytest.mark.parametrize(
    ("arms", "depth", "message"),
    [
        ({}, 5, "no arms: give at least one arm's rankings"),
        (
            {"a": {**rankings([0]), "q9": ["d00"]}},
            1,
            "arm 'a' ranks query 'q9', which is not in golden set 'judge'",
        ),
        (
            {"a": {k: v for k, v in rankings([0]).items() if k != "q2"}},
            1,
            "arm 'a' has no ranking for query 'q2'",
        ),
        (
            {"a": {**rankings([0]), "q1": ["d99"]}},
            1,
            "arm 'a' ranks document 'd99' for query 'q1', which is not in the corpus of 'judge'",
        ),
        (
            {"a": rankings([0, 1])},
            3,
            "arm 'a' ranks only 2 documents for query 'q0', fewer than the pool depth 3",
        ),
        ({"a": rankings([0])}, 0, "depth must be a positive integer, got 0"),
    ],
)
def test_bad_rankings_are_refused(
    golden: GoldenSet, arms: Mapping[str, Mapping[str, Sequence[str]]], depth: int, message: str
) -> None:
    with pytest.raises(ValueError) as excinfo:
        pool_from_rankings(golden, arms, depth=depth)
    assert str(excinfo.value) == message


def test_depth_beyond_the_corpus_pools_the_whole_corpus(golden: GoldenSet) -> None:
    everything = rankings(range(DOCUMENTS))
    pool = pool_from_rankings(golden, {"a": everything}, depth=100)
    assert [query.union for query in pool.queries] == [DOCUMENTS] * 6


def test_rankings_come_from_a_report_record(golden: GoldenSet) -> None:
    record = {
        "name": "judge",
        "path": "judge.yaml",
        "queries": [{"id": q, "ranked": {"incumbent": ["d00"], "candidate": ["d01"]}} for q in query_ids()],
    }
    report = {"schema_version": 1, "golden_sets": [{"name": "other", "path": "x.yaml"}, record]}
    assert find_golden_record(report, golden, "r.json") is record
    arms = rankings_from_record(record)
    assert list(arms) == ["incumbent", "candidate"]
    assert arms["candidate"]["q3"] == ["d01"]
    with pytest.raises(ReportError) as excinfo:
        find_golden_record({"golden_sets": [{"name": "other"}]}, golden, "r.json")
    assert str(excinfo.value) == "r.json: none of the report's golden sets is 'judge' (it holds: 'other')"
    with pytest.raises(ReportError) as excinfo:
        rankings_from_record({"name": "judge", "queries": [{"id": "q0"}]}, "r.json")
    assert str(excinfo.value) == "r.json: a query of 'judge' has no 'ranked' documents"


def test_a_report_with_two_golden_sets_of_one_name_is_matched_by_path(golden: GoldenSet) -> None:
    records = [{"name": "judge", "path": "elsewhere/judge.yaml"}, {"name": "judge", "path": "judge.yaml"}]
    assert find_golden_record({"golden_sets": records}, golden, "r") is records[1]


def test_load_report_explains_what_is_wrong(tmp_path: Path) -> None:
    cases = {
        "missing.json": None,
        "broken.json": "{",
        "list.json": "[]",
        "version.json": json.dumps({"schema_version": 2, "golden_sets": []}),
    }
    messages = []
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(ReportError) as excinfo:
            load_report(tmp_path / name)
        messages.append(str(excinfo.value).removeprefix(f"{tmp_path / name}: "))
    assert messages == [
        "file not found",
        "not JSON: Expecting property name enclosed in double quotes (line 1)",
        "not an embeval JSON report (no 'golden_sets' list)",
        "unsupported schema_version 2",
    ]


# ------------------------------------------------------------------------------------------------ sheets


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file (expected a header row: " + ",".join(SHEET_COLUMNS) + ")"),
        (
            "pair_id,query_id,doc_id,judge\n",
            "row 1: missing column(s) 'grade' (a judging sheet's header is " + ",".join(SHEET_COLUMNS) + ")",
        ),
        (
            "pair_id,query,document,grade\n",
            "row 1: missing column(s) 'query_id', 'doc_id' (a judging sheet's header is "
            + ",".join(SHEET_COLUMNS)
            + ")",
        ),
        (
            "query_id;doc_id;grade\nq0;d00;1\n",
            "row 1: the header is separated by ';', not ','; save the sheet as CSV (comma delimited)",
        ),
        ("query_id,doc_id,grade,grade\n", "row 1: duplicate column 'grade'"),
        ("query_id,doc_id,grade\nq0,d00,1\nq0,d01,1,extra\n", "row 3: 4 cells, but the header has 3"),
    ],
)
def test_malformed_sheets_are_refused_with_the_row(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "s.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SheetError) as excinfo:
        read_sheet(path)
    assert excinfo.value.problems == (f"{path}: {message}",)


def test_unreadable_sheets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SheetError) as excinfo:
        read_sheet(tmp_path / "nope.csv")
    assert str(excinfo.value) == f"{tmp_path / 'nope.csv'}: file not found"
    latin = tmp_path / "latin.csv"
    latin.write_bytes("query_id,doc_id,grade\nq0,d00,1,línea\n".encode("latin-1"))
    with pytest.raises(SheetError) as excinfo:
        read_sheet(latin)
    assert str(excinfo.value) == f"{latin}: not UTF-8 (byte 0xed at offset 32); save the sheet as CSV UTF-8"


def test_sheets_accept_a_bom_blank_rows_short_rows_and_reordered_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text(
        "\ufeffnotes,grade,doc_id,query_id,judge\r\n,2,d00,q0\r\n,,,,\r\n\r\n,1, d01 ,q0,ann\r\n", "utf-8"
    )
    sheet = read_sheet(path)
    assert [(r.row, r.query_id, r.doc_id, r.grade, r.judge) for r in sheet.rows] == [
        (2, "q0", "d00", "2", ""),
        (5, "q0", "d01", "1", "ann"),
    ]
    assert sheet_pairs([sheet]) == {("q0", "d00"), ("q0", "d01")}


# ------------------------------------------------------------------------------------------------- merge


def merge_problems(golden: GoldenSet, sheets: Sequence[Sheet], **options: Any) -> tuple[str, ...]:
    with pytest.raises(SheetError) as excinfo:
        merge_sheets(golden, sheets, **options)
    return excinfo.value.problems


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("q9", "d10", "1", "ann"), "unknown query 'q9' (not in golden set 'judge')"),
        (("q1", "d99", "1", "ann"), "unknown document 'd99' (not in the corpus of 'judge')"),
        (("q1", "", "1", "ann"), "empty doc_id"),
        (("q1", "d10", "3", "ann"), "grade 3 is outside the scale 0..2"),
        (("q1", "d10", "-1", "ann"), "grade -1 is outside the scale 0..2"),
        (("q1", "d10", "high", "ann"), "grade 'high' is not an integer (the scale is 0..2)"),
        (("q1", "d10", "1.5", "ann"), "grade '1.5' is not an integer (the scale is 0..2)"),
        (("q1", "d10", "", "ann"), "empty grade: grade the pair (0..2) or delete the row"),
        (
            ("q0", "d00", "1", "ann"),
            "query 'q0' and document 'd00' are already judged 2 in the qrels, this row grades 1 "
            "(to revise a judgment, edit the qrels file)",
        ),
    ],
)
def test_each_malformed_row_is_an_error_naming_its_row(
    tmp_path: Path, golden: GoldenSet, row: tuple[str, str, str, str], message: str
) -> None:
    sheet = graded(tmp_path / "s.csv", [("q1", "d11", "1", "ann"), row])
    assert merge_problems(golden, [sheet]) == (f"{tmp_path / 's.csv'}: row 3: {message}",)


def test_one_judge_grading_a_pair_twice_differently_is_an_error(tmp_path: Path, golden: GoldenSet) -> None:
    sheet = graded(
        tmp_path / "s.csv", [("q1", "d10", "1", "ann"), ("q1", "d11", "0", "ann"), ("q1", "d10", "2", "ann")]
    )
    assert merge_problems(golden, [sheet]) == (
        f"{tmp_path / 's.csv'}: row 4: judge 'ann' graded query 'q1' and document 'd10' 2 here "
        "and 1 on row 2",
    )
    # ... even with --resolve, which settles disagreements between judges, not a judge's own.
    assert len(merge_problems(golden, [sheet], resolve="max")) == 1


def test_the_same_grade_twice_counts_once(tmp_path: Path, golden: GoldenSet) -> None:
    sheet = graded(
        tmp_path / "s.csv", [("q1", "d10", "1", "ann"), ("q1", "d10", "1", "ann"), ("q1", "d10", "1", "bob")]
    )
    result = merge_sheets(golden, [sheet])
    assert result.new == (Judgment("q1", "d10", 1, "ann"),)
    assert dict(result.judges) == {"ann": 2, "bob": 1}


def test_judges_who_disagree_need_resolve(tmp_path: Path, golden: GoldenSet) -> None:
    ann = graded(tmp_path / "ann.csv", [("q1", "d10", "2", "ann"), ("q2", "d10", "0", "ann")])
    bob = graded(tmp_path / "bob.csv", [("q2", "d10", "0", "bob"), ("q1", "d10", "0", "bob")])
    assert merge_problems(golden, [ann, bob]) == (
        f"{tmp_path / 'bob.csv'}: row 3: judges 'ann' (2 on {tmp_path / 'ann.csv'} row 2) and 'bob' (0 here) "
        "disagree on query 'q1' and document 'd10'; reconcile the grades or pass --resolve max|min|first",
    )
    expected: dict[Resolve, tuple[int, str]] = {"max": (2, "ann"), "min": (0, "bob"), "first": (2, "ann")}
    for resolve, (grade, judge) in expected.items():
        result = merge_sheets(golden, [ann, bob], resolve=resolve)
        assert result.new == (Judgment("q1", "d10", grade, judge), Judgment("q2", "d10", 0, "ann"))
        assert result.resolved == 1
    assert merge_sheets(golden, [bob, ann], resolve="first").new[0].grade == 0


def test_a_blank_judge_is_the_sheet(tmp_path: Path, golden: GoldenSet) -> None:
    first = graded(tmp_path / "a.csv", [("q1", "d10", "2", "")])
    second = graded(tmp_path / "b.csv", [("q1", "d10", "1", "")])
    (problem,) = merge_problems(golden, [first, second])
    assert f"judges '{tmp_path / 'a.csv'}' (2 on" in problem
    assert f"'{tmp_path / 'b.csv'}' (1 here)" in problem


def test_a_pair_id_that_does_not_match_its_row_is_an_error(tmp_path: Path, golden: GoldenSet) -> None:
    right, wrong = pair_id("judge", "q1", "d10"), pair_id("judge", "q1", "d11")
    path = write_sheet_text(
        tmp_path / "s.csv",
        [[right, "q1", "", "d10", "", "", "1", "", ""], [right, "q1", "", "d11", "", "", "1", "", ""]],
    )
    assert wrong != right
    assert merge_problems(golden, [read_sheet(path)]) == (
        f"{path}: row 3: pair_id '{right}' does not belong to query 'q1' and document 'd11' "
        "(were cells moved, e.g. by sorting one column only?)",
    )


def test_every_problem_is_listed_in_sheet_and_row_order(tmp_path: Path, golden: GoldenSet) -> None:
    first = graded(tmp_path / "a.csv", [("q1", "d10", "", "ann"), ("q1", "d10", "9", "ann")])
    second = graded(tmp_path / "b.csv", [("q7", "d10", "1", "bob")])
    problems = merge_problems(golden, [second, first])
    assert [p.split(": ")[0:2] for p in problems] == [
        [str(tmp_path / "b.csv"), "row 2"],
        [str(tmp_path / "a.csv"), "row 2"],
        [str(tmp_path / "a.csv"), "row 3"],
    ]


def test_merge_returns_new_judgments_in_golden_order_and_counts_unchanged(
    tmp_path: Path, golden: GoldenSet
) -> None:
    sheet = graded(
        tmp_path / "s.csv",
        [
            ("q4", "d20", "1", "ann"),
            ("q0", "d00", "2", "ann"),
            ("q0", "d12", "0", "bob"),
            ("q0", "d11", "2", "ann"),
        ],
    )
    result = merge_sheets(golden, [sheet])
    assert result.new == (
        Judgment("q0", "d11", 2, "ann"),
        Judgment("q0", "d12", 0, "bob"),
        Judgment("q4", "d20", 1, "ann"),
    )
    assert (result.unchanged, result.resolved, dict(result.judges)) == (1, 0, {"ann": 3, "bob": 1})


def test_a_wider_scale_is_declared_with_max_grade(tmp_path: Path, golden: GoldenSet) -> None:
    sheet = graded(tmp_path / "s.csv", [("q1", "d10", "3", "ann")])
    assert merge_sheets(golden, [sheet], max_grade=3).new == (Judgment("q1", "d10", 3, "ann"),)
    with pytest.raises(ValueError, match="max_grade must be an integer >= 1, got 0"):
        merge_sheets(golden, [sheet], max_grade=0)


def test_append_qrels_keeps_every_existing_byte(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\r\nq0\td00\t2")  # CRLF, no final newline
    path.chmod(0o640)
    append_qrels(path, [Judgment("q1", "d01", 1), Judgment("q1", "d02", 0)], qrels_format="beir")
    assert path.read_bytes() == b"query-id\tcorpus-id\tscore\r\nq0\td00\t2\r\nq1\td01\t1\r\nq1\td02\t0\r\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["qrels.tsv"]  # no temporary file left behind


def test_append_qrels_writes_trec_lines_to_a_trec_file(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("q0 0 d00 2\n", encoding="utf-8")
    append_qrels(path, [Judgment("q1", "d01", 1)], qrels_format="trec")
    assert path.read_text(encoding="utf-8") == "q0 0 d00 2\nq1 0 d01 1\n"


def test_qrels_file_of_each_golden_layout(tmp_path: Path) -> None:
    path = write_golden(tmp_path)
    assert qrels_file(load_golden(path)) == tmp_path / "judge" / "qrels.tsv"
    beir = tmp_path / "beir.yaml"
    beir.write_text("beir: judge\nmetric: recall@5\n", encoding="utf-8")
    assert qrels_file(load_golden(beir)) == tmp_path / "judge" / "qrels.tsv"
    (tmp_path / "judge" / "qrels").mkdir()
    (tmp_path / "judge" / "qrels.tsv").rename(tmp_path / "judge" / "qrels" / "dev.tsv")
    split = tmp_path / "split.yaml"
    split.write_text("beir: judge\nsplit: dev\nmetric: recall@5\n", encoding="utf-8")
    assert qrels_file(load_golden(split)) == tmp_path / "judge" / "qrels" / "dev.tsv"
    inline = tmp_path / "inline.yaml"
    inline.write_text(
        "corpus: judge/corpus.jsonl\nqueries: [{id: q1, text: x, relevant: {d00: 1}}]\nmetric: recall@5\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError) as excinfo:
        qrels_file(load_golden(inline))  # valid; only merge cannot append to it
    assert str(excinfo.value) == (
        f"{inline}: the judgments are inline ('relevant:' on each query), so there is no qrels file to "
        "append to; move them to a TSV file with the header 'query-id\\tcorpus-id\\tscore' and name it "
        "under 'qrels:'"
    )


# --------------------------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("weights", [None, "linear"])
@pytest.mark.parametrize("max_grade", [1, 2, 3, 4])
def test_kappa_matches_scikit_learn_on_random_grades(
    weights: Literal["linear"] | None, max_grade: int
) -> None:
    rng = np.random.default_rng(1000 * max_grade + (weights is None))
    labels = list(range(max_grade + 1))
    for _ in range(60):
        n = int(rng.integers(1, 80))
        first = rng.integers(0, max_grade + 1, n)
        # Correlated judges, as real ones are: agreement from chance to perfect.
        second = np.where(rng.random(n) < rng.random(), first, rng.integers(0, max_grade + 1, n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns when kappa is undefined (and returns NaN)
            expected = cohen_kappa_score(first, second, labels=labels, weights=weights)
        got = cohen_kappa(first.tolist(), second.tolist(), labels, weights=weights)
        if got is None:
            assert math.isnan(expected)
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_agreement_matches_scikit_learn_and_counts_the_matrix() -> None:
    rng = np.random.default_rng(5)
    pairs = [(f"q{i}", f"d{j}") for i in range(20) for j in range(5)]
    first = {pair: int(rng.integers(0, 3)) for pair in pairs}
    second = {pair: g if rng.random() < 0.7 else int(rng.integers(0, 3)) for pair, g in first.items()}
    second[("q99", "d0")] = 1
    del second[pairs[0]]
    result = agreement(first, second)
    common = pairs[1:]
    a, b = [first[p] for p in common], [second[p] for p in common]
    assert result.n == 99 and (result.only_first, result.only_second) == (1, 1)
    assert result.percent == pytest.approx(np.mean(np.array(a) == np.array(b)))
    assert result.kappa == pytest.approx(cohen_kappa_score(a, b))
    assert result.weighted_kappa == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert np.array_equal(
        np.array(result.matrix),
        np.array(
            [[sum(x == i and y == j for x, y in zip(a, b, strict=True)) for j in range(3)] for i in range(3)]
        ),
    )
    assert result.gate == ("weighted kappa", result.weighted_kappa)
    gaps = [abs(d[2] - d[3]) for d in result.disagreements]
    assert gaps == sorted(gaps, reverse=True) and len(gaps) == 99 - np.trace(np.array(result.matrix))


def test_agreement_by_hand() -> None:
    # 10 pairs: 7 agreements. Marginals A (0: 4, 1: 3, 2: 3), B (0: 4, 1: 4, 2: 2).
    a = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    b = [0, 0, 0, 1, 1, 1, 0, 2, 2, 1]
    result = agreement(
        {(f"q{i}", "d"): g for i, g in enumerate(a)}, {(f"q{i}", "d"): g for i, g in enumerate(b)}
    )
    assert result.matrix == ((3, 1, 0), (1, 2, 0), (0, 1, 2))
    pe = (4 * 4 + 3 * 4 + 3 * 2) / 100
    assert result.kappa == pytest.approx((0.7 - pe) / (1 - pe))
    assert agreement_lines(result, "ann.csv", "bob.csv", listed=2) == [
        "pairs graded by both: 10 (only ann.csv: 0, only bob.csv: 0)",
        "percent agreement: 70.0%",
        f"Cohen's kappa: {result.kappa:.3f}",
        f"linearly weighted kappa: {result.weighted_kappa:.3f}",
        "",
        "ann.csv \\ bob.csv  0  1  2  total",
        "-----------------  -  -  -  -----",
        "0                  3  1  0      4",
        "1                  1  2  0      3",
        "2                  0  1  2      3",
        "total              4  4  2     10",
        "",
        "disagreements (2 of 3):",
        "query  document  ann.csv  bob.csv",
        "-----  --------  -------  -------",
        "q3     d               0        1",
        "q6     d               1        0",
    ]


def test_binary_scales_gate_on_plain_kappa() -> None:
    a = {("q", str(i)): i % 2 for i in range(10)}
    b = {("q", str(i)): int(i % 3 == 0) for i in range(10)}
    result = agreement(a, b, max_grade=1)
    assert result.labels == (0, 1)
    assert result.gate == ("kappa", result.kappa)
    assert result.kappa == pytest.approx(result.weighted_kappa)


def test_kappa_is_undefined_when_both_judges_use_one_grade() -> None:
    same = {("q", str(i)): 1 for i in range(5)}
    result = agreement(same, dict(same))
    assert (result.kappa, result.weighted_kappa, result.percent) == (None, None, 1.0)
    lines = agreement_lines(result, "a", "b")
    assert "kappa is undefined: both judges graded every pair 1; judge a sample with varied grades" in lines
    assert "Cohen's kappa: undefined" in lines
    # One judge varying is enough for kappa to be defined (here: no better than chance).
    other = {**same, ("q", "0"): 0}
    assert agreement(same, other).kappa == pytest.approx(0.0)


def test_agreement_needs_common_pairs() -> None:
    with pytest.raises(ValueError, match="no pair was graded by both judges"):
        agreement({("q", "a"): 1}, {("q", "b"): 1})
    with pytest.raises(ValueError, match="no items graded by both judges"):
        cohen_kappa([], [], [0, 1])
    with pytest.raises(ValueError, match="grade 3 is not one of the labels"):
        cohen_kappa([3], [0], [0, 1])


def test_sheet_grades_skips_ungraded_rows_and_refuses_contradictions(tmp_path: Path) -> None:
    sheet = graded(tmp_path / "s.csv", [("q1", "d1", "1", ""), ("q1", "d2", "", ""), ("q1", "d1", "1", "")])
    assert sheet_grades(sheet) == {("q1", "d1"): 1}
    bad = graded(
        tmp_path / "t.csv",
        [("q1", "d1", "1", ""), ("q1", "d1", "2", ""), ("", "d3", "1", ""), ("q1", "d4", "x", "")],
    )
    with pytest.raises(SheetError) as excinfo:
        sheet_grades(bad)
    where = tmp_path / "t.csv"
    assert excinfo.value.problems == (
        f"{where}: row 3: query 'q1' and document 'd1' graded 2 here and 1 on row 2",
        f"{where}: row 4: empty query_id",
        f"{where}: row 5: grade 'x' is not an integer (the scale is 0..2)",
    )


# ---------------------------------------------------------------------------------------------- coverage


def test_coverage_is_judged_at_k_per_stratum_and_arm(golden: GoldenSet) -> None:
    # The incumbent ranks each query's judged documents first; the candidate ranks unjudged ones.
    incumbent = {q: [*golden.qrels[q], *(f"d{i}" for i in range(20, 30))] for q in query_ids()}
    candidate = rankings(range(10, 20))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # judged@k is defined without relevant documents: no warning
        rows = coverage(golden, {"incumbent": incumbent, "candidate": candidate}, k=2)
    by = {(row.stratum, row.arm): row for row in rows}
    # Judged in the top 2: q0 both, q1-q4 one, q5 none.
    assert by["overall", "incumbent"].judged == pytest.approx((1 + 4 * 0.5) / 6)
    assert by["language=en", "incumbent"].judged == pytest.approx(2 / 3)
    assert by["language=es", "incumbent"].judged == pytest.approx(1 / 3)
    assert all(by[s, "candidate"].judged == 0 for s in ("overall", "language=en", "language=es"))
    assert [(r.stratum, r.arm, r.n) for r in rows][:2] == [
        ("overall", "incumbent", 6),
        ("overall", "candidate", 6),
    ]
    assert coverage_lines(rows) == [
        "stratum      n  incumbent judged@2  candidate judged@2",
        "-----------  -  ------------------  ------------------",
        "overall      6                 50%                  0%",
        "language=en  3                 67%                  0%",
        "language=es  3                 33%                  0%",
    ]
    assert coverage_warnings(rows, golden_path="g.yaml", report_path="r.json") == [
        "candidate's top 2 is less judged than another arm's by more than 10 points (overall: 0% vs "
        "incumbent 50%; language=en: 0% vs incumbent 67%; language=es: 0% vs incumbent 33%): candidate has "
        "not been pooled, so its scores are biased down. Fix: embeval pool g.yaml --from-report r.json "
        "--out SHEET.csv, grade the sheet, then embeval merge g.yaml SHEET.csv"
    ]


def row(stratum: str, arm: str, judged: float) -> CoverageRow:
    return CoverageRow(stratum, arm, 10, 50, judged)


def test_coverage_warns_only_beyond_the_threshold() -> None:
    even = [row("overall", "a", 0.95), row("overall", "b", 0.85)]  # exactly 10 points: no warning
    assert coverage_warnings(even, golden_path="g", report_path="r") == []
    uneven = [
        row("overall", "a", 0.95),
        row("overall", "b", 0.849),
        row("x=1", "a", 0.5),
        row("x=1", "b", 0.9),
    ]
    warned = coverage_warnings(uneven, golden_path="g", report_path="r")
    assert [w.split("'")[0] for w in warned] == ["b", "a"]
    assert "(x=1: 50% vs b 90%)" in warned[1]
    assert coverage_warnings(uneven, golden_path="g", report_path="r", threshold=0.5) == []
    (without_report,) = coverage_warnings(uneven[:2], golden_path="g.yaml", report_path=None)
    assert without_report.endswith(
        "Fix: pytest --embeval --embeval-pool DIR (writes the sheet into DIR), grade the sheet, "
        "then embeval merge g.yaml SHEET.csv"
    )


# -------------------------------------------------------------------------------------------------- plan


def test_plan_reproduces_the_seed_figures(tmp_path: Path) -> None:
    golden = load_golden(write_golden(tmp_path, tie_margin=0.02, confidence=0.95))
    rows = plan(golden, sd=0.15)
    assert [r.needed for r in rows] == [442, 442, 442]
    # n counts queries with a relevant judgment: q0-q4 (q5 has none).
    assert [(r.stratum, r.n) for r in rows] == [("overall", 5), ("language=en", 3), ("language=es", 2)]
    assert [r.to_add for r in rows] == [437, 439, 440]
    assert rows[0].mde == pytest.approx(minimum_detectable_effect(0.15, 5, alpha=0.05))
    lines = plan_lines(golden, rows)
    assert lines[:5] == [
        "judge: recall@5, tie margin 0.02, confidence 95%, power 80%, min_queries 2",
        "stratum      n             sd    MDE  needed  to add",
        "-----------  -  -------------  -----  ------  ------",
        f"overall      5  0.150 assumed  {rows[0].mde:.3f}     442     437",
        f"language=en  3  0.150 assumed  {rows[1].mde:.3f}     442     439",
    ]
    assert plan(golden, sd=0.15)[0].needed == plan(golden)[0].needed == 442
    assert [r.needed for r in plan(load_golden(write_golden(tmp_path / "b", tie_margin=0.05)))] == [71] * 3


def test_plan_uses_observed_sd_where_a_run_measured_one(golden: GoldenSet) -> None:
    record = {"strata": [{"stratum": "overall", "sd": 0.3}, {"stratum": "language=en", "sd": None}]}
    observed = observed_sd(record)
    assert observed == {"overall": 0.3}
    rows = plan(golden, sd=0.15, observed=observed)
    assert [(r.sd, r.observed) for r in rows] == [(0.3, True), (0.15, False), (0.15, False)]
    assert rows[0].needed == paired_n(0.02, 0.3) > 4 * 441
    assert "0.300 observed" in plan_lines(golden, rows)[3]


def test_plan_edge_cases(tmp_path: Path) -> None:
    golden = load_golden(write_golden(tmp_path, tie_margin=0, min_queries=3))
    rows = plan(golden)
    assert all(r.needed is None and r.to_add is None for r in rows)
    lines = plan_lines(golden, rows)
    assert "tie_margin is 0: there is no margin to resolve, so no query count is given." in lines
    assert "strata with n < 3 (min_queries) always end as TIE (below floor)." in lines
    unjudged = load_golden(write_golden(tmp_path / "u", qrels=[("q0", "d00", 1), ("q1", "d01", 0)]))
    assert [(r.stratum, r.n, r.mde is None) for r in plan(unjudged)] == [
        ("overall", 1, False),
        ("language=en", 1, False),
        ("language=es", 0, True),
    ]
    with pytest.raises(ValueError, match="sd must be a finite number >= 0, got -1"):
        plan(golden, sd=-1)
