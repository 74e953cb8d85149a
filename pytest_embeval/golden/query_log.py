"""A query log, read in one streaming pass into its distinct queries, which ``embeval sample`` draws from
(`query_draw`).

A log is one file or many (a glob pattern, `files.sources`: read in the order of their paths), one row per
search: JSONL (one object per line) or TSV with a header row, detected from each file's first non-blank
line as the golden set's data files are, one format for all the files. Each row has the query's text (the
``text_field``, by default ``query``) and the stratum fields; other fields are ignored. A *counted* log
(``count_field``) has one row per query and stratum values with the number of searches it stands for (a
warehouse's or Spark job's ``GROUP BY``): a whole number of at least 1, which the row counts as. Rows whose
text is empty or only whitespace are skipped and their searches counted. Every problem is a `GoldenError`
naming the file and the line.

Query strings are compared after `sampling.normalise_query` (NFKC, case folding, whitespace): a *distinct
query* is one normalised string in one combination of stratum values, its *frequency* the searches it occurs
in, and its text the first spelling seen (whitespace runs made one space). The distinct queries are ordered
most frequent first (ties: the normalised text, then the values). A draw sees them through
`DistinctQueries`: their counts by frequency and stratum, and the few it draws, so that a reader of a log
of millions of distinct queries (`columnar_log`, the engine's) need not hand them all to Python. This
module's reader holds them in memory (`QueriesInMemory`): memory grows with the distinct queries, not the
rows.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_embeval.core.sampling import normalise_query
from pytest_embeval.files.compressed import COMPRESSIONS, CompressedFileError, compression_of
from pytest_embeval.files.lines import HashedLines, NotUtf8
from pytest_embeval.files.sources import Source, is_parquet, source_sha256
from pytest_embeval.golden.data_files import GoldenError, first_repeated, json_object

__all__ = [
    "BAND",
    "DEFAULT_TEXT_FIELD",
    "DistinctQueries",
    "DistinctQuery",
    "Level",
    "LogFile",
    "QueriesInMemory",
    "QueryLog",
    "count_problem",
    "decoded_lines",
    "log_format",
    "missing_field",
    "opened",
    "read_query_log",
    "refuse_engine_only",
    "stratum_text",
    "tsv_header",
]

#: The stratum field of a distinct query's frequency band (computed, never read from the log).
BAND = "band"
DEFAULT_TEXT_FIELD = "query"


@dataclass(frozen=True, slots=True)
class DistinctQuery:
    key: str
    text: str
    #: the values of the log's stratum fields (`QueryLog.fields`), in order
    values: tuple[str, ...]
    frequency: int


#: A distinct query's place: its frequency and its stratum values' index.
Level = tuple[int, int]


class DistinctQueries(Protocol):
    """A log's distinct queries in their one order: most frequent first, then by the normalised text, then
    by the stratum values. A draw needs their counts by frequency and stratum, and the few it draws: the
    reader of a log of millions of them holds them where it likes (in memory, or in the engine) and answers
    these, never handing them all over."""

    @property
    def values(self) -> tuple[tuple[str, ...], ...]:
        """Every combination of stratum values a distinct query has, in ascending order."""
        ...

    def __len__(self) -> int: ...

    def levels(self) -> dict[Level, int]:
        """(frequency, stratum index) -> the distinct queries there."""
        ...

    def split(self, frequency: int, count: int) -> dict[int, int]:
        """Stratum index -> how many of the first ``count`` queries of this frequency (in the order) are of
        that stratum: where a band's bound falls inside a frequency."""
        ...

    def pick(self, wanted: Mapping[Level, Sequence[int]]) -> dict[Level, list[tuple[str, str]]]:
        """(frequency, stratum index) -> the (normal form, text) of its queries at the given ranks (from 0, in
        the order: by normalised text)."""
        ...


@dataclass(frozen=True, slots=True)
class QueriesInMemory:
    """`DistinctQueries` held as a list (a log Python reads)."""

    values: tuple[tuple[str, ...], ...]
    #: (frequency, stratum index) -> its queries in the order
    by_level: Mapping[Level, Sequence[DistinctQuery]]
    #: frequency -> the stratum index of each of its queries, in the order
    strata_by_frequency: Mapping[int, Sequence[int]]

    @classmethod
    def of(cls, queries: Iterable[DistinctQuery]) -> QueriesInMemory:
        ordered = sorted(queries, key=lambda q: (-q.frequency, q.key, q.values))
        values = tuple(sorted({query.values for query in ordered}))
        index = {value: i for i, value in enumerate(values)}
        by_level: dict[Level, list[DistinctQuery]] = {}
        strata: dict[int, list[int]] = {}
        for query in ordered:
            by_level.setdefault((query.frequency, index[query.values]), []).append(query)
            strata.setdefault(query.frequency, []).append(index[query.values])
        return cls(values, by_level, strata)

    def __len__(self) -> int:
        return sum(len(queries) for queries in self.by_level.values())

    def levels(self) -> dict[Level, int]:
        return {level: len(queries) for level, queries in self.by_level.items()}

    def split(self, frequency: int, count: int) -> dict[int, int]:
        return dict(Counter(self.strata_by_frequency[frequency][:count]))

    def pick(self, wanted: Mapping[Level, Sequence[int]]) -> dict[Level, list[tuple[str, str]]]:
        return {
            level: [(self.by_level[level][rank].key, self.by_level[level][rank].text) for rank in ranks]
            for level, ranks in wanted.items()
        }


