"""The design a golden set's queries were drawn with, read from the draw sidecar ``embeval sample`` wrote
beside its queries file (`draws`): each query's (stratum, band) cell and each cell's distinct queries.

``embeval sample`` records, per stratum of its ``by`` fields, each band's distinct queries and how many it
drew (`query_log.StratumDraw.record`); each query of the file carries its ``by`` fields, its ``band`` and
its ``inclusion``, the cell's sampled over distinct. `drawn_design` puts the two together into a
`core.sample_design.SampleDesign`, so that a traffic-weighted run (``weights: frequency``) uses the variance
of the draw that was made. A file that no longer matches its sidecar (a query added or removed, a field or
an inclusion changed) is refused, naming the first difference: the design would then describe another set,
and falling back to the with-replacement interval without saying so would hide it. The file's own sha256
may differ (a typo fixed in a query's text changes no cell).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_embeval.core.sample_design import SampleDesign
from pytest_embeval.golden.data_files import GoldenError, Query
from pytest_embeval.golden.draws import draw_path
from pytest_embeval.golden.query_files import read_queries
from pytest_embeval.golden.query_log import BAND

__all__ = ["drawn_design"]

_REMEDY = "draw the queries again with embeval sample, or remove the sidecar to weigh them without a design"


def _cells(
    sidecar: Path, record: Mapping[str, Any]
) -> tuple[list[str], dict[tuple[str, str], tuple[int, int]]]:
    """The ``by`` fields and each (stratum, band) cell drawn from: (distinct queries, sampled)."""
    by, strata = record.get("by"), record.get("strata")
    if (
        not isinstance(by, list)
        or not all(isinstance(name, str) for name in by)
        or not isinstance(strata, list)
    ):
        raise GoldenError(
            sidecar, "by", None, "not a sample draw: expected 'by' (a list of fields) and 'strata'"
        )
    cells: dict[tuple[str, str], tuple[int, int]] = {}
    for i, stratum in enumerate(strata):
        bands = stratum.get("bands") if isinstance(stratum, dict) else None
        name = stratum.get("stratum") if isinstance(stratum, dict) else None
        if not isinstance(name, str) or not isinstance(bands, dict):
            raise GoldenError(
                sidecar, f"strata[{i}]", None, "expected 'stratum' and 'bands', as embeval sample writes"
            )
        for band, sizes in bands.items():
            distinct = sizes.get("distinct") if isinstance(sizes, dict) else None
            sampled = sizes.get("sampled") if isinstance(sizes, dict) else None
            if not (isinstance(distinct, int) and isinstance(sampled, int) and 0 <= sampled <= distinct):
                problem = "expected 'distinct' and 'sampled' counts, as embeval sample writes"
                raise GoldenError(sidecar, f"strata[{i}].bands.{band}", None, problem)
            if sampled:
                cells[(name, band)] = (distinct, sampled)
    return list(by), cells


def _stratum(by: Sequence[str], fields: Mapping[str, str]) -> str:
    """The stratum name ``embeval sample`` gives these field values: ``field=value, ...`` or ``overall``."""
    return ", ".join(f"{name}={fields[name]}" for name in by) or "overall"


def _cell_name(by: Sequence[str], stratum: str, band: str) -> str:
    """A cell as reports name it: its stratum, and its band unless the stratum names it already."""
    return stratum if BAND in by else f"{stratum}, {BAND}={band}"


def drawn_design(path: Path, queries: Sequence[Query], record: Mapping[str, Any]) -> SampleDesign:
    """The design of ``queries`` (those of the queries file ``path``, in its order) from its sample draw
    ``record``; `GoldenError` naming the file and the first difference when they no longer match."""
    sidecar = draw_path(path)
    by, cells = _cells(sidecar, record)
    fields = [*(name for name in by if name != BAND), BAND]
    try:
        rows = read_queries(path, fields)
    except GoldenError as error:
        problem = f"{error.problem}; {sidecar.name} drew the queries by it: {_REMEDY}"
        raise GoldenError(error.path, error.key, error.line, problem) from None

    def mismatch(problem: str) -> GoldenError:
        return GoldenError(
            path, None, None, f"{problem}: the file no longer matches {sidecar.name}; {_REMEDY}"
        )

    read = {row.id: row for row in rows}
    names = []
    for query in queries:
        row = read[query.id]
        key = (_stratum(by, row.fields), row.fields[BAND])
        cell = _cell_name(by, *key)
        if key not in cells:
            raise mismatch(f"query {query.id!r} is in {cell}, a cell the draw took no query from")
        distinct, sampled = cells[key]
        if query.inclusion is None or not math.isclose(query.inclusion, sampled / distinct, rel_tol=1e-9):
            shown = "none" if query.inclusion is None else f"{query.inclusion:g}"
            raise mismatch(
                f"query {query.id!r} has inclusion {shown}, but its cell {cell} was drawn {sampled} of "
                f"{distinct} ({sampled / distinct:g})"
            )
        names.append(cell)
    counted = Counter(names)
    population: dict[Hashable, int] = {}
    for (stratum, band), (distinct, sampled) in cells.items():
        cell = _cell_name(by, stratum, band)
        if counted[cell] != sampled:
            raise mismatch(f"the draw took {sampled} queries from {cell}, the file has {counted[cell]}")
        population[cell] = distinct
    return SampleDesign(tuple(names), population)
