"""resampling.py: the bootstrap engine's draws are exactly uniform, reproducible and thread-independent."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pytest_embeval.core import resampling
from pytest_embeval.core.resampling import bootstrap_column_sums, bootstrap_sums


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize(("n", "n_resamples"), [(37, 40_000), (40_000, 400), (70_000, 300)])
def test_resampled_means_have_the_bootstrap_mean_and_variance(n: int, n_resamples: int) -> None:
    d = rng(14).gamma(2.0, 0.05, n) - 0.1
    sums, squares = bootstrap_sums(d, n_resamples, rng(15), None)
    assert squares is None
    means = sums / n
    assert means.shape == (n_resamples,)
    # E[mean*] = mean(d); Var[mean*] = population variance of d / n.
    spread = d.std() / math.sqrt(d.size)
    assert means.mean() == pytest.approx(d.mean(), abs=4 * spread / math.sqrt(means.size))
    assert means.var() == pytest.approx(d.var() / d.size, rel=5 * math.sqrt(2 / n_resamples))


@pytest.mark.parametrize("n", [2, 3, 7, 1500, 4096, 4097, 40_000, 65_535, 65_536])
def test_every_index_has_the_same_number_of_accepted_words(n: int) -> None:
    q, limit = resampling._word_split(n)
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
    words = resampling._accepted_words(bits, 9, limit, np.empty(9, dtype=np.bool_))  # type: ignore[arg-type]
    # words left over in a 64-bit output are dropped, never carried into the next draw
    assert words.tolist() == [5, 13, 7, 16, 9, 10, 11, 12, 15]
    assert bits.position == 20


def test_accepted_words_skip_the_check_when_nothing_can_be_rejected() -> None:
    bits = ScriptedBits([65_535, 0, 1, 2])
    words = resampling._accepted_words(bits, 3, 2**16, np.empty(3, dtype=np.bool_))  # type: ignore[arg-type]
    assert words.tolist() == [65_535, 0, 1]


def test_resampling_is_exactly_multinomial_and_squares_sum_the_same_draws() -> None:
    # With d = 8**j the sum of a resample of n=5 encodes how often each element was drawn (each count
    # is at most 5 < 8), so the counts behind every resample can be read back exactly.
    n, n_resamples = 5, 50_000
    d = 8.0 ** np.arange(n)
    sums, squares = bootstrap_sums(d, n_resamples, rng(16), None, squares=True)
    assert squares is not None
    counts = (np.rint(sums).astype(np.int64)[:, None] // 8 ** np.arange(n)) % 8
    assert (counts.sum(axis=1) == n).all()
    # the sum of squares of every resample is that of the very draws its sum encodes
    assert (squares == counts @ (d * d)).all()
    # every element equally likely overall ...
    assert sps.chisquare(counts.sum(axis=0)).pvalue > 1e-3
    # ... and each element's count per resample is Binomial(5, 1/5)
    for j in range(n):
        observed = np.bincount(counts[:, j], minlength=n + 1)
        expected = sps.binom.pmf(np.arange(n + 1), n, 1 / n) * n_resamples
        assert expected.min() > 5  # enough for the chi-square approximation in every bin
        assert sps.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("n_resamples", [1, 999, 1000, 2500])
@pytest.mark.parametrize("squares", [False, True])
def test_sums_do_not_depend_on_thread_count(n_resamples: int, squares: bool) -> None:
    d = rng(6).normal(0.01, 0.2, 1500)
    results = [
        bootstrap_sums(d, n_resamples, rng(7), workers, squares=squares) for workers in (1, 2, 3, None)
    ]
    for sums, sums_of_squares in results[1:]:
        assert (sums == results[0][0]).all()
        if squares:
            assert (sums_of_squares == results[0][1]).all()


def test_large_n_uses_numpy_integers_and_sums_squares_too() -> None:
    d = rng(17).normal(0.0, 1.0, 70_000)  # more elements than 16-bit words
    one = bootstrap_sums(d, 20, rng(18), None, squares=True)
    two = bootstrap_sums(d, 20, rng(18), None, squares=True)
    assert (one[0] == two[0]).all() and (one[1] == two[1]).all()  # type: ignore[union-attr]
    assert one[1] == pytest.approx(np.full(20, d.size * np.mean(d * d)), rel=0.05)


def test_column_sums_draw_the_rows_one_array_draws() -> None:
    # Integer values: sums are exact whatever their order, so equal sums mean equal draws.
    d = rng(40).integers(-5, 6, 37).astype(np.float64)
    w = rng(41).integers(1, 9, 37).astype(np.float64)
    plain, _ = bootstrap_sums(d, 2500, rng(42), None)
    columns = bootstrap_column_sums(np.column_stack([np.ones(37), d, w, w * d]), 2500, rng(42), None)
    assert columns.shape == (2500, 4)
    assert np.array_equal(columns[:, 0], np.full(2500, 37.0))
    assert np.array_equal(columns[:, 1], plain)
    weights_alone, _ = bootstrap_sums(w, 2500, rng(42), None)
    assert np.array_equal(columns[:, 2], weights_alone)
    for workers in (1, 2, 3):
        again = bootstrap_column_sums(np.column_stack([np.ones(37), d, w, w * d]), 2500, rng(42), workers)
        assert np.array_equal(again, columns)
