"""The two bootstrap intervals of a mean paired difference, and the quantiles they are read from.

Each interval keeps its resampled statistic sorted, so that the interval at any confidence and the p-value
that inverts it come from the same resamples: ``percentile`` from the resampled means, ``studentized`` from
the resampled ``|t*|`` (:mod:`pytest_embeval.core.stats` says when each is used and why). Inputs are
validated by the caller; resampling comes from :mod:`pytest_embeval.core.resampling`.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from pytest_embeval.core import weighted_stats
from pytest_embeval.core.design_variance import design_resamples, linearise
from pytest_embeval.core.resampling import bootstrap_sums
from pytest_embeval.core.sample_design import CellLayout

__all__ = [
    "PercentileInterval",
    "StratifiedInterval",
    "StudentizedInterval",
    "bootstrap_interval",
    "first_level_at_least",
    "last_level_at_most",
    "sample_sd",
    "sorted_quantile",
]

FloatArray = NDArray[np.float64]

#: A resample whose sum of squared deviations is below this share of its sum of squares has no spread
#: (all its values equal, up to rounding): its studentized statistic is infinite (0 if it equals Δ).
_FLAT = 1e-12


def sample_sd(d: FloatArray) -> float:
    """Sample sd (ddof=1), computed on the differences scaled to at most 1 so that their squares neither
    underflow nor overflow."""
    scale = float(np.abs(d).max())
    return scale * float(np.std(d / scale, ddof=1)) if scale > 0 else 0.0


def sorted_quantile(ordered: FloatArray, q: float) -> float:
    """``numpy.quantile(ordered, q)`` (its default, linear interpolation, to the last bit, infinite values
    too) of an ascending array of at least one value without NaN, for q in [0, 1]; without numpy.quantile,
    whose first call imports numpy.ma (10 ms of every run's start)."""
    last = ordered.size - 1
    position = last * q
    if position >= last:
        # numpy takes the last value for both neighbours (index -1), so its weight is position + 1
        below = above = last
        weight = position + 1.0
    else:
        below = math.floor(position)
        above, weight = below + 1, position - below
    low, high = float(ordered[below]), float(ordered[above])
    # numpy's lerp: from the nearer end, so that the weights 0 and 1 give the values themselves
    step = high - low
    return high - step * (1.0 - weight) if weight >= 0.5 else low + step * weight


def bootstrap_interval(
    interval: str,
    d: FloatArray,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None,
    weights: FloatArray | None = None,
    layout: CellLayout | None = None,
) -> PercentileInterval | StudentizedInterval:
    """The resamples of ``interval`` (a name of `stats.INTERVALS`) for the differences ``d``, weighted by
    ``weights`` where given, and with them drawn by the design laid out in ``layout`` where given (the
    rescaling bootstrap within its cells, :mod:`pytest_embeval.core.design_variance`)."""
    if weights is not None and layout is not None:
        if interval == "percentile":
            return PercentileInterval(np.sort(design_resamples(d, weights, layout, n_resamples, rng).means))
        return StratifiedInterval(d, weights, layout, n_resamples, rng)
    if interval == "percentile":
        if weights is not None:
            means = weighted_stats.resampled_means(d, weights, n_resamples, rng, workers)
            return PercentileInterval(np.sort(means))
        sums, _ = bootstrap_sums(d, n_resamples, rng, workers)
        return PercentileInterval(np.sort(sums / d.size))
    if weights is not None:
        return StudentizedInterval.weighted(d, weights, n_resamples, rng, workers)
    return StudentizedInterval(d, n_resamples, rng, workers)


class PercentileInterval:
    """The percentile interval, from the sorted resampled means."""

    name = "percentile"

    def __init__(self, means: FloatArray) -> None:
        self.means = means

    def at(self, confidence: float) -> PercentileInterval:
        return self

    def interval(self, confidence: float) -> tuple[float, float]:
        levels = ((1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0)
        return sorted_quantile(self.means, levels[0]), sorted_quantile(self.means, levels[1])

    def p_value(self) -> float:
        """``min(1, 2 L, 2 (1 - U))``: the interval at ``1 - alpha`` has its lower end above 0 exactly when
        ``alpha / 2 > L``, L the last quantile level at or below 0, and its upper end below 0 exactly when
        ``1 - alpha / 2 < U``, U the first level at or above 0."""
        low = last_level_at_most(self.means, 0.0)
        high = first_level_at_least(self.means, 0.0)
        return min(1.0, 2.0 * low, 2.0 * (1.0 - high))


class StudentizedInterval:
    """The symmetric studentized interval, from the sorted ``|t*|`` of the resamples.

    A resample whose values are all equal has no spread and an infinite ``|t*|`` (unless it equals Δ).
    When more than ``1 - confidence`` of the resamples are such, the quantile w is infinite: that happens
    when nearly every difference has one value (at n = 20, 18 of them), where the bootstrap-t is known to
    break down. Then `at` gives the percentile interval of the same resamples instead, which bounds what
    the data bound (18 zeros and two gains give [0, +0.1]: no verdict; 18 losses of -1 and two zeros give
    [-1, -0.8]: WORSE), and the comparison says which interval ran.
    """

    name = "studentized"

    def __init__(self, d: FloatArray, n_resamples: int, rng: np.random.Generator, workers: int | None):
        n = d.size
        self.delta = float(np.mean(d))
        self.se = sample_sd(d) / math.sqrt(n)
        # Resampling the deviations from Δ gives n (Δ* - Δ) and each resample's spread directly, without
        # subtracting two nearly equal sums; t* does not depend on their scale, which is set to keep their
        # squares clear of underflow.
        scale = float(np.abs(d).max())
        sums, squares = bootstrap_sums((d - self.delta) / scale, n_resamples, rng, workers, squares=True)
        assert squares is not None
        spread = squares - sums * sums / n  # (n - 1) sd*^2
        flat = spread <= _FLAT * squares
        with np.errstate(divide="ignore", invalid="ignore"):
            # |t*| = |Δ* - Δ| / (sd* / sqrt(n)) = |sums| / sqrt(spread n / (n - 1))
            t = np.abs(sums) / np.sqrt(spread * (n / (n - 1)))
        t[flat] = np.where(sums[flat] == 0.0, 0.0, math.inf)
        self.t = np.sort(t)
        self.means = self.delta + scale * sums / n  # each resample's mean, for the percentile fallback

    @classmethod
    def weighted(
        cls, d: FloatArray, w: FloatArray, n_resamples: int, rng: np.random.Generator, workers: int | None
    ) -> StudentizedInterval:
        """The same interval for the weighted mean: ``Δ_w -+ w* se``, se the linearised standard error and
        t* studentized by each resample's own (`weighted_stats.resampled_t`)."""
        self = cls.__new__(cls)
        self.delta = weighted_stats.weighted_mean(d, w)
        self.se = weighted_stats.linearised_sd(d, w) / math.sqrt(d.size)
        t, self.means = weighted_stats.resampled_t(d, w, n_resamples, rng, workers)
        self.t = np.sort(t)
        return self

    def at(self, confidence: float) -> PercentileInterval | StudentizedInterval:
        """This interval, or the percentile one of the same resamples where this one is unbounded."""
        position = confidence * (self.t.size - 1)
        if math.isinf(self.t[min(math.ceil(position), self.t.size - 1)]):
            return PercentileInterval(np.sort(self.means))
        return self

    def interval(self, confidence: float) -> tuple[float, float]:
        """``Δ -+ w sd / sqrt(n)``, w the ``confidence`` quantile of ``|t*|`` (linear, numpy's default)."""
        half = sorted_quantile(self.t, confidence) * self.se
        return self.delta - half, self.delta + half

    def p_value(self) -> float:
        """``1 - C``, C the first quantile level of ``|t*|`` at or above ``|Δ| / se``: the interval at
        ``1 - alpha`` excludes 0 exactly when ``|Δ| / se`` exceeds its w, that is when ``1 - alpha < C``."""
        return 1.0 - first_level_at_least(self.t, abs(self.delta) / self.se)


class StratifiedInterval(StudentizedInterval):
    """The symmetric studentized interval of a weighted mean drawn by a stratified design: ``Δ_w -+ w se``,
    se the design's linearised standard error, ``w`` the ``confidence`` quantile of ``|t*|`` over the
    rescaling bootstrap's replicates (`design_variance.design_resamples`), each studentized by its own, and
    never below Student's t quantile on Satterthwaite's degrees of freedom: a replicate holds the variance
    of a cell of one or two queries fixed, so where such cells carry the variance, ``|t*|`` alone would
    under-cover (``benchmarks/design_intervals.py`` measured 75 to 88 % at 20 queries in 12 cells). The
    p-value inverts it: the larger of the bootstrap's and Student's."""

    def __init__(
        self, d: FloatArray, w: FloatArray, layout: CellLayout, n_resamples: int, rng: np.random.Generator
    ) -> None:
        linearised = linearise(d, w, layout)
        self.delta, self.se = linearised.delta, linearised.se
        self.degrees_of_freedom = linearised.degrees_of_freedom
        resamples = design_resamples(d, w, layout, n_resamples, rng)
        self.t = np.sort(np.abs(resamples.t))
        self.means = resamples.means

    def interval(self, confidence: float) -> tuple[float, float]:
        from scipy.special import stdtrit  # only under a design: its import costs a run without one

        student = float(stdtrit(self.degrees_of_freedom, (1.0 + confidence) / 2.0))
        half = max(sorted_quantile(self.t, confidence), student) * self.se
        return self.delta - half, self.delta + half

    def p_value(self) -> float:
        from scipy.special import stdtr

        student = 2.0 * float(stdtr(self.degrees_of_freedom, -abs(self.delta) / self.se))
        return max(super().p_value(), student)


def first_level_at_least(ordered: FloatArray, x: float) -> float:
    """``inf {L in [0, 1] : q(L) >= x}`` for q the linear-interpolation quantile function of the sorted
    ``ordered``; 1 when no level reaches x."""
    return _level(ordered, x, "left")


def last_level_at_most(ordered: FloatArray, x: float) -> float:
    """``sup {L in [0, 1] : q(L) <= x}`` for q as in `first_level_at_least`; 0 when no level is that low."""
    return _level(ordered, x, "right")


def _level(ordered: FloatArray, x: float, side: Literal["left", "right"]) -> float:
    """The level where q crosses x: past the values below x (``left``) or at most x (``right``)."""
    count = int(np.searchsorted(ordered, x, side=side))
    if count in (0, ordered.size):
        return 0.0 if count == 0 else 1.0
    return _crossing(ordered, count - 1, x) / (ordered.size - 1)


def _crossing(ordered: FloatArray, k: int, x: float) -> float:
    """The fractional index between ``k`` and ``k + 1`` where the interpolated quantile function equals x
    (``ordered[k] <= x <= ordered[k + 1]``)."""
    low, high = float(ordered[k]), float(ordered[k + 1])
    if math.isinf(high) or high == low:
        return float(k)
    return k + (x - low) / (high - low)
