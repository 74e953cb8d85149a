"""The stratified sample of a query log's distinct queries (`query_log`) that ``embeval sample`` writes as a
golden set's queries file.

A distinct query's *band* comes from the cumulative traffic share of all distinct queries, most frequent
first (`sampling.band_indices`); ``band`` in ``by`` stratifies by it too. A *stratum* is one combination of
the ``by`` values. The draw (`draw_queries`) apportions the size across strata by traffic with the floor,
then each stratum's seats across its bands by traffic too, the head's multiplied by the boost, each band
capped at its distinct queries (`sampling.apportion`), and draws each (stratum, band) cell's queries
uniformly without replacement, with a generator seeded from the seed and the cell's name, so a cell's draw
depends on nothing else. A cell's queries are its distinct queries in the log's order, and the generator
picks positions among them. Every query of a cell is drawn with the same probability, the cell's sampled
over its distinct queries: the query's *inclusion*, written beside its frequency so that a run weighs it by
frequency / inclusion, the traffic it stands for in the log (`data_files.Query.traffic_weight`).

The draw works on the log's counts of distinct queries by frequency and stratum (`query_log.DistinctQueries`):
the bands are spans of each frequency's queries (`sampling.band_spans`), a cell's queries are runs of its
stratum's queries of each frequency, and the reader is asked only where a band's bound splits a frequency
and for the queries drawn, by their rank. So it is the same draw whichever reader read the log, in memory
or in the engine, and the engine never orders millions of distinct queries.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_embeval.core.sampling import apportion, band_names, band_spans
from pytest_embeval.golden.query_log import BAND, QueryLog

__all__ = ["DrawnQuery", "QueryDraw", "StratumDraw", "draw_queries"]


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


@dataclass(frozen=True, slots=True)
class _Run:
    """Queries of one stratum and frequency, by their rank among that stratum's queries of that frequency
    (in the log's order): ``first`` to ``end``."""

    frequency: int
    stratum: int
    first: int
    end: int

    @property
    def queries(self) -> int:
        return self.end - self.first


def _cells(
    log: QueryLog, by: Sequence[str], bands: Sequence[tuple[str, float]]
) -> dict[tuple[int, int], list[_Run]]:
    """Each (stratum code, band index) cell's distinct queries, in the log's order, as runs. A stratum code is
    the stratum values' index, times the bands and plus the band when ``band`` stratifies."""
    names = band_names(bands)
    banded = BAND in by
    counts_of: dict[int, dict[int, int]] = {}
    for (frequency, stratum), queries in log.distinct.levels().items():
        counts_of.setdefault(frequency, {})[stratum] = queries
    frequencies = sorted(counts_of, reverse=True)
    sizes = [sum(counts_of[frequency].values()) for frequency in frequencies]
    cells: dict[tuple[int, int], list[_Run]] = {}
    levels = list(zip(frequencies, sizes, strict=True))
    for (frequency, size), spans in zip(levels, band_spans(levels, bands), strict=True):
        counts = counts_of[frequency]
        # Where a bound falls inside the frequency, each stratum's part is a run of its own order: the
        # reader says how many of each stratum come before the bound (spans are contiguous from 0).
        below: Mapping[int, int] = {}
        for band, _, end in spans:
            upto = counts if end == size else log.distinct.split(frequency, end)
            for stratum in sorted(counts):
                run = _Run(frequency, stratum, below.get(stratum, 0), upto.get(stratum, 0))
                if run.queries:
                    code = stratum * len(names) + band if banded else stratum
                    cells.setdefault((code, band), []).append(run)
            below = upto
    return cells


def _ranked(runs: Sequence[_Run], chosen: Sequence[int]) -> list[tuple[int, int, int]]:
    """(frequency, stratum index, rank) of the cell's queries at the positions ``chosen`` (ascending)."""
    starts = np.cumsum([0, *(run.queries for run in runs)])
    found = []
    for position in chosen:
        i = int(np.searchsorted(starts, position, side="right")) - 1
        run = runs[i]
        found.append((run.frequency, run.stratum, run.first + position - int(starts[i])))
    return found


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
    """The stratified sample (see the module). `ValueError` when ``by`` (``band`` aside) is not the fields
    the log was read by, ``size`` exceeds the distinct queries or the strata's floors add up to more than
    ``size``."""
    if tuple(name for name in by if name != BAND) != log.fields:
        raise ValueError(f"--by {','.join(by)} is not what the log was read by ({','.join(log.fields)})")
    names = band_names(bands)
    banded = BAND in by
    distinct = log.distinct
    cells = _cells(log, by, bands)
    sizes_of: dict[int, list[int]] = {}
    traffic_of: dict[int, list[int]] = {}
    for (code, b), runs in cells.items():
        sizes_of.setdefault(code, [0] * len(names))[b] += sum(run.queries for run in runs)
        traffic_of.setdefault(code, [0] * len(names))[b] += sum(run.frequency * run.queries for run in runs)

    def stratum_of(code: int) -> tuple[str, ...]:
        index, b = divmod(code, len(names)) if banded else (code, 0)
        named = dict(zip(log.fields, distinct.values[index], strict=True))
        named[BAND] = names[b]
        return tuple(named[name] for name in by)

    if size > len(distinct):
        raise ValueError(f"--size {size} is more than the log's {len(distinct)} distinct queries")
    strata_of = {code: stratum_of(code) for code in sizes_of}
    stratum_rows = {code: sum(traffic) for code, traffic in traffic_of.items()}
    order = sorted(sizes_of, key=lambda code: (-stratum_rows[code], strata_of[code]))
    available = [sum(sizes_of[code]) for code in order]
    floors = [min(floor, d) for d in available]
    if sum(floors) > size:
        raise ValueError(
            f"the floor of {floor} in each of the {len(order)} strata needs {sum(floors)} queries, more than "
            f"--size {size}; lower --floor, raise --size or stratify by fewer fields"
        )
    seats = apportion(size, [stratum_rows[code] for code in order], available, floors)
    strata: list[StratumDraw] = []
    # (frequency, stratum index, rank), band and inclusion of each query drawn, in the file's order
    picked: list[tuple[tuple[int, int, int], str, float]] = []
    for code, n, d, low in zip(order, seats, available, floors, strict=True):
        name = ", ".join(f"{field}={value}" for field, value in zip(by, strata_of[code], strict=True))
        sizes = sizes_of[code]
        traffic = traffic_of[code]
        # Scaled below 1 by a power of two, which is exact (the seats are those of the traffic as counted),
        # so that no --head-boost up to the largest number makes the head's weight overflow.
        scale = 2.0 ** -math.frexp(max(traffic))[1]
        weights = [rows * scale * (head_boost if i == 0 else 1.0) for i, rows in enumerate(traffic)]
        per_band = apportion(n, weights, sizes)
        for b, (band, k) in enumerate(zip(names, per_band, strict=True)):
            if k:
                rng = np.random.default_rng([seed, zlib.crc32(f"{name or 'overall'}\0{band}".encode())])
                chosen = sorted(rng.choice(sizes[b], size=k, replace=False).tolist())
                picked.extend((place, band, k / sizes[b]) for place in _ranked(cells[(code, b)], chosen))
        bands_drawn = dict(zip(names, zip(sizes, per_band, strict=True), strict=True))
        rows = stratum_rows[code]
        strata.append(
            StratumDraw(name or "overall", rows, rows / log.rows, d, low, n, bands_drawn, d < floor)
        )
    wanted: dict[tuple[int, int], list[int]] = {}
    for (frequency, stratum, rank), _, _ in picked:
        wanted.setdefault((frequency, stratum), []).append(rank)
    texts = {level: iter(found) for level, found in distinct.pick(wanted).items()}
    drawn: list[DrawnQuery] = []
    for (frequency, stratum, _), band, inclusion in picked:
        key, text = next(texts[(frequency, stratum)])
        values = distinct.values[stratum]
        fields = dict(zip(log.fields, values, strict=True))
        fields[BAND] = band
        drawn.append(DrawnQuery(_query_id(key, values), text, fields, frequency, inclusion))
    totals = {band: (0, 0) for band in names}
    for (_, b), runs in cells.items():
        queries, rows = totals[names[b]]
        added = sum(run.queries for run in runs), sum(run.frequency * run.queries for run in runs)
        totals[names[b]] = (queries + added[0], rows + added[1])
    covered = sum(q.frequency for q in drawn) / log.rows
    return QueryDraw(tuple(strata), tuple(drawn), totals, covered)
