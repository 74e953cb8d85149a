"""How the default interval was chosen: the standard remedies side by side on real per-query differences.

    python benchmarks/interval_candidates.py [--sizes 20 40 100 300] [--simulations 4000] [--resamples 1000]

The populations are those of ``benchmarks/validity.py`` (the public collections under both demo models,
cached; run it once first), then the synthetic ``better`` and ``close`` nDCG@10 differences of the slow
tests (``calibration.metric_population``; ``close``: two nearly equal models, two thirds of the
differences 0). For each population and size n, golden sets of n queries are drawn with replacement, and
for each one every candidate interval is computed from the *same* resamples, with plain numpy (an index
matrix: slow, and independent of the package's engine):

* ``percentile``  -- the resampled means' 2.5 % and 97.5 % quantiles;
* ``bca``         -- bias-corrected and accelerated, as ``scipy.stats.bootstrap(method='BCa')`` computes it
  (z0 from the share of resampled means below the estimate, ties counted half; the jackknife acceleration,
  which for a mean is ``sum(u**3) / (6 * sum(u**2)**1.5)`` with u the deviations from it). Checked against
  scipy at start-up;
* ``expanded``    -- Hesterberg's expanded percentile interval: the percentile interval at the level
  ``Phi(-sqrt(n / (n - 1)) * t_{n-1, 0.975})`` instead of 2.5 %;
* ``bca-expanded``-- BCa with that expanded quantile in place of z_0.975 (``resample::CI.bca(expand=TRUE)``);
* ``studentized`` -- the equal-tailed bootstrap-t: ``Δ - t*_q * se`` at q = 97.5 % and 2.5 %;
* ``symmetric``   -- the symmetric bootstrap-t: ``Δ -+ w * se``, w the 95 % quantile of ``|t*|`` (Hall 1988);
* ``t``           -- Student's t interval, no bootstrap, for reference.

It prints coverage of the true Δ and, under the flipped and the centred null populations
(``pytest_embeval.core.interval_simulation``), the shares of intervals wholly below and wholly above 0
(each nominally 2.5 %). A resample without spread has an infinite t* (0 if its mean is Δ), as the definition
gives.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps
from scipy.special import ndtr, ndtri

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validity import (
    COLLECTIONS,
    DEFAULT_CACHE,
    DEFAULT_DATA,
    collection_report,
    populations_from_report,
)

from pytest_embeval.core.interval_simulation import centred, flipped, metric_population

ALPHA = 0.05
METHODS = ("percentile", "bca", "expanded", "bca-expanded", "studentized", "symmetric", "t")


def _quantile(ordered: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Row-wise linear-interpolation quantile (numpy's default) of sorted rows at one level per row."""
    size = ordered.shape[1]
    position = np.clip(levels, 0.0, 1.0) * (size - 1)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, size - 1)
    fraction = position - low
    rows = np.arange(ordered.shape[0])
    with np.errstate(invalid="ignore"):
        below, above = ordered[rows, low], ordered[rows, high]
        return np.where(fraction == 0, below, below + fraction * (above - below))


def intervals(
    samples: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every candidate's (low, high) for each row of ``samples`` (one golden set per row)."""
    count, n = samples.shape
    x = samples[np.arange(count)[:, None, None], rng.integers(0, n, (count, n_resamples, n))]
    means = x.mean(axis=2)
    variances = x.var(axis=2, ddof=1)
    delta = samples.mean(axis=1)
    se = samples.std(axis=1, ddof=1) / math.sqrt(n)
    ordered = np.sort(means, axis=1)
    ones = np.ones(count)
    q = ALPHA / 2
    result = {"percentile": (_quantile(ordered, q * ones), _quantile(ordered, (1 - q) * ones))}
    z_expanded = math.sqrt(n / (n - 1)) * sps.t.ppf(1 - q, n - 1)
    level = ndtr(-z_expanded)
    result["expanded"] = (_quantile(ordered, level * ones), _quantile(ordered, (1 - level) * ones))
    below = (means < delta[:, None]).sum(axis=1) + (means <= delta[:, None]).sum(axis=1)
    z0 = ndtri(np.clip(below / (2 * n_resamples), 1e-12, 1 - 1e-12))
    u = samples - delta[:, None]
    spread = (u**2).sum(axis=1)
    acceleration = np.where(spread > 0, (u**3).sum(axis=1) / (6 * np.maximum(spread, 1e-300) ** 1.5), 0.0)

    def bca(z: float) -> tuple[np.ndarray, np.ndarray]:
        low = ndtr(z0 + (z0 - z) / (1 - acceleration * (z0 - z)))
        high = ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))
        return _quantile(ordered, low), _quantile(ordered, high)

    result["bca"] = bca(float(ndtri(1 - q)))
    result["bca-expanded"] = bca(z_expanded)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (means - delta[:, None]) / np.sqrt(variances / n)
    flat = variances == 0
    t[flat] = np.where(
        means[flat] == np.broadcast_to(delta[:, None], means.shape)[flat], 0.0, np.sign(t[flat]) * np.inf
    )
    t_ordered = np.sort(t, axis=1)
    result["studentized"] = (
        delta - _quantile(t_ordered, (1 - q) * ones) * se,
        delta - _quantile(t_ordered, q * ones) * se,
    )
    w = _quantile(np.sort(np.abs(t), axis=1), (1 - ALPHA) * ones)
    result["symmetric"] = (delta - w * se, delta + w * se)
    student = sps.t.ppf(1 - q, n - 1)
    result["t"] = (delta - student * se, delta + student * se)
    return result


