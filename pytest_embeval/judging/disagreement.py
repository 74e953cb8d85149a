"""Whether a judge (an LLM) disagrees with people at random or systematically, and the verdict of
``embeval calibrate``.

Cohen's kappa (`agreement`) says how much two judges agree beyond chance, not *how* they disagree. A model
that grades every 1 as 2 can reach the same kappa as one whose disagreements go both ways; but it encodes
another notion of relevance, and an offline comparison judged by it measures that notion instead of the
retrieval difference. Three views of the confusion matrix (rows: people's grades, columns: the model's):

* **marginal homogeneity** (Stuart-Maxwell): do both give each grade equally often? The statistic is
  ``d' V⁺ d`` with ``d`` the difference of the margins and ``V`` its covariance under homogeneity
  (``V_ii = n_i. + n_.i - 2 n_ii``, ``V_ij = -(n_ij + n_ji)``), chi-square with ``rank(V)`` degrees of
  freedom. ``V`` is the Laplacian of the graph whose edges join grades the judges confused with each other,
  so its rank is the number of grades less the number of connected parts: the pseudo-inverse is the
  textbook inverse (dropping one grade) when the judges confused grades across the whole scale, and stays
  defined when they did not (a grade nobody used, or two blocks never confused), where the textbook formula
  divides by zero;
* **symmetry** (Bowker): is ``n_ij = n_ji`` for every pair of grades? ``Σ (n_ij - n_ji)² / (n_ij + n_ji)``
  over the pairs of grades confused at least once, chi-square with that many degrees of freedom (a pair
  nobody confused carries no information; statsmodels counts it anyway, R divides by zero);
* the **mean grade difference** (model - people) with the paired bootstrap interval of `stats` (the
  golden set's default interval), seeded from the pairs.

The disagreement is *systematic* when either test rejects at ``alpha / 2`` (Bonferroni over the two). The
grades that shift are the pairs of grades whose exact binomial test of ``n_ij`` against ``n_ji`` rejects at
``alpha`` after Holm's adjustment over the pairs confused; when none does on its own, the most lopsided
pair is named.

statsmodels' ``SquareTable.homogeneity()`` and ``symmetry()`` compute the same two statistics (the tests
check ours against them); they are not used here because they return NaN for a singular covariance and
count degrees of freedom for pairs of grades nobody confused, and because statsmodels (with pandas and
patsy) is a heavy dependency for twenty lines of linear algebra.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_embeval.core.stats import binomial_sign_p, paired_bootstrap_ci, stable_seed
from pytest_embeval.judging.agreement import Agreement, agreement
from pytest_embeval.judging.merging import DEFAULT_MAX_GRADE
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_MIN_KAPPA",
    "Calibration",
    "ChiSquare",
    "Shift",
    "Verdict",
    "bowker",
    "calibrate",
    "stuart_maxwell",
]

DEFAULT_MIN_KAPPA = 0.6
DEFAULT_ALPHA = 0.05
#: Resamples of the mean grade difference's interval.
RESAMPLES = 10_000
CONFIDENCE = 0.95


class Verdict(enum.Enum):
    USABLE = "usable"
    RANDOM = "random disagreement too high"
    SYSTEMATIC = "systematic disagreement"


@dataclass(frozen=True, slots=True)
class ChiSquare:
    statistic: float
    df: int
    p: float


def _matrix(matrix: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    table = np.asarray(matrix, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1] or table.shape[0] < 2:
        raise ValueError(f"expected a square confusion matrix of at least 2 grades, got shape {table.shape}")
    if (table < 0).any() or not np.isfinite(table).all() or (table != np.round(table)).any():
        raise ValueError("a confusion matrix holds counts: integers >= 0")
    return table


def _parts(confused: np.ndarray) -> int:
    """Connected parts of the graph on the grades whose edges join grades confused with each other."""
    k = confused.shape[0]
    seen = np.zeros(k, dtype=bool)
    parts = 0
    for start in range(k):
        if seen[start]:
            continue
        parts += 1
        stack = [start]
        seen[start] = True
        while stack:
            grade = stack.pop()
            for other in np.flatnonzero(confused[grade] & ~seen).tolist():
                seen[other] = True
                stack.append(other)
    return parts


def stuart_maxwell(matrix: Sequence[Sequence[int]] | np.ndarray) -> ChiSquare | None:
    """Stuart-Maxwell's test of marginal homogeneity (see the module docstring); None when the judges
    disagree on no pair (nothing to test)."""
    table = _matrix(matrix)
    off = table + table.T
    np.fill_diagonal(off, 0.0)
    confused = off > 0
    df = table.shape[0] - _parts(confused)
    if df == 0:
        return None
    d = table.sum(axis=1) - table.sum(axis=0)
    covariance = np.diag(off.sum(axis=1)) - off
    statistic = float(d @ np.linalg.pinv(covariance) @ d)
    return ChiSquare(statistic, df, _chi2_sf(statistic, df))


def bowker(matrix: Sequence[Sequence[int]] | np.ndarray) -> ChiSquare | None:
    """Bowker's test of symmetry over the pairs of grades confused at least once; None when there are none."""
    table = _matrix(matrix)
    upper = np.triu_indices(table.shape[0], 1)
    above, below = table[upper], table.T[upper]
    total = above + below
    used = total > 0
    if not used.any():
        return None
    statistic = float((((above - below) ** 2)[used] / total[used]).sum())
    df = int(used.sum())
    return ChiSquare(statistic, df, _chi2_sf(statistic, df))


