"""The traffic-weighted comparison (`weighted_stats`, `compare_paired(weights=...)`), as a specification:
hand-derived values, the unweighted case as a limit, the ideal bootstrap by enumeration as an oracle."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from pytest_embeval.core import weighted_stats
from pytest_embeval.core.interval_simulation import metric_population, simulate_weighted, zipf_frequencies
from pytest_embeval.core.stats import INTERVALS, compare_paired, paired_bootstrap_ci
from pytest_embeval.core.verdict import TieReason, Verdict, classify_metric


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize("value", [1.0, 0.25, 0.0])
def test_the_weighted_mean_of_equal_values_is_that_value_whatever_the_weights(value: float) -> None:
    frequencies = np.array([1.0] * 24 + [100.0] * 24)  # a golden set's traffic weights: 0.01 is inexact
    assert weighted_stats.weighted_mean(np.full(48, value), frequencies) == value
    weights = rng(3).uniform(0.1, 50.0, 1001)
    assert weighted_stats.weighted_mean(np.full(1001, value), weights) == value


def test_hand_derived_ratio_estimator_its_linearised_sd_and_kish_n() -> None:
    # d = (1, 0, 0), w = (2, 1, 1): Δ_w = 2/4 = 0.5; e = (0.5, -0.5, -0.5); Σ w² e² = 4/4 + 1/4 + 1/4 = 1.5;
    # V = n/(n-1) · 1.5 / 4² = 1.5 · 1.5 / 16 = 0.140625, se 0.375; sd of the linearised values
    # z = (w / w̄) e = (0.75, -0.375, -0.375): sqrt((0.5625 + 0.140625 · 2) / 2) = sqrt(0.421875),
    # which is se · sqrt(3).
    d, w = np.array([1.0, 0.0, 0.0]), np.array([2.0, 1.0, 1.0])
    assert weighted_stats.weighted_mean(d, w) == 0.5
    assert weighted_stats.linearised_sd(d, w) == pytest.approx(math.sqrt(0.421875), rel=1e-15)
    assert weighted_stats.linearised_sd(d, w) / math.sqrt(3) == pytest.approx(0.375, rel=1e-15)
    # Kish: (Σw)² / Σw² = 16 / 6
    assert weighted_stats.kish_n(w) == pytest.approx(8 / 3, rel=1e-15)
    c = compare_paired(
        [0.0, 0.5, 0.5], [1.0, 0.5, 0.5], rng=rng(1), n_resamples=2000, weights=w, interval="percentile"
    )
    assert (c.delta, c.incumbent_mean, c.candidate_mean) == (0.5, 0.25, 0.75)
    assert c.sd == pytest.approx(math.sqrt(0.421875), rel=1e-15)
    assert c.kish_n == pytest.approx(8 / 3) and c.floor_n == c.kish_n
    assert (c.wins, c.losses) == (1, 0)  # the sign test counts queries, not traffic


def test_the_linearised_variance_is_the_definition_and_equal_weights_give_the_sample_sd() -> None:
    g = rng(3)
    d, w = g.normal(0.02, 0.2, 41), g.uniform(0.1, 50.0, 41)
    delta = np.sum(w * d) / np.sum(w)
    variance = 41 / 40 * np.sum(w**2 * (d - delta) ** 2) / np.sum(w) ** 2
    assert weighted_stats.linearised_sd(d, w) / math.sqrt(41) == pytest.approx(math.sqrt(variance), rel=1e-12)
    assert weighted_stats.linearised_sd(d, np.full(41, 7.0)) == pytest.approx(np.std(d, ddof=1), rel=1e-12)
    assert weighted_stats.kish_n(np.full(41, 7.0)) == pytest.approx(41.0)


@pytest.mark.parametrize("interval", INTERVALS)
def test_equal_weights_give_the_unweighted_comparison(interval: str) -> None:
    # The same queries are drawn (one index stream), so only the rounding of the sums differs.
    g = rng(4)
    a = g.uniform(size=60)
    b = np.clip(a + g.normal(0.03, 0.2, 60), 0, 1)
    plain = compare_paired(a, b, rng=rng(1), interval=interval, n_resamples=3000)
    weighted = compare_paired(a, b, rng=rng(1), interval=interval, n_resamples=3000, weights=np.full(60, 3.0))
    assert weighted.kish_n == pytest.approx(60.0)
    for field in ("incumbent_mean", "candidate_mean", "delta", "ci_low", "ci_high", "p_value", "sd", "mde"):
        assert getattr(weighted, field) == pytest.approx(getattr(plain, field), rel=1e-12, abs=1e-15), field
    assert dataclasses.replace(weighted, kish_n=None).interval == plain.interval


@pytest.mark.parametrize("interval", INTERVALS)
def test_weights_are_scale_free(interval: str) -> None:
    g = rng(5)
    d, w = g.normal(0.0, 0.3, 30), g.pareto(1.5, 30) + 1.0
    one = paired_bootstrap_ci(d, confidence=0.9, n_resamples=2000, rng=rng(2), interval=interval, weights=w)
    thousand = paired_bootstrap_ci(
        d, confidence=0.9, n_resamples=2000, rng=rng(2), interval=interval, weights=w * 1000
    )
    assert one == pytest.approx(thousand, rel=1e-10)


def _ideal_bootstrap(d: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: every one of the n**n resamples (equally likely), its ratio and its |t*| computed from
    the definitions, without the five-sums algebra."""
    n = d.size
    delta = np.sum(w * d) / np.sum(w)
    means, ts = [], []
    for rows in itertools.product(range(n), repeat=n):
        dd, ww = d[list(rows)], w[list(rows)]
        ratio = np.sum(ww * dd) / np.sum(ww)
        se = math.sqrt(n / (n - 1) * np.sum(ww**2 * (dd - ratio) ** 2)) / np.sum(ww)
        means.append(ratio)
        ts.append(math.inf if se == 0 and ratio != delta else (0.0 if se == 0 else abs(ratio - delta) / se))
    return np.array(means), np.array(ts)


