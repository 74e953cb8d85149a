"""The verdict rule: a pure function of paired comparisons and the thresholds declared before the run.

With Δ the mean paired difference (candidate - incumbent), CI its bootstrap interval and m the margin:

========  =============================================================================================
BETTER    CI lower > 0 and Δ ≥ m
WORSE     CI upper < 0 and Δ ≤ -m
TIE       everything else, with exactly one reason, checked in this order (the first that applies wins):

          1. **below floor**: n < ``min_queries`` (for a weighted comparison, Kish's effective number of
             queries, `PairedComparison.floor_n`). Checked first: a stratum under the floor never passes
             or fails, whatever its numbers say (and none of its guards fails it either).
          2. **equivalent**: the CI lies strictly inside (-m, +m). The strongest statement a tie can make:
             any difference is smaller than the margin, at the stated confidence.
          3. **within margin**: |Δ| < m, but the CI reaches beyond ±m, so a difference of the margin's size
             is not ruled out. The reason gives the minimum detectable effect and the queries needed.
          4. **unresolved**: everything else, normally |Δ| ≥ m with a CI that covers 0: the observed
             difference is large but not distinguishable from noise. The reason gives the minimum
             detectable effect and ``paired_n(m, sd, alpha=1 - confidence)`` queries needed.
========  =============================================================================================

Boundaries: Δ exactly m (or -m) counts as BETTER (WORSE) when the CI excludes 0, so the margin itself is
a meaningful difference; the equivalence band is open, so a CI ending exactly at ±m is not equivalent.

A number that is not a number never passes: a comparison whose Δ or interval is NaN is a TIE only when it
says why (its ``note``: too few pairs for an interval), and otherwise raises `NotANumber`, as does a NaN
size held against the floor; a NaN in every comparison below fails closed (a NaN sign-test p disagrees).

A guard metric fails its stratum (final verdict WORSE, the reason naming the guard) when it is WORSE by
the same rule with its own margin, whatever the primary metric says; a guard that is a TIE or BETTER
changes nothing. When the final verdict is BETTER or WORSE, ``sign_disagrees`` says whether the sign test
fails to back it (p ≥ 1 - confidence, or more queries moved the other way).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from pytest_embeval.core.stats import MDE_POWER, PairedComparison, paired_n, z_sum

__all__ = [
    "MULTIPLE_COMPARISONS",
    "ROUGH_BELOW",
    "GuardOutcome",
    "MetricRuling",
    "NotANumber",
    "StratumRuling",
    "TieReason",
    "Verdict",
    "classify_metric",
    "decide",
    "decide_metric",
    "family_levels",
    "familywise_error",
    "sign_test_disagrees",
]

#: How the strata of one golden file are adjusted for being tested together.
MULTIPLE_COMPARISONS: tuple[str, ...] = ("none", "holm", "bonferroni")
#: Fewer queries than this whose scores differ, and a reason says that the interval rests on few queries.
ROUGH_BELOW = 10


class NotANumber(ValueError):
    """A comparison whose numbers are not numbers without a stated reason: an error, never a verdict."""


class Verdict(str, Enum):
    BETTER = "BETTER"
    WORSE = "WORSE"
    TIE = "TIE"


class TieReason(str, Enum):
    """Why a comparison is a tie; the members are listed in precedence order."""

    BELOW_FLOOR = "below floor"
    EQUIVALENT = "equivalent"
    WITHIN_MARGIN = "within margin"
    UNRESOLVED = "unresolved"


@dataclass(frozen=True, slots=True)
class MetricRuling:
    """The rule applied to one metric: its verdict and a sentence a person can act on."""

    verdict: Verdict
    tie_reason: TieReason | None  # None unless verdict is TIE
    detail: str  # the numbers behind the verdict
    queries_needed: int | None  # within margin / unresolved: paired_n(margin, sd, 1 - confidence)

    @property
    def reason(self) -> str:
        """``"<label>: <detail>"``, e.g. ``"unresolved: CI [-0.012, +0.030] covers 0; ..."``."""
        label = self.tie_reason.value if self.tie_reason is not None else self.verdict.value.lower()
        return f"{label}: {self.detail}"


@dataclass(frozen=True, slots=True)
class GuardOutcome:
    metric: str
    margin: float
    comparison: PairedComparison
    verdict: Verdict  # the guard's own verdict under its margin
    reason: str
    failed: bool  # WORSE, in a stratum at or above the floor: the stratum fails
    sign_disagrees: bool = False  # the sign test does not back the guard's BETTER/WORSE


@dataclass(frozen=True, slots=True)
class StratumRuling:
    """The verdict rule applied to one stratum (`decide`): its final verdict, the reason, what it rests on.

    Not the golden file's declared ``decision:`` (to proceed, route or change the target), which
    `run.decision` reaches from every stratum's ruling."""

    verdict: Verdict  # final verdict of the stratum (WORSE if a guard failed)
    reason: str
    primary: Verdict  # the primary metric's own verdict
    guards: tuple[GuardOutcome, ...]
    sign_disagrees: bool  # final BETTER/WORSE not backed by the sign test of the deciding comparison(s)
    queries_needed: int | None  # primary within margin / unresolved: paired_n(tie_margin, sd, alpha)
    tie_reason: TieReason | None = None  # set when the final verdict is TIE


