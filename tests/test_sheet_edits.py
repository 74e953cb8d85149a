"""Grades written into a sheet one pair at a time (`judging.sheet_edits`), and the grade scale the judging
page offers (`judging.grade_scale`)."""

from __future__ import annotations

import csv
import io
import threading
from pathlib import Path

import pytest
from judge_page_support import GUIDELINES, LABELS, judging_pool, write_judging_set

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judging.grade_scale import (
    DEFAULT_LABELS,
    GradeScale,
    grade_scale,
    guideline_labels,
    no_guidelines_note,
)
from pytest_embeval.judging.merging import sheet_grades
from pytest_embeval.judging.pooling import (
    SHEET_COLUMNS,
    SheetError,
    read_sheet,
    read_sheet_records,
    sheet_cells,
    sheet_text,
    write_sheet,
)
from pytest_embeval.judging.sheet_edits import Cells, edit_sheet

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def golden_path(tmp_path: Path) -> Path:
    return write_judging_set(tmp_path)


def test_an_edit_changes_its_pairs_cells_and_every_other_byte_stays(
    golden_path: Path, tmp_path: Path
) -> None:
    pool = judging_pool(golden_path)
    sheet = tmp_path / "sheet.csv"
    write_sheet(sheet, pool)
    rows = pool.rows
    target = rows[3]
    written = edit_sheet(
        sheet, {(target.query_id, target.doc_id): Cells(grade="2", judge="ana", notes='a "b",\nc')}
    )
    expected = io.StringIO()
    writer = csv.writer(expected)
    writer.writerow(SHEET_COLUMNS)
    for row in rows:
        writer.writerow(sheet_cells(row, "2", "ana", 'a "b",\nc') if row is target else sheet_cells(row))
    assert sheet.read_bytes() == expected.getvalue().encode("utf-8")
    assert written == read_sheet_records(sheet)
    # clearing the grade leaves the judge and the note; None leaves a cell as it is
    edit_sheet(sheet, {(target.query_id, target.doc_id): Cells(grade="")})
    cleared = list(csv.DictReader(io.StringIO(sheet.read_text(encoding="utf-8"), newline="")))[3]
    assert (cleared["grade"], cleared["judge"], cleared["notes"]) == ("", "ana", 'a "b",\nc')
    # untouched, a sheet as written by pool: rewritten without any change, byte for byte
    edit_sheet(sheet, {(target.query_id, target.doc_id): Cells(grade="", judge="", notes="")})
    assert sheet.read_bytes() == sheet_text(pool).encode("utf-8")


def test_an_edit_keeps_a_spreadsheets_bom_line_endings_blank_rows_and_columns(tmp_path: Path) -> None:
    sheet = tmp_path / "saved-by-a-spreadsheet.csv"
    # a byte order mark, \n endings, an extra column, no judge or notes columns, a blank row, a short row
    sheet.write_bytes("\ufeffquery_id,doc_id,grade,checked\nq1,d1,,yes\n\nq1,d2\nq2,d1,1,\n".encode())
    edit_sheet(sheet, {("q1", "d2"): Cells(grade="0", judge="ben", notes="short row")})
    assert (
        sheet.read_bytes()
        == (
            "\ufeffquery_id,doc_id,grade,checked,judge,notes\n"
            "q1,d1,,yes\n\nq1,d2,0,,ben,short row\nq2,d1,1,\n"
        ).encode()
    )
    assert sheet_grades(read_sheet(sheet)) == {("q1", "d2"): 0, ("q2", "d1"): 1}