def _ks(sample: np.ndarray, exact: np.ndarray) -> float:
    """Kolmogorov distance between the empirical distributions of two samples (finite values compared),
    rounded so that an atom computed two ways (by the five sums, by the definition) is one value."""
    sample, exact = np.round(sample, 10), np.round(exact, 10)
    grid = np.unique(np.concatenate([sample, exact]))
    grid = grid[np.isfinite(grid)]
    first = np.searchsorted(np.sort(sample), grid, side="right") / sample.size
    second = np.searchsorted(np.sort(exact), grid, side="right") / exact.size
    return float(np.abs(first - second).max())


def test_the_resampled_ratio_and_t_follow_the_ideal_bootstrap_enumerated() -> None:
    d = np.array([0.5, -0.25, 0.0, 0.75, -1.0, 0.2])
    w = np.array([40.0, 1.0, 3.0, 10.0, 2.0, 5.0])
    exact_means, exact_t = _ideal_bootstrap(d, w)  # 6**6 = 46,656 resamples
    means = weighted_stats.resampled_means(d, w, 100_000, rng(7), None)
    t, t_means = weighted_stats.resampled_t(d, w, 100_000, rng(8), None)
    # 100,000 draws: the Kolmogorov distance to the truth is below 0.0043 with 95 % probability, 0.0055 w.p.
    # 99.9 %, before the atoms of a discrete distribution (which only make it smaller).
    assert _ks(means, exact_means) < 0.006
    assert _ks(t_means, exact_means) < 0.006
    assert _ks(t, exact_t) < 0.006
    assert np.mean(np.isinf(t)) == pytest.approx(np.mean(np.isinf(exact_t)), abs=0.003)


def test_the_bootstrap_variance_of_the_ratio_approaches_the_linearised_variance() -> None:
    # To first order the bootstrap variance of a smooth statistic is its linearisation variance with n
    # in the denominator instead of n - 1 (Efron & Tibshirani 1993, §21.3).
    g = rng(9)
    d, w = g.normal(0.03, 0.25, 400), g.uniform(1.0, 5.0, 400)
    means = weighted_stats.resampled_means(d, w, 40_000, rng(10), None)
    linearised = weighted_stats.linearised_sd(d, w) ** 2 / 400 * 399 / 400
    assert float(np.var(means)) == pytest.approx(linearised, rel=0.03)


def test_a_heavy_head_makes_kish_n_small_and_the_weighted_interval_wider() -> None:
    g = rng(11)
    a = g.uniform(size=100)
    b = np.clip(a + g.normal(0.0, 0.2, 100), 0, 1)
    w = zipf_frequencies(100, 1.0, seed=3)  # frequency 1/rank: the top query has a fifth of the traffic
    plain = compare_paired(a, b, rng=rng(1), n_resamples=4000)
    weighted = compare_paired(a, b, rng=rng(1), n_resamples=4000, weights=w)
    assert weighted.kish_n == pytest.approx(np.sum(w) ** 2 / np.sum(w**2), rel=1e-12)
    assert weighted.kish_n is not None and 15 < weighted.kish_n < 18
    # Weights unrelated to the differences: the width grows about as sqrt(n / Kish n), here 2.5.
    ratio = (weighted.ci_high - weighted.ci_low) / (plain.ci_high - plain.ci_low)
    assert 1.6 < ratio < 4
    assert weighted.mde > 1.2 * plain.mde
    # One query with three quarters of the traffic: Kish n below 2, and the stratum under any floor.
    w[0] = 3 * (np.sum(w) - w[0])
    assert compare_paired(a, b, rng=rng(1), n_resamples=500, weights=w).floor_n < 2


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_weighted_p_value_inverts_the_weighted_interval(interval: str) -> None:
    g = rng(12)
    a = g.uniform(size=50)
    b = np.clip(a + g.normal(0.05, 0.2, 50), 0, 1)
    w = zipf_frequencies(50, 0.7, seed=1)
    c = compare_paired(a, b, rng=rng(3), n_resamples=3000, interval=interval, weights=w)
    for confidence in (0.5, 0.8, 0.9, 0.95, 0.99, 1 - c.p_value + 1e-9, 1 - c.p_value - 1e-9):
        at = compare_paired(
            a, b, confidence=confidence, rng=rng(3), n_resamples=3000, interval=interval, weights=w
        )
        excludes = at.ci_low > 0 or at.ci_high < 0
        assert excludes == (c.p_value < 1 - confidence), confidence


