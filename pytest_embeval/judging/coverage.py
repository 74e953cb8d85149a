"""Coverage of the judgments: each arm's judged@k per stratum, and a warning when one arm is much less judged
than another (its results were not pooled, so its scores are biased down); of it, the share that is a
trusted seed's claim rather than a grade (seeded@k, see `seeds`)."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_embeval.core.metrics import NoRelevantDocumentsWarning, per_query
from pytest_embeval.core.text_table import table
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.rankings import Pair, Rankings, check_rankings

__all__ = [
    "DEFAULT_COVERAGE_GAP",
    "CoverageRow",
    "coverage",
    "coverage_lines",
    "coverage_warnings",
    "pool_command",
]

#: An arm whose top k is judged this much less (as a share of k) than another arm's was not pooled.
DEFAULT_COVERAGE_GAP = 0.10

# Float slack for "more than 10 points": 0.95 - 0.85 must not count as a gap above 0.10.
_EPSILON = 1e-9


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


@dataclass(frozen=True, slots=True)
class CoverageRow:
    stratum: str
    arm: str
    k: int
    #: queries in the stratum
    n: int
    #: mean judged@k: the share of the arm's top k that carries a judgment (any grade)
    judged: float
    #: of it, the share of the top k whose judgment is a trusted seed, nobody's grade (seeded@k)
    seeded: float = 0.0


def coverage(
    golden: GoldenSet, rankings: Rankings, *, k: int, seeded: Collection[Pair] = ()
) -> tuple[CoverageRow, ...]:
    """Each arm's mean judged@k per stratum (strata in golden order, arms in the given order), and of it
    the share of the ``seeded`` pairs (judgments that are trusted seeds: `provenance.Source.by_seed`).

    Every query of the stratum counts, those without a relevant judgment too: they are the ones a missing
    pool hurts most. Raises ``ValueError`` as `pool_from_rankings` does for bad rankings.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    check_rankings(golden, rankings, None)
    query_ids = [query.id for query in golden.queries]
    position = {qid: i for i, qid in enumerate(query_ids)}
    judged: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        # judged@k is defined for queries without a relevant document; the warning is about other metrics.
        warnings.simplefilter("ignore", NoRelevantDocumentsWarning)
        for arm in rankings:
            judged[arm] = per_query(
                f"judged@{k}", rankings[arm], golden.qrels, query_ids, relevance_level=golden.relevance_level
            )
    seeds = set(seeded)
    seeded_share = {
        arm: np.array([sum((qid, doc) in seeds for doc in rankings[arm][qid][:k]) / k for qid in query_ids])
        for arm in rankings
    }
    rows = []
    for stratum in golden.strata():
        index = [position[qid] for qid in stratum.query_ids]
        for arm, values in judged.items():
            rows.append(
                CoverageRow(
                    stratum.name,
                    arm,
                    k,
                    len(index),
                    float(np.mean(values[index])),
                    float(np.mean(seeded_share[arm][index])),
                )
            )
    return tuple(rows)


def coverage_lines(rows: Sequence[CoverageRow]) -> list[str]:
    """A table: one row per stratum, one judged@k column per arm, and when some judgment in a top k is a
    trusted seed one seeded@k column per arm (the part of judged@k that is a seed's claim, not a grade)."""
    arms = list(dict.fromkeys(row.arm for row in rows))
    strata: dict[str, dict[str, CoverageRow]] = {}
    for row in rows:
        strata.setdefault(row.stratum, {})[row.arm] = row
    k = rows[0].k
    seeded = any(row.seeded for row in rows)
    cells = [
        [
            name,
            str(next(iter(by_arm.values())).n),
            *(_percent(by_arm[arm].judged) for arm in arms),
            *(_percent(by_arm[arm].seeded) for arm in arms if seeded),
        ]
        for name, by_arm in strata.items()
    ]
    header = [f"{arm} judged@{k}" for arm in arms] + [f"{arm} seeded@{k}" for arm in arms if seeded]
    return table(["stratum", "n", *header], cells)


def pool_command(golden_path: str, report_path: str | None) -> str:
    """The command that pools a run's arms into a sheet for the judges: from its JSON report when there is
    one, else a rerun with the plugin's ``--embeval-pool``."""
    if report_path is None:
        return "pytest --embeval --embeval-pool DIR (writes the sheet into DIR)"
    return f"embeval pool {golden_path} --from-report {report_path} --out SHEET.csv"


def coverage_warnings(
    rows: Sequence[CoverageRow],
    *,
    golden_path: str,
    report_path: str | None,
    threshold: float = DEFAULT_COVERAGE_GAP,
) -> list[str]:
    """One warning per arm whose judged@k trails the best-judged arm by more than ``threshold`` (a share of
    k, 0.10 = 10 points) in some stratum: its results were not pooled, so its score is biased down (an
    unjudged document counts as non-relevant). The warning lists the strata and the commands that fix it
    (`pool_command`, then ``embeval merge``).
    """
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    strata: dict[str, list[CoverageRow]] = {}
    for row in rows:
        strata.setdefault(row.stratum, []).append(row)
    behind: dict[str, list[str]] = {}
    for name, arms in strata.items():
        best = max(arms, key=lambda row: row.judged)
        for row in arms:
            if not best.judged - row.judged <= threshold + _EPSILON:  # NaN: not shown to be judged
                behind.setdefault(row.arm, []).append(
                    f"{name}: {_percent(row.judged)} vs {best.arm} {_percent(best.judged)}"
                )
    fix = (
        f"{pool_command(golden_path, report_path)}, grade the sheet, "
        f"then embeval merge {golden_path} SHEET.csv"
    )
    return [
        f"{arm}'s top {rows[0].k} is less judged than another arm's by more than "
        f"{100 * threshold:.0f} points ({'; '.join(where)}): {arm} has not been pooled, so its scores "
        f"are biased down. Fix: {fix}"
        for arm, where in behind.items()
    ]
