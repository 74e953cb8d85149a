"""A blind judging sheet graded by an LLM judge (`llm_judge.Judge`), as `embeval judge` runs it.

Every pair of the sheet is graded with the golden set's texts (the sheet's own text cells and grades are
not read: a sheet is matched to its golden set by ids and ``pair_id``). Rows are appended to the output
sheet as they are graded, and every request and answer to the audit file beside it
(``GRADED.audit.jsonl``), so a run that is stopped (Ctrl-C, a killed job, an endpoint that gives up) keeps
what it paid for: run again, it asks only for the pairs without a grade. When every pair has been asked
for, the output is rewritten in sheet order, one row per pair; a pair left ungraded has an empty grade and
the reason in ``notes``, and is asked for again by the next run.

The output sheet holds one judge's grades: an output written by another judge (another model, endpoint,
guidelines or scale) is refused, never mixed.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import hashlib
import io
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_embeval.arms.batching import completed
from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.llm_judge import Judge, JudgeError, Judgment, Price
from pytest_embeval.judging.merging import pair_problems
from pytest_embeval.judging.pooling import SHEET_COLUMNS, PoolRow, Sheet, SheetError, pool_row, sheet_cells
from pytest_embeval.judging.rankings import Pair

__all__ = ["AUDIT_SUFFIX", "GradingRun", "Spend", "Ungraded", "audit_path", "audit_spend", "grade_sheet"]

AUDIT_SUFFIX = ".audit.jsonl"
#: The ``notes`` of a row the judge left ungraded start with this, then the reason.
UNGRADED = "ungraded: "
#: What csv.writer ends a record with (its default): a file that does not end with it ends in a torn row.
_TERMINATOR = "\r\n"


def audit_path(out: Path) -> Path:
    """The audit file of an output sheet: ``GRADED.csv`` -> ``GRADED.audit.jsonl``."""
    return out.with_name(out.stem + AUDIT_SUFFIX)


@dataclasses.dataclass(frozen=True, slots=True)
class Ungraded:
    query_id: str
    doc_id: str
    problem: str


@dataclasses.dataclass(frozen=True, slots=True)
class Spend:
    """Requests and tokens, and their cost at the judge's declared price (None without one)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class GradingRun:
    judge: str
    #: pairs on the sheet (a pair listed twice counts once)
    pairs: int
    #: graded by an earlier run into the same output, not asked for again
    resumed: int
    #: graded by this run
    graded: int
    #: left ungraded by this run, in sheet order
    ungraded: tuple[Ungraded, ...]
    #: this run's requests
    spend: Spend
    #: every run's requests, from the audit file
    total: Spend