@dataclass(frozen=True, slots=True)
class LogFile:
    path: Path
    sha256: str


@dataclass(frozen=True, slots=True)
class QueryLog:
    #: the file or pattern as given
    path: Path
    format: str
    #: the stratum fields read from each row (``by`` without ``band``)
    fields: tuple[str, ...]
    #: searches counted (rows with a non-empty text, or their counts)
    rows: int
    #: searches whose text was empty or whitespace
    empty: int
    #: the source's digest (`sources.source_sha256`)
    sha256: str
    distinct: DistinctQueries
    #: the files read, in order
    files: tuple[LogFile, ...]
    #: the field holding each row's count of searches, for a counted log
    count_field: str | None = None
    #: the rows read (for a counted log, fewer than the searches)
    table_rows: int = 0


def decoded_lines(path: Path, stream: HashedLines) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a UTF-8 file with their numbers (a byte order mark and CRs dropped);
    `GoldenError` at the first line that is not UTF-8."""
    try:
        for number, line in enumerate(stream, start=1):
            if line and not line.isspace():
                if number == 1:
                    line = line.removeprefix("\ufeff")
                yield number, line.removesuffix("\r")
    except NotUtf8 as error:
        problem = f"not valid UTF-8 (byte 0x{error.byte:02x} at column {error.column})"
        raise GoldenError(path, None, error.line, problem) from None


def opened(path: Path, *, decompressed: bool = False) -> HashedLines:
    """``path``'s lines, to be read once (``decompressed``: through its compression); `GoldenError` for a
    missing or unreadable file."""
    try:
        return HashedLines(path, decompressed=decompressed)
    except CompressedFileError as exc:
        raise GoldenError(path, None, None, str(exc)) from None
    except FileNotFoundError:
        raise GoldenError(path, None, None, f"file not found: {path.resolve()}") from None
    except (OSError, ValueError) as exc:  # a folder, no permission; ValueError: a NUL byte in the path
        raise GoldenError(path, None, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def refuse_engine_only(path: Path) -> None:
    """`GoldenError` for a file only the engine reads: Parquet, or compressed."""
    compression = compression_of(path)
    if compression is not None or is_parquet(path):
        what = f"{COMPRESSIONS[compression]}-compressed" if compression is not None else "Parquet"
        raise GoldenError(
            path, None, None, f"is {what}: the engine reads it (--engine auto or duckdb), not --engine python"
        )


def log_format(path: Path, line: tuple[int, str], expected: str, header: str | None = None) -> str:
    """The format of a text file from its first non-blank line: ``jsonl`` or ``tsv``, a TSV of one column
    when that line is ``header`` (``expected`` names what else would do, for the error)."""
    if line[1].lstrip().startswith("{"):
        return "jsonl"
    if "\t" in line[1] or (header is not None and line[1].strip() == header):
        return "tsv"
    raise GoldenError(path, "format", line[0], f"unsupported format: expected {expected}")


def missing_field(path: Path, line: int | None, name: str, present: Sequence[str], what: str) -> GoldenError:
    close = difflib.get_close_matches(name, list(present), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return GoldenError(path, name, line, f"{what} has no field {name!r}{hint}")


def count_problem(shown: str) -> str:
    return f"must be a whole number of searches, at least 1, got {shown}"


def stratum_text(value: object) -> str | None:
    """A stratum field's value as the sample writes it: a string as it is, a number as JSON writes it (``2``,
    ``0.5``); None for anything else (a boolean, null, a list, an object)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return None