def _chi2_sf(statistic: float, df: int) -> float:
    # Imported here: this module is imported by every `--embeval` run (the report's provenance of judgments
    # names its types), and scipy.stats takes about a second to import; only a calibration needs it.
    from scipy.stats import chi2

    return float(chi2.sf(statistic, df))


@dataclass(frozen=True, slots=True)
class Shift:
    """People's grade ``human`` that the model grades ``model`` more often than the other way round."""

    human: int
    model: int
    #: pairs people graded ``human`` and the model ``model``, and the reverse
    count: int
    reverse: int
    #: pairs people graded ``human`` / ``model`` (what ``count`` / ``reverse`` are out of)
    of: int
    reverse_of: int
    #: Holm-adjusted exact binomial p of ``count`` against ``reverse``
    p: float

    def line(self) -> str:
        way = "higher" if self.model > self.human else "lower"
        return (
            f"the model grades {self.human} as {self.model} in {self.count} of {self.of} pairs people graded "
            f"{self.human} ({way}), and {self.model} as {self.human} in {self.reverse} of {self.reverse_of}"
        )


def _shifts(table: np.ndarray, alpha: float) -> tuple[Shift, ...]:
    rows = table.sum(axis=1)
    candidates = []
    k = table.shape[0]
    for i in range(k):
        for j in range(i + 1, k):
            up, down = int(table[i, j]), int(table[j, i])
            if up + down == 0:
                continue
            p = binomial_sign_p(up, down)
            human, model, count, reverse = (i, j, up, down) if up >= down else (j, i, down, up)
            candidates.append((p, human, model, count, reverse))
    # Holm: the r-th smallest p times (m - r), never below the adjusted p before it.
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    m = len(candidates)
    adjusted, running = [], 0.0
    for rank, candidate in enumerate(candidates):
        running = max(running, min(1.0, candidate[0] * (m - rank)))
        adjusted.append(running)
    found = [
        Shift(h, mo, c, r, int(rows[h]), int(rows[mo]), p)
        for (_, h, mo, c, r), p in zip(candidates, adjusted, strict=True)
        if c != r
    ]
    return tuple(sorted(found, key=lambda s: (s.p, -(s.count - s.reverse), s.human, s.model)))


