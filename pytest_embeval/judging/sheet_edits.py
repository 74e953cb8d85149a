"""Grades written into a sheet file one pair at a time, while other processes may write into it too: the
judging page's writes (`judge_page`).

`edit_sheet` takes an exclusive lock on the sheet, reads it as it is now, changes the cells of the pairs
it is given on every row that names them, and replaces the file atomically (`files.atomic.write_atomic`);
every other byte is kept, blank rows and columns a spreadsheet added included. Because each edit starts
from the file on disk, never from a copy read earlier, two pages (two tabs, or two servers) grading one
sheet keep each other's grades; a pair both grade keeps the grade written last. A reader (``embeval
merge``, ``embeval agreement``) sees the sheet before or after an edit, never half of one, and a process
killed mid-edit leaves the sheet as it was.

The lock is ``flock`` on the sheet itself: an edit replaces the file, so a process that waited for the lock
checks that it holds the file now at the path and otherwise locks that one. A process that keeps the
sheet it wrote last (``known``) reads it again only when the file changed since (its `pooling.file_stamp`):
a judge's next grade then costs one write, not a read and a write. Where ``fcntl`` is missing
(Windows) edits are not locked: two processes writing at the same moment may then lose one grade.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path

from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.judging.pooling import SheetError, SheetRecords, file_stamp, read_sheet_records
from pytest_embeval.judging.rankings import Pair

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["Cells", "current", "edit_sheet", "locked_sheet", "sheet_text_of"]


@dataclass(frozen=True, slots=True)
class Cells:
    """New cells of a pair's rows; None leaves a cell as it is ("" empties it)."""

    grade: str | None = None
    judge: str | None = None
    notes: str | None = None


@contextlib.contextmanager
def locked_sheet(path: Path) -> Iterator[tuple[int, ...]]:
    """Hold an exclusive lock on the sheet at ``path`` (the file there now, see the module's docstring);
    yields its `file_stamp`."""
    if fcntl is None:
        yield file_stamp(path.stat())
        return
    while True:
        handle = path.open("rb")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            locked = os.fstat(handle.fileno())
            if file_stamp(locked) == file_stamp(path.stat()):
                yield file_stamp(locked)
                return
        finally:
            handle.close()  # the lock goes with it


def edit_sheet(
    path: str | PathLike[str], edits: Mapping[Pair, Cells], *, known: SheetRecords | None = None
) -> SheetRecords:
    """Set the cells of every row naming each pair of ``edits`` (query id, document id), under the sheet's
    lock, and return the sheet as written. ``known`` is the sheet as this process last read or wrote it:
    when the file is still that one (its `file_stamp`), it is not read again.

    A column the sheet lacks (``judge``, ``notes``: they may be dropped) is added at the end when a cell of
    it is set; a short row is padded with empty cells. Raises `SheetError` when the sheet cannot be read
    or no row names a pair of ``edits``.
    """
    location = Path(path)
    try:
        with locked_sheet(location) as stamp:
            read = known if known is not None and known.stamp == stamp else read_sheet_records(location)
            written = _edited(read, edits)
            status = write_atomic(location, sheet_text_of(written))
    except FileNotFoundError:
        raise SheetError([f"{location}: file not found"]) from None
    return replace(written, stamp=file_stamp(status))


def current(read: SheetRecords) -> SheetRecords:
    """The sheet ``read`` came from as it is now: ``read`` itself while the file is unchanged."""
    try:
        unchanged = file_stamp(read.path.stat()) == read.stamp
    except FileNotFoundError:
        raise SheetError([f"{read.path}: file not found"]) from None
    return read if unchanged else read_sheet_records(read.path)


def _edited(read: SheetRecords, edits: Mapping[Pair, Cells]) -> SheetRecords:
    records = [list(record) for record in read.records]
    column = {name: i for i, name in enumerate(read.header)}
    query_column, doc_column = column["query_id"], column["doc_id"]
    found: set[Pair] = set()
    for record in records[1:]:
        pair = (_cell(record, query_column), _cell(record, doc_column))
        cells = edits.get(pair)
        if cells is None:
            continue
        found.add(pair)
        for name, value in (("grade", cells.grade), ("judge", cells.judge), ("notes", cells.notes)):
            if value is None:
                continue
            if name not in column:
                column[name] = len(records[0])
                records[0].append(name)
            index = column[name]
            record.extend([""] * (index + 1 - len(record)))
            record[index] = value
    missing = [pair for pair in edits if pair not in found]
    if missing:
        query_id, doc_id = missing[0]
        raise SheetError([f"{read.path}: no row names query {query_id!r} and document {doc_id!r} any more"])
    return replace(read, records=tuple(map(tuple, records)), stamp=())


def _cell(record: Sequence[str], index: int) -> str:
    return record[index].strip() if index < len(record) else ""


def sheet_text_of(records: SheetRecords) -> str:
    """The text of a sheet file holding ``records``, its byte order mark and record ending kept."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=records.newline)
    writer.writerows(records.records)
    return ("\ufeff" if records.bom else "") + buffer.getvalue()