def _shown(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _json_rows(
    path: Path, lines: Iterator[tuple[int, str]], names: Sequence[str], counted: bool
) -> Iterator[tuple[int, list[Any]]]:
    """Each JSONL row's values of ``names`` (the text first; the count last, when ``counted``): the text and
    the fields as strings, the count as an int."""
    fields = len(names) - counted
    for number, line in lines:
        record = json_object(path, number, line)
        try:
            values = [record[name] for name in names]
        except KeyError:
            missing = next(name for name in names if name not in record)
            raise missing_field(path, number, missing, list(record), "the row") from None
        if not all(type(value) is str for value in values[:fields]):
            if type(values[0]) is not str:
                raise GoldenError(path, names[0], number, f"must be a string, got {_shown(values[0])}")
            for i in range(1, fields):
                text = stratum_text(values[i])
                if text is None:
                    problem = f"must be a string or number, got {_shown(values[i])}"
                    raise GoldenError(path, names[i], number, problem)
                values[i] = text
        if counted and (type(values[-1]) is not int or values[-1] < 1):
            count = values[-1]
            shown = repr(count) if isinstance(count, str) else json.dumps(count)
            raise GoldenError(path, names[-1], number, count_problem(shown))
        yield number, values


def tsv_header(path: Path, line: tuple[int, str]) -> list[str]:
    """The column names of a TSV log's header row (its cells, stripped); `GoldenError` for a name given twice,
    whose column no reader could tell from the other."""
    names = [cell.strip() for cell in line[1].split("\t")]
    duplicate = first_repeated(names)
    if duplicate is not None:
        raise GoldenError(path, "header", line[0], f"duplicate column {duplicate!r}")
    return names


def _tsv_rows(
    path: Path, lines: Iterator[tuple[int, str]], names: Sequence[str], counted: bool
) -> Iterator[tuple[int, list[Any]]]:
    """Each TSV row's cells of ``names`` (the text first; the count last, as an int, when ``counted``), found
    by the header row."""
    header = next(lines, None)
    if header is None:
        return
    columns = tsv_header(path, header)
    positions = []
    for name in names:
        if name not in columns:
            raise missing_field(path, header[0], name, columns, "the header row")
        positions.append(columns.index(name))
    width = len(columns)
    for number, line in lines:
        cells = line.split("\t")
        if len(cells) != width:
            problem = f"expected {width} tab-separated columns, as the header row names, got {len(cells)}"
            raise GoldenError(path, None, number, problem)
        values: list[Any] = [cells[p] for p in positions]
        if counted:
            count = values[-1]
            if not (count.isascii() and count.isdigit() and int(count) >= 1):
                raise GoldenError(path, names[-1], number, count_problem(repr(count)))
            values[-1] = int(count)
        yield number, values


_READERS = {"jsonl": _json_rows, "tsv": _tsv_rows}
_LOG_FORMATS = "JSONL (one object per line) or TSV with a header row"


def _file_rows(
    path: Path, names: Sequence[str], counted: bool, kinds: list[str]
) -> tuple[HashedLines, Iterator[tuple[int, list[Any]]]]:
    """One file's stream (its digest known once read) and its rows; its format is appended to ``kinds``
    (the first file's is every file's)."""
    refuse_engine_only(path)
    stream = opened(path)
    lines = decoded_lines(path, stream)
    first = next(lines, None)
    if first is None:
        return stream, iter(())
    expected = f"{_LOG_FORMATS} naming the text column {names[0]!r}"
    kind = log_format(path, first, expected, names[0])  # a TSV log of the text column alone
    if kinds and kind != kinds[0]:
        raise GoldenError(path, "format", first[0], f"is {kind} while the log's first file is {kinds[0]}")
    kinds.append(kind)
    return stream, _READERS[kind](path, itertools.chain([first], lines), names, counted)


def read_query_log(
    source: Source | Path, text_field: str, by: Sequence[str], count_field: str | None = None
) -> QueryLog:
    """Every distinct query of the log with its frequency, in one pass over its files (memory grows with the
    distinct queries, not the rows). `GoldenError` for a missing or unreadable file, a compressed or Parquet
    one (the engine's), an empty log, a row without the text, a stratum field or the count, a value of the
    wrong type, or a row that is not JSON or has the wrong width."""
    if isinstance(source, Path):
        source = Source(str(source), (source,), False)
    fields = tuple(name for name in by if name != BAND)
    names = (text_field, *fields, *([count_field] if count_field else []))
    counted = count_field is not None
    counts: dict[tuple[str, ...], list[Any]] = {}
    rows = empty = table_rows = 0
    kinds: list[str] = []
    read: list[LogFile] = []
    for path in source.files:
        stream, file_rows = _file_rows(path, names, counted, kinds)
        for _, values in file_rows:
            table_rows += 1
            searches = values.pop() if counted else 1
            key = normalise_query(values[0])
            if not key:
                empty += searches
                continue
            rows += searches
            cell = (key, *values[1:])
            seen = counts.get(cell)
            if seen is None:
                counts[cell] = [searches, values[0]]
            else:
                seen[0] += searches
        read.append(LogFile(path, stream.sha256))
    if not kinds:
        raise GoldenError(source.given, None, None, "the log is empty: no rows")
    if not rows:
        what = "no rows" if not empty else f"every one of its {empty} rows has an empty {text_field!r}"
        raise GoldenError(source.given, text_field, None, f"the log has no query: {what}")
    distinct = QueriesInMemory.of(
        DistinctQuery(cell[0], " ".join(seen[1].split()), cell[1:], seen[0]) for cell, seen in counts.items()
    )
    return QueryLog(
        Path(source.given),
        kinds[0],
        fields,
        rows,
        empty,
        source_sha256([file.sha256 for file in read]),
        distinct,
        tuple(read),
        count_field,
        table_rows,
    )
