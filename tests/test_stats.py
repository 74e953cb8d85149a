"""stats.py: paired bootstrap, sign test, power, and their degenerate cases, as a specification."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from pytest_embeval.core import bootstrap_intervals
from pytest_embeval.core.stats import (
    DEFAULT_INTERVAL,
    EXACT_SIGN_TEST,
    INTERVALS,
    DegenerateComparisonWarning,
    PairedComparison,
    compare_paired,
    minimum_detectable_effect,
    paired_bootstrap_ci,
    paired_n,
    sign_test,
    sorted_quantile,
    stable_seed,
)

Z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)  # 2.8016: alpha 0.05 two-sided, power 0.8


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def differences(n: int, *, mean: float, sd: float, seed: int) -> np.ndarray:
    """n normal differences rescaled to have exactly this sample mean and sample sd (ddof=1)."""
    x = rng(seed).normal(size=n)
    return mean + sd * (x - x.mean()) / x.std(ddof=1)


@pytest.fixture
def no_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---------------------------------------------------------------------------------------------------
# Reproducibility


def test_same_seed_gives_identical_comparison() -> None:
    a = rng(1).uniform(size=300)
    b = np.clip(a + rng(2).normal(0.02, 0.15, 300), 0, 1)
    first = compare_paired(a, b, rng=rng(42))
    second = compare_paired(a, b, rng=rng(42))
    assert first == second
    assert (first.ci_low, first.ci_high) == (second.ci_low, second.ci_high)


def test_different_seed_gives_different_interval() -> None:
    d = differences(300, mean=0.02, sd=0.15, seed=3)
    one = paired_bootstrap_ci(d, confidence=0.95, n_resamples=2000, rng=rng(1))
    two = paired_bootstrap_ci(d, confidence=0.95, n_resamples=2000, rng=rng(2))
    assert one != two
    assert one == pytest.approx(two, abs=0.01)  # different draws of the same interval


def test_generator_advances_so_a_second_call_draws_anew() -> None:
    d = differences(100, mean=0.02, sd=0.15, seed=4)
    shared = rng(5)
    first = paired_bootstrap_ci(d, confidence=0.95, n_resamples=1000, rng=shared)
    second = paired_bootstrap_ci(d, confidence=0.95, n_resamples=1000, rng=shared)
    assert first != second
    replay = rng(5)
    assert paired_bootstrap_ci(d, confidence=0.95, n_resamples=1000, rng=replay) == first
    assert paired_bootstrap_ci(d, confidence=0.95, n_resamples=1000, rng=replay) == second


@pytest.mark.parametrize("n_resamples", [2, 999, 1000, 2500])
@pytest.mark.parametrize("interval", INTERVALS)
def test_interval_does_not_depend_on_thread_count(n_resamples: int, interval: str) -> None:
    d = differences(1500, mean=0.01, sd=0.2, seed=6)
    results = {
        workers: paired_bootstrap_ci(
            d, confidence=0.9, n_resamples=n_resamples, rng=rng(7), workers=workers, interval=interval
        )
        for workers in (1, 2, 3, None)
    }
    assert len(set(results.values())) == 1, results


@pytest.mark.parametrize(
    ("interval", "low", "high"),
    [
        ("percentile", -0.015645804692328513, 0.08693888371022424),
        ("studentized", -0.018890638908265096, 0.0873440543811492),
    ],
)
def test_interval_is_pinned_for_a_fixed_seed(interval: str, low: float, high: float) -> None:
    # Guards the resampling stream itself: a change of generator, seeding or index mapping moves these.
    d = rng(3).normal(0.03, 0.17, 50)
    c = compare_paired(np.zeros(50), d, n_resamples=2000, rng=rng(0), interval=interval)
    assert (c.interval, c.ci_low, c.ci_high) == (
        interval,
        pytest.approx(low, rel=1e-12),
        pytest.approx(high, rel=1e-12),
    )


def test_the_default_interval_is_the_studentized_one() -> None:
    d = rng(3).normal(0.03, 0.17, 50)
    assert DEFAULT_INTERVAL == "studentized"
    assert compare_paired(np.zeros(50), d, n_resamples=500, rng=rng(0)) == compare_paired(
        np.zeros(50), d, n_resamples=500, rng=rng(0), interval="studentized"
    )


# ---------------------------------------------------------------------------------------------------
# Agreement with scipy and with theory


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_interval_agrees_with_scipy_percentile_bootstrap(confidence: float) -> None:
    gen = rng(11)
    a = gen.uniform(0, 1, 200)
    b = np.clip(a + gen.exponential(0.1, 200) - 0.08, 0, 1)  # skewed differences
    d = b - a
    ours = paired_bootstrap_ci(
        d, confidence=confidence, n_resamples=20_000, rng=rng(12), interval="percentile"
    )
    theirs = sps.bootstrap(
        (d,), np.mean, method="percentile", confidence_level=confidence, n_resamples=20_000, rng=rng(13)
    ).confidence_interval
    # Monte-Carlo sd of one endpoint is about 0.02 standard errors at 20,000 resamples.
    tolerance = 0.15 * d.std() / math.sqrt(d.size)
    assert ours[0] == pytest.approx(theirs.low, abs=tolerance)
    assert ours[1] == pytest.approx(theirs.high, abs=tolerance)


@pytest.mark.parametrize("interval", INTERVALS)
def test_large_n_uses_numpy_integers_and_stays_reproducible(interval: str) -> None:
    d = rng(17).normal(0.0, 1.0, 70_000)  # more elements than 16-bit words
    one = paired_bootstrap_ci(d, confidence=0.95, n_resamples=20, rng=rng(18), interval=interval)
    two = paired_bootstrap_ci(d, confidence=0.95, n_resamples=20, rng=rng(18), interval=interval)
    assert one == two
    assert abs(one[0]) < 0.03 and abs(one[1]) < 0.03 and one[0] < one[1]


# ---------------------------------------------------------------------------------------------------
# Hand-derived values and the seed's worked figures


def test_hand_derived_comparison(no_warnings: None) -> None:
    incumbent = [0.2, 0.5, 1.0, 0.0, 0.4, 0.6]
    candidate = [0.4, 0.5, 0.7, 0.5, 0.4, 0.9]
    # differences: +0.2, 0, -0.3, +0.5, 0, +0.3 -> 3 wins, 1 loss, 2 ties
    c = compare_paired(incumbent, candidate, n_resamples=2000, rng=rng())
    assert (c.n, c.excluded) == (6, 0)
    assert c.incumbent_mean == pytest.approx(2.7 / 6)
    assert c.candidate_mean == pytest.approx(3.4 / 6)
    assert c.delta == pytest.approx(0.7 / 6)
    # squared deviations from 0.7/6 sum to 0.38833...; / (n - 1) = 0.077667
    assert c.sd == pytest.approx(math.sqrt(0.3883333333 / 5))
    assert (c.wins, c.losses) == (3, 1)
    assert c.sign_p == pytest.approx(0.625)  # 2 * P(X >= 3 | Binomial(4, 1/2)) = 2 * 5/16
    assert c.mde == pytest.approx(Z * c.sd / math.sqrt(6))
    assert c.confidence == 0.95 and c.note is None
    assert (c.interval, c.effective_n) == ("studentized", 4)
    # symmetric around Δ, wider than the normal interval at this n: |t*| has heavy tails for six pairs
    assert c.ci_high - c.delta == pytest.approx(c.delta - c.ci_low, abs=1e-15)
    assert c.ci_high - c.delta > sps.norm.ppf(0.975) * c.sd / math.sqrt(6)


def test_sign_test_of_32_wins_against_15_losses() -> None:
    d = [0.1] * 32 + [-0.2] * 15 + [0.0] * 20  # ties are dropped
    wins, losses, p = sign_test(d)
    assert (wins, losses) == (32, 15)
    assert 0.015 < p < 0.025
    assert p == pytest.approx(sps.binomtest(32, 47, 0.5).pvalue, rel=1e-13)
    c = compare_paired(np.zeros(len(d)), d, n_resamples=500, rng=rng())
    assert (c.wins, c.losses, c.sign_p) == (32, 15, p)


HALF = EXACT_SIGN_TEST // 2


@pytest.mark.parametrize(
    "wins, losses",
    [
        (1, 0), (0, 7), (3, 4), (10, 10), (32, 15), (15, 32), (0, 60), (700, 800),
        (HALF - 40, EXACT_SIGN_TEST - HALF + 40),  # the last pair computed in integers
        (HALF + 41, EXACT_SIGN_TEST - HALF - 40),  # the first left to scipy
    ],
)  # fmt: skip
def test_sign_test_p_is_scipys_binomtest(wins: int, losses: int) -> None:
    d = [0.5] * wins + [-0.5] * losses
    assert sign_test(d) == (wins, losses, pytest.approx(sps.binomtest(wins, wins + losses).pvalue, rel=1e-12))


def test_sign_test_is_exact_where_floating_point_tails_would_not_be() -> None:
    # 2 * P(X <= 1 | Binomial(60, 1/2)) = 2 * 61 / 2**60, exactly representable
    assert sign_test([1.0] * 59 + [-1.0])[2] == 2 * 61 / 2**60


def test_comparing_imports_no_scipy() -> None:
    """scipy takes 0.5-1.5 s to import: a golden set's statistics do without it."""
    program = (
        "import sys, numpy as np\n"
        "from pytest_embeval.core.stats import compare_paired, minimum_detectable_effect\n"
        "rng = np.random.default_rng(0)\n"
        "compare_paired(rng.random(300), rng.random(300), rng=rng)\n"
        "minimum_detectable_effect(0.2, 100)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'scipy'))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_sign_test_without_wins_or_losses_has_p_one() -> None:
    assert sign_test([0.0, 0.0, 0.0]) == (0, 0, 1.0)
    assert sign_test([]) == (0, 0, 1.0)


def test_sd_017_over_120_queries_gives_a_half_width_of_0031() -> None:
    d = differences(120, mean=0.04, sd=0.17, seed=21)
    c = compare_paired(np.zeros(120), d, rng=rng(22))
    assert c.sd == pytest.approx(0.17)
    half_width = (c.ci_high - c.ci_low) / 2
    assert abs(half_width - 0.031) < 0.004


def test_paired_n_seed_figures() -> None:
    assert paired_n(0.02, 0.15) == 442
    assert paired_n(0.05, 0.15) == 71
    assert paired_n(-0.05, 0.15) == 71  # the direction does not matter
    assert paired_n(0.02, 0.15, alpha=0.01) > 442
    assert paired_n(0.02, 0.15, power=0.9) > 442


def test_paired_n_is_at_least_two() -> None:
    assert paired_n(0.5, 0.01) == 2
    assert paired_n(0.02, 0.0) == 2


def test_minimum_detectable_effect_formula() -> None:
    assert minimum_detectable_effect(0.17, 118) == pytest.approx(Z * 0.17 / math.sqrt(118))
    assert round(minimum_detectable_effect(0.17, 118), 3) == 0.044  # DESIGN.md's example stratum
    z_99 = sps.norm.ppf(0.995) + sps.norm.ppf(0.9)
    mde = minimum_detectable_effect(0.2, 50, alpha=0.01, power=0.9)
    assert mde == pytest.approx(z_99 * 0.2 / math.sqrt(50))
    assert minimum_detectable_effect(0.0, 10) == 0.0


def test_mde_and_paired_n_are_inverse() -> None:
    n = paired_n(0.02, 0.15)
    assert minimum_detectable_effect(0.15, n) <= 0.02 < minimum_detectable_effect(0.15, n - 1)


def test_comparison_mde_uses_one_minus_confidence_as_alpha() -> None:
    d = differences(80, mean=0.01, sd=0.1, seed=23)
    c = compare_paired(np.zeros(80), d, confidence=0.9, n_resamples=500, rng=rng())
    assert c.mde == pytest.approx(minimum_detectable_effect(c.sd, 80, alpha=0.1))


def test_fields_are_plain_python_types() -> None:
    c = compare_paired(np.zeros(10), np.linspace(-0.1, 0.3, 10), n_resamples=200, rng=rng())
    for field in dataclasses.fields(PairedComparison):
        value = getattr(c, field.name)
        assert type(value) in (int, float, type(None), str), (field.name, type(value))


# ---------------------------------------------------------------------------------------------------
# NaN pairs


def test_nan_pairs_are_excluded_from_both_arms_and_counted(no_warnings: None) -> None:
    nan = math.nan
    incumbent = [nan, 0.5, 0.2, 0.3, nan, 0.9, 0.1]
    candidate = [0.9, nan, 0.4, 0.6, nan, 0.8, 0.4]
    c = compare_paired(incumbent, candidate, n_resamples=500, rng=rng())
    assert (c.n, c.excluded) == (4, 3)  # the pair NaN in both arms counts once
    kept_incumbent, kept_candidate = [0.2, 0.3, 0.9, 0.1], [0.4, 0.6, 0.8, 0.4]
    assert c.incumbent_mean == pytest.approx(np.mean(kept_incumbent))
    assert c.candidate_mean == pytest.approx(np.mean(kept_candidate))
    assert c.incumbent_mean != pytest.approx(np.nanmean(incumbent))  # not a per-arm nanmean
    assert (c.wins, c.losses) == (3, 1)
    same = compare_paired(kept_incumbent, kept_candidate, n_resamples=500, rng=rng())
    assert dataclasses.replace(same, excluded=3) == c


# ---------------------------------------------------------------------------------------------------
# Degenerate input


def test_mismatched_lengths_name_both_lengths() -> None:
    with pytest.raises(ValueError, match=r"^incumbent and candidate must have the same length, got 3 and 4$"):
        compare_paired([0.1, 0.2, 0.3], [0.1, 0.2, 0.3, 0.4], rng=rng())


def test_one_pair_left_after_exclusion() -> None:
    message = "n=1: too few paired queries for an interval"
    with pytest.warns(DegenerateComparisonWarning, match=f"^{re.escape(message)}$"):
        c = compare_paired([0.2, math.nan, 0.5], [0.6, 0.3, math.nan], rng=rng())
    assert c.note == message
    assert (c.n, c.excluded) == (1, 2)
    assert (c.incumbent_mean, c.candidate_mean) == (0.2, 0.6)
    assert c.delta == pytest.approx(0.4)
    assert math.isnan(c.ci_low) and math.isnan(c.ci_high)
    assert math.isnan(c.sd) and math.isnan(c.mde)
    assert (c.wins, c.losses, c.sign_p) == (1, 0, 1.0)


@pytest.mark.parametrize(
    ("incumbent", "candidate", "excluded"), [([], [], 0), ([math.nan, 0.1], [0.2, math.nan], 2)]
)
def test_no_pairs_at_all(incumbent: list[float], candidate: list[float], excluded: int) -> None:
    with pytest.warns(DegenerateComparisonWarning, match=r"^n=0: too few paired queries for an interval$"):
        c = compare_paired(incumbent, candidate, rng=rng())
    assert (c.n, c.excluded, c.wins, c.losses, c.sign_p) == (0, excluded, 0, 0, 1.0)
    assert all(math.isnan(x) for x in (c.incumbent_mean, c.candidate_mean, c.delta, c.ci_low, c.sd))


def test_all_differences_zero() -> None:
    scores = rng(24).uniform(size=40)
    with pytest.warns(DegenerateComparisonWarning, match=r"^all paired differences are zero$"):
        c = compare_paired(scores, scores.copy(), rng=rng())
    assert (c.ci_low, c.ci_high, c.sd, c.sign_p, c.mde) == (0.0, 0.0, 0.0, 1.0, 0.0)
    assert (c.n, c.wins, c.losses, c.delta) == (40, 0, 0, 0.0)
    assert c.note == "all paired differences are zero"


def test_constant_nonzero_differences_give_a_point_interval(no_warnings: None) -> None:
    c = compare_paired(np.zeros(30), np.full(30, 0.25), n_resamples=300, rng=rng())
    assert c.sd == 0.0 and c.mde == 0.0 and c.note is None
    assert c.ci_low == pytest.approx(0.25) and c.ci_high == pytest.approx(0.25)


@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.1, math.nan, True, "0.95"])
def test_confidence_outside_open_unit_interval(confidence: object) -> None:
    expected = f"confidence must be a number strictly between 0 and 1, got {confidence!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        compare_paired([0.1, 0.2], [0.3, 0.4], confidence=confidence, rng=rng())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        paired_bootstrap_ci([0.1, 0.2], confidence=confidence, n_resamples=10, rng=rng())  # type: ignore[arg-type]


