"""Paired comparison of two per-query score arrays: bootstrap interval, sign test, power.

Everything here works on the *differences* ``candidate - incumbent`` of one query set scored under both
arms, so the between-query variance (some queries are hard for every model) cancels before anything is
averaged. Inputs are validated up front (``ValueError`` naming the offending value) and kept apart from
the algorithms, in the manner of ``scipy.stats``; randomness comes only from an explicit
``numpy.random.Generator``, and resampling from :mod:`pytest_embeval.core.resampling`.

Two intervals for the mean difference Δ, both from pairs resampled as units:

``studentized`` (the default)
    The symmetric studentized bootstrap (bootstrap-t; Hall 1988, Efron & Tibshirani 1993 §12.5):
    ``Δ ± w * sd / sqrt(n)``, with ``w`` the ``confidence`` quantile of ``|t*|``, where
    ``t* = (Δ* - Δ) / (sd* / sqrt(n))`` over the resamples. It calibrates the width on the data's own
    studentized statistic, so it widens where the percentile interval is too narrow: small n, and the
    lumpy, zero-heavy differences of per-query nDCG or recall. It was chosen by simulation against BCa,
    the expanded percentile interval and the equal-tailed studentized bootstrap (``benchmarks/README.md``).
``percentile``
    ``numpy.quantile`` (``'linear'``) of the resampled means at ``(1 -+ confidence) / 2``, what
    ``scipy.stats.bootstrap(..., method='percentile')`` returns and most published comparisons report.

Each comes with a bootstrap p-value for Δ = 0 that inverts it: ``p < 1 - c`` exactly when the interval at
confidence ``c`` (from the same resamples) excludes 0.

With ``weights`` (a query's traffic frequency), Δ is the weighted mean ``Σ w d / Σ w``, both arms' means
are weighted, and both intervals resample queries with their weights and recompute the ratio; the
studentized one divides by each resample's linearised standard error, and the reported sd is the sd of the
linearised values, which the minimum detectable effect uses as the unweighted one uses the sd
(:mod:`pytest_embeval.core.weighted_stats`). The sign test counts queries, not traffic.

With a ``design`` as well (`sample_design.SampleDesign`: the queries were drawn by cells, uniformly without
replacement in each, as ``embeval sample`` draws), the variance is the design's (the stratified
linearisation variance with each cell's finite-population correction, a cell drawn whole adding none), the
studentized interval resamples within the cells by Rao, Wu & Yue's rescaling bootstrap and is never
narrower than Student's t on Satterthwaite's degrees of freedom, the percentile interval takes the same
replicates' percentiles, and sd is the design's standard error times sqrt(n), so the MDE is the design's
(:mod:`pytest_embeval.core.design_variance`, ``bootstrap_intervals.StratifiedInterval``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import warnings
from collections import Counter
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

from pytest_embeval.core import weighted_stats
from pytest_embeval.core.bootstrap_intervals import (
    PercentileInterval,
    StudentizedInterval,
    bootstrap_interval,
    sample_sd,
    sorted_quantile,
)
from pytest_embeval.core.design_variance import design_cells, linearise
from pytest_embeval.core.sample_design import DesignCells, SampleDesign, cell_layout

__all__ = [
    "DEFAULT_INTERVAL",
    "EXACT_SIGN_TEST",
    "INTERVALS",
    "MDE_POWER",
    "DegenerateComparisonWarning",
    "PairedComparison",
    "binomial_sign_p",
    "compare_paired",
    "minimum_detectable_effect",
    "paired_bootstrap_ci",
    "paired_n",
    "sign_test",
    "sorted_quantile",
    "stable_seed",
    "z_sum",
]

FloatArray = NDArray[np.float64]

#: The intervals ``compare_paired`` computes, by the name a golden file gives them.
INTERVALS: tuple[str, ...] = ("studentized", "percentile")
DEFAULT_INTERVAL = "studentized"
#: The power at which a comparison's minimum detectable effect is reported.
MDE_POWER = 0.8
#: Untied pairs up to which the sign test is computed exactly in integers (under 10 ms); above, by
#: ``scipy.stats.binomtest``, whose import (about a second) is then small beside the run that needs it.
EXACT_SIGN_TEST = 5_000

_NEEDS_TWO = "too few paired queries for an interval"
_ALL_ZERO = "all paired differences are zero"
_UNBOUNDED = (
    "the studentized interval is unbounded (too many resamples have no spread): percentile interval of the "
    "same resamples"
)


class DegenerateComparisonWarning(UserWarning):
    """A paired comparison could not be computed normally (too few pairs, or no differences at all)."""


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """One metric compared on one stratum: plain Python numbers only, so it can cross processes (xdist)."""

    n: int  # pairs used (both arms finite)
    excluded: int  # pairs dropped because either arm was NaN (a query without relevance judgments)
    incumbent_mean: float
    candidate_mean: float
    delta: float  # mean(candidate - incumbent)
    ci_low: float  # bootstrap interval of delta at `confidence`
    ci_high: float
    confidence: float
    interval: str  # which interval ran: one of INTERVALS (percentile where a studentized one is unbounded)
    p_value: float  # bootstrap p of delta = 0 that inverts the interval: p < 1 - c iff CI_c excludes 0
    sd: float  # sample sd of the paired differences (ddof=1); with weights, of their linearised values
    wins: int  # queries where candidate > incumbent
    losses: int  # queries where candidate < incumbent
    sign_p: float  # exact two-sided binomial p of wins vs losses (ties dropped); 1.0 if none
    mde: float  # minimum detectable effect at alpha = 1 - confidence, power 0.8
    note: str | None  # why the comparison is degenerate, else None
    #: with weights: Kish's effective number of queries, (Σw)² / Σw², of the n pairs; None unweighted
    kish_n: float | None = None
    #: with a design: the cells the pairs fall in, whose variance the interval, sd and MDE use; None
    #: without one (unweighted, or weights alone: the with-replacement interval)
    design: DesignCells | None = None

    @property
    def effective_n(self) -> int:
        """Queries whose scores differ between the arms: all the interval can learn from."""
        return self.wins + self.losses

    @property
    def floor_n(self) -> float:
        """What ``min_queries`` is held against: n, or with weights Kish's effective number of queries (a
        weighted mean that rests on a few heavy queries is as uncertain as a mean of a few queries)."""
        return float(self.n) if self.kish_n is None else self.kish_n


# --------------------------------------------------------------------------------------------------------
# Input validation (kept apart from the algorithms).


def _as_scores(values: ArrayLike, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    infinite = np.flatnonzero(np.isinf(array))
    if infinite.size:
        i = int(infinite[0])
        raise ValueError(
            f"{name}[{i}] is {float(array[i])!r}; per-query scores must be finite "
            "(NaN marks a query excluded from both arms)"
        )
    return array


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_probability(value: float, name: str) -> float:
    if not _is_real(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def _check_n_resamples(n_resamples: int) -> int:
    if not _is_integer(n_resamples) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def _check_rng(rng: np.random.Generator) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def _check_workers(workers: int | None) -> int | None:
    if workers is not None and (not _is_integer(workers) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    return None if workers is None else int(workers)


def _check_nonnegative(value: float, name: str) -> float:
    if not _is_real(value) or not 0.0 <= float(value) < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_weights(weights: ArrayLike | None, size: int) -> FloatArray | None:
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (size,):
        raise ValueError(f"weights must be 1-D with one weight per pair ({size}), got shape {w.shape}")
    bad = np.flatnonzero(~(np.isfinite(w) & (w > 0)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"weights[{i}] is {float(w[i])!r}; weights must be finite numbers above 0")
    return w


def _check_design(design: SampleDesign | None, size: int, weighted: bool) -> SampleDesign | None:
    """The design of ``size`` queries: a cell per query, a population of at least 1 for every cell, and as
    many queries drawn from each as it holds here at least, and at most its population."""
    if design is None:
        return None
    if not isinstance(design, SampleDesign):
        raise TypeError(f"design must be a SampleDesign, got {type(design).__name__}")
    if not weighted:
        raise ValueError(
            "a design needs weights: each query's traffic over its inclusion probability (frequency / "
            "inclusion), whose weighted mean the design's variance is of"
        )
    if len(design.cells) != size:
        raise ValueError(f"design.cells must name one cell per pair ({size}), got {len(design.cells)}")
    counted = Counter(design.cells)
    drawn = design.drawn()
    for cell, here in counted.items():
        if cell not in design.population:
            raise ValueError(f"design.population has no entry for cell {cell!r}")
        population, sampled = design.population[cell], drawn.get(cell)
        if not _is_integer(population) or population < 1:
            raise ValueError(f"design.population[{cell!r}] must be an integer >= 1, got {population!r}")
        if sampled is None or not _is_integer(sampled) or not here <= sampled <= population:
            raise ValueError(
                f"design.sampled[{cell!r}] must be an integer between the {here} pairs of the cell and its "
                f"population ({population}), got {sampled!r}"
            )
    return design


def _check_differences(differences: ArrayLike) -> FloatArray:
    d = _as_scores(differences, "differences")
    missing = np.flatnonzero(np.isnan(d))
    if missing.size:
        raise ValueError(
            f"differences[{int(missing[0])}] is nan; drop NaN pairs first "
            "(compare_paired does, from both arms)"
        )
    return d


# --------------------------------------------------------------------------------------------------------
# Public API.


def _check_interval(interval: str) -> str:
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    return interval


def paired_bootstrap_ci(
    differences: ArrayLike,
    *,
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None = None,
    interval: str = DEFAULT_INTERVAL,
    weights: ArrayLike | None = None,
    design: SampleDesign | None = None,
) -> tuple[float, float]:
    """Bootstrap interval for the mean of paired differences (``interval``: see the module docstring), or
    with ``weights`` (one per difference, finite, above 0) for their weighted mean, and with a ``design``
    as well (see `compare_paired`) for the weighted mean of a sample that design drew.

    Pairs are resampled as units: resampling the differences ``candidate - incumbent`` by one shared
    index is the paired bootstrap. The same generator state gives the same interval whatever ``workers``
    is (threads; ``None`` uses the available cores for large problems); ``rng`` advances, so a second call
    gives a new, independent draw (see :mod:`pytest_embeval.core.resampling`).

    Where the studentized interval is unbounded (more than ``1 - confidence`` of the resamples without
    spread: nearly every difference equal), the percentile interval of the same resamples is returned.
    Raises ``ValueError`` for NaN/inf differences, fewer than two differences, or a bad
    ``confidence``/``n_resamples``/``interval``.
    """
    d = _check_differences(differences)
    if d.size < 2:
        raise ValueError(f"the bootstrap needs at least 2 paired differences, got {d.size}")
    confidence = _check_probability(confidence, "confidence")
    n_resamples = _check_n_resamples(n_resamples)
    rng, workers = _check_rng(rng), _check_workers(workers)
    w = _check_weights(weights, d.size)
    checked = _check_design(design, d.size, w is not None)
    layout = None if checked is None else cell_layout(checked, np.ones(d.size, dtype=bool))
    return (
        bootstrap_interval(_check_interval(interval), d, n_resamples, rng, workers, w, layout)
        .at(confidence)
        .interval(confidence)
    )


def sign_test(differences: ArrayLike) -> tuple[int, int, float]:
    """Return ``(wins, losses, p)``: the exact two-sided binomial sign test of the paired differences.

    A win is a positive difference, a loss a negative one; zero differences (ties) are dropped, as in the
    classical sign test. ``p`` is ``scipy.stats.binomtest(wins, wins + losses, 0.5).pvalue`` (computed in
    exact integer arithmetic up to `EXACT_SIGN_TEST` pairs), or 1.0 when every difference is zero.
    """
    d = _check_differences(differences)
    wins, losses = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    return wins, losses, binomial_sign_p(wins, losses)


def minimum_detectable_effect(sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean difference a two-sided paired test detects with the given power.

    Normal approximation: ``(z_{1-alpha/2} + z_{power}) * sd / sqrt(n)``. With sd 0.17 over 118 queries at
    alpha 0.05 and power 0.8 this is 0.044: a true effect smaller than that will usually end as a tie.
    """
    sd = _check_nonnegative(sd, "sd")
    if not _is_integer(n) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return z_sum(_check_probability(alpha, "alpha"), _check_probability(power, "power")) * sd / math.sqrt(n)


