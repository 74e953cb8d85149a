"""stats.py: paired bootstrap, sign test, power, and their degenerate cases, as a specification."""

from __future__ import annotations

import dataclasses
import math
import re
import time
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from pytest_embeval import stats
from pytest_embeval.stats import (
    DegenerateComparisonWarning,
    PairedComparison,
    compare_paired,
    minimum_detectable_effect,
    paired_bootstrap_ci,
    paired_n,
    sign_test,
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


@pytest.mark.parametrize("n_resamples", [1, 999, 1000, 2500])
def test_interval_does_not_depend_on_thread_count(n_resamples: int) -> None:
    d = differences(1500, mean=0.01, sd=0.2, seed=6)
    results = {
        workers: paired_bootstrap_ci(d, confidence=0.9, n_resamples=n_resamples, rng=rng(7), workers=workers)
        for workers in (1, 2, 3, None)
    }
    assert len(set(results.values())) == 1, results


def test_interval_is_pinned_for_a_fixed_seed() -> None:
    # Guards the resampling stream itself: a change of generator, seeding or index mapping moves these.
    d = rng(3).normal(0.03, 0.17, 50)
    c = compare_paired(np.zeros(50), d, n_resamples=2000, rng=rng(0))
    assert c.ci_low == pytest.approx(-0.015645804692328513, rel=1e-12)
    assert c.ci_high == pytest.approx(0.08693888371022424, rel=1e-12)


# ---------------------------------------------------------------------------------------------------
# Agreement with scipy and with theory


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_interval_agrees_with_scipy_percentile_bootstrap(confidence: float) -> None:
    gen = rng(11)
    a = gen.uniform(0, 1, 200)
    b = np.clip(a + gen.exponential(0.1, 200) - 0.08, 0, 1)  # skewed differences
    d = b - a
    ours = paired_bootstrap_ci(d, confidence=confidence, n_resamples=20_000, rng=rng(12))
    theirs = sps.bootstrap(
        (d,), np.mean, method="percentile", confidence_level=confidence, n_resamples=20_000, rng=rng(13)
    ).confidence_interval
    # Monte-Carlo sd of one endpoint is about 0.02 standard errors at 20,000 resamples.
    tolerance = 0.15 * d.std() / math.sqrt(d.size)
    assert ours[0] == pytest.approx(theirs.low, abs=tolerance)
    assert ours[1] == pytest.approx(theirs.high, abs=tolerance)


@pytest.mark.parametrize(("n", "n_resamples"), [(37, 40_000), (40_000, 400), (70_000, 300)])
def test_resampled_means_have_the_bootstrap_mean_and_variance(n: int, n_resamples: int) -> None:
    d = rng(14).gamma(2.0, 0.05, n) - 0.1
    means = stats._bootstrap_means(d, n_resamples, rng(15), workers=None)
    assert means.shape == (n_resamples,)
    # E[mean*] = mean(d); Var[mean*] = population variance of d / n.
    spread = d.std() / math.sqrt(d.size)
    assert means.mean() == pytest.approx(d.mean(), abs=4 * spread / math.sqrt(means.size))
    assert means.var() == pytest.approx(d.var() / d.size, rel=5 * math.sqrt(2 / n_resamples))


@pytest.mark.parametrize("n", [2, 3, 7, 1500, 4096, 4097, 40_000, 65_535, 65_536])
def test_every_index_has_the_same_number_of_accepted_words(n: int) -> None:
    q, limit = stats._word_split(n)
    assert (q, limit) == (2**16 // n, n * (2**16 // n))
    assert 2**16 - limit < n  # fewer than n of the 65,536 words are ever rejected
    index = np.arange(limit) // q  # the mapping of every accepted word
    assert index.max() == n - 1
    assert (np.bincount(index, minlength=n) == q).all()


class ScriptedBits:
    """Stands in for a bit generator: 64-bit outputs that pack a scripted sequence of 16-bit words."""

    def __init__(self, words: list[int]) -> None:
        self.words = np.array(words, dtype=np.uint16)
        self.position = 0

    def random_raw(self, size: int) -> np.ndarray:
        chunk = self.words[self.position : self.position + 4 * size]
        assert chunk.size == 4 * size, "script exhausted"
        self.position += 4 * size
        return chunk.copy().view(np.uint64)


def test_rejected_words_are_redrawn_in_place_and_in_order() -> None:
    limit = 1500 * (2**16 // 1500)  # 64,500: words from 64,500 up are rejected
    first = [5, 64_500, 7, 65_535, 9, 10, 11, 12, 64_999, 1, 2, 3]  # 9 words wanted: 3 whole outputs
    redraw_1 = [13, 65_000, 15, 4]  # for positions 1, 3, 8; position 3 is rejected again
    redraw_2 = [16, 17, 18, 19]  # for position 3
    bits = ScriptedBits(first + redraw_1 + redraw_2)
    words = stats._accepted_words(bits, 9, limit, np.empty(9, dtype=np.bool_))
    # words left over in a 64-bit output are dropped, never carried into the next draw
    assert words.tolist() == [5, 13, 7, 16, 9, 10, 11, 12, 15]
    assert bits.position == 20


def test_accepted_words_skip_the_check_when_nothing_can_be_rejected() -> None:
    bits = ScriptedBits([65_535, 0, 1, 2])
    assert stats._accepted_words(bits, 3, 2**16, np.empty(3, dtype=np.bool_)).tolist() == [65_535, 0, 1]


def test_resampling_is_exactly_multinomial() -> None:
    # With d = 8**j the sum of a resample of n=5 encodes how often each element was drawn (each count
    # is at most 5 < 8), so the counts behind every resample can be read back exactly.
    n, n_resamples = 5, 50_000
    d = 8.0 ** np.arange(n)
    sums = np.rint(stats._bootstrap_means(d, n_resamples, rng(16), workers=None) * n).astype(np.int64)
    counts = (sums[:, None] // 8 ** np.arange(n)) % 8
    assert (counts.sum(axis=1) == n).all()
    # every element equally likely overall ...
    assert sps.chisquare(counts.sum(axis=0)).pvalue > 1e-3
    # ... and each element's count per resample is Binomial(5, 1/5)
    for j in range(n):
        observed = np.bincount(counts[:, j], minlength=n + 1)
        expected = sps.binom.pmf(np.arange(n + 1), n, 1 / n) * n_resamples
        assert expected.min() > 5  # enough for the chi-square approximation in every bin
        assert sps.chisquare(observed, expected).pvalue > 1e-3


def test_large_n_uses_numpy_integers_and_stays_reproducible() -> None:
    d = rng(17).normal(0.0, 1.0, 70_000)  # more elements than 16-bit words
    one = paired_bootstrap_ci(d, confidence=0.95, n_resamples=20, rng=rng(18))
    two = paired_bootstrap_ci(d, confidence=0.95, n_resamples=20, rng=rng(18))
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
    assert -0.3 <= c.ci_low < c.delta < c.ci_high <= 0.5


def test_sign_test_of_32_wins_against_15_losses() -> None:
    d = [0.1] * 32 + [-0.2] * 15 + [0.0] * 20  # ties are dropped
    wins, losses, p = sign_test(d)
    assert (wins, losses) == (32, 15)
    assert 0.015 < p < 0.025
    assert p == sps.binomtest(32, 47, 0.5).pvalue
    c = compare_paired(np.zeros(len(d)), d, n_resamples=500, rng=rng())
    assert (c.wins, c.losses, c.sign_p) == (32, 15, p)


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
# Properties

finite_scores = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(d=st.lists(finite_scores, min_size=2, max_size=40), seed=st.integers(0, 2**32 - 1))
def test_interval_lies_within_the_data_and_is_ordered(d: list[float], seed: int) -> None:
    low, high = paired_bootstrap_ci(d, confidence=0.95, n_resamples=200, rng=rng(seed))
    assert min(d) - 1e-12 <= low <= high <= max(d) + 1e-12


@settings(max_examples=40, deadline=None)
@given(
    d=st.lists(finite_scores, min_size=2, max_size=40),
    shift=st.floats(-1, 1),
    scale=st.floats(0.01, 10),
    seed=st.integers(0, 2**32 - 1),
)
def test_interval_is_equivariant_under_shift_scale_and_sign(
    d: list[float], shift: float, scale: float, seed: int
) -> None:
    x = np.asarray(d)

    def ci(values: np.ndarray) -> tuple[float, float]:
        return paired_bootstrap_ci(values, confidence=0.9, n_resamples=200, rng=rng(seed))

    low, high = ci(x)
    assert ci(x + shift) == pytest.approx((low + shift, high + shift), abs=1e-9)
    assert ci(x * scale) == pytest.approx((low * scale, high * scale), abs=1e-9)
    assert ci(-x) == pytest.approx((-high, -low), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    pairs=st.lists(st.tuples(finite_scores, finite_scores), min_size=2, max_size=30),
    seed=st.integers(0, 2**32 - 1),
)
def test_swapping_the_arms_mirrors_the_comparison(pairs: list[tuple[float, float]], seed: int) -> None:
    a, b = (np.asarray(arm) for arm in zip(*pairs, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        forward = compare_paired(a, b, n_resamples=200, rng=rng(seed))
        backward = compare_paired(b, a, n_resamples=200, rng=rng(seed))
    assert (forward.wins, forward.losses) == (backward.losses, backward.wins)
    assert forward.sign_p == backward.sign_p
    assert forward.delta == pytest.approx(-backward.delta, abs=1e-12)
    assert (forward.ci_low, forward.ci_high) == pytest.approx((-backward.ci_high, -backward.ci_low), abs=1e-9)
    assert forward.wins + forward.losses <= forward.n


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


# ---------------------------------------------------------------------------------------------------
# Coverage (slow): the interval does what it says on data with a known mean difference.


def _metric_like_differences(gen: np.random.Generator, size: int) -> np.ndarray:
    """Skewed, discrete differences like those of a per-query recall@5: mostly ties, some big moves."""
    return gen.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.06, 0.10, 0.60, 0.14, 0.10], size=size)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "truth"),
    [("normal", 0.03), ("metric-like", -0.06 - 0.05 + 0.07 + 0.10)],
)
def test_95_percent_interval_covers_the_true_difference(name: str, truth: float) -> None:
    started = time.perf_counter()
    data = rng(stable_seed("coverage", name))
    n_sets, n = 2000, 100  # the coverage estimate has a standard error of 0.5 %
    covered = 0
    for i in range(n_sets):
        d = data.normal(truth, 0.17, n) if name == "normal" else _metric_like_differences(data, n)
        low, high = paired_bootstrap_ci(d, confidence=0.95, n_resamples=2000, rng=rng(stable_seed(name, i)))
        covered += low <= truth <= high
    assert 0.93 <= covered / n_sets <= 0.97, covered / n_sets
    assert time.perf_counter() - started < 60