@dataclass(frozen=True, slots=True)
class Calibration:
    agreement: Agreement
    homogeneity: ChiSquare | None
    symmetry: ChiSquare | None
    #: mean of model - people over the pairs both graded, and its interval at `CONFIDENCE`
    mean_difference: float
    interval: tuple[float, float] | None
    #: the pairs of grades shifted one way, most significant first (see `shifted`)
    shifts: tuple[Shift, ...]
    min_kappa: float
    alpha: float
    #: grades of the scale neither judge gave
    unused: tuple[int, ...]

    @property
    def systematic(self) -> bool:
        # A p that is not a number is no evidence of agreement: it counts as systematic.
        return any(
            test is not None and not test.p >= self.alpha / 2 for test in (self.homogeneity, self.symmetry)
        )

    @property
    def shifted(self) -> tuple[Shift, ...]:
        """The shifts significant on their own (Holm at ``alpha``), or, when the disagreement is systematic
        and none is, the most lopsided one."""
        significant = tuple(shift for shift in self.shifts if shift.p < self.alpha)
        if significant or not self.systematic or not self.shifts:
            return significant
        return (max(self.shifts, key=lambda s: (s.count - s.reverse, -s.p)),)

    @property
    def verdict(self) -> Verdict:
        if self.systematic:
            return Verdict.SYSTEMATIC
        _, kappa = self.agreement.gate
        return Verdict.RANDOM if kappa is None or not kappa >= self.min_kappa else Verdict.USABLE

    def lines(self) -> list[str]:
        """The tests, the mean difference, the verdict and its reason, one line each."""
        lines = []
        if self.unused:
            listed = ", ".join(map(str, self.unused))
            lines.append(f"grade(s) {listed} given by neither judge: the tests compare the others")
        if self.homogeneity is None or self.symmetry is None:
            lines.append("the judges agree on every pair: there is no disagreement to test")
        else:
            h, s = self.homogeneity, self.symmetry
            lines.append(
                f"marginal homogeneity (Stuart-Maxwell): chi2 {h.statistic:.2f}, df {h.df}, p {_p(h.p)}"
            )
            lines.append(f"symmetry (Bowker): chi2 {s.statistic:.2f}, df {s.df}, p {_p(s.p)}")
        interval = (
            ""
            if self.interval is None
            else f", {100 * CONFIDENCE:g}% CI [{self.interval[0]:+.3f}, {self.interval[1]:+.3f}]"
        )
        lines.append(f"mean grade difference (model - people): {self.mean_difference:+.3f}{interval}")
        name, kappa = self.agreement.gate
        verdict = self.verdict
        if verdict is Verdict.SYSTEMATIC:
            lines.append(
                f"verdict: {verdict.value} (a test rejects at alpha/2 = {self.alpha / 2:g}): the model "
                "encodes another notion of relevance: sharpen the guidelines and calibrate again"
            )
            lines += [f"  {shift.line()}" for shift in self.shifted]
        elif verdict is Verdict.RANDOM:
            shown = "undefined" if kappa is None else f"{kappa:.3f}"
            lines.append(f"verdict: {verdict.value} ({name} {shown} < --min-kappa {self.min_kappa:g})")
        else:
            lines.append(
                f"verdict: {verdict.value} ({name} {kappa:.3f} >= --min-kappa {self.min_kappa:g}; no "
                f"systematic disagreement at alpha {self.alpha:g})"
            )
        return lines


def _p(value: float) -> str:
    return "< 0.0001" if value < 1e-4 else f"{value:.4f}"


def calibrate(
    people: Mapping[Pair, int],
    model: Mapping[Pair, int],
    *,
    max_grade: int = DEFAULT_MAX_GRADE,
    min_kappa: float = DEFAULT_MIN_KAPPA,
    alpha: float = DEFAULT_ALPHA,
) -> Calibration:
    """How a model's grades differ from people's on the pairs both graded, and whether it may carry the
    rest. Raises ``ValueError`` for no pair in common, a kappa that is undefined (both judges gave every pair
    one grade: no sample to calibrate on), or ``alpha`` outside (0, 1)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    result = agreement(people, model, max_grade=max_grade)
    if result.kappa is None:
        grade = next(label for label, row in zip(result.labels, result.matrix, strict=True) if any(row))
        raise ValueError(
            f"both judges graded every pair {grade}: kappa is undefined, so agreement cannot be measured; "
            "draw the sample from the top of the rankings (embeval pool --depth 5 --sample N)"
        )
    table = np.asarray(result.matrix, dtype=np.int64)
    common = sorted(pair for pair in people if pair in model)
    differences = np.array([model[pair] - people[pair] for pair in common], dtype=np.float64)
    interval = None
    if differences.size >= 2 and np.ptp(differences) == 0:
        interval = (float(differences[0]), float(differences[0]))  # every resample has this mean
    elif differences.size >= 2:
        rng = np.random.default_rng(stable_seed("embeval calibrate", *(f"{q}\t{d}" for q, d in common)))
        interval = paired_bootstrap_ci(differences, confidence=CONFIDENCE, n_resamples=RESAMPLES, rng=rng)
    used = (table.sum(axis=0) + table.sum(axis=1)) > 0
    return Calibration(
        agreement=result,
        homogeneity=stuart_maxwell(table),
        symmetry=bowker(table),
        mean_difference=float(differences.mean()),
        interval=interval,
        shifts=_shifts(table.astype(np.float64), alpha),
        min_kappa=min_kappa,
        alpha=alpha,
        unused=tuple(int(g) for g in np.flatnonzero(~used)),
    )