def paired_n(delta: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Paired queries needed to detect a true mean difference ``delta`` with the given power.

    ``ceil(((z_{1-alpha/2} + z_{power}) * sd / delta) ** 2)``, and at least 2 (an interval needs two
    pairs). Detecting 0.02 with a paired sd of 0.15 takes 442 queries; detecting 0.05 takes 71.
    """
    if not _is_real(delta) or not math.isfinite(delta) or delta == 0:
        raise ValueError(f"delta must be a finite nonzero number, got {delta!r}")
    sd = _check_nonnegative(sd, "sd")
    z = z_sum(_check_probability(alpha, "alpha"), _check_probability(power, "power"))
    return max(2, math.ceil((z * sd / abs(float(delta))) ** 2))


def compare_paired(
    incumbent: ArrayLike,
    candidate: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    rng: np.random.Generator,
    workers: int | None = None,
    interval: str = DEFAULT_INTERVAL,
    weights: ArrayLike | None = None,
    design: SampleDesign | None = None,
) -> PairedComparison:
    """Compare two arms' per-query scores (same queries, same order) with the named ``interval``.

    With ``weights`` (one per query, finite, above 0: its traffic frequency) the means, Δ, the interval,
    the sd and the MDE are the weighted ones (module docstring) and ``kish_n`` is set; the sign test still
    counts queries. With a ``design`` as well (each query's cell, each cell's distinct queries in the
    population: a stratified draw without replacement, `sample_design.SampleDesign`; the weights are then
    the traffic over the inclusion probability), the interval, sd and MDE use the design's variance and
    ``design`` is set (module docstring). A query whose score is NaN in either arm is dropped from *both*
    arms (and its weight with it) and counted in ``excluded``; under a design it still counts as drawn in
    its cell.
    Degenerate input gives a result with ``note`` set and a ``DegenerateComparisonWarning``:

    - fewer than two pairs: ``"n=1: too few paired queries for an interval"``; the interval, ``sd`` and
      ``mde`` are NaN (means and delta are still reported when n is 1);
    - every difference zero: ``"all paired differences are zero"``; interval (0, 0), sd 0, p-values 1.0.

    Every difference equal to one nonzero value gives the point interval at that value (p-value 0), and
    no warning. Raises ``ValueError`` (naming the value) for arms of different lengths, non-1-D input, inf
    scores, a ``confidence`` outside (0, 1), ``n_resamples`` < 1 or an unknown ``interval``;
    ``TypeError`` if ``rng`` is not a Generator; for a design: ``ValueError`` for one without weights, of
    another length, or whose cells' sizes do not hold their pairs, ``TypeError`` if not a SampleDesign.
    """
    a = _as_scores(incumbent, "incumbent")
    b = _as_scores(candidate, "candidate")
    if a.size != b.size:
        raise ValueError(f"incumbent and candidate must have the same length, got {a.size} and {b.size}")
    checked = _check_weights(weights, a.size)
    return _compare(
        a,
        b,
        confidence=_check_probability(confidence, "confidence"),
        n_resamples=_check_n_resamples(n_resamples),
        rng=_check_rng(rng),
        workers=_check_workers(workers),
        interval=_check_interval(interval),
        weights=checked,
        design=_check_design(design, a.size, checked is not None),
    )


def stable_seed(*parts: str | int) -> int:
    """Seed in ``[0, 2**63)`` from a SHA-256 of the parts: identical across processes, machines and runs.

    Unlike ``hash()``, which is salted per process for strings, this is safe for xdist workers. The parts
    are encoded unambiguously (``("ab", "c")`` and ``("a", "bc")`` differ, as do ``"1"`` and ``1``).
    """
    tagged: list[tuple[str, str | int]] = []
    for part in parts:
        if isinstance(part, str):
            tagged.append(("str", part))
        elif _is_integer(part):
            tagged.append(("int", int(part)))
        else:
            raise TypeError(f"stable_seed parts must be str or int, got {part!r}")
    encoded = json.dumps(tagged, separators=(",", ":")).encode("utf-8")
    return int.from_bytes(hashlib.sha256(encoded).digest()[:8], "big") >> 1


# --------------------------------------------------------------------------------------------------------
# Algorithms (inputs already validated).


def z_sum(alpha: float, power: float) -> float:
    """``z_{1-alpha/2} + z_{power}``: the minimum detectable effect in standard errors."""
    # The standard library's normal quantile agrees with scipy.special.ndtri to 1e-15, without importing
    # scipy (0.3-0.8 s) in every run.
    normal = NormalDist()
    return normal.inv_cdf(1.0 - alpha / 2.0) + normal.inv_cdf(power)


def binomial_sign_p(wins: int, losses: int) -> float:
    """``scipy.stats.binomtest(wins, wins + losses, 0.5).pvalue`` (two-sided), exactly, without importing
    scipy up to `EXACT_SIGN_TEST` pairs; 1.0 when there are none or as many wins as losses."""
    n = wins + losses
    if n == 0 or wins == losses:
        return 1.0
    if n > EXACT_SIGN_TEST:
        from scipy.stats import binomtest

        return float(binomtest(wins, n, 0.5).pvalue)
    # Two-sided for p = 1/2: twice the smaller tail, sum of C(n, i) for i <= min(wins, losses), over 2**n;
    # integer division of Python ints rounds correctly, so the p-value is exact to the last bit.
    term = tail = 1
    for i in range(min(wins, losses)):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, float(2 * tail / 2**n))


def _compare(
    a: FloatArray,
    b: FloatArray,
    *,
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None,
    interval: str,
    weights: FloatArray | None = None,
    design: SampleDesign | None = None,
) -> PairedComparison:
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    w = None if weights is None else weights[keep]
    n, excluded = int(a.size), int(keep.size - a.size)
    # The queries dropped still count as drawn in their cells: the comparison is a domain of the sample.
    layout = None if design is None or n < 2 else cell_layout(design, keep)
    cells: DesignCells | None = None
    d = b - a
    wins, losses = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    kish = None if w is None or n == 0 else weighted_stats.kish_n(w)
    if n < 2:
        too_few = _too_few_pairs(a, b, excluded=excluded, confidence=confidence, interval=interval)
        return too_few if kish is None else dataclasses.replace(too_few, kish_n=kish)
    note: str | None = None
    resampled: PercentileInterval | StudentizedInterval | None = None
    delta = float(np.mean(d)) if w is None else weighted_stats.weighted_mean(d, w)
    if wins == 0 and losses == 0:
        note = _ALL_ZERO
        warnings.warn(note, DegenerateComparisonWarning, stacklevel=3)
        ci, sd, p_value = (0.0, 0.0), 0.0, 1.0
    elif d.min() == d.max():
        # No spread to resample: every resample is the data. (The mean of equal values can be off by a
        # rounding error, so the value itself is the interval and the estimate.)
        delta = float(d[0])
        ci, sd, p_value = (delta, delta), 0.0, 0.0
    elif layout is not None and w is not None and (linearised := linearise(d, w, layout)).variance == 0.0:
        # Every cell the pairs fall in was drawn whole: Δ is the population's own, with no sampling error.
        ci, sd, p_value = (delta, delta), 0.0, (1.0 if delta == 0.0 else 0.0)
    else:
        resampled = bootstrap_interval(interval, d, n_resamples, rng, workers, w, layout).at(confidence)
        ci, p_value = resampled.interval(confidence), resampled.p_value()
        sd = sample_sd(d) if w is None else weighted_stats.linearised_sd(d, w)
        if resampled.name != interval:
            note = _UNBOUNDED
            warnings.warn(note, DegenerateComparisonWarning, stacklevel=3)
    if layout is not None and w is not None:
        # The design's standard error times sqrt(n), so that the MDE's sd / sqrt(n) is that standard error.
        linearised = linearise(d, w, layout)
        cells = design_cells(layout, linearised)
        sd = math.sqrt(linearised.variance * n)
    return PairedComparison(
        n=n,
        excluded=excluded,
        incumbent_mean=float(np.mean(a)) if w is None else weighted_stats.weighted_mean(a, w),
        candidate_mean=float(np.mean(b)) if w is None else weighted_stats.weighted_mean(b, w),
        delta=delta,
        ci_low=ci[0],
        ci_high=ci[1],
        confidence=confidence,
        interval=interval if resampled is None else resampled.name,
        p_value=p_value,
        sd=sd,
        wins=wins,
        losses=losses,
        sign_p=binomial_sign_p(wins, losses),
        mde=z_sum(1.0 - confidence, MDE_POWER) * sd / math.sqrt(n),
        note=note,
        kish_n=kish,
        design=cells,
    )


def _too_few_pairs(
    a: FloatArray, b: FloatArray, *, excluded: int, confidence: float, interval: str
) -> PairedComparison:
    n = int(a.size)
    note = f"n={n}: {_NEEDS_TWO}"
    warnings.warn(note, DegenerateComparisonWarning, stacklevel=4)
    wins, losses = int(np.count_nonzero(b > a)), int(np.count_nonzero(b < a))
    nan = math.nan
    return PairedComparison(
        n=n,
        excluded=excluded,
        incumbent_mean=float(a[0]) if n else nan,
        candidate_mean=float(b[0]) if n else nan,
        delta=float(b[0] - a[0]) if n else nan,
        ci_low=nan,
        ci_high=nan,
        confidence=confidence,
        interval=interval,
        p_value=nan,
        sd=nan,
        wins=wins,
        losses=losses,
        sign_p=binomial_sign_p(wins, losses),
        mde=nan,
        note=note,
    )