def grade_sheet(
    golden: GoldenSet,
    sheet: Sheet,
    judge: Judge,
    out: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> GradingRun:
    """Grade every pair of ``sheet`` (a sheet of ``golden``'s pairs) with ``judge`` into ``out``;
    ``progress(done, total)`` is told of this run's pairs as each is graded.

    Raises `SheetError` for rows that do not name a pair of the golden set, `JudgeError` for an output
    written by another judge or holding other pairs, and `JudgeError` when the endpoint fails: the rows
    graded until then are written and a rerun resumes after them.
    """
    problems = pair_problems(golden, sheet)
    if problems:
        raise SheetError(problems)
    queries = {query.id: query for query in golden.queries}
    documents = {doc.id: doc for doc in golden.documents}
    rows: dict[Pair, PoolRow] = {}
    for row in sheet.rows:
        pair = (row.query_id, row.doc_id)
        rows.setdefault(pair, pool_row(golden.name, queries[pair[0]], documents[pair[1]]))
    earlier = _earlier(out, judge, rows)
    todo = [pair for pair in rows if pair not in earlier or earlier[pair][0] is None]
    resumed = len(rows) - len(todo)
    audit = audit_path(out)
    results: dict[Pair, Judgment] = {}
    with _Appender(out, judge, header=_sheet_text([])) as sheet_file, _Appender(audit, judge) as audit_file:
        audit_file.append(_json_line(_run_record(golden, sheet, judge, out)))

        def grade(pair: Pair) -> Judgment:
            texts = rows[pair]
            return judge.grade(texts.query_text, texts.doc_title, texts.doc_text)

        if progress is not None and todo:
            progress(0, len(todo))
        try:
            for position, judgment in completed(grade, todo, judge.settings.concurrency):
                pair = todo[position]
                results[pair] = judgment
                graded = rows[pair]
                for exchange in judgment.exchanges:
                    record = {
                        "pair_id": graded.pair_id,
                        "query_id": pair[0],
                        "doc_id": pair[1],
                        **exchange.record(),
                    }
                    audit_file.append(_json_line(record))
                sheet_file.append(_row_text(graded, judgment.grade, judge.name, judgment.problem))
                if progress is not None:
                    progress(len(results), len(todo))
        except JudgeError as error:
            left = len(todo) - len(results)
            raise JudgeError(
                f"{error}; {resumed + len(results)} of {len(rows)} pairs are in {out}: run the same command "
                f"again to grade the other {left}"
            ) from None
    final = {pair: (earlier[pair] if pair not in results else _cell(results[pair])) for pair in rows}
    write_atomic(
        out,
        _sheet_text(
            [sheet_cells(row, _grade_text(final[p][0]), judge.name, final[p][1]) for p, row in rows.items()]
        ),
    )
    price = judge.settings.price
    spend = _spend(
        sum(len(j.exchanges) for j in results.values()),
        sum(j.input_tokens for j in results.values()),
        sum(j.output_tokens for j in results.values()),
        price,
    )
    return GradingRun(
        judge=judge.name,
        pairs=len(rows),
        resumed=resumed,
        graded=sum(1 for j in results.values() if j.grade is not None),
        ungraded=tuple(
            Ungraded(pair[0], pair[1], results[pair].problem or "")
            for pair in rows
            if pair in results and results[pair].grade is None
        ),
        spend=spend,
        total=audit_spend(audit, price),
    )


def _cell(judgment: Judgment) -> tuple[int | None, str]:
    return judgment.grade, "" if judgment.grade is not None else UNGRADED + (judgment.problem or "")


def _grade_text(grade: int | None) -> str:
    return "" if grade is None else str(grade)


def _row_text(row: PoolRow, grade: int | None, judge: str, problem: str | None) -> str:
    notes = "" if grade is not None else UNGRADED + (problem or "")
    return _sheet_text([sheet_cells(row, _grade_text(grade), judge, notes)], header=False)


def _sheet_text(records: Sequence[Sequence[str]], *, header: bool = True) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=_TERMINATOR)
    if header:
        writer.writerow(SHEET_COLUMNS)
    writer.writerows(records)
    return buffer.getvalue()


def _json_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n"


def _run_record(golden: GoldenSet, sheet: Sheet, judge: Judge, out: Path) -> dict[str, Any]:
    guidelines = golden.guidelines
    price = judge.settings.price
    return {
        "run": {
            "judge": judge.name,
            "spec": judge.settings.spec,
            "golden": golden.name,
            "guidelines": None if guidelines is None else str(guidelines.path),
            "guidelines_sha256": None
            if guidelines is None
            else hashlib.sha256(guidelines.text.encode("utf-8")).hexdigest(),
            "max_grade": judge.max_grade,
            "prompt": judge.digest,
            "temperature": 0,
            "attempts": judge.settings.attempts,
            "price_per_million_tokens": None
            if price is None
            else {"input": price.input, "output": price.output},
            "sheet": sheet.name,
            "out": str(out),
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
    }


class _Appender:
    """A file lines are appended to and flushed to the operating system one at a time, redacted, so a
    killed process leaves every line it finished (and at most one torn one, at the end)."""

    def __init__(self, path: Path, judge: Judge, *, header: str = "") -> None:
        self.path = path
        self._judge = judge
        self._header = header
        self._fd = -1

    def __enter__(self) -> _Appender:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        self._fd = os.open(self.path, flags, 0o666)
        if self._header and os.fstat(self._fd).st_size == 0:
            self.append(self._header)
        return self

    def append(self, text: str) -> None:
        data = memoryview(self._judge.redact(text).encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data) :]

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)