@pytest.mark.parametrize("n_resamples", [0, -5, 2.5, True, None])
def test_n_resamples_must_be_a_positive_integer(n_resamples: object) -> None:
    expected = f"n_resamples must be a positive integer, got {n_resamples!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        compare_paired([0.1, 0.2], [0.3, 0.4], n_resamples=n_resamples, rng=rng())  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "shape"), [([[0.1, 0.2], [0.3, 0.4]], "(2, 2)"), (0.5, "()")])
def test_input_must_be_one_dimensional(value: object, shape: str) -> None:
    with pytest.raises(ValueError, match=f"^incumbent must be 1-D, got shape {re.escape(shape)}$"):
        compare_paired(value, [0.1, 0.2], rng=rng())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"^candidate must be 1-D, got shape {re.escape(shape)}$"):
        compare_paired([0.1, 0.2], value, rng=rng())  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [math.inf, -math.inf])
def test_infinite_scores_are_rejected_with_their_position(bad: float) -> None:
    expected = (
        f"candidate[2] is {bad!r}; per-query scores must be finite "
        "(NaN marks a query excluded from both arms)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        compare_paired([0.1, 0.2, 0.3], [0.1, math.nan, bad], rng=rng())


@pytest.mark.parametrize("not_a_generator", [0, np.random.RandomState(0), None])
def test_rng_must_be_a_generator(not_a_generator: object) -> None:
    with pytest.raises(TypeError, match=r"^rng must be a numpy\.random\.Generator"):
        compare_paired([0.1, 0.2], [0.3, 0.4], rng=not_a_generator)  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", [0, -1, 1.5])
def test_workers_must_be_positive(workers: object) -> None:
    with pytest.raises(ValueError, match=f"^workers must be a positive integer or None, got {workers!r}$"):
        paired_bootstrap_ci([0.1, 0.2], confidence=0.9, n_resamples=5, rng=rng(), workers=workers)  # type: ignore[arg-type]


def test_bootstrap_of_differences_rejects_nan_and_too_few() -> None:
    with pytest.raises(ValueError, match=r"^differences\[1\] is nan; drop NaN pairs first"):
        paired_bootstrap_ci([0.1, math.nan, 0.2], confidence=0.95, n_resamples=10, rng=rng())
    with pytest.raises(ValueError, match=r"^the bootstrap needs at least 2 paired differences, got 1$"):
        paired_bootstrap_ci([0.1], confidence=0.95, n_resamples=10, rng=rng())
    with pytest.raises(ValueError, match=r"^differences\[0\] is nan"):
        sign_test([math.nan])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: paired_n(0, 0.15), "delta must be a finite nonzero number, got 0"),
        (lambda: paired_n(math.inf, 0.15), "delta must be a finite nonzero number, got inf"),
        (lambda: paired_n(0.02, -0.1), "sd must be a finite number >= 0, got -0.1"),
        (lambda: paired_n(0.02, 0.15, alpha=1.0), "alpha must be a number strictly between 0 and 1, got 1.0"),
        (lambda: paired_n(0.02, 0.15, power=0), "power must be a number strictly between 0 and 1, got 0"),
        (lambda: minimum_detectable_effect(0.1, 0), "n must be a positive integer, got 0"),
        (lambda: minimum_detectable_effect(math.nan, 10), "sd must be a finite number >= 0, got nan"),
    ],
)
def test_power_helpers_validate(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call()  # type: ignore[operator]


# ---------------------------------------------------------------------------------------------------
# The studentized interval against an independent implementation and against theory


def naive_studentized(d: np.ndarray, confidence: float, n_resamples: int, gen: np.random.Generator) -> float:
    """The symmetric studentized half-width the textbook way: an index matrix, then every resample's t."""
    n = d.size
    x = d[gen.integers(0, n, (n_resamples, n))]
    t = (x.mean(axis=1) - d.mean()) / (x.std(axis=1, ddof=1) / math.sqrt(n))
    return float(np.quantile(np.abs(t), confidence)) * d.std(ddof=1) / math.sqrt(n)


@pytest.mark.parametrize("confidence", [0.9, 0.95])
@pytest.mark.parametrize("n", [25, 200])
def test_studentized_interval_agrees_with_a_naive_implementation(confidence: float, n: int) -> None:
    gen = rng(31)
    d = gen.choice([-0.5, -0.2, 0.0, 0.0, 0.0, 0.1, 0.3, 0.6], size=n)  # lumpy, zero-heavy
    low, high = paired_bootstrap_ci(d, confidence=confidence, n_resamples=40_000, rng=rng(32))
    half = naive_studentized(d, confidence, 40_000, rng(33))
    assert (low + high) / 2 == pytest.approx(d.mean(), abs=1e-15)
    # Different draws: the quantile of |t*| has a Monte-Carlo sd near 1 % of itself at 40,000 resamples.
    assert (high - low) / 2 == pytest.approx(half, rel=0.04)


def test_studentized_statistic_has_the_exact_bootstrap_distribution() -> None:
    # n=4: all 4**4 = 256 index tuples are equally likely; |t*| takes few values, so the engine's
    # resampled |t*| can be checked against its exact distribution.
    d = np.array([0.0, 0.1, 0.1, 0.5])
    tuples = np.array(list(itertools.product(range(4), repeat=4)))
    x = d[tuples]
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.abs(x.mean(1) - d.mean()) / (x.std(1, ddof=1) / 2)
    exact[x.std(1) == 0] = math.inf  # a constant resample other than Δ itself
    resampled = bootstrap_intervals.StudentizedInterval(d, 60_000, rng(34), None).t
    values = np.unique(np.round(exact, 9))
    observed = np.array([np.count_nonzero(np.isclose(resampled, v, rtol=1e-9)) for v in values])
    expected = np.array([np.count_nonzero(np.isclose(exact, v, rtol=1e-9)) for v in values]) / 256 * 60_000
    assert observed.sum() == 60_000
    assert sps.chisquare(observed, expected).pvalue > 1e-3


def test_studentized_width_tends_to_the_normal_one_for_large_n() -> None:
    # Theory: for a smooth population t* -> N(0, 1), so w -> z_{0.975} = 1.96 (the percentile interval's
    # half-width tends to the same 1.96 sd / sqrt(n)).
    d = rng(35).normal(0.0, 1.0, 4000)
    low, high = paired_bootstrap_ci(d, confidence=0.95, n_resamples=20_000, rng=rng(36))
    w = (high - low) / 2 / (d.std(ddof=1) / math.sqrt(d.size))
    assert w == pytest.approx(sps.norm.ppf(0.975), abs=0.04)


def test_studentized_width_matches_student_t_for_normal_data_at_the_floor() -> None:
    # Theory: for normal data t* has (nearly) Student's t with n - 1 degrees of freedom, whose 97.5 %
    # point at n=20 is 2.093, against the 1.96 a percentile interval effectively uses. Mean of 200 samples.
    widths = []
    for i in range(200):
        d = rng(100 + i).normal(0.0, 1.0, 20)
        low, high = paired_bootstrap_ci(d, confidence=0.95, n_resamples=2000, rng=rng(500 + i))
        widths.append((high - low) / 2 / (d.std(ddof=1) / math.sqrt(20)))
    assert np.mean(widths) == pytest.approx(sps.t.ppf(0.975, 19), rel=0.04)
    assert np.mean(widths) > sps.norm.ppf(0.975) * 1.03


@pytest.mark.parametrize(
    ("d", "low", "high"),
    [
        # 12 % of resamples are all zeros: no spread, |t*| infinite; nothing bounds the gain away from 0
        ([0.0] * 18 + [0.5, 0.5], 0.0, 0.125),
        # 36 % of resamples are all -1: an infinite |t*| again, yet 19 of 20 queries lost everything
        ([-1.0] * 19 + [0.0], -1.0, -0.85),
    ],
)
def test_where_the_studentized_interval_is_unbounded_the_percentile_one_runs(
    d: list[float], low: float, high: float
) -> None:
    t = bootstrap_intervals.StudentizedInterval(np.array(d), 2000, rng(37), None).t
    assert np.mean(np.isinf(t)) > 0.05
    message = (
        "the studentized interval is unbounded (too many resamples have no spread): percentile interval of "
        "the same resamples"
    )
    with pytest.warns(DegenerateComparisonWarning, match=f"^{re.escape(message)}$"):
        c = compare_paired(np.zeros(20), d, n_resamples=2000, rng=rng(37))
    assert (c.interval, c.note) == ("percentile", message)
    assert (c.ci_low, c.ci_high) == pytest.approx((low, high), abs=1e-12)
    percentile = compare_paired(np.zeros(20), d, n_resamples=2000, rng=rng(37), interval="percentile")
    assert (percentile.ci_low, percentile.ci_high) == pytest.approx((c.ci_low, c.ci_high), abs=1e-12)
    assert percentile.note is None and c.p_value == pytest.approx(percentile.p_value, abs=1e-12)


def test_the_studentized_p_value_counts_the_resamples_without_spread() -> None:
    d = np.array([0.0] * 17 + [0.5, 0.5, -0.2])  # 2 % of resamples flat: the interval is still bounded
    t = bootstrap_intervals.StudentizedInterval(d, 4000, rng(38), None).t
    assert 0 < np.mean(np.isinf(t)) < 0.05
    c = compare_paired(np.zeros(20), d, n_resamples=4000, rng=rng(38))
    assert c.interval == "studentized" and c.note is None
    statistic = abs(c.delta) / (c.sd / math.sqrt(20))
    assert c.p_value == pytest.approx(np.mean(t >= statistic), abs=1 / 4000)


def test_unknown_interval_is_rejected() -> None:
    expected = "interval must be one of studentized, percentile, got 'bca'"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        compare_paired([0.1, 0.2], [0.3, 0.5], rng=rng(), interval="bca")
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        paired_bootstrap_ci([0.1, 0.2], confidence=0.9, n_resamples=5, rng=rng(), interval="bca")


# ---------------------------------------------------------------------------------------------------
# The p-value inverts the interval


@pytest.mark.parametrize("interval", INTERVALS)
@pytest.mark.parametrize("seed", range(6))
def test_p_value_is_below_alpha_exactly_when_the_interval_excludes_zero(interval: str, seed: int) -> None:
    gen = rng(40 + seed)
    d = gen.choice([-0.4, -0.1, 0.0, 0.0, 0.2, 0.5], size=30) + 0.05 * seed
    c = compare_paired(np.zeros(30), d, n_resamples=3000, rng=rng(41), interval=interval)
    for alpha in [*np.linspace(0.001, 0.999, 199), c.p_value * 0.999, c.p_value * 1.001]:
        if not 0 < alpha < 1 or 1 - alpha == 1:
            continue
        low, high = paired_bootstrap_ci(
            d, confidence=1 - alpha, n_resamples=3000, rng=rng(41), interval=interval
        )
        assert (low > 0 or high < 0) == (c.p_value < alpha), (alpha, low, high, c.p_value)


def test_percentile_p_value_is_twice_the_smaller_tail() -> None:
    d = differences(60, mean=0.02, sd=0.1, seed=42)
    c = compare_paired(np.zeros(60), d, n_resamples=20_000, rng=rng(43), interval="percentile")
    means = bootstrap_intervals.bootstrap_interval("percentile", d, 20_000, rng(43), None).means  # type: ignore[union-attr]
    assert c.p_value == pytest.approx(2 * np.mean(means <= 0), abs=2e-4)


def test_p_values_of_degenerate_comparisons() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        assert compare_paired([0.1, 0.2], [0.1, 0.2], rng=rng()).p_value == 1.0
        assert math.isnan(compare_paired([0.1], [0.3], rng=rng()).p_value)
    assert compare_paired(np.zeros(5), np.full(5, -0.5), rng=rng()).p_value == 0.0


# ---------------------------------------------------------------------------------------------------
# Properties

finite_scores = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(d=st.lists(finite_scores, min_size=2, max_size=40), seed=st.integers(0, 2**32 - 1))
def test_percentile_interval_lies_within_the_data_and_is_ordered(d: list[float], seed: int) -> None:
    low, high = paired_bootstrap_ci(d, confidence=0.95, n_resamples=200, rng=rng(seed), interval="percentile")
    assert min(d) - 1e-12 <= low <= high <= max(d) + 1e-12


@settings(max_examples=60, deadline=None)
@given(d=st.lists(finite_scores, min_size=2, max_size=40), seed=st.integers(0, 2**32 - 1))
def test_studentized_interval_is_symmetric_around_delta(d: list[float], seed: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        c = compare_paired(np.zeros(len(d)), d, n_resamples=200, rng=rng(seed))
    assert c.ci_low <= c.delta <= c.ci_high
    if c.interval == "studentized" and c.sd > 0:
        assert c.ci_high - c.delta == pytest.approx(c.delta - c.ci_low, rel=1e-9, abs=1e-15)


# Metric differences live on a coarse grid; on arbitrary floats (0.5 beside 1e-05) a shift changes the
# rounding of the studentized statistic of near-constant resamples by more than any fixed tolerance.
metric_differences = st.lists(st.integers(-100, 100).map(lambda k: k / 100), min_size=2, max_size=40)


@settings(max_examples=40, deadline=None)
@given(
    d=metric_differences.filter(lambda d: len(set(d)) > 1),
    shift=st.floats(-1, 1),
    scale=st.floats(0.01, 10),
    seed=st.integers(0, 2**32 - 1),
    interval=st.sampled_from(INTERVALS),
)
def test_interval_is_equivariant_under_shift_scale_and_sign(
    d: list[float], shift: float, scale: float, seed: int, interval: str
) -> None:
    x = np.asarray(d)

    def ci(values: np.ndarray) -> tuple[float, float]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateComparisonWarning)
            return paired_bootstrap_ci(
                values, confidence=0.9, n_resamples=200, rng=rng(seed), interval=interval
            )

    low, high = ci(x)
    if not math.isfinite(high - low):
        return
    tolerance = 1e-9 * (1 + float(np.abs(x).max()))
    assert ci(x + shift) == pytest.approx((low + shift, high + shift), abs=tolerance)
    assert ci(x * scale) == pytest.approx((low * scale, high * scale), abs=tolerance * scale)
    assert ci(-x) == pytest.approx((-high, -low), abs=tolerance)


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(finite_scores, finite_scores), min_size=2, max_size=30),
    seed=st.integers(0, 2**32 - 1),
    interval=st.sampled_from(INTERVALS),
)
def test_swapping_the_arms_mirrors_the_comparison_exactly(
    pairs: list[tuple[float, float]], seed: int, interval: str
) -> None:
    a, b = (np.asarray(arm) for arm in zip(*pairs, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        forward = compare_paired(a, b, n_resamples=200, rng=rng(seed), interval=interval)
        backward = compare_paired(b, a, n_resamples=200, rng=rng(seed), interval=interval)
    assert (forward.wins, forward.losses) == (backward.losses, backward.wins)
    assert (forward.sign_p, forward.sd) == (backward.sign_p, backward.sd)
    assert forward.delta == -backward.delta
    assert forward.interval == backward.interval
    if forward.interval == "studentized":  # exactly mirrored: |t*| does not see the sign
        assert (forward.ci_low, forward.ci_high) == (-backward.ci_high, -backward.ci_low)
        assert forward.p_value == backward.p_value
    else:  # the quantiles of the mirrored means interpolate from the other end
        assert forward.p_value == pytest.approx(backward.p_value, abs=1e-12)
        assert (forward.ci_low, forward.ci_high) == pytest.approx(
            (-backward.ci_high, -backward.ci_low), abs=1e-12
        )
    assert forward.effective_n <= forward.n


# ---------------------------------------------------------------------------------------------------
# stable_seed


def test_stable_seed_is_pinned_and_in_range() -> None:
    assert stable_seed("support-search", "overall", 0) == 4885628557004849779
    assert stable_seed() == 2858069222894195974
    assert all(0 <= stable_seed("x", i) < 2**63 for i in range(100))


def test_stable_seed_accepts_numpy_integers() -> None:
    assert stable_seed("q", np.int64(3)) == stable_seed("q", 3)


def test_stable_seed_encodes_parts_unambiguously() -> None:
    seeds = {
        stable_seed("ab", "c"),
        stable_seed("a", "bc"),
        stable_seed("abc"),
        stable_seed("1"),
        stable_seed(1),
        stable_seed("c", "ab"),
    }
    assert len(seeds) == 6


@pytest.mark.parametrize("part", [1.5, True, None, b"x"])
def test_stable_seed_rejects_other_types(part: object) -> None:
    with pytest.raises(TypeError, match="stable_seed parts must be str or int"):
        stable_seed("a", part)  # type: ignore[arg-type]


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40),
    st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.025, 0.5, 0.95, 0.975, 1.0])),
)
@settings(max_examples=500, deadline=None)
def test_sorted_quantile_is_numpys_default_quantile_to_the_last_bit(values: list[float], q: float) -> None:
    ordered = np.sort(np.array(values))
    got, expected = sorted_quantile(ordered, q), float(np.quantile(ordered, q))
    assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)


def test_sorted_quantile_with_infinite_values_is_numpys() -> None:
    """|t*| of flat resamples is infinite: the interval is never taken there (`_Studentized.at`), but the
    helper still gives what numpy gives (inf, or NaN between inf and inf)."""
    for ordered, q in itertools.product(
        [np.array([0.5, 1.0, math.inf, math.inf]), np.array([math.inf]), np.array([-0.0, -0.0])],
        (0.0, 0.3, 0.5, 0.7, 0.9, 1.0),
    ):
        with np.errstate(invalid="ignore"):  # numpy's own inf - inf
            expected = float(np.quantile(ordered, q))
        got = sorted_quantile(ordered, q)
        assert got == expected or (math.isnan(got) and math.isnan(expected)), (ordered, q)
        assert math.copysign(1.0, got) == math.copysign(1.0, expected), (ordered, q)
