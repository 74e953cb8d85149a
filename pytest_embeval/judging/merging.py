"""Graded sheets into qrels: validate every row against the golden set, then append the new judgments.

Grades are integers on the scale ``0..max_grade`` (default 2: 0 not relevant, 1 partly, 2 fully relevant).

With ``refresh`` (``embeval merge --refresh``, after ``embeval refresh`` drew the pairs to re-judge), a
graded pair the qrels already hold is a re-judgment (`Rejudgment`) that replaces the old grade
(`replace_qrels`) instead of an error.

People's grades come before a model's (a judge cell that is a judge spec, see `llm_judge.is_model_judge`): on
a pair people graded, or the qrels already judge, a model's grade is set aside, not a disagreement. So the
model's sheet of a whole pool merges together with the people's calibration sheet of part of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal

from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.files.compressed import compression_of
from pytest_embeval.golden.qrels_files import QRELS_HEADER
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.llm_judge import is_model_judge
from pytest_embeval.judging.pooling import Sheet, SheetError, SheetRow, pair_id
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "DEFAULT_MAX_GRADE",
    "Judgment",
    "MergeResult",
    "Rejudgment",
    "Resolve",
    "append_qrels",
    "check_max_grade",
    "merge_sheets",
    "pair_problems",
    "qrels_file",
    "replace_qrels",
    "sheet_grades",
]

DEFAULT_MAX_GRADE = 2

Resolve = Literal["max", "min", "first"]


class _CellError(Exception):
    """A bad cell; the message is prefixed with the sheet and row by the caller."""


def _grade(text: str, max_grade: int) -> int:
    scale = f"0..{max_grade}"
    if not text:
        raise _CellError(f"empty grade: grade the pair ({scale}) or delete the row")
    try:
        grade = int(text, 10)
    except ValueError:
        raise _CellError(f"grade {text!r} is not an integer (the scale is {scale})") from None
    if not 0 <= grade <= max_grade:
        raise _CellError(f"grade {grade} is outside the scale {scale}")
    return grade


def check_max_grade(max_grade: int) -> None:
    if isinstance(max_grade, bool) or not isinstance(max_grade, int) or max_grade < 1:
        raise ValueError(f"max_grade must be an integer >= 1, got {max_grade!r}")


def _describe_pair(pair: Pair) -> str:
    return f"query {pair[0]!r} and document {pair[1]!r}"


def sheet_grades(sheet: Sheet, *, max_grade: int = DEFAULT_MAX_GRADE) -> dict[Pair, int]:
    """The graded pairs of one sheet (rows with an empty grade are not graded yet and are left out).

    Raises `SheetError` for a missing id, a grade that is not an integer on the scale, or a pair graded twice
    with different grades; a pair graded twice alike counts once.
    """
    check_max_grade(max_grade)
    grades: dict[Pair, tuple[int, int]] = {}
    problems = []
    for row in sheet.rows:
        where = f"{sheet.name}: row {row.row}"
        if not row.query_id or not row.doc_id:
            problems.append(f"{where}: empty {'query_id' if not row.query_id else 'doc_id'}")
            continue
        if not row.grade:
            continue
        try:
            grade = _grade(row.grade, max_grade)
        except _CellError as exc:
            problems.append(f"{where}: {exc}")
            continue
        pair = (row.query_id, row.doc_id)
        if pair in grades and grades[pair][0] != grade:
            first, line = grades[pair]
            problems.append(f"{where}: {_describe_pair(pair)} graded {grade} here and {first} on row {line}")
            continue
        grades.setdefault(pair, (grade, row.row))
    if problems:
        raise SheetError(problems)
    return {pair: grade for pair, (grade, _) in grades.items()}


@dataclass(frozen=True, slots=True)
class Judgment:
    query_id: str
    doc_id: str
    grade: int
    #: who made it: the sheet's judge cell (or its file name); a judge spec for a model
    judge: str = ""
    #: the day it was made (``YYYY-MM-DD``: its sheet's), None when not known
    judged_on: str | None = None
    #: the seed source the sheet marked the pair with (a judge confirmed the seed), None if not a seed
    seed: str | None = None


@dataclass(frozen=True, slots=True)
class Rejudgment:
    """A pair the qrels hold, graded again (``refresh``): the new judgment and the grade it replaces."""

    new: Judgment
    old: int


@dataclass(frozen=True, slots=True)
class MergeResult:
    #: judgments to append, in golden query order, then document id order
    new: tuple[Judgment, ...]
    #: graded pairs the qrels already hold with the same grade (nothing to do)
    unchanged: int
    #: judge -> graded rows, in order of first appearance
    judges: Mapping[str, int]
    #: pairs on which judges disagreed and ``resolve`` chose the grade
    resolved: int
    #: a model's grades set aside because people graded the pair, or the qrels already judge it
    set_aside: int = 0
    #: with ``refresh``: the judged pairs graded again, in golden query order, then document id order
    rejudged: tuple[Rejudgment, ...] = ()


@dataclass(frozen=True, slots=True)
class _Graded:
    sheet: int  # index into the sheets: messages are ordered by sheet, then row
    row: int
    judge: str
    grade: int
    seed: str


def _check_ids(golden: GoldenSet, query_ids: Set[str], doc_ids: Set[str], row: SheetRow) -> None:
    if not row.query_id or not row.doc_id:
        raise _CellError(f"empty {'query_id' if not row.query_id else 'doc_id'}")
    if row.query_id not in query_ids:
        raise _CellError(f"unknown query {row.query_id!r} (not in golden set {golden.name!r})")
    if row.doc_id not in doc_ids:
        raise _CellError(f"unknown document {row.doc_id!r} (not in the corpus of {golden.name!r})")
    if row.pair_id and row.pair_id != pair_id(golden.name, row.query_id, row.doc_id):
        raise _CellError(
            f"pair_id {row.pair_id!r} does not belong to {_describe_pair((row.query_id, row.doc_id))} "
            "(were cells moved, e.g. by sorting one column only?)"
        )


def pair_problems(golden: GoldenSet, sheet: Sheet) -> list[str]:
    """One line for every row of ``sheet`` that does not name a pair of ``golden`` (unknown or empty ids,
    a ``pair_id`` that is not the row's), in row order."""
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    problems = []
    for row in sheet.rows:
        try:
            _check_ids(golden, query_ids, doc_ids, row)
        except _CellError as exc:
            problems.append(f"{sheet.name}: row {row.row}: {exc}")
    return problems


def merge_sheets(
    golden: GoldenSet,
    sheets: Sequence[Sheet],
    *,
    max_grade: int = DEFAULT_MAX_GRADE,
    resolve: Resolve | None = None,
    judged_on: Sequence[str | None] = (),
    refresh: bool = False,
) -> MergeResult:
    """Validate graded sheets against ``golden`` and return the judgments to add to its qrels.

    Every row must name a query and a document of the golden set and carry an integer grade in
    ``0..max_grade``; an empty grade is an error (grade the pair or delete the row: a silently skipped row
    would leave the pool unjudged). A non-empty ``pair_id`` must be the pair's (a mismatch means cells were
    moved, e.g. by sorting one column only). The judge is the ``judge`` cell, or the sheet's file name when
    that is blank. One judge grading a pair twice differently is an error; two judges grading it differently
    are an error too unless ``resolve`` says which grade to keep (``max``, ``min``, or ``first`` in sheet and
    row order). A pair the qrels already hold with a different grade is an error (qrels are revised by hand,
    on purpose); with the same grade it is counted as unchanged. A model's grade of a pair that people
    graded too, or that the qrels already judge, is set aside (counted in ``set_aside``). Raises `SheetError`
    listing every problem, one line each, in sheet and row order.

    ``judged_on`` gives each sheet's date (the judgments' ``judged_on``); a row's ``seed`` cell becomes its
    judgment's ``seed``. With ``refresh``, a graded pair the qrels hold is re-judged (`MergeResult.rejudged`,
    a model's grade included), whatever its grade: the new judgment replaces the old one and its date.
    """
    check_max_grade(max_grade)
    if resolve not in (None, "max", "min", "first"):
        raise ValueError(f"resolve must be 'max', 'min', 'first' or None, got {resolve!r}")
    by_pair, judges, problems = _graded_pairs(golden, sheets, max_grade)
    new: list[Judgment] = []
    rejudged: list[Rejudgment] = []
    unchanged = resolved = set_aside = 0
    for pair, graded_by in by_pair.items():
        people = [g for g in graded_by if not is_model_judge(g.judge)]
        grades = people or graded_by
        if not people and not refresh and pair[1] in golden.qrels.get(pair[0], {}):
            set_aside += len(grades)  # a model's grades of a pair the qrels already judge
            continue
        set_aside += len(graded_by) - len(grades)
        if len({g.grade for g in grades}) > 1:
            if resolve is None:
                problems.append(_disagreement(sheets, pair, grades))
                continue
            resolved += 1
        chosen = _chosen(grades, resolve)
        existing = golden.qrels.get(pair[0], {}).get(pair[1])
        day = judged_on[chosen.sheet] if chosen.sheet < len(judged_on) else None
        judgment = Judgment(pair[0], pair[1], chosen.grade, chosen.judge, day, chosen.seed or None)
        if existing is None:
            new.append(judgment)
        elif refresh:
            rejudged.append(Rejudgment(judgment, existing))
        elif existing == chosen.grade:
            unchanged += 1
        else:
            problems.append(_regraded(pair, chosen, existing))
    if problems:
        raise SheetError([f"{sheets[i].name}: row {row}: {text}" for i, row, text in sorted(problems)])
    position = {query.id: i for i, query in enumerate(golden.queries)}
    new.sort(key=lambda j: (position[j.query_id], j.doc_id))
    rejudged.sort(key=lambda r: (position[r.new.query_id], r.new.doc_id))
    return MergeResult(tuple(new), unchanged, judges, resolved, set_aside, tuple(rejudged))


#: A bad row: its sheet (an index into the sheets), its row number, and what is wrong with it.
_Problem = tuple[int, int, str]


def _graded_pairs(
    golden: GoldenSet, sheets: Sequence[Sheet], max_grade: int
) -> tuple[dict[Pair, list[_Graded]], dict[str, int], list[_Problem]]:
    """Every sheet's rows read: each pair's grades, one per judge, in sheet and row order; how many rows
    each judge graded; and a problem for each row that names no pair of ``golden`` or has no grade on the
    scale, and for each judge who graded a pair twice differently."""
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    problems: list[_Problem] = []
    by_pair: dict[Pair, list[_Graded]] = {}
    judges: dict[str, int] = {}
    for index, sheet in enumerate(sheets):
        for row in sheet.rows:
            pair = (row.query_id, row.doc_id)
            try:
                _check_ids(golden, query_ids, doc_ids, row)
                grade = _grade(row.grade, max_grade)
            except _CellError as exc:
                problems.append((index, row.row, str(exc)))
                continue
            judge = row.judge or sheet.name
            judges[judge] = judges.get(judge, 0) + 1
            graded = _Graded(index, row.row, judge, grade, row.seed)
            earlier = by_pair.setdefault(pair, [])
            same_judge = next((g for g in earlier if g.judge == judge), None)
            if same_judge is None:
                earlier.append(graded)
            elif same_judge.grade != grade:
                problems.append(
                    (
                        index,
                        row.row,
                        f"judge {judge!r} graded {_describe_pair(pair)} {grade} here and "
                        f"{same_judge.grade} on {_refer(sheets, same_judge, graded)}",
                    )
                )
    return by_pair, judges, problems


def _chosen(grades: Sequence[_Graded], resolve: Resolve | None) -> _Graded:
    """The grade kept of a pair's ``grades``: the first, unless ``resolve`` asks for the highest or lowest
    (the first of those)."""
    if resolve == "max":
        return max(grades, key=lambda g: g.grade)
    if resolve == "min":
        return min(grades, key=lambda g: g.grade)
    return grades[0]


def _disagreement(sheets: Sequence[Sheet], pair: Pair, grades: Sequence[_Graded]) -> _Problem:
    """Judges who graded ``pair`` differently, with no ``resolve`` to choose: on the row of the first grade
    that differs from the first."""
    first = grades[0]
    other = next(g for g in grades if g.grade != first.grade)
    return (
        other.sheet,
        other.row,
        f"judges {first.judge!r} ({first.grade} on {_refer(sheets, first, other)}) and "
        f"{other.judge!r} ({other.grade} here) disagree on {_describe_pair(pair)}; "
        "reconcile the grades or pass --resolve max|min|first",
    )


def _regraded(pair: Pair, chosen: _Graded, existing: int) -> _Problem:
    """A pair the qrels hold with another grade, graded without ``refresh``."""
    return (
        chosen.sheet,
        chosen.row,
        f"{_describe_pair(pair)} are already judged {existing} in the qrels, this row grades "
        f"{chosen.grade} (to revise a judgment, edit the qrels file)",
    )


def _refer(sheets: Sequence[Sheet], graded: _Graded, here: _Graded) -> str:
    """How a message about the row ``here`` names the row of ``graded``."""
    if graded.sheet == here.sheet:
        return f"row {graded.row}"
    return f"{sheets[graded.sheet].name} row {graded.row}"


def qrels_file(golden: GoldenSet) -> Path:
    """The file the golden set's judgments come from (its ``qrels`` key, or the ``beir`` folder's split).

    Raises ``ValueError`` when the judgments are inline (``relevant:`` on each query): there is no file to
    append to; and when the file is compressed: appending would write plain text into it.
    """
    if golden.qrels_path is None:
        raise ValueError(
            f"{golden.path}: the judgments are inline ('relevant:' on each query), so there is no qrels "
            f"file to append to; move them to a TSV file with the header {QRELS_HEADER!r} and name it under "
            "'qrels:'"
        )
    if compression_of(golden.qrels_path) is not None:
        raise ValueError(
            f"{golden.qrels_path}: the judgments are compressed ({golden.qrels_path.suffix}), and appending "
            "to them would write plain text into the compressed file; decompress it and name the plain "
            "file under 'qrels:'"
        )
    return golden.qrels_path


def append_qrels(path: str | PathLike[str], judgments: Sequence[Judgment], *, qrels_format: str) -> None:
    """Append judgments to a qrels file in its format (``beir``: ``qid<TAB>docid<TAB>grade``; ``trec``:
    ``qid 0 docid grade``), keeping every existing byte and its line endings; atomic."""
    location = Path(path)
    with location.open(encoding="utf-8", newline="") as handle:
        text = handle.read()
    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    if qrels_format == "trec":
        text += "".join(f"{j.query_id} 0 {j.doc_id} {j.grade}{newline}" for j in judgments)
    else:
        text += "".join(f"{j.query_id}\t{j.doc_id}\t{j.grade}{newline}" for j in judgments)
    write_atomic(location, text)


def replace_qrels(path: str | PathLike[str], judgments: Sequence[Judgment], *, qrels_format: str) -> None:
    """Rewrite the grade of each judged pair of ``judgments`` in place in a qrels file of ``qrels_format``
    (a refresh), every other byte kept; atomic. Raises ``ValueError`` for a pair the file does not hold."""
    location = Path(path)
    with location.open(encoding="utf-8", newline="") as handle:
        lines = handle.read().splitlines(keepends=True)
    grades = {(j.query_id, j.doc_id): j.grade for j in judgments}
    found = set()
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        fields = body.split("\t") if qrels_format != "trec" else body.split()
        if len(fields) < 3:
            continue
        pair = (fields[0], fields[2]) if qrels_format == "trec" else (fields[0], fields[1])
        if pair not in grades:
            continue
        found.add(pair)
        ending = line[len(body) :]
        if qrels_format == "trec":
            lines[number] = f"{pair[0]} {fields[1]} {pair[1]} {grades[pair]}{ending}"
        else:
            lines[number] = f"{pair[0]}\t{pair[1]}\t{grades[pair]}{ending}"
    missing = [pair for pair in grades if pair not in found]
    if missing:
        raise ValueError(f"{location}: {_describe_pair(missing[0])} are not judged in this file")
    write_atomic(location, "".join(lines))