def test_an_edit_of_a_pair_the_sheet_does_not_hold_changes_nothing(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("query_id,doc_id,grade\nq1,d1,\n", encoding="utf-8")
    with pytest.raises(SheetError) as raised:
        edit_sheet(sheet, {("q1", "d1"): Cells(grade="1"), ("q9", "d1"): Cells(grade="1")})
    assert raised.value.problems == (f"{sheet}: no row names query 'q9' and document 'd1' any more",)
    assert sheet.read_text(encoding="utf-8") == "query_id,doc_id,grade\nq1,d1,\n"
    with pytest.raises(SheetError, match="file not found"):
        edit_sheet(tmp_path / "gone.csv", {("q1", "d1"): Cells(grade="1")})


def test_concurrent_edits_of_one_sheet_keep_every_grade(golden_path: Path, tmp_path: Path) -> None:
    """Eight writers (each its own open file, as two processes would have) grade interleaved pairs of one
    sheet at the same time: each edit re-reads the sheet under its lock, so none is lost, and a reader
    never sees half a sheet."""
    pool = judging_pool(golden_path)
    sheet = tmp_path / "sheet.csv"
    write_sheet(sheet, pool)
    pairs = [(row.query_id, row.doc_id) for row in pool.rows]
    writers = 8
    problems: list[BaseException] = []
    done = threading.Event()

    def write(offset: int) -> None:
        try:
            for pair in pairs[offset::writers]:
                edit_sheet(sheet, {pair: Cells(grade=str(offset % 3), judge=f"judge {offset}")})
        except BaseException as error:  # pragma: no cover - reported below
            problems.append(error)

    def read() -> None:
        while not done.is_set():
            try:
                sheet_grades(read_sheet(sheet))
            except BaseException as error:  # pragma: no cover - reported below
                problems.append(error)
                return

    reader = threading.Thread(target=read)
    reader.start()
    threads = [threading.Thread(target=write, args=(offset,)) for offset in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    assert problems == []
    expected = {pair: offset % 3 for offset in range(writers) for pair in pairs[offset::writers]}
    assert sheet_grades(read_sheet(sheet)) == expected
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file is left behind"


# ------------------------------------------------------------------------------------------- the scale


def test_the_labels_are_the_guidelines_list_items_and_set_the_top_grade() -> None:
    shipped = (ROOT / "golden" / "support" / "judging.md").read_text(encoding="utf-8")
    assert guideline_labels(shipped) == ("not relevant", "partly relevant", "answers it")
    assert guideline_labels(GUIDELINES) == LABELS
    four = "* **3** - perfect: all\n* **2** highly relevant: most\n* **1** related: some\n* **0** off: none\n"
    assert guideline_labels(four) == ("off", "related", "highly relevant", "perfect")
    # a grade missing from 0..N, named twice, only grade 0, or no list at all: no labels
    assert guideline_labels("- **2** yes: a\n- **0** no: b\n") is None
    assert guideline_labels("- **1** yes: a\n- **1** also: c\n- **0** no: b\n") is None
    assert guideline_labels("- **0** no: b\n") is None
    assert guideline_labels("Grade 0, 1 or 2 as you see fit.") is None


def test_the_scale_is_the_guidelines_else_the_usual_names(golden_path: Path, tmp_path: Path) -> None:
    golden = load_golden(golden_path)
    assert grade_scale(golden, None, default_max_grade=2) == GradeScale(LABELS, "guidelines")
    assert grade_scale(golden, 2, default_max_grade=2) == GradeScale(LABELS, "guidelines")
    # a top grade other than the guidelines': their labels do not fit, the usual names do
    assert grade_scale(golden, 3, default_max_grade=2) == GradeScale(DEFAULT_LABELS[3], "default")
    bare = load_golden(write_judging_set(tmp_path / "bare", guidelines=False))
    assert grade_scale(bare, None, default_max_grade=2) == GradeScale(DEFAULT_LABELS[2], "default")
    assert grade_scale(None, 1, default_max_grade=2) == GradeScale(("not relevant", "relevant"), "default")
    assert grade_scale(None, 5, default_max_grade=2).labels == ("not relevant", "", "", "", "", "")
    with pytest.raises(ValueError, match="max_grade must be an integer >= 1, got 0"):
        grade_scale(None, 0, default_max_grade=2)


def test_a_golden_set_without_guidelines_is_named_and_told_what_to_write(
    golden_path: Path, tmp_path: Path
) -> None:
    assert no_guidelines_note(load_golden(golden_path)) is None
    bare = write_judging_set(tmp_path / "bare", guidelines=False)
    assert no_guidelines_note(load_golden(bare)) == (
        f"no guidelines: {bare} names no written relevance definition, so each judge grades by their own; "
        "write one (a sentence per grade, with an example) and name it under 'guidelines:'"
    )


def test_a_sheet_this_process_wrote_last_is_not_read_again_and_one_changed_since_is(
    golden_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_embeval.judging import sheet_edits

    pool = judging_pool(golden_path)
    sheet = tmp_path / "sheet.csv"
    write_sheet(sheet, pool)
    first, second, third = ((row.query_id, row.doc_id) for row in pool.rows[:3])
    reads: list[Path] = []

    def counted(path: Path) -> object:
        reads.append(Path(path))
        return read_sheet_records(path)

    monkeypatch.setattr(sheet_edits, "read_sheet_records", counted)
    known = edit_sheet(sheet, {first: Cells(grade="1")})
    assert reads == [sheet]  # nothing known: read
    known = edit_sheet(sheet, {second: Cells(grade="2")}, known=known)
    assert reads == [sheet]  # unchanged since this process wrote it: not read again
    assert sheet_edits.current(known) is known
    # another process writes meanwhile (a grade of its own): the next edit reads it, and keeps it
    edit_sheet(sheet, {third: Cells(grade="0")})
    assert sheet_edits.current(known) != known
    reads.clear()
    edit_sheet(sheet, {first: Cells(grade="2")}, known=known)
    assert reads == [sheet]
    assert sheet_grades(read_sheet(sheet)) == {first: 2, second: 2, third: 0}
