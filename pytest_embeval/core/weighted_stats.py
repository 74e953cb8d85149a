"""The traffic-weighted mean of paired differences, its standard error and its resamples.

With a weight ``w_i > 0`` per query (the traffic it stands for: its frequency, over its inclusion
probability when it was drawn by a known design) the statistic is the ratio estimator
``Δ_w = Σ w_i d_i / Σ w_i`` of the paired differences ``d_i``: the mean difference a user of the traffic
sees (with inclusion probabilities, Hájek's estimator of it over the population the sample was drawn
from). The paired bootstrap resamples *queries* (a pair and its
weight together) with replacement and recomputes the ratio on each resample, numerator and denominator
both, so the randomness of the denominator (a resample that misses the head query carries less traffic)
is in the interval.

Its variance, for the studentized interval, is the linearisation (Taylor, or delta-method) variance of a
ratio of sums (Cochran 1977, *Sampling Techniques*, 3rd ed., ch. 6, the approximate variance of the ratio
estimate; Särndal, Swensson & Wretman 1992, *Model Assisted Survey Sampling*, §5.6): with
``e_i = d_i - Δ_w``, the ratio's first-order expansion around the population ratio is the mean of the
*linearised values* ``z_i = (w_i / w̄) e_i`` (w̄ the mean weight), so

    V(Δ_w) ≈ s_z² / n = n / (n - 1) · Σ w_i² e_i² / (Σ w_i)²,

``s_z`` the sample standard deviation of the ``z_i`` (whose mean is exactly 0). With equal weights
``z_i = e_i`` and this is the unweighted ``sd² / n``, so the weighted statistics reduce to the unweighted
ones. ``s_z`` is what a weighted comparison reports as its sd: the minimum detectable effect and the
queries needed use it as the unweighted ones use the sd, assuming more queries with the same mix of
weights. Kish's effective number of queries ``(Σ w)² / Σ w²`` (Kish 1992, "Weighting for unequal Pi", *J.
Official Statistics* 8(2)) says how
many equally weighted queries carry as much information when the weights are unrelated to the
differences: one head query with most of the traffic makes it small, and the interval wide.

Every sum of weights is taken over the weights divided by the largest (`scaled`), so that no sum of finite
weights overflows, however large they are: a query log's frequencies of 1e308 sum to a finite multiple of
1e308, never to infinity, and a share of the traffic (`traffic_share`) is a ratio of two such sums, never
NaN. Nothing here validates input: ``stats`` does (finite weights above 0), and the golden loader refuses a
frequency over an inclusion that is not a finite number.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from pytest_embeval.core.resampling import bootstrap_column_sums

__all__ = [
    "kish_n",
    "linearised_sd",
    "resampled_means",
    "resampled_t",
    "scaled",
    "traffic_share",
    "weighted_mean",
]

FloatArray = NDArray[np.float64]

#: As `bootstrap_intervals._FLAT`: a resample whose weighted spread is below this share of its weighted sum
#: of squares has no spread (all its values equal, up to rounding).
_FLAT = 1e-12


def scaled(weights: FloatArray) -> FloatArray:
    """The weights divided by the largest: each in (0, 1], so that a sum of n of them is at most n."""
    w: FloatArray = weights / weights.max()
    return w


def traffic_share(weights: FloatArray, chosen: NDArray[np.bool_]) -> float:
    """``Σ chosen w / Σ w``: the share of the traffic the ``chosen`` weights carry, in [0, 1]; 0 for no
    weights."""
    if weights.size == 0:
        return 0.0
    w = scaled(weights)
    return float(w[chosen].sum() / w.sum())


def kish_n(weights: FloatArray) -> float:
    """Kish's effective number of queries, ``(Σ w)² / Σ w²``: n for equal weights, near 1 when one query
    carries nearly all the weight."""
    w = scaled(weights)
    return float(w.sum() ** 2 / np.dot(w, w))


def weighted_mean(values: FloatArray, weights: FloatArray) -> float:
    """``Σ w v / Σ w``. Both sums are numpy's (pairwise, in one order on every machine), so that equal values
    have themselves as their mean; a BLAS dot product sums in an order that follows the machine's CPU, and
    gave ``0.9999999999999999`` for the mean of 48 ones on one machine and 1.0 on another."""
    w = scaled(weights)
    return float(np.sum(w * values) / w.sum())


def linearised_sd(d: FloatArray, weights: FloatArray) -> float:
    """The sample sd of the linearised values ``z_i = (w_i / w̄)(d_i - Δ_w)`` (see the module docstring):
    ``sqrt(n / (n - 1) · Σ w² e²) · sqrt(n) / Σ w``, so that ``linearised_sd / sqrt(n)`` is the standard
    error of ``Δ_w``. Needs two or more values."""
    n = d.size
    w = scaled(weights)
    e = d - weighted_mean(d, weights)
    scale = float(np.abs(e).max())
    if scale == 0:
        return 0.0
    z = w * (e / scale)
    return scale * n * math.sqrt(float(np.dot(z, z)) / (n - 1)) / float(w.sum())


def resampled_means(
    d: FloatArray, weights: FloatArray, n_resamples: int, rng: np.random.Generator, workers: int | None
) -> FloatArray:
    """``Δ*_w`` of each resample (queries drawn with replacement, each with its weight), in draw order."""
    delta, scale, w, e = _centred(d, weights)
    sums = bootstrap_column_sums(np.column_stack([w, w * e]), n_resamples, rng, workers)
    # Δ* - Δ = Σ w* e* / Σ w*: from the deviations, without subtracting two nearly equal ratios.
    means: FloatArray = delta + scale * (sums[:, 1] / sums[:, 0])
    return means


def resampled_t(
    d: FloatArray, weights: FloatArray, n_resamples: int, rng: np.random.Generator, workers: int | None
) -> tuple[FloatArray, FloatArray]:
    """``(|t*|, Δ*_w)`` of each resample, in draw order: ``t* = (Δ*_w - Δ_w) / se*``, se* the linearised
    standard error of the resample's own ratio; infinite for a resample without spread (0 if its ratio is
    Δ_w). From the five sums ``A = Σ w*, B = Σ w* e*, C = Σ w*², D = Σ w*² e*, E = Σ w*² e*²`` of each
    resample (``e = d - Δ_w``): its ratio is ``Δ_w + B / A``, its deviations are ``e* - B / A``, so
    ``Σ w*² (e* - B/A)² = E - 2 (B/A) D + (B/A)² C`` and ``|t*| = |B| / sqrt(n / (n - 1) · that)``."""
    n = d.size
    delta, scale, w, e = _centred(d, weights)
    w2 = w * w
    sums = bootstrap_column_sums(
        np.column_stack([w, w * e, w2, w2 * e, w2 * e * e]), n_resamples, rng, workers
    )
    a, b, c, dd, ee = sums.T
    ratio = b / a
    spread = ee - 2.0 * ratio * dd + ratio * ratio * c
    flat = spread <= _FLAT * ee
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(b) / np.sqrt(spread * (n / (n - 1)))
    t[flat] = np.where(b[flat] == 0.0, 0.0, math.inf)
    return t, delta + scale * ratio


def _centred(d: FloatArray, weights: FloatArray) -> tuple[float, float, FloatArray, FloatArray]:
    """``(Δ_w, scale, w, e)``: the weights scaled to at most 1 and the deviations from Δ_w scaled to at most 1
    (the statistics resampled do not depend on either scale; it keeps squares clear of underflow)."""
    delta = weighted_mean(d, weights)
    e = d - delta
    scale = float(np.abs(e).max()) or 1.0
    return delta, scale, scaled(weights), e / scale
