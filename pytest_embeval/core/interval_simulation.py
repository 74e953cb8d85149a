"""Whether an interval keeps its promise: coverage and one-sided error rates, by simulation.

A *population* is an array of per-query paired differences (candidate - incumbent), e.g. every query of
a real collection scored under two models. A simulated golden set draws ``n`` of them with replacement;
its interval should contain the population mean (the true Δ) with probability ``confidence``, and lie
wholly below it (or wholly above it) with probability ``(1 - confidence) / 2`` each.

Under a *null* population (true Δ = 0) those one-sided misses are false verdicts: an interval wholly below
0 can make a WORSE, one wholly above 0 a BETTER. Two ways to make a null from real differences:

* :func:`flipped` -- every difference with both signs (the population ``d`` and ``-d``, equally likely):
  what two interchangeable models produce, since swapping which arm is called the candidate changes
  nothing. It keeps the zeros (queries both arms score alike) and the lumps of a metric's values.
* :func:`centred` -- ``d - mean(d)``: it keeps the shape, skewness included, but moves the zeros off 0. A
  skewed null is the harder case for one-sided rates at small n; no interval fixes it fully.

A *weighted* population gives each query a frequency too (:func:`zipf_frequencies`); its true Δ is the
traffic-weighted mean ``Σ f d / Σ f``, and :func:`simulate_weighted` computes each drawn golden set's
weighted interval, as a stratum under ``weights: frequency`` does.

Used by ``benchmarks/validity.py`` (real collections; ``--weights``: weighted populations),
``benchmarks/interval_candidates.py`` and the slow tests (synthetic populations, `metric_population`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from pytest_embeval.core.metrics import evaluate
from pytest_embeval.core.stats import paired_bootstrap_ci, stable_seed
from pytest_embeval.core.weighted_stats import kish_n, weighted_mean

__all__ = [
    "Rates",
    "WeightedRates",
    "centred",
    "flipped",
    "metric_population",
    "simulate",
    "simulate_weighted",
    "zipf_frequencies",
]

#: metric_population's kinds: how strongly each arm (incumbent, candidate) separates relevant documents.
_SIGNAL = {"better": (1.0, 1.25), "slightly better": (1.0, 1.1), "worse": (1.0, 0.8), "close": (1.0, 1.0)}


@dataclass(frozen=True, slots=True)
class Rates:
    """Shares of simulated intervals, in [0, 1], relative to a reference value (the true Δ unless given)."""

    simulations: int
    covered: float  # the interval contains the reference
    below: float  # the interval lies wholly below the reference (upper end < reference)
    above: float  # the interval lies wholly above the reference (lower end > reference)

    def error(self, rate: float) -> float:
        """Monte-Carlo standard error of a share ``rate`` over this many simulations."""
        return math.sqrt(rate * (1.0 - rate) / self.simulations)


def flipped(differences: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The exchangeable null: each difference with either sign, so the mean is exactly 0."""
    d = np.asarray(differences, dtype=np.float64)
    return np.concatenate([d, -d])


