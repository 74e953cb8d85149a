"""What the judging page shows: the pairs of one judge's sheets in sheet order (the calibration sheet's
first), their texts, and the grades and notes the sheets hold now.

A judge may grade two sheets in one sitting: their copy of the calibration sample, which the other judge
grades too (`embeval pool --sample`), then their own part of the pool (`--split`). The calibration pairs
come first and are *shared*; a pair on both sheets is shown once, and its grade is written to both. A pair
counts as graded when every sheet that lists it holds a grade for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_embeval.golden.schema import GoldenSet, Guidelines
from pytest_embeval.judging.grade_scale import GradeScale
from pytest_embeval.judging.merging import pair_problems, sheet_grades
from pytest_embeval.judging.pooling import (
    SEED_COLUMN,
    SheetError,
    SheetRecords,
    pair_id,
    read_sheet_records,
    sheet_of,
)
from pytest_embeval.judging.rankings import Pair

__all__ = ["Marks", "PagePair", "Workbook", "marks_of", "open_workbook"]

#: The sheet columns the page reads texts from when no golden set is given.
_TEXT_COLUMNS = ("query_text", "doc_title", "doc_text")


@dataclass(frozen=True, slots=True)
class PagePair:
    """One (query, document) pair as the page shows it: nothing names an arm or a rank."""

    query_id: str
    doc_id: str
    pair_id: str
    query_text: str
    doc_title: str
    doc_text: str
    #: the source a seed file gave the pair (a ticket, a click: the judge confirms it), "" if none
    seed: str
    #: on the calibration sheet, which the other judge grades too
    shared: bool
    #: the sheets (indexes into `Workbook.sheets`) whose rows name it
    sheets: tuple[int, ...]

    @property
    def pair(self) -> Pair:
        return (self.query_id, self.doc_id)


@dataclass(frozen=True, slots=True)
class Workbook:
    """The sheets one judge grades on the page, and how."""

    #: the calibration sheet first, when there is one
    sheets: tuple[Path, ...]
    #: whether ``sheets[0]`` is the judge's copy of the calibration sample
    calibration: bool
    pairs: tuple[PagePair, ...]
    scale: GradeScale
    guidelines: Guidelines | None
    #: written into the ``judge`` cell of every pair graded on the page; "" leaves the cell as it is
    judge: str
    #: the golden set's file, when one was given
    golden: Path | None

    @property
    def shared(self) -> int:
        """How many pairs both judges grade (the first ones)."""
        return sum(1 for pair in self.pairs if pair.shared)


@dataclass(frozen=True, slots=True)
class Marks:
    """Each pair's grade and note as the sheets hold them, by position ("" where there is none)."""

    grades: tuple[str, ...]
    notes: tuple[str, ...]


def open_workbook(
    sheet: Path,
    *,
    calibration: Path | None,
    golden: GoldenSet | None,
    scale: GradeScale,
    judge: str,
) -> tuple[Workbook, tuple[SheetRecords, ...]]:
    """The workbook of ``sheet`` (after ``calibration``, when given) and the sheets as read.

    With ``golden`` the texts are the golden set's (a spreadsheet may have cut a long cell) and every row
    must name one of its pairs; without it they are the sheet's own ``query_text``, ``doc_title`` and
    ``doc_text`` cells. Raises `SheetError` for an unreadable sheet, a row that names no pair of the golden
    set, a grade off the scale, a pair one sheet grades twice differently, or missing text columns.
    """
    paths = (calibration, sheet) if calibration is not None else (sheet,)
    read: list[SheetRecords] = []
    problems: list[str] = []
    for path in paths:
        try:
            records = read_sheet_records(path)
            rows = sheet_of(records)
            if golden is not None:
                problems += pair_problems(golden, rows)
            sheet_grades(rows, max_grade=scale.max_grade)
            read.append(records)
        except SheetError as error:
            problems += error.problems
    if not problems and golden is None:
        problems = [
            f"{records.path}: row 1: no column {name!r}; give the golden set (--golden GOLDEN.yaml) for the "
            "texts"
            for records in read
            for name in _TEXT_COLUMNS
            if name not in records.header
        ]
    if problems:
        raise SheetError(problems)
    queries = {query.id: query for query in golden.queries} if golden is not None else {}
    documents = {document.id: document for document in golden.documents} if golden is not None else {}
    found: dict[Pair, tuple[PagePair, list[int]]] = {}
    for index, records in enumerate(read):
        column = {name: i for i, name in enumerate(records.header)}
        for record in records.records[1:]:
            pair = (_cell(record, column, "query_id"), _cell(record, column, "doc_id"))
            if not all(pair):
                continue  # a blank row
            if pair in found:
                listed = found[pair][1]
                if index not in listed:
                    listed.append(index)
                continue
            if golden is not None:
                query, document = queries[pair[0]], documents[pair[1]]
                texts = [query.text, document.title, document.text]
                identity = pair_id(golden.name, *pair)
            else:
                texts = [_cell(record, column, name) for name in _TEXT_COLUMNS]
                identity = _cell(record, column, "pair_id")
            page_pair = PagePair(
                query_id=pair[0],
                doc_id=pair[1],
                pair_id=identity,
                query_text=texts[0],
                doc_title=texts[1],
                doc_text=texts[2],
                seed=_cell(record, column, SEED_COLUMN),
                shared=calibration is not None and index == 0,
                sheets=(),
            )
            found[pair] = (page_pair, [index])
    pairs = tuple(replace(page_pair, sheets=tuple(listed)) for page_pair, listed in found.values())
    workbook = Workbook(
        sheets=paths,
        calibration=calibration is not None,
        pairs=pairs,
        scale=scale,
        guidelines=golden.guidelines if golden is not None else None,
        judge=judge,
        golden=golden.path if golden is not None else None,
    )
    return workbook, tuple(read)


def _cell(record: Sequence[str], column: Mapping[str, int], name: str) -> str:
    """A stripped cell; "" for a column the sheet lacks or a short row's missing cell."""
    index = column.get(name)
    return record[index].strip() if index is not None and index < len(record) else ""


def marks_of(workbook: Workbook, sheets: Sequence[SheetRecords]) -> Marks:
    """Each pair's grade and note as ``sheets`` (one per workbook sheet, as read or written last) hold them:
    a pair's grade is its first sheet's, and "" unless every sheet that lists the pair grades it."""
    by_sheet: list[dict[Pair, tuple[str, str]]] = []
    for records in sheets:
        column = {name: i for i, name in enumerate(records.header)}
        held: dict[Pair, tuple[str, str]] = {}
        for record in records.records[1:]:
            pair = (_cell(record, column, "query_id"), _cell(record, column, "doc_id"))
            held.setdefault(pair, (_cell(record, column, "grade"), _cell(record, column, "notes")))
        by_sheet.append(held)
    grades: list[str] = []
    notes: list[str] = []
    for page_pair in workbook.pairs:
        marked = [by_sheet[index].get(page_pair.pair, ("", "")) for index in page_pair.sheets]
        graded = all(grade for grade, _ in marked)
        grades.append(marked[0][0] if graded else "")
        notes.append(next((note for _, note in marked if note), ""))
    return Marks(tuple(grades), tuple(notes))