_NO_GUARDS: Mapping[str, tuple[PairedComparison, float]] = MappingProxyType({})


def _check_margin(value: float, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_min_queries(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"min_queries must be an integer >= 0, got {value!r}")
    return int(value)


def classify_metric(c: PairedComparison, *, tie_margin: float, min_queries: int) -> MetricRuling:
    """Apply the verdict table to one comparison (see the module docstring for the TIE precedence)."""
    return _classify(c, _check_margin(tie_margin, "tie_margin"), _check_min_queries(min_queries))


def decide_metric(c: PairedComparison, *, tie_margin: float, min_queries: int) -> tuple[Verdict, str]:
    """``(verdict, reason)`` of one metric under its margin; see ``classify_metric``."""
    ruling = classify_metric(c, tie_margin=tie_margin, min_queries=min_queries)
    return ruling.verdict, ruling.reason


def sign_test_disagrees(c: PairedComparison, verdict: Verdict) -> bool:
    """Whether the sign test fails to back a BETTER/WORSE verdict (always False for a TIE).

    It disagrees when its p is at least 1 - confidence, or when wins and losses point the other way
    (more losses than wins behind a BETTER, more wins than losses behind a WORSE): a few large moves
    then drive the mean, and the report lists them.
    """
    if verdict is Verdict.TIE:
        return False
    if not c.sign_p < 1.0 - c.confidence:
        return True
    return c.losses > c.wins if verdict is Verdict.BETTER else c.wins > c.losses


def decide(
    primary: PairedComparison,
    *,
    tie_margin: float,
    min_queries: int,
    guards: Mapping[str, tuple[PairedComparison, float]] = _NO_GUARDS,
    primary_metric: str = "the primary metric",
) -> StratumRuling:
    """The stratum's verdict: the primary metric's, unless a guard is WORSE under its own margin.

    ``guards`` maps a guard metric's name to its comparison on this stratum and its margin; guards are
    reported in the mapping's order, and ``primary_metric`` names the primary in a guard failure's reason.
    A stratum below the floor is a TIE whatever its guards say. Raises ``ValueError`` for a negative or
    non-finite margin or a negative ``min_queries``.
    """
    margin = _check_margin(tie_margin, "tie_margin")
    floor = _check_min_queries(min_queries)
    checked = [(name, c, _check_margin(m, f"margin of guard {name!r}")) for name, (c, m) in guards.items()]

    main = _classify(primary, margin, floor)
    below_floor = main.tie_reason is TieReason.BELOW_FLOOR
    outcomes: list[GuardOutcome] = []
    failures: list[str] = []
    for name, c, guard_margin in checked:
        g = _classify(c, guard_margin, floor)
        failed = g.verdict is Verdict.WORSE and not below_floor
        outcomes.append(
            GuardOutcome(
                metric=name,
                margin=guard_margin,
                comparison=c,
                verdict=g.verdict,
                reason=g.reason,
                failed=failed,
                sign_disagrees=sign_test_disagrees(c, g.verdict),
            )
        )
        if failed:
            failures.append(f"guard {name} WORSE by its own {guard_margin:g} margin: {g.detail}")
    if failures:
        if main.verdict is Verdict.TIE:
            alone = f"{primary_metric} alone would tie ({main.reason})"
        else:
            alone = f"{primary_metric} alone would be {main.verdict.value}: {main.detail}"
        return StratumRuling(
            verdict=Verdict.WORSE,
            reason=f"{'; '.join(failures)}; {alone}",
            primary=main.verdict,
            guards=tuple(outcomes),
            sign_disagrees=any(g.sign_disagrees for g in outcomes if g.failed),
            queries_needed=None,
        )
    return StratumRuling(
        verdict=main.verdict,
        reason=main.reason,
        primary=main.verdict,
        guards=tuple(outcomes),
        sign_disagrees=sign_test_disagrees(primary, main.verdict),
        queries_needed=main.queries_needed,
        tie_reason=main.tie_reason,
    )


def _queries_needed(c: PairedComparison, margin: float) -> int | None:
    """Queries for an MDE of ``margin``: `stats.paired_n` from the sd, or under a design more queries drawn
    from the comparison's cells, whose finite populations `sample_design.DesignCells.queries_needed`
    counts (None when the present draw reaches it)."""
    alpha = 1.0 - c.confidence
    if c.design is None:
        return paired_n(margin, c.sd, alpha=alpha)
    return c.design.queries_needed(margin, z_sum(alpha, MDE_POWER))


def _decimals(*values: float) -> int:
    """Fewest decimals, from 3 to 6, that keep the compared values apart, so that a sentence never reads
    "0.030 < 0.030" when Δ is 0.02999."""
    finite = [v for v in values if math.isfinite(v)]
    for k in range(3, 7):
        if len({round(v, k) for v in finite}) == len(set(finite)):
            return k
    return 6


def _classify(c: PairedComparison, m: float, floor: int) -> MetricRuling:
    n, delta, low, high = c.n, c.delta, c.ci_low, c.ci_high
    k = _decimals(delta, low, high, m, -m)

    def signed(x: float) -> str:
        return f"{x:+.{k}f}"

    def plain(x: float) -> str:
        return f"{x:.{k}f}"

    ci = f"CI [{signed(low)}, {signed(high)}]"
    note = f"; {c.note}" if c.note else ""
    if 0 < c.effective_n < ROUGH_BELOW:
        note += f"; only {c.effective_n} of {n} queries differ: the interval rests on few queries"
    if math.isnan(c.floor_n):
        raise NotANumber(f"the number of queries held against min_queries is not a number (n={n})")
    if c.floor_n < floor:
        counted = f"n={n}" if c.kish_n is None else f"traffic-weighted n={n} counts as {c.kish_n:.1f} (Kish)"
        return MetricRuling(
            Verdict.TIE,
            TieReason.BELOW_FLOOR,
            f"{counted} < min_queries={floor}; a stratum under the floor never passes or fails{note}",
            None,
        )
    # Weighted: the Kish effective number beside n wherever n is named.
    sized = f"n={n}" if c.kish_n is None else f"n={n}, Kish {c.kish_n:.1f}"
    if not (math.isfinite(delta) and math.isfinite(low) and math.isfinite(high)):
        if c.note is None:
            raise NotANumber(f"no finite interval ({ci}, Δ {delta}, {sized}) and no reason why")
        return MetricRuling(Verdict.TIE, TieReason.UNRESOLVED, c.note, None)
    if low > 0 and delta >= m:
        detail = f"Δ {signed(delta)} ≥ {plain(m)} and {ci} excludes 0 ({sized}{note})"
        return MetricRuling(Verdict.BETTER, None, detail, None)
    if high < 0 and delta <= -m:
        detail = f"Δ {signed(delta)} ≤ {plain(-m)} and {ci} excludes 0 ({sized}{note})"
        return MetricRuling(Verdict.WORSE, None, detail, None)
    if -m < low and high < m:
        detail = f"{ci} lies inside ±{plain(m)} ({sized}{note})"
        return MetricRuling(Verdict.TIE, TieReason.EQUIVALENT, detail, None)

    needed = None
    if m > 0 and math.isfinite(c.sd) and c.sd > 0:
        needed = _queries_needed(c, m)
        if needed is not None and needed <= n:
            # n already detects a margin-sized difference with 80 % power: more queries are not the remedy.
            needed = None
    resolution = f"MDE {c.mde:.3f} at {sized}"
    if needed is not None:
        resolution += f"; ~{needed} queries needed to resolve a {plain(m)} margin"
    resolution += note
    if abs(delta) < m:
        if low > 0 or high < 0:
            side = signed(-m) if high < 0 else signed(m)
            detail = (
                f"|Δ| {plain(abs(delta))} < {plain(m)}; {ci} excludes 0 and reaches past {side}: a real "
                f"difference, not shown to be smaller than the margin; {resolution}"
            )
        else:
            detail = f"|Δ| {plain(abs(delta))} < {plain(m)} but {ci} is not inside ±{plain(m)}; {resolution}"
        return MetricRuling(Verdict.TIE, TieReason.WITHIN_MARGIN, detail, needed)
    if low <= 0 <= high:
        detail = f"{ci} covers 0; {resolution}"
    else:  # only for a Δ outside its own interval, which a bootstrap of real data does not produce
        detail = f"Δ {signed(delta)} lies outside its {ci}; {resolution}"
    return MetricRuling(Verdict.TIE, TieReason.UNRESOLVED, detail, needed)


# ------------------------------------------------------------------------------------------------------
# A family of strata


def family_levels(p_values: Sequence[float | None], *, alpha: float, method: str) -> tuple[float | None, ...]:
    """The level (``1 - confidence``) at which each stratum's intervals decide, so that the strata's
    decisions are those of ``method`` at family-wise level ``alpha``.

    ``p_values`` holds one entry per stratum, None for a stratum outside the family (below the floor, or
    without an interval): it gets None. The family size m counts the others.

    - ``none``: every member at ``alpha`` (the chance of at least one false verdict grows with m; see
      :func:`familywise_error`);
    - ``bonferroni``: every member at ``alpha / m``;
    - ``holm``: the step-down procedure. Sorted by p (ties in stratum order), the member of rank r gets
      ``alpha / (m - r + 1)`` until the first rank j whose p is not below its level; it and every later
      member get ``alpha / (m - j + 1)``, which none of their p-values (all at least p_(j)) is below. So a
      member's interval at its level excludes 0 exactly when Holm rejects its null.

    The p-values must be those that invert the intervals (``PairedComparison.p_value``: p < a exactly when
    the interval at confidence 1 - a, from the same resamples, excludes 0). That is what makes a stratum's
    printed interval, computed at its adjusted level, agree with the family's decision; the sign test's p
    tests another hypothesis (the median difference, not the mean) and could contradict the interval.
    """
    if method not in MULTIPLE_COMPARISONS:
        raise ValueError(f"method must be one of {', '.join(MULTIPLE_COMPARISONS)}, got {method!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a number strictly between 0 and 1, got {alpha!r}")
    members: dict[int, float] = {}
    for i, p in enumerate(p_values):
        if p is None:
            continue
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
            raise ValueError(f"p_values[{i}] must be a number in [0, 1] or None, got {p!r}")
        members[i] = float(p)
    levels: list[float | None] = [None] * len(p_values)
    m = len(members)
    if method == "holm":
        stopped: float | None = None
        for rank, i in enumerate(sorted(members, key=lambda i: (members[i], i)), start=1):
            level = alpha / (m - rank + 1)
            if stopped is None and not members[i] < level:
                stopped = level
            levels[i] = level if stopped is None else stopped
    else:
        for i in members:
            levels[i] = alpha / m if method == "bonferroni" else float(alpha)
    return tuple(levels)


def familywise_error(alpha: float, size: int) -> float:
    """``1 - (1 - alpha) ** size``: the chance of at least one false verdict among ``size`` independent
    tests at level ``alpha`` when nothing differs. Strata of one golden set overlap (``overall`` holds the
    others), which makes their tests positively dependent and the true chance somewhat lower."""
    return 1.0 - (1.0 - alpha) ** size