def centred(differences: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """The shifted null: the differences minus their mean (the same shape, moved to mean 0)."""
    d = np.asarray(differences, dtype=np.float64)
    shifted: npt.NDArray[np.float64] = d - d.mean()
    return shifted


def simulate(
    population: npt.ArrayLike,
    n: int,
    *,
    simulations: int,
    interval: str,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | str = 0,
    reference: float | None = None,
) -> Rates:
    """Draw ``simulations`` golden sets of ``n`` queries from ``population`` (with replacement) and compute
    each one's ``interval`` as a golden set's stratum would (``stats.paired_bootstrap_ci``).

    ``reference`` defaults to the population mean. A draw whose differences are all equal has no interval
    to resample; it counts as its own point interval (the verdict rule treats it so). Draws and resamples
    are seeded from ``seed``, the interval and ``n``: the same call gives the same rates.
    """
    values = np.asarray(population, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"population must be a non-empty 1-D array, got shape {values.shape}")
    target = float(values.mean()) if reference is None else float(reference)
    draws = np.random.default_rng(stable_seed("calibration", str(seed), n))
    resamples = np.random.default_rng(stable_seed("calibration", str(seed), n, interval))
    covered = below = above = 0
    for _ in range(simulations):
        d = values[draws.integers(0, values.size, n)]
        if d.min() == d.max():
            low = high = float(d[0])
        else:
            low, high = paired_bootstrap_ci(
                d, confidence=confidence, n_resamples=n_resamples, rng=resamples, interval=interval
            )
        below += high < target
        above += low > target
        covered += low <= target <= high
    return Rates(simulations, covered / simulations, below / simulations, above / simulations)


@dataclass(frozen=True, slots=True)
class WeightedRates:
    """Weighted intervals' rates over every drawn golden set, and over those the floor admits (Kish's
    effective number of queries at least ``floor``: the strata that can pass or fail)."""

    every: Rates
    admitted: Rates | None  # None when no draw reached the floor
    floor: float
    kish_median: float  # the median Kish effective number of the drawn golden sets


def zipf_frequencies(size: int, exponent: float, seed: int | str = 0) -> npt.NDArray[np.float64]:
    """Frequencies ``rank ** -exponent`` over a seeded shuffle of ranks ``1..size``: Zipf's law, the head
    query at a random position (so the frequencies are independent of the differences); exponent 0 gives
    equal frequencies."""
    ranks = np.random.default_rng(stable_seed("zipf", str(seed), size)).permutation(size) + 1.0
    frequencies: npt.NDArray[np.float64] = np.power(ranks, -float(exponent), dtype=np.float64)
    return frequencies


def simulate_weighted(
    population: npt.ArrayLike,
    frequencies: npt.ArrayLike,
    n: int,
    *,
    simulations: int,
    interval: str,
    floor: float = 20.0,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int | str = 0,
) -> WeightedRates:
    """Draw ``simulations`` golden sets of ``n`` queries from ``population`` (with replacement, each with
    its frequency) and compute each one's weighted ``interval`` (``stats.paired_bootstrap_ci`` with
    ``weights``), against the population's traffic-weighted mean ``Σ f d / Σ f``; a draw whose differences
    are all equal counts as its own point interval. Seeded as `simulate` is."""
    values = np.asarray(population, dtype=np.float64)
    weights = np.asarray(frequencies, dtype=np.float64)
    if values.ndim != 1 or values.size == 0 or weights.shape != values.shape:
        raise ValueError(
            f"population and frequencies must be non-empty 1-D arrays of one shape, got {values.shape} "
            f"and {weights.shape}"
        )
    target = weighted_mean(values, weights)
    draws = np.random.default_rng(stable_seed("weighted calibration", str(seed), n))
    resamples = np.random.default_rng(stable_seed("weighted calibration", str(seed), n, interval))
    low, high, kish = np.empty(simulations), np.empty(simulations), np.empty(simulations)
    for i in range(simulations):
        rows = draws.integers(0, values.size, n)
        d, w = values[rows], weights[rows]
        kish[i] = kish_n(w)
        if d.min() == d.max():
            low[i] = high[i] = float(d[0])
        else:
            low[i], high[i] = paired_bootstrap_ci(
                d, confidence=confidence, n_resamples=n_resamples, rng=resamples, interval=interval, weights=w
            )

    def rates(keep: npt.NDArray[np.bool_]) -> Rates:
        count = int(keep.sum())
        lo, hi = low[keep], high[keep]
        covered = np.count_nonzero((lo <= target) & (target <= hi))
        below, above = int(np.count_nonzero(hi < target)), int(np.count_nonzero(lo > target))
        return Rates(count, int(covered) / count, below / count, above / count)

    admitted = kish >= floor
    return WeightedRates(
        every=rates(np.ones(simulations, dtype=bool)),
        admitted=rates(admitted) if admitted.any() else None,
        floor=floor,
        kish_median=float(np.median(kish)),
    )


@cache
def metric_population(kind: str, queries: int = 3000) -> npt.NDArray[np.float64]:
    """Per-query nDCG@10 differences (candidate - incumbent) of two synthetic arms, the way real ones arise:
    per query, both arms rank 40 documents (1-4 of them relevant, graded 1-2) by noisy scores that share
    most of their noise (two models of one task), and `metrics.evaluate` scores them. The differences are
    lumpy (few relevant documents, discounted ranks) and zero-heavy (both arms often rank them alike).

    ``better``: the candidate separates relevant documents more (``slightly better``: a little more);
    ``worse``: less; ``close``: the arms differ only by a little private noise, so most differences are 0.
    """
    if kind not in _SIGNAL:
        raise ValueError(f"kind must be one of {', '.join(_SIGNAL)}, got {kind!r}")
    gen = np.random.default_rng(stable_seed("metric population", kind))
    private = 0.04 if kind == "close" else 0.3
    runs: dict[str, dict[str, dict[str, float]]] = {"incumbent": {}, "candidate": {}}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(queries):
        qid = f"q{q}"
        relevant = gen.integers(1, 5)
        grades = np.zeros(40, dtype=int)
        grades[:relevant] = gen.integers(1, 3, relevant)
        qrels[qid] = {f"d{i}": int(g) for i, g in enumerate(grades) if g}
        difficulty = gen.uniform(0.2, 2.0)
        shared = gen.normal(0.0, 1.0, 40)
        for role, strength in zip(runs, _SIGNAL[kind], strict=True):
            scores = strength * difficulty * (grades > 0) + shared + gen.normal(0.0, private, 40)
            runs[role][qid] = {f"d{i}": float(s) for i, s in enumerate(scores)}
    ids = list(qrels)
    incumbent = evaluate(runs["incumbent"], qrels, ["ndcg@10"], ids)["ndcg@10"]
    candidate = evaluate(runs["candidate"], qrels, ["ndcg@10"], ids)["ndcg@10"]
    differences: npt.NDArray[np.float64] = candidate - incumbent
    differences.flags.writeable = False  # cached: every caller shares it
    return differences