def check_bca_against_scipy() -> str:
    """Our BCa endpoints against scipy's on one skewed sample, 40,000 resamples each (different draws)."""
    d = np.random.default_rng(3).choice([-0.5, -0.2, 0.0, 0.0, 0.1, 0.6], size=40)
    ours = intervals(d[None, :], 40_000, np.random.default_rng(4))["bca"]
    theirs = sps.bootstrap((d,), np.mean, method="BCa", n_resamples=40_000, rng=np.random.default_rng(5))
    ci = theirs.confidence_interval
    return (
        f"BCa check on one sample: ours [{ours[0][0]:+.4f}, {ours[1][0]:+.4f}], "
        f"scipy.stats.bootstrap [{ci.low:+.4f}, {ci.high:+.4f}]"
    )


def rates(
    population: np.ndarray, n: int, simulations: int, n_resamples: int, seed: int
) -> dict[str, list[float]]:
    """method -> [coverage, flipped below, flipped above, centred below, centred above], in %."""
    rng = np.random.default_rng(seed)
    truth = float(population.mean())
    sets = {
        "coverage": (population, truth),
        "flipped": (flipped(population), 0.0),
        "centred": (centred(population), 0.0),
    }
    counts = {method: np.zeros(5) for method in METHODS}
    chunk = max(1, int(2e7 // (n_resamples * n)))
    for start in range(0, simulations, chunk):
        size = min(chunk, simulations - start)
        for kind, (values, target) in sets.items():
            samples = values[rng.integers(0, values.size, (size, n))]
            for method, (low, high) in intervals(samples, n_resamples, rng).items():
                if kind == "coverage":
                    counts[method][0] += np.sum((low <= target) & (target <= high))
                else:
                    offset = 1 if kind == "flipped" else 3
                    counts[method][offset] += np.sum(high < target)
                    counts[method][offset + 1] += np.sum(low > target)
    return {method: (100 * values / simulations).tolist() for method, values in counts.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--metric", default="ndcg@10")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 100, 300])
    parser.add_argument("--simulations", type=int, default=4000)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    print(check_bca_against_scipy())
    paths = [collection_report(args.data / c, args.metric, args.cache) for c in COLLECTIONS]
    populations = [
        (p.name, p.differences) for path in paths for p in populations_from_report(path, args.metric)
    ]
    populations += [
        (f"synthetic {kind}", np.asarray(metric_population(kind))) for kind in ("better", "close")
    ]
    print(
        f"{args.simulations} simulations per cell, {args.resamples} resamples; "
        "coverage %, then flipped null below/above 0 %, centred null below/above 0 %"
    )
    started = time.perf_counter()
    print("| population | n | " + " | ".join(METHODS) + " |")
    print("|" + "---|" * (len(METHODS) + 2))
    for name, differences in populations:
        for n in args.sizes:
            result = rates(differences, n, args.simulations, args.resamples, seed=n)
            cells = [
                f"{r[0]:.1f} · f {r[1]:.1f}/{r[2]:.1f} · c {r[3]:.1f}/{r[4]:.1f}"
                for r in (result[m] for m in METHODS)
            ]
            print(f"| {name} | {n} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
