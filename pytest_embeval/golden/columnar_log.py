"""A query log read by the columnar engine (`files.columnar`): Parquet, JSONL or TSV, compressed or not, one
file or many, counted or not, into the same distinct queries as `query_log`'s reader, so that
`query_draw.draw_queries` draws the same sample from either.

The engine aggregates the raw rows: one row per raw text and raw stratum values, with its searches and the
position of its first row (`GROUP BY`, out of core; a Parquet file's rows are numbered by its reader, a text
file's by their place in a copy of its rows in file order, both on every thread). The rows are grouped by
their text and a 64-bit hash of their stratum values, which the engine groups faster than the values
themselves (by a fifth, measured); the values of each hash are read apart, as the Python reader reads them:
from Parquet's dictionaries, or from a copied text log, which holds them joined into one text, and two
combinations of one hash stop the command. Of the distinct raw strings not already in normal form
(`sampling.NORMAL_ASCII`: most are), the ASCII ones are normalised by the engine with the aggregation, by
`sampling.normalise_query`'s ASCII rule, and only the others reach Python, each once, to go through
`sampling.normalise_query` itself (`columnar_queries`). The rows whose spellings merge are then aggregated
again by normalised text and stratum, keeping each query's first row (its text is the spelling of that row);
the queries are ranked as `query_log.DistinctQueries` ranks them (most frequent first, then the normalised
text, then the values: strings compare by code point in both) where a drawn one is looked for, and only the
drawn queries' texts reach Python.

Bad input gives `query_log`'s errors: a missing column or a value of the wrong type found by the engine is
reported, for JSONL and TSV, by reading the first file that holds one with `query_log`'s reader (its message
names the line), and for Parquet with the file and row. A value the engine refuses that the Python reader
would take (a JSON object with a key twice, a lone surrogate) is reported as the engine's, naming the file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_embeval.core.sampling import NORMAL_ASCII
from pytest_embeval.core.step_progress import step
from pytest_embeval.files.columnar import Engine, EngineError, free_name, sql_list, sql_string
from pytest_embeval.files.compressed import compression_of
from pytest_embeval.files.digests import sha256_ahead
from pytest_embeval.files.sources import Source, is_parquet, source_sha256
from pytest_embeval.golden.columnar_queries import (
    QueriesInEngine,
    ascii_key,
    count_prefixes,
    merge_spellings,
    normalise_spellings,
)
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.parquet_rows import ParquetRows
from pytest_embeval.golden.query_log import (
    BAND,
    LogFile,
    QueryLog,
    count_problem,
    decoded_lines,
    log_format,
    missing_field,
    opened,
    read_query_log,
    stratum_text,
    tsv_header,
)

__all__ = ["JSON_NORMAL_ASCII", "estimated_rows", "narrowed_position", "read_columnar_log", "source_format"]

#: `NORMAL_ASCII` as a JSON string literal with no escape: its value is the text between the quotes.
JSON_NORMAL_ASCII = r'"[!#-@\[\]-~]+( [!#-@\[\]-~]+)*"'
_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
)
_NUMBER_TYPES = _INTEGER_TYPES | {"FLOAT", "DOUBLE"}
_WHOLE_DECIMAL = re.compile(r"DECIMAL\(\d+,0\)")
_LOG_FORMATS = "JSONL (one object per line), TSV with a header row naming the text column {!r}, or Parquet"
#: Bytes of a text file looked at to estimate its rows, for the progress line.
_SAMPLE_BYTES = 1 << 16
#: What joins the stratum values of a copied row, by format (`_aggregated`): a character no value holds (a TSV
#: cell holds no tab, a JSON text no raw control character).
_SEPARATORS = {"tsv": "\t", "jsonl": "\x1f"}
_COLLISION = "two combinations of stratum values have one hash; stratify by other fields"
_COMPRESSED_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".tsv": "tsv", ".tab": "tsv"}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Relation:
    """How the engine reads the log: its table function, the SQL of each needed column, of a row's problem,
    and what the Python reader needs to report one."""

    def __init__(self, engine: Engine, source: Source, names: Sequence[str], counted: bool) -> None:
        self.engine, self.source, self.names, self.counted = engine, source, names, counted
        # A row's place in the log (its first row gives a query its spelling). DuckDB's JSON and CSV readers
        # give no row number, and ``row_number() OVER ()`` would hold the whole read to one thread: a text
        # log's rows are copied into a table in file order instead (the engine keeps insertion order on all
        # its threads), and numbered by their rowid there.
        self.position = "rowid"
        self.format = source_format(source, _LOG_FORMATS.format(names[0]), names[0])
        self.copied = self.format != "parquet"
        files = sql_list([str(path) for path in source.files])
        columns = [_quoted(name) for name in names]
        self.parquet: ParquetRows | None = None
        self.file_column = ""
        if self.format == "parquet":
            self.parquet = ParquetRows.of(engine, source.files)
            self._check_parquet_columns(self.parquet)
            self.function = f"read_parquet({files}, union_by_name = true)"
            self.columns = columns
            # Each file's rows numbered by the reader itself (its threads need not take turns), after the
            # rows of the files before it, unless a file hides the reader's numbers (`ParquetRows.position`).
            self.position = self.parquet.position()
        elif self.format == "jsonl":
            spec = ", ".join(f"{sql_string(name)}: 'JSON'" for name in dict.fromkeys(names))
            # The file a row came from, in a column the reader adds: named apart from the log's own.
            self.file_column = free_name("filename", names)
            self.function = (
                f"read_json({files}, columns = {{{spec}}}, format = 'newline_delimited', "
                f"filename = {sql_string(self.file_column)})"
            )
            self.columns = columns
        else:
            header = self._tsv_header()
            spec = ", ".join(f"{sql_string(name)}: 'VARCHAR'" for name in header)
            self.file_column = free_name("filename", header)
            self.function = (
                f"read_csv({files}, columns = {{{spec}}}, header = true, delim = '\\t', quote = '', "
                "escape = '', auto_detect = false, strict_mode = true, "
                f"filename = {sql_string(self.file_column)})"
            )
            self.columns = [f"coalesce({column}, '')" for column in columns]

    # ------------------------------------------------------------------------------------------ columns

    def _check_parquet_columns(self, parquet: ParquetRows) -> None:
        """Every file has the text, the fields and the count, each of a type the reader takes."""
        for path, types in zip(parquet.files, parquet.types, strict=True):
            for i, name in enumerate(self.names):
                if name not in types:
                    raise missing_field(path, None, name, list(types), "the file")
                kind = types[name]
                if i == 0 and kind != "VARCHAR":
                    raise GoldenError(path, name, None, f"must be a string, got a column of {kind}")
                if self.counted and i == len(self.names) - 1:
                    if kind not in _INTEGER_TYPES and not _WHOLE_DECIMAL.fullmatch(kind):
                        raise GoldenError(path, name, None, count_problem(f"a column of {kind}"))
                elif i and kind != "VARCHAR" and kind not in _NUMBER_TYPES and not kind.startswith("DECIMAL"):
                    problem = f"must be a string or number, got a column of {kind}"
                    raise GoldenError(path, name, None, problem)

    def _tsv_header(self) -> list[str]:
        """The header row every file shares (the Python reader's errors for a file without a column)."""
        header: list[str] | None = None
        for path in self.source.files:
            stream = opened(path)
            first = next(decoded_lines(path, stream), None)
            if first is None:
                continue
            cells = tsv_header(path, first)
            for name in self.names:
                if name not in cells:
                    raise missing_field(path, first[0], name, cells, "the header row")
            if header is not None and cells != header:
                problem = (
                    f"its header row differs from {self.source.files[0]}'s: the engine reads files that "
                    "share "
                    "one (--engine python reads each by its own)"
                )
                raise GoldenError(path, None, first[0], problem)
            header = cells
        return header or list(self.names)

    # ----------------------------------------------------------------------------------------- problems

    def problem(self, columns: Sequence[str], *, count: bool = True) -> str:
        """SQL true for a row whose ``columns`` (the text, the fields, and the count when ``counted``) hold
        what the Python reader refuses: a missing or null value, a wrong type, a bad count (``count``: look
        at the count too)."""
        text, *fields = columns[: len(columns) - self.counted]
        tests: list[str] = []
        if self.format == "jsonl":
            tests.append(f"{text} IS NULL OR json_type({text}) <> 'VARCHAR'")
            tests += [
                f"{field} IS NULL OR json_type({field}) NOT IN ('VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE')"
                for field in fields
            ]
        elif self.format == "parquet":
            tests += [f"{column} IS NULL" for column in (text, *fields)]
        if self.counted and count:
            tests.append(self.count_problem(columns[-1]))
        return " OR ".join(f"({test})" for test in tests) or "false"

    def count_problem(self, count: str) -> str:
        """SQL true for a count the Python reader refuses."""
        if self.format == "jsonl":
            return (
                f"{count} IS NULL OR json_type({count}) NOT IN ('UBIGINT', 'BIGINT') "
                f"OR TRY_CAST({count} AS HUGEINT) < 1"
            )
        if self.format == "tsv":
            whole = f"TRY_CAST({count} AS HUGEINT)"
            return f"NOT regexp_full_match({count}, '[0-9]+') OR coalesce({whole} < 1, true)"
        return f"{count} IS NULL OR {count} < 1"

    def report(self, text_field: str, by: Sequence[str], count_field: str | None) -> GoldenError:
        """The error for the first row with a problem, as the Python reader gives it."""
        # The first such row (by its place in the log) and where it is: its place among the Parquet files'
        # rows, or the text file it came from.
        read = [_quoted(name) for name in dict.fromkeys(self.names)]
        place = free_name("embeval_position", self.names)
        if self.parquet is not None:
            position, where = self.parquet.position(), place
        else:
            position, where = "row_number() OVER ()", _quoted(self.file_column)
            read.append(where)
        read.append(f"{position} AS {place}")
        row = self.engine.rows(
            f"SELECT {where}, {', '.join(self.columns)} FROM (SELECT {', '.join(read)} FROM {self.function}) "
            f"WHERE {self.problem(self.columns)} ORDER BY {place} LIMIT 1"
        )
        if not row:
            return GoldenError(self.source.given, None, None, "the engine found a row it could not read")
        if self.parquet is not None:
            path, number = self.parquet.located(int(row[0][0]))
            return _parquet_problem(path, number, self.names, row[0][1:], self.counted)
        return python_error(
            Path(row[0][0]), text_field, by, count_field, "the engine could not read a value of it"
        )


def python_error(
    path: Path, text_field: str, by: Sequence[str], count_field: str | None, otherwise: str
) -> GoldenError:
    """The Python reader's error for one file, or ``otherwise`` (naming the file) when it finds none."""
    try:
        read_query_log(Source(str(path), (path,), False), text_field, by, count_field)
    except GoldenError as error:
        return error
    return GoldenError(path, None, None, f"{otherwise}; --engine python reads it")


def _parquet_problem(
    path: Path, row: int, names: Sequence[str], values: Sequence[object], counted: bool
) -> GoldenError:
    for i, (name, value) in enumerate(zip(names, values, strict=True)):
        if counted and i == len(names) - 1:
            return GoldenError(path, name, row, count_problem("null" if value is None else str(value)))
        if value is None:
            return GoldenError(
                path, name, row, f"must be a {'string' if i == 0 else 'string or number'}, got null"
            )
    raise AssertionError("a row with a problem has one")


def source_format(source: Source, expected: str, header: str | None = None) -> str:
    """The format every file shares: Parquet by name or magic bytes, a compressed text file by the suffix
    before its compression's, another by its first line (``expected`` names the formats, for the error;
    ``header``, the one column a TSV file may hold)."""
    kinds: list[str] = []
    for path in source.files:
        if is_parquet(path):
            kind = "parquet"
        elif compression_of(path) is not None:
            inner = Path(path.stem).suffix.lower()
            if inner not in _COMPRESSED_FORMATS:
                problem = (
                    f"cannot tell JSONL from TSV: name it {Path(path.stem).stem}.jsonl{path.suffix} or .tsv"
                )
                raise GoldenError(path, "format", None, problem)
            kind = _COMPRESSED_FORMATS[inner]
        else:
            stream = opened(path)
            first = next(decoded_lines(path, stream), None)
            if first is None:
                continue
            kind = log_format(path, first, expected, header)
        if kinds and kind != kinds[0]:
            raise GoldenError(path, "format", None, f"is {kind} while the first file is {kinds[0]}")
        kinds.append(kind)
    return kinds[0] if kinds else "jsonl"


def estimated_rows(source: Source, parquet: ParquetRows | None) -> int | None:
    """The rows the files hold, for the progress line: Parquet's metadata says (``parquet``); a text file's
    size over the length of its first lines estimates it; a compressed one's is unknown."""
    files = source.files
    if parquet is not None:
        return sum(parquet.rows)
    if any(compression_of(path) is not None for path in files):
        return None
    with files[0].open("rb") as handle:
        sample = handle.read(_SAMPLE_BYTES)
    lines = sample.count(b"\n")
    return round(source.bytes * lines / len(sample)) if lines else None


def _stratum_values(kind: str, raw: Sequence[object]) -> tuple[str, ...] | None:
    """One raw combination of stratum values as the Python reader reads it; None for one it refuses (a
    missing or null value, a boolean, a list...)."""
    values: list[str] = []
    for value in raw:
        if kind == "jsonl":
            value = None if value is None else json.loads(str(value))
        elif isinstance(value, Decimal):
            value = int(value) if value == value.to_integral_value() else float(value)
        text = stratum_text(value)
        if text is None:
            return None
        values.append(text)
    return tuple(values)


def read_columnar_log(
    engine: Engine,
    source: Source,
    text_field: str,
    by: Sequence[str],
    count_field: str | None = None,
    digests: Future[list[str]] | None = None,
) -> QueryLog:
    """The log's distinct queries, aggregated by ``engine`` (see the module); the texts of the drawn ones
    are looked up in it, so it must stay open while the log is drawn from. The files' sha256 are
    ``digests`` (`digests.sha256_ahead` of them, started before the engine opened), else computed beside
    the engine's work. `GoldenError` as `query_log`'s reader gives it."""
    fields = tuple(name for name in by if name != BAND)
    names = (text_field, *fields, *([count_field] if count_field else []))
    counted = count_field is not None
    for path in source.files:
        opened(path)  # a missing or unreadable file: the Python reader's error
    if digests is None:
        digests = sha256_ahead(source.files)
    try:
        relation = _Relation(engine, source, names, counted)
        log = _aggregated(engine, relation, source, text_field, by, count_field)
    except EngineError as error:
        raise _engine_error(source, str(error), text_field, by, count_field) from None
    files = tuple(LogFile(path, digest) for path, digest in zip(source.files, digests.result(), strict=True))
    return QueryLog(
        Path(source.given),
        relation.format,
        fields,
        log[0],
        log[1],
        source_sha256([file.sha256 for file in files]),
        log[2],
        files,
        count_field,
        log[3],
    )


def _engine_error(
    source: Source, message: str, text_field: str, by: Sequence[str], count_field: str | None
) -> GoldenError:
    """An error the engine raised reading the files: for a text file it names, the Python reader's error for
    that file when it has one; else the engine's line, naming the file when the message does."""
    named = next((path for path in source.files if f'"{path}"' in message or f"'{path}'" in message), None)
    if named is not None and is_parquet(named):
        return GoldenError(named, None, None, f"cannot read: {message}")
    if named is not None and compression_of(named) is None:
        return python_error(named, text_field, by, count_field, f"the engine cannot read it: {message}")
    return GoldenError(named or source.given, None, None, f"the engine cannot read it: {message}")


def _aggregated(
    engine: Engine,
    relation: _Relation,
    source: Source,
    text_field: str,
    by: Sequence[str],
    count_field: str | None,
) -> tuple[int, int, QueriesInEngine, int]:
    """(searches, empty searches, the distinct queries, rows read) of the log."""
    counted = count_field is not None
    keys = relation.columns[: len(relation.columns) - counted]
    text, fields = keys[0], keys[1:]
    count = relation.columns[-1]
    # A row's stratum values as one number, its ``combination``: the rows are grouped by text and that
    # number, which the engine does faster than by the values themselves; `_strata` reads the values of
    # each number from the rows apart and stops at two combinations of one number.
    combination = f"hash({', '.join(fields)})" if fields else "0"
    jsonl = relation.format == "jsonl"
    # Computed once per group, beside the aggregation: ``normal``, whether the text is in normal form
    # already; ``bad``, whether it is not a string (a JSON string's text starts with its quote). The stratum
    # fields' problems are found on their few combinations (`_strata`), the counts' on every row.
    normal = f"regexp_full_match(c0::VARCHAR, {sql_string(JSON_NORMAL_ASCII if jsonl else NORMAL_ASCII)})"
    bad = {"jsonl": "c0 IS NULL OR NOT starts_with(c0::VARCHAR, '\"')", "parquet": "c0 IS NULL"}
    # Every later step reads a JSON text as the string it holds (as it reads another format's): one in
    # normal form has no escape, it is the string between its quotes (ASCII: its bytes are its characters,
    # which ``substr`` counts); the rest are decoded by the engine.
    stored = (
        "CASE WHEN normal THEN substr(c0::VARCHAR, 2, strlen(c0) - 2) ELSE c0->>'$' END" if jsonl else "c0"
    )
    rows_from, reading = relation.function, f"reading {source.given}"
    total = estimated_rows(source, relation.parquet)
    if relation.copied:
        # The copy holds the text, the stratum values joined into one text (``strata``, written and grouped
        # faster than the values apart), its hash (``combination``: no later statement hashes them again)
        # and the count.
        separator = f"chr({ord(_SEPARATORS[relation.format])})"
        joined = f"concat({f', {separator}, '.join(fields)})" if fields else "''"
        engine.execute(
            f"CREATE TEMP TABLE log_rows AS SELECT *, {'hash(strata)' if fields else '0'} AS combination "
            f"FROM (SELECT {text} AS c0, {joined} AS strata{f', {count} AS c1' if counted else ''} "
            f"FROM {relation.function})",
            what=reading,
            total=total,
        )
        rows_from, reading = "log_rows", "grouping its rows by text and stratum values"
        ((total,),) = engine.rows("SELECT count(*) FROM log_rows")
        text, count, combination = "c0", "c1", "combination"
        rows = _copied_strata(engine, relation.format, len(fields))
    else:
        rows = _distinct_strata(engine, rows_from, combination, fields)
    strata = _strata(engine, relation.format, rows)
    if strata is None:
        raise relation.report(text_field, by, count_field)
    searches = "sum(searches)" if counted else "count(*)"
    # ``total`` is exact here: Parquet's metadata, or the copy's count.
    position = narrowed_position(relation.position, total)
    engine.execute(
        "CREATE TEMP TABLE raw AS SELECT *, CASE WHEN NOT normal THEN "
        f"{ascii_key('c0')} END AS key FROM ("
        f"SELECT {stored} AS c0, stratum, normal, NOT normal OR shared AS merging, "
        "bad, searches, table_rows, first, bad_counts FROM ("
        f"SELECT c0, combination, coalesce({normal}, false) AS normal, {bad.get(relation.format, 'false')} "
        f"AS bad, {searches} AS searches, count(*) AS table_rows, min(position) AS first, "
        f"{'count_if(bad_count)' if counted else '0'} AS bad_counts FROM ("
        f"SELECT {text} AS c0, {combination} AS combination, "
        + (
            f"TRY_CAST({count} AS HUGEINT) AS searches, ({relation.count_problem(count)}) AS bad_count, "
            if counted
            else ""
        )
        + f"{position} AS position FROM {rows_from}) GROUP BY c0, combination"
        ") JOIN strata USING (combination))",
        what=reading,
        total=total,
    )
    if relation.copied:
        engine.execute("DROP TABLE log_rows")
    ((table_rows, problems),) = engine.rows(
        "SELECT coalesce(sum(table_rows), 0), coalesce(sum(bad_counts), 0) + count_if(bad) FROM raw"
    )
    if problems:
        raise relation.report(text_field, by, count_field)
    if not table_rows:
        raise GoldenError(source.given, None, None, "the log is empty: no rows")
    normalise_spellings(engine)
    merge_spellings(engine)
    with step("counting distinct queries by frequency and stratum"):
        # The searches whose text is empty once normalised are the rows of the empty key.
        counted_levels = count_prefixes(engine)
    levels = {(f, s): queries for f, s, is_empty, queries in counted_levels if not is_empty}
    empty = sum(f * queries for f, _, is_empty, queries in counted_levels if is_empty)
    total = sum(frequency * queries for (frequency, _), queries in levels.items())
    if not total:
        what = "no rows" if not empty else f"every one of its {empty} rows has an empty {text_field!r}"
        raise GoldenError(source.given, text_field, None, f"the log has no query: {what}")
    return total, empty, QueriesInEngine(engine, strata, levels), int(table_rows)


def narrowed_position(position: str, rows: int | None) -> str:
    """SQL of a row's place (``position``) as 32 bits where the log's ``rows`` (exact, or None when unknown)
    all fit: the aggregation and every table after it then carry 4 bytes a group for it, not 8 (the sample
    of 10,000,000 Parquet rows about a twentieth faster, measured); as it is otherwise."""
    return f"CAST({position} AS UINTEGER)" if rows is not None and rows <= 2**32 else position


def _distinct_strata(
    engine: Engine, rows_from: str, combination: str, fields: Sequence[str]
) -> list[tuple[Any, ...]]:
    """Each distinct combination of stratum values of a Parquet log (``rows_from``: read from its
    dictionaries, fast), after its number: two of one number stop the command."""
    if not fields:
        return [(0,)]
    # Hashed once each, after DISTINCT (as the aggregation hashes them, a row at a time).
    listed = ", ".join(fields)
    rows = engine.rows(f"SELECT {combination}, {listed} FROM (SELECT DISTINCT {listed} FROM {rows_from})")
    if len({row[0] for row in rows}) < len(rows):
        raise EngineError(_COLLISION)
    return rows


def _copied_strata(engine: Engine, kind: str, fields: int) -> list[tuple[Any, ...]]:
    """Each combination of stratum values of the copied rows (``log_rows``: its values joined in ``strata``)
    after its number; two of one number stop the command."""
    if not fields:
        return [(0,)]
    numbers = engine.rows(
        "SELECT combination, min(strata), min(strata) <> max(strata) FROM log_rows GROUP BY combination"
    )
    if any(collided for *_, collided in numbers):
        raise EngineError(_COLLISION)
    rows: list[tuple[Any, ...]] = []
    for number, joined, _ in numbers:
        values = str(joined).split(_SEPARATORS[kind])
        # A JSON text is never empty: an empty one is a missing value.
        rows.append((number, *(None if kind == "jsonl" and not value else value for value in values)))
    return rows


def _strata(engine: Engine, kind: str, rows: Sequence[tuple[Any, ...]]) -> tuple[tuple[str, ...], ...] | None:
    """The stratum values of the log, sorted, from each raw combination's number and values (``rows``), and
    a table ``strata`` from each number to its index among them and whether other combinations share it
    (``shared``); None when a combination holds a value the Python reader refuses."""
    read = [_stratum_values(kind, row[1:]) for row in rows]
    combinations = [value for value in read if value is not None]
    if len(combinations) < len(read):
        return None
    values = tuple(sorted(set(combinations)))
    index = {value: i for i, value in enumerate(values)}
    # A stratum several raw combinations read as (a JSON 1 and "1") merges their rows.
    shared = {value for value, times in Counter(combinations).items() if times > 1}
    engine.execute(
        "CREATE TEMP TABLE strata AS SELECT unnest(?::UBIGINT[]) AS combination, "
        "unnest(?::BIGINT[]) AS stratum, unnest(?::BOOLEAN[]) AS shared",
        [
            [int(row[0]) for row in rows],
            [index[value] for value in combinations],
            [value in shared for value in combinations],
        ],
    )
    return values
