"""A query log, read in one streaming pass, and the stratified sample of its distinct queries that
``embeval sample`` writes as a golden set's queries file.

A log has one row per search: JSONL (one object per line) or TSV with a header row, detected from the first
non-blank line as the golden set's data files are. Each row has the query's text (the ``text_field``, by
default ``query``) and the stratum fields; other fields are ignored. Rows whose text is empty or only
whitespace are skipped and counted. Every problem is a `GoldenError` naming the log and the line.

Query strings are compared after `sampling.normalise_query` (NFKC, case folding, whitespace): a *distinct
query* is one normalised string in one combination of stratum values, its *frequency* the rows it occurs
in, and its text the first spelling seen (whitespace runs made one space). A distinct query's *band* comes
from the cumulative traffic share of all distinct queries, most frequent first (`sampling.frequency_bands`);
``band`` in ``by`` stratifies by it too. A *stratum* is one combination of the ``by`` values. The draw
(`draw_queries`) apportions the size across strata by traffic with the floor, then each stratum's seats
across its bands by traffic too, the head's multiplied by the boost, each band capped at its distinct
queries (`sampling.apportion`), and draws each (stratum, band) cell's queries uniformly without
replacement, with a generator seeded from the seed and the cell's name, so a cell's draw depends on
nothing else. Every query of a cell is drawn with the same probability, the cell's sampled over its
distinct queries: the query's *inclusion*, written beside its frequency so that a run weighs it by
frequency / inclusion, the traffic it stands for in the log (`data_files.Query.traffic_weight`).
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_embeval.core.sampling import apportion, band_names, frequency_bands, normalise_query
from pytest_embeval.files.lines import HashedLines, NotUtf8
from pytest_embeval.golden.data_files import GoldenError, json_object

__all__ = [
    "BAND",
    "DEFAULT_TEXT_FIELD",
    "DistinctQuery",
    "DrawnQuery",
    "QueryDraw",
    "QueryLog",
    "StratumDraw",
    "decoded_lines",
    "draw_queries",
    "opened",
    "read_query_log",
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


@dataclass(frozen=True, slots=True)
class QueryLog:
    path: Path
    format: str
    #: the stratum fields read from each row (``by`` without ``band``)
    fields: tuple[str, ...]
    #: searches counted (rows with a non-empty text)
    rows: int
    #: rows whose text was empty or whitespace
    empty: int
    sha256: str
    #: most frequent first (ties: normalised text, then values)
    distinct: tuple[DistinctQuery, ...]


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


def opened(path: Path) -> HashedLines:
    """``path``'s lines, to be read once; `GoldenError` for a missing or unreadable file."""
    try:
        return HashedLines(path)
    except FileNotFoundError:
        raise GoldenError(path, None, None, f"file not found: {path.resolve()}") from None
    except (OSError, ValueError) as exc:  # a folder, no permission; ValueError: a NUL byte in the path
        raise GoldenError(path, None, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _missing(path: Path, line: int, name: str, present: Sequence[str], what: str) -> GoldenError:
    close = difflib.get_close_matches(name, list(present), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return GoldenError(path, name, line, f"{what} has no field {name!r}{hint}")


def _json_rows(
    path: Path, lines: Iterator[tuple[int, str]], names: Sequence[str]
) -> Iterator[tuple[int, list[str]]]:
    """Each JSONL row's values of ``names`` (the text first), as strings."""
    for number, line in lines:
        record = json_object(path, number, line)
        try:
            values = [record[name] for name in names]
        except KeyError:
            missing = next(name for name in names if name not in record)
            raise _missing(path, number, missing, list(record), "the row") from None
        if all(type(value) is str for value in values):
            yield number, values
            continue
        for i, (name, value) in enumerate(zip(names, values, strict=True)):
            if isinstance(value, str):
                continue
            if i and isinstance(value, (int, float)) and not isinstance(value, bool):
                values[i] = json.dumps(value)
                continue
            kind = "a string" if i == 0 else "a string or number"
            shown = "null" if value is None else type(value).__name__
            raise GoldenError(path, name, number, f"must be {kind}, got {shown}")
        yield number, values


def _tsv_rows(
    path: Path, lines: Iterator[tuple[int, str]], names: Sequence[str]
) -> Iterator[tuple[int, list[str]]]:
    """Each TSV row's cells of ``names`` (the text first), found by the header row."""
    header = next(lines, None)
    if header is None:
        return
    columns = [cell.strip() for cell in header[1].split("\t")]
    positions = []
    for name in names:
        if name not in columns:
            raise _missing(path, header[0], name, columns, "the header row")
        positions.append(columns.index(name))
    width = len(columns)
    for number, line in lines:
        cells = line.split("\t")
        if len(cells) != width:
            problem = f"expected {width} tab-separated columns, as the header row names, got {len(cells)}"
            raise GoldenError(path, None, number, problem)
        yield number, [cells[p] for p in positions]


def read_query_log(path: Path, text_field: str, by: Sequence[str]) -> QueryLog:
    """Every distinct query of the log with its frequency, in one pass (memory grows with the distinct
    queries, not the rows). `GoldenError` for a missing or unreadable file, an empty log, a row without the
    text or a stratum field, or a row that is not JSON or has the wrong width."""
    fields = tuple(name for name in by if name != BAND)
    stream = opened(path)
    lines = decoded_lines(path, stream)
    first = next(lines, None)
    if first is None:
        raise GoldenError(path, None, None, "the log is empty: no rows")
    if first[1].lstrip().startswith("{"):
        kind, reader = "jsonl", _json_rows
    elif "\t" in first[1] or first[1].strip() == text_field:  # a TSV log of the text column alone
        kind, reader = "tsv", _tsv_rows
    else:
        problem = (
            "unsupported format: expected JSONL (one object per line) or TSV with a header row naming "
            f"the text column {text_field!r}"
        )
        raise GoldenError(path, "format", first[0], problem)

    counts: dict[tuple[str, ...], list[Any]] = {}
    rows = empty = 0
    names = (text_field, *fields)
    for _, values in reader(path, itertools.chain([first], lines), names):
        key = normalise_query(values[0])
        if not key:
            empty += 1
            continue
        rows += 1
        cell = (key, *values[1:])
        seen = counts.get(cell)
        if seen is None:
            counts[cell] = [1, values[0]]
        else:
            seen[0] += 1
    if not rows:
        what = "no rows" if not empty else f"every one of its {empty} rows has an empty {text_field!r}"
        raise GoldenError(path, text_field, None, f"the log has no query: {what}")
    distinct = sorted(
        (
            DistinctQuery(cell[0], " ".join(seen[1].split()), cell[1:], seen[0])
            for cell, seen in counts.items()
        ),
        key=lambda q: (-q.frequency, q.key, q.values),
    )
    return QueryLog(path, kind, fields, rows, empty, stream.sha256, tuple(distinct))


@dataclass(frozen=True, slots=True)
class DrawnQuery:
    id: str
    text: str
    #: stratum field -> value, ``band`` included
    fields: Mapping[str, str]
    frequency: int
    #: the probability the design drew it with: its (stratum, band) cell's sampled over distinct queries
    inclusion: float

    def record(self) -> dict[str, Any]:
        """The queries-file line: ``_id``, ``text``, the fields, ``frequency`` and ``inclusion`` (the golden
        loader's keys)."""
        return {
            "_id": self.id,
            "text": self.text,
            **self.fields,
            "frequency": self.frequency,
            "inclusion": self.inclusion,
        }


@dataclass(frozen=True, slots=True)
class StratumDraw:
    #: ``field=value`` joined by ``, `` (``overall`` without fields)
    name: str
    rows: int
    traffic_share: float
    distinct: int
    #: the floor this stratum was held to: the smaller of the floor asked for and its distinct queries
    floor: int
    sampled: int
    #: band -> (distinct queries, sampled), every band in order
    bands: Mapping[str, tuple[int, int]]
    #: fewer distinct queries than the floor asked for: all of them are drawn
    below_floor: bool

    def record(self) -> dict[str, Any]:
        return {
            "stratum": self.name,
            "rows": self.rows,
            "traffic_share": round(self.traffic_share, 6),
            "distinct": self.distinct,
            "floor": self.floor,
            "sampled": self.sampled,
            "bands": {
                band: {"distinct": d, "sampled": s, **({"inclusion": s / d} if s else {})}
                for band, (d, s) in self.bands.items()
            },
            "below_floor": self.below_floor,
        }


@dataclass(frozen=True, slots=True)
class QueryDraw:
    strata: tuple[StratumDraw, ...]
    queries: tuple[DrawnQuery, ...]
    #: band -> (distinct queries, rows) over the whole log, every band in order
    bands: Mapping[str, tuple[int, int]]
    #: the share of the log's traffic the drawn queries make
    traffic_covered: float


def _query_id(key: str, values: Sequence[str]) -> str:
    """A stable id from the normalised text and the stratum values: the same query of the same stratum has
    the same id in every draw and every log."""
    digest = hashlib.sha256(json.dumps([key, *values], ensure_ascii=False).encode("utf-8")).hexdigest()
    return f"q-{digest[:16]}"


def draw_queries(
    log: QueryLog,
    by: Sequence[str],
    *,
    size: int,
    floor: int,
    bands: Sequence[tuple[str, float]],
    head_boost: float,
    seed: int,
) -> QueryDraw:
    """The stratified sample (see the module). `ValueError` when ``size`` exceeds the distinct queries or
    the strata's floors add up to more than ``size``."""
    names = band_names(bands)
    band_of = frequency_bands([q.frequency for q in log.distinct], bands)
    cells: dict[tuple[str, ...], dict[str, list[DistinctQuery]]] = {}
    rows: dict[tuple[str, ...], int] = {}
    for query, band in zip(log.distinct, band_of, strict=True):
        named = dict(zip(log.fields, query.values, strict=True))
        named[BAND] = band
        stratum = tuple(named[name] for name in by)
        cells.setdefault(stratum, {name: [] for name in names})[band].append(query)
        rows[stratum] = rows.get(stratum, 0) + query.frequency
    if size > len(log.distinct):
        raise ValueError(f"--size {size} is more than the log's {len(log.distinct)} distinct queries")
    order = sorted(cells, key=lambda s: (-rows[s], s))
    distinct = [sum(len(c) for c in cells[s].values()) for s in order]
    floors = [min(floor, d) for d in distinct]
    if sum(floors) > size:
        raise ValueError(
            f"the floor of {floor} in each of the {len(order)} strata needs {sum(floors)} queries, more than "
            f"--size {size}; lower --floor, raise --size or stratify by fewer fields"
        )
    seats = apportion(size, [rows[s] for s in order], distinct, floors)
    strata: list[StratumDraw] = []
    drawn: list[DrawnQuery] = []
    for stratum, n, d, low in zip(order, seats, distinct, floors, strict=True):
        name = ", ".join(f"{field}={value}" for field, value in zip(by, stratum, strict=True)) or "overall"
        sizes = [len(cells[stratum][band]) for band in names]
        traffic = [sum(q.frequency for q in cells[stratum][band]) for band in names]
        # Scaled below 1 by a power of two, which is exact (the seats are those of the traffic as counted),
        # so that no --head-boost up to the largest number makes the head's weight overflow.
        scale = 2.0 ** -math.frexp(max(traffic))[1]
        weights = [rows * scale * (head_boost if i == 0 else 1.0) for i, rows in enumerate(traffic)]
        per_band = apportion(n, weights, sizes)
        for band, k in zip(names, per_band, strict=True):
            pool = cells[stratum][band]
            rng = np.random.default_rng([seed, zlib.crc32(f"{name}\0{band}".encode())])
            chosen = sorted(rng.choice(len(pool), size=k, replace=False).tolist()) if k else []
            for i in chosen:
                query = pool[i]
                fields = dict(zip(log.fields, query.values, strict=True))
                fields[BAND] = band
                query_id = _query_id(query.key, query.values)
                drawn.append(DrawnQuery(query_id, query.text, fields, query.frequency, k / len(pool)))
        strata.append(
            StratumDraw(
                name,
                rows[stratum],
                rows[stratum] / log.rows,
                d,
                low,
                n,
                {band: (available, k) for band, available, k in zip(names, sizes, per_band, strict=True)},
                d < floor,
            )
        )
    covered = sum(q.frequency for q in drawn) / log.rows
    totals = {band: (0, 0) for band in names}
    for query, band in zip(log.distinct, band_of, strict=True):
        queries, band_rows = totals[band]
        totals[band] = (queries + 1, band_rows + query.frequency)
    return QueryDraw(tuple(strata), tuple(drawn), totals, covered)