def _earlier(out: Path, judge: Judge, rows: Mapping[Pair, PoolRow]) -> dict[Pair, tuple[int | None, str]]:
    """The grades (None: ungraded) and notes an earlier run wrote into ``out``, last row of a pair last;
    a torn row at the end is dropped and the file rewritten without it."""
    try:
        text = out.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise JudgeError(
            f"{out} exists and is not a sheet this judge wrote (not UTF-8); choose another --out"
        ) from None
    if not text:
        return {}
    records = list(_records(text, out))
    torn = not text.endswith(_TERMINATOR)
    if not records or list(records[0]) != list(SHEET_COLUMNS):
        raise JudgeError(
            f"{out} exists and is not a sheet this judge wrote (its header differs); choose another --out"
        )
    body = records[1:]
    # A kill can tear the last row only: it does not end the file with a terminator, or (cut just after a
    # line break inside a quoted text) it has too few cells.
    torn = bool(body) and (torn or len(body[-1]) < len(SHEET_COLUMNS))
    if torn:
        body = body[:-1]
    earlier: dict[Pair, tuple[int | None, str]] = {}
    kept: list[list[str]] = []
    for number, record in enumerate(body, start=2):
        where = f"{out}: row {number}"
        if len(record) != len(SHEET_COLUMNS):
            raise JudgeError(f"{where}: {len(record)} cells, not {len(SHEET_COLUMNS)}; choose another --out")
        cells = dict(zip(SHEET_COLUMNS, record, strict=True))
        pair = (cells["query_id"], cells["doc_id"])
        if cells["judge"] != judge.name:
            raise JudgeError(
                f"{where}: graded by {cells['judge']!r}, not by this judge {judge.name!r} (another model, "
                "endpoint, guidelines or scale); choose another --out"
            )
        if pair not in rows or rows[pair].pair_id != cells["pair_id"]:
            raise JudgeError(f"{where}: a pair that is not on the sheet; choose another --out")
        grade_text = cells["grade"]
        if grade_text and not (grade_text.isdigit() and int(grade_text) <= judge.max_grade):
            raise JudgeError(f"{where}: grade {grade_text!r} is not on the scale 0..{judge.max_grade}")
        earlier[pair] = (int(grade_text) if grade_text else None, cells["notes"])
        kept.append(record)
    if torn:
        write_atomic(out, _sheet_text(kept))
    return earlier


def _records(text: str, out: Path) -> Iterator[list[str]]:
    try:
        yield from csv.reader(io.StringIO(text, newline=""))
    except csv.Error as error:
        raise JudgeError(
            f"{out} exists and is not a sheet this judge wrote ({error}); choose another --out"
        ) from None


def _spend(requests: int, input_tokens: int, output_tokens: int, price: Price | None) -> Spend:
    cost = None if price is None else price.cost(input_tokens, output_tokens)
    return Spend(requests, input_tokens, output_tokens, cost)


def audit_spend(path: Path, price: Price | None) -> Spend:
    """Requests and tokens of every run an audit file records, costed at ``price``."""
    requests = input_tokens = output_tokens = 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line torn by a kill
        usage = record.get("usage") if isinstance(record, dict) else None
        if isinstance(usage, dict):
            requests += 1
            input_tokens += int(usage.get("input_tokens") or 0)
            output_tokens += int(usage.get("output_tokens") or 0)
    return _spend(requests, input_tokens, output_tokens, price)