def test_a_nan_pair_is_dropped_with_its_weight() -> None:
    a = np.array([0.1, np.nan, 0.5, 0.2, 0.9])
    b = np.array([0.3, 0.4, 0.4, 0.6, 0.1])
    w = np.array([1.0, 100.0, 2.0, 3.0, 4.0])
    kept = [0, 2, 3, 4]
    with_nan = compare_paired(a, b, rng=rng(1), n_resamples=500, weights=w)
    without = compare_paired(a[kept], b[kept], rng=rng(1), n_resamples=500, weights=w[kept])
    assert dataclasses.replace(with_nan, excluded=0) == without
    assert with_nan.excluded == 1 and with_nan.kish_n == pytest.approx(10**2 / 30)


def test_degenerate_weighted_comparisons() -> None:
    w = np.array([5.0, 1.0, 1.0])
    same = compare_paired([0.25, 0.5, 0.0], [0.75, 1.0, 0.5], rng=rng(1), n_resamples=200, weights=w)
    assert (same.delta, same.ci_low, same.ci_high, same.sd, same.p_value) == (0.5, 0.5, 0.5, 0.0, 0.0)
    with pytest.warns(UserWarning, match="n=1"):
        one = compare_paired([0.2], [0.5], rng=rng(1), n_resamples=200, weights=[4.0])
    assert one.kish_n == 1.0 and math.isnan(one.ci_low)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0, 2.0], r"weights must be 1-D with one weight per pair \(3\), got shape \(2,\)"),
        ([1.0, 0.0, 2.0], r"weights\[1\] is 0.0; weights must be finite numbers above 0"),
        ([1.0, 2.0, -1.0], r"weights\[2\] is -1.0; weights must be finite numbers above 0"),
        ([np.nan, 2.0, 1.0], r"weights\[0\] is nan; weights must be finite numbers above 0"),
        ([1.0, np.inf, 1.0], r"weights\[1\] is inf; weights must be finite numbers above 0"),
    ],
)
def test_bad_weights_are_value_errors_naming_the_value(weights: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        compare_paired([0.1, 0.2, 0.3], [0.2, 0.2, 0.5], rng=rng(1), weights=weights)
    with pytest.raises(ValueError, match=f"^{message}$"):
        paired_bootstrap_ci([0.1, 0.0, 0.2], confidence=0.95, n_resamples=100, rng=rng(1), weights=weights)


def test_the_floor_is_held_against_kish_n_under_weights() -> None:
    g = rng(13)
    a = g.uniform(size=100)
    b = np.clip(a + 0.2 + g.normal(0.0, 0.05, 100), 0, 1)
    w = zipf_frequencies(100, 1.2, seed=2)
    c = compare_paired(a, b, rng=rng(1), n_resamples=2000, weights=w)
    assert c.kish_n is not None and c.kish_n < 20 < c.n
    decision = classify_metric(c, tie_margin=0.02, min_queries=20)
    assert (decision.verdict, decision.tie_reason) == (Verdict.TIE, TieReason.BELOW_FLOOR)
    assert decision.detail.startswith(
        f"traffic-weighted n=100 counts as {c.kish_n:.1f} (Kish) < min_queries=20;"
    )
    better = classify_metric(c, tie_margin=0.02, min_queries=5)
    assert better.verdict is Verdict.BETTER
    assert f"(n=100, Kish {c.kish_n:.1f})" in better.detail


@pytest.mark.slow
@pytest.mark.parametrize("interval", INTERVALS)
def test_weighted_interval_coverage_near_nominal_where_the_floor_admits(interval: str) -> None:
    # Zipfian frequencies (exponent 0.65) over 3,000 synthetic nDCG@10 differences; 120-query golden sets
    # have a median Kish n near 45. benchmarks/README.md has the whole table.
    d = metric_population("slightly better")
    rates = simulate_weighted(
        d,
        zipf_frequencies(d.size, 0.65, seed="slightly better"),
        120,
        simulations=400,
        interval=interval,
        n_resamples=1000,
        seed="test",
    )
    assert rates.admitted is not None
    # 400 simulations: a Monte-Carlo standard error of about 1.1 points around 95 %.
    assert 0.915 <= rates.admitted.covered <= 0.985
