"""How big a golden set must be: per stratum, n, the minimum detectable effect and the queries needed to
resolve the tie margin, with an assumed or an observed paired standard deviation."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_embeval.core.stats import minimum_detectable_effect, paired_n
from pytest_embeval.core.text_table import table
from pytest_embeval.golden.schema import GoldenSet

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


def observed_sd(record: Mapping[str, Any]) -> dict[str, float]:
    """Stratum -> paired standard deviation of the primary metric, from a golden-set entry of the report
    (strata whose sd is unknown, n < 2, are left out)."""
    strata = record.get("strata")
    if not isinstance(strata, list):
        return {}
    return {
        str(s["stratum"]): float(s["sd"])
        for s in strata
        if isinstance(s, dict) and isinstance(s.get("sd"), (int, float)) and math.isfinite(s["sd"])
    }


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
        rows.append(
            PlanRow(
                stratum=stratum.name,
                n=n,
                sd=spread,
                observed=stratum.name in measured,
                mde=minimum_detectable_effect(spread, n, alpha=alpha, power=power) if n else None,
                needed=paired_n(golden.tie_margin, spread, alpha=alpha, power=power)
                if golden.tie_margin
                else None,
            )
        )
    return tuple(rows)


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
    if golden.tie_margin == 0:
        lines.append("tie_margin is 0: there is no margin to resolve, so no query count is given.")
    if any(row.n < golden.min_queries for row in rows):
        lines.append(f"strata with n < {golden.min_queries} (min_queries) always end as TIE (below floor).")
    return lines
