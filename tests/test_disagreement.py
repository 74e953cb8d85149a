"""Random or systematic disagreement between people and a model (`disagreement`): kappa against
scikit-learn, Stuart-Maxwell and Bowker against statsmodels, degenerate tables stated rather than NaN, and
the two judges the issue names: one that shifts every 1 to 2 and one that disagrees at random with the
same kappa."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
import statsmodels.stats.contingency_tables as statsmodels_tables
from sklearn.metrics import cohen_kappa_score

from pytest_embeval.judging.disagreement import Verdict, bowker, calibrate, stuart_maxwell

#: People's grades of the 100-pair calibration sample below: 30 zeros, 20 ones, 50 twos.
PEOPLE = (30, 20, 50)
#: The model grades every pair people graded 1 as 2, and agrees on the rest.
SHIFTED = [[30, 0, 0], [0, 0, 20], [0, 0, 50]]
#: The same number of disagreements (20, each one grade apart), as many up as down.
RANDOM = [[25, 5, 0], [5, 10, 5], [0, 5, 45]]


def grades(
    matrix: list[list[int]] | np.ndarray,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """People's and the model's grades of pairs laid out as the confusion matrix (rows: people)."""
    people: dict[tuple[str, str], int] = {}
    model: dict[tuple[str, str], int] = {}
    number = 0
    for i, row in enumerate(np.asarray(matrix).tolist()):
        for j, count in enumerate(row):
            for _ in range(count):
                pair = (f"q{number // 10}", f"d{number}")
                people[pair], model[pair] = i, j
                number += 1
    return people, model


def exact_weighted_kappa(matrix: list[list[int]]) -> Fraction:
    k, n = len(matrix), sum(map(sum, matrix))
    rows = [sum(row) for row in matrix]
    columns = [sum(row[j] for row in matrix) for j in range(k)]
    observed = Fraction(sum(abs(i - j) * matrix[i][j] for i in range(k) for j in range(k)), n)
    expected = Fraction(sum(abs(i - j) * rows[i] * columns[j] for i in range(k) for j in range(k)), n * n)
    return 1 - observed / expected


def test_the_two_judges_have_the_same_weighted_kappa_and_agreement() -> None:
    assert [sum(row) for row in SHIFTED] == [sum(row) for row in RANDOM] == list(PEOPLE)
    assert exact_weighted_kappa(SHIFTED) == exact_weighted_kappa(RANDOM) == Fraction(18, 23)
    shifted, random = (calibrate(*grades(m)) for m in (SHIFTED, RANDOM))
    assert shifted.agreement.percent == random.agreement.percent == 0.8
    assert shifted.agreement.gate == ("weighted kappa", pytest.approx(18 / 23))
    assert random.agreement.gate == ("weighted kappa", pytest.approx(18 / 23))


def test_a_judge_that_grades_every_1_as_2_is_systematic() -> None:
    result = calibrate(*grades(SHIFTED))
    assert result.verdict is Verdict.SYSTEMATIC
    assert result.homogeneity is not None and result.homogeneity.p < 1e-4
    assert result.symmetry is not None and result.symmetry.p < 1e-4
    assert result.mean_difference == pytest.approx(0.2)
    assert result.interval is not None and 0 < result.interval[0] <= 0.2 <= result.interval[1]
    (shift,) = result.shifted
    assert shift.line() == (
        "the model grades 1 as 2 in 20 of 20 pairs people graded 1 (higher), and 2 as 1 in 0 of 50"
    )
    assert "verdict: systematic disagreement" in "\n".join(result.lines())


def test_a_judge_that_disagrees_at_random_with_the_same_kappa_is_usable() -> None:
    result = calibrate(*grades(RANDOM))
    assert result.verdict is Verdict.USABLE
    assert result.homogeneity is not None and result.homogeneity.statistic == pytest.approx(0.0, abs=1e-12)
    assert result.symmetry is not None and result.symmetry.statistic == 0.0
    assert (result.mean_difference, result.shifted) == (0.0, ())
    assert result.lines()[-1] == (
        "verdict: usable (weighted kappa 0.783 >= --min-kappa 0.6; no systematic disagreement at alpha 0.05)"
    )


def test_low_kappa_without_a_pattern_is_random_disagreement() -> None:
    noisy = [[15, 8, 7], [8, 4, 8], [7, 8, 35]]
    result = calibrate(*grades(noisy))
    assert not result.systematic
    assert result.verdict is Verdict.RANDOM
    assert result.lines()[-1].startswith("verdict: random disagreement too high (weighted kappa 0.")
    assert result.lines()[-1].endswith("< --min-kappa 0.6)")


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("max_grade", [1, 2, 3])
def test_kappa_and_weighted_kappa_equal_scikit_learn(seed: int, max_grade: int) -> None:
    rng = np.random.default_rng(seed)
    people = rng.integers(0, max_grade + 1, size=120)
    model = np.where(rng.random(120) < 0.7, people, rng.integers(0, max_grade + 1, size=120))
    pairs = [(f"q{i}", f"d{i}") for i in range(120)]
    result = calibrate(
        dict(zip(pairs, people.tolist(), strict=True)),
        dict(zip(pairs, model.tolist(), strict=True)),
        max_grade=max_grade,
    )
    labels = list(range(max_grade + 1))
    assert result.agreement.kappa == pytest.approx(cohen_kappa_score(people, model, labels=labels))
    assert result.agreement.weighted_kappa == pytest.approx(
        cohen_kappa_score(people, model, labels=labels, weights="linear")
    )


def oracle(table: np.ndarray) -> tuple[object, object]:
    square = statsmodels_tables.SquareTable(table, shift_zeros=False)
    return square.homogeneity(), square.symmetry()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [2, 3, 4])
def test_stuart_maxwell_and_bowker_equal_statsmodels(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.integers(1, 20, size=(k, k))  # every pair of grades confused: the tables agree on df
    homogeneity, symmetry = oracle(table)
    ours_h, ours_s = stuart_maxwell(table), bowker(table)
    assert ours_h is not None and ours_s is not None
    assert (ours_h.statistic, ours_h.df, ours_h.p) == pytest.approx(
        (homogeneity.statistic, homogeneity.df, homogeneity.pvalue)  # type: ignore[attr-defined]
    )
    assert (ours_s.statistic, ours_s.df, ours_s.p) == pytest.approx(
        (symmetry.statistic, symmetry.df, symmetry.pvalue)  # type: ignore[attr-defined]
    )


def test_a_grade_nobody_gave_is_left_out_where_statsmodels_gives_nan() -> None:
    # grade 1 unused: statsmodels drops the last grade only, and its covariance is then singular
    table = np.array([[40, 0, 6], [0, 0, 0], [1, 0, 13]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        homogeneity, _ = oracle(table)
    assert np.isnan(homogeneity.statistic)  # type: ignore[attr-defined]
    reduced_h, reduced_s = oracle(np.array([[40, 6], [1, 13]]))
    ours_h, ours_s = stuart_maxwell(table), bowker(table)
    assert ours_h is not None and ours_s is not None
    assert (ours_h.statistic, ours_h.df) == pytest.approx((reduced_h.statistic, 1))  # type: ignore[attr-defined]
    assert (ours_s.statistic, ours_s.df) == pytest.approx((reduced_s.statistic, 1))  # type: ignore[attr-defined]
    people, model = grades(table)
    assert (
        calibrate(people, model).lines()[0]
        == "grade(s) 1 given by neither judge: the tests compare the others"
    )


def test_grades_confused_in_two_blocks_add_up() -> None:
    # 0 and 1 are confused with each other, 2 and 3 with each other, never across: V is singular twice over
    table = np.array([[30, 9, 0, 0], [2, 10, 0, 0], [0, 0, 20, 1], [0, 0, 6, 8]])
    first, second = oracle(table[:2, :2])[0], oracle(table[2:, 2:])[0]
    ours = stuart_maxwell(table)
    assert ours is not None
    assert ours.df == 2
    assert ours.statistic == pytest.approx(first.statistic + second.statistic)  # type: ignore[attr-defined]
    symmetry = bowker(table)
    assert symmetry is not None and symmetry.df == 2


def test_no_disagreement_is_stated_not_tested() -> None:
    assert stuart_maxwell([[5, 0], [0, 7]]) is None
    assert bowker([[5, 0], [0, 7]]) is None
    result = calibrate(*grades([[5, 0, 0], [0, 7, 0], [0, 0, 3]]))
    assert result.verdict is Verdict.USABLE
    assert "the judges agree on every pair: there is no disagreement to test" in result.lines()
    assert (result.mean_difference, result.interval) == (0.0, (0.0, 0.0))


def test_an_undefined_kappa_is_not_a_calibration() -> None:
    with pytest.raises(ValueError) as error:
        calibrate(*grades([[9, 0, 0], [0, 0, 0], [0, 0, 0]]))
    assert str(error.value) == (
        "both judges graded every pair 0: kappa is undefined, so agreement cannot be measured; draw the "
        "sample from the top of the rankings (embeval pool --depth 5 --sample N)"
    )


@pytest.mark.parametrize("table", [[[1, 2, 3]], [[1, -1], [0, 2]], [[1.5, 0], [0, 1]]])
def test_bad_tables_are_value_errors(table: list[list[float]]) -> None:
    with pytest.raises(ValueError):
        stuart_maxwell(table)


def sampled(rng: np.random.Generator, joint: list[list[int]], n: int = 100) -> np.ndarray:
    """The confusion matrix of ``n`` pairs drawn from the joint distribution ``joint`` (counts per 100)."""
    probabilities = np.asarray(joint, dtype=np.float64).ravel() / 100
    return rng.multinomial(n, probabilities).reshape(3, 3)


def flagged(table: np.ndarray, alpha: float = 0.05) -> bool:
    tests = (stuart_maxwell(table), bowker(table))
    return any(test is not None and test.p < alpha / 2 for test in tests)


def test_random_judges_are_rarely_flagged_and_shifting_ones_nearly_always() -> None:
    """Against theory: samples from a symmetric joint distribution (disagreement at random) are flagged at
    most at rate alpha; a model that grades nine in ten of people's 1s as 2 is flagged nearly always."""
    rng = np.random.default_rng(20240614)
    shifting = [[27, 3, 0], [0, 2, 18], [0, 2, 48]]
    random_rate = np.mean([flagged(sampled(rng, RANDOM)) for _ in range(2000)])
    shifting_rate = np.mean([flagged(sampled(rng, shifting)) for _ in range(2000)])
    assert random_rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 2000)
    assert shifting_rate >= 0.95
