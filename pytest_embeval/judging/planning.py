"""How big a golden set must be: per stratum, n, the minimum detectable effect and the queries needed to
resolve the tie margin, with an assumed or an observed paired standard deviation.

On a traffic-weighted set drawn by ``embeval sample`` (``weights: frequency`` and the draw's design,
`GoldenSet.design`) both come from the design's variance of the weighted mean, each query's difference
taken to spread by the sd: ``V = sd² Σ_h (1 - f_h) Σ_{i in h} w_i² / (Σ w)²`` over the stratum's cells h
(its queries with a judgment, weighted by traffic over inclusion; a cell drawn whole adds nothing). The MDE
is ``(z_{1-alpha/2} + z_power) sqrt(V)``; the queries needed are those at which it reaches the margin,
drawing more from every cell in proportion, up to its population (`sample_design.DesignCells`). The
observed sd is then the stratum's unweighted one: the spread of a single query's difference."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_embeval.core.sample_design import DesignCells, cell_layout, design_words
from pytest_embeval.core.stats import minimum_detectable_effect, paired_n, z_sum
from pytest_embeval.core.text_table import table
from pytest_embeval.golden.schema import GoldenSet, Stratum

__all__ = ["DEFAULT_POWER", "DEFAULT_SD", "PlanRow", "observed_sd", "plan", "plan_lines"]

#: Paired standard deviation assumed by `plan` when no run has measured one (a typical per-query spread of
#: recall/nDCG differences between two embedding models).
DEFAULT_SD = 0.15
DEFAULT_POWER = 0.8


@dataclass(frozen=True, slots=True)
class PlanRow:
    stratum: str
    #: queries with at least one relevant judgment (the others are excluded from the comparison)
    n: int
    sd: float
    #: whether ``sd`` was observed in a run (else assumed)
    observed: bool
    #: minimum detectable effect at the declared confidence and the power; None with no query
    mde: float | None
    #: queries needed to detect a difference of ``tie_margin``; None when the margin is 0
    needed: int | None

    @property
    def to_add(self) -> int | None:
        return None if self.needed is None else max(0, self.needed - self.n)


def observed_sd(record: Mapping[str, Any], *, per_query: bool = False) -> dict[str, float]:
    """Stratum -> paired standard deviation of the primary metric, from a golden-set entry of the report
    (strata whose sd is unknown, n < 2, are left out); ``per_query``: of a single query's difference, the
    unweighted sd of a weighted stratum (a design's sd is its standard error's, not a query's)."""
    strata = record.get("strata")
    if not isinstance(strata, list):
        return {}
    found = {}
    for s in strata:
        if not isinstance(s, dict):
            continue
        source = s.get("unweighted", s) if per_query else s
        sd = source.get("sd") if isinstance(source, dict) else None
        if isinstance(sd, (int, float)) and math.isfinite(sd):
            found[str(s["stratum"])] = float(sd)
    return found


def plan(
    golden: GoldenSet,
    *,
    sd: float = DEFAULT_SD,
    observed: Mapping[str, float] | None = None,
    power: float = DEFAULT_POWER,
) -> tuple[PlanRow, ...]:
    """Per stratum: n, the minimum detectable effect and the queries needed to resolve ``tie_margin``, at
    the golden set's confidence (alpha = 1 - confidence) and ``power``. A stratum's sd is the ``observed``
    one when given (see `observed_sd`), else ``sd``."""
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not 0 <= sd < math.inf:
        raise ValueError(f"sd must be a finite number >= 0, got {sd!r}")
    alpha = 1.0 - golden.confidence
    level = golden.relevance_level
    relevant = {qid for qid, docs in golden.qrels.items() if any(grade >= level for grade in docs.values())}
    measured = observed or {}
    rows = []
    for stratum in golden.strata():
        n = sum(1 for qid in stratum.query_ids if qid in relevant)
        spread = measured.get(stratum.name, sd)
        cells = _design_cells(golden, stratum, relevant, spread)
        mde: float | None = None
        needed: int | None = None
        if cells is not None and n:
            z = z_sum(alpha, power)
            mde = z * math.sqrt(cells.variance_at(sum(cells.sampled)))
            if golden.tie_margin:
                # None from the cells: the present draw reaches the margin already
                needed = cells.queries_needed(golden.tie_margin, z) or n
        else:
            mde = minimum_detectable_effect(spread, n, alpha=alpha, power=power) if n else None
            if golden.tie_margin:
                needed = paired_n(golden.tie_margin, spread, alpha=alpha, power=power)
        rows.append(
            PlanRow(
                stratum=stratum.name,
                n=n,
                sd=spread,
                observed=stratum.name in measured,
                mde=mde,
                needed=needed,
            )
        )
    return tuple(rows)


def _design_cells(
    golden: GoldenSet, stratum: Stratum, relevant: set[str], spread: float
) -> DesignCells | None:
    """The stratum's cells with their unit variances for a query spread of ``spread`` (module docstring);
    None without a design."""
    weights = golden.query_weights()
    if golden.design is None or weights is None:
        return None
    position = {query.id: i for i, query in enumerate(golden.queries)}
    rows = np.array([position[qid] for qid in stratum.query_ids], dtype=np.intp)
    keep = np.array([qid in relevant for qid in stratum.query_ids], dtype=bool)
    if not keep.any():
        return None
    layout = cell_layout(golden.design.rows(rows), keep)
    w = np.asarray(weights, dtype=np.float64)[rows][keep][layout.rows]
    w = w / w.max()
    squares = np.add.reduceat(w * w, layout.starts[:-1])
    unit = np.where(layout.whole, 0.0, spread**2 * layout.sampled * squares / float(w.sum()) ** 2)
    return DesignCells(
        present=tuple(int(k) for k in layout.present),
        sampled=tuple(int(k) for k in layout.sampled),
        population=tuple(int(k) for k in layout.population),
        unit_variance=tuple(float(g) for g in unit),
    )


def plan_lines(golden: GoldenSet, rows: Sequence[PlanRow], *, power: float = DEFAULT_POWER) -> list[str]:
    lines = [
        f"{golden.name}: {golden.metric}, tie margin {golden.tie_margin}, "
        f"confidence {golden.confidence:.0%}, power {power:.0%}, min_queries {golden.min_queries}"
    ]
    cells = []
    for row in rows:
        cells.append(
            [
                row.stratum,
                str(row.n),
                f"{row.sd:.3f} {'observed' if row.observed else 'assumed'}",
                "—" if row.mde is None else f"{row.mde:.3f}",
                "—" if row.needed is None else str(row.needed),
                "—" if row.to_add is None else str(row.to_add),
            ]
        )
    lines += table(["stratum", "n", "sd", "MDE", "needed", "to add"], cells)
    lines.append(
        "MDE: the smallest true difference detected with that power; needed: queries with a relevant "
        "judgment to detect a difference of the tie margin."
    )
    if golden.design is not None and golden.weights is not None:
        lines.append(
            f"{design_words(golden.design.record())}: the MDE and queries needed are those of the traffic-"
            "weighted mean under the draw (sd: of one query's difference; needed: drawing more from every "
            "cell in proportion, up to its distinct queries)."
        )
    if golden.tie_margin == 0:
        lines.append("tie_margin is 0: there is no margin to resolve, so no query count is given.")
    if any(row.n < golden.min_queries for row in rows):
        lines.append(f"strata with n < {golden.min_queries} (min_queries) always end as TIE (below floor).")
    return lines
