"""Time the paired bootstrap: 10,000 resamples of 1,500 paired differences (target: at most 50 ms).

Both intervals are timed: the studentized one (the default; it also sums the squares of every resample)
and the percentile one. Run: ``python benchmarks/bench_bootstrap.py [--repeat 7] [--workers N]``. Each
timing is the best of
``--repeat`` runs after one warm-up, as wall-clock and as CPU time of the process: on a shared machine the
wall-clock is noisy, so report the best. For comparison it times the naive numpy bootstrap
(``d[rng.integers(0, n, (B, n))].mean(1)``) at full size and a pure-Python loop on 1 % of the resamples,
extrapolated.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_embeval.core.stats import DEFAULT_INTERVAL, INTERVALS, compare_paired, paired_bootstrap_ci

N_QUERIES = 1_500
N_RESAMPLES = 10_000
TARGET_MS = 50.0


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall-clock and best process CPU time in ms over ``repeat`` runs, after one warm-up run."""
    fn()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls) * 1e3, min(cpus) * 1e3


def naive_numpy(
    d: np.ndarray, rng: np.random.Generator, dtype: type[np.integer] = np.int64
) -> tuple[float, float]:
    means = d[rng.integers(0, d.size, (N_RESAMPLES, d.size), dtype=dtype)].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def pure_python(d: list[float], n_resamples: int, rnd: random.Random) -> tuple[float, float]:
    n = len(d)
    means = sorted(sum(d[rnd.randrange(n)] for _ in range(n)) / n for _ in range(n_resamples))
    quantiles = statistics.quantiles(means, n=40, method="inclusive")
    return quantiles[0], quantiles[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workers", type=int, default=None, help="threads (default: available cores)")
    args = parser.parse_args()

    data = np.random.default_rng(20240601)
    incumbent = data.uniform(0.3, 1.0, N_QUERIES)
    candidate = np.clip(incumbent + data.normal(0.03, 0.17, N_QUERIES), 0.0, 1.0)
    d = candidate - incumbent
    print(f"paired bootstrap, n={N_QUERIES} differences x {N_RESAMPLES} resamples, best of {args.repeat}")

    # Traffic weights (weights: frequency): heavy-tailed, as query frequencies are.
    weights = data.pareto(1.2, N_QUERIES) + 1.0

    def bootstrap(workers: int | None, interval: str, weighted: bool = False) -> Callable[[], object]:
        return lambda: paired_bootstrap_ci(
            d,
            confidence=0.95,
            n_resamples=N_RESAMPLES,
            rng=np.random.default_rng(0),
            workers=workers,
            interval=interval,
            weights=weights if weighted else None,
        )

    rows: list[tuple[str, float, float]] = []
    walls: dict[str, float] = {}
    for interval in INTERVALS:
        wall, cpu = best_of(bootstrap(args.workers, interval), args.repeat)
        walls[interval] = wall
        rows.append((f"paired_bootstrap_ci, {interval}", wall, cpu))
        for workers in (1, 2):
            wall, cpu = best_of(bootstrap(workers, interval), args.repeat)
            rows.append((f"paired_bootstrap_ci, {interval}, workers={workers}", wall, cpu))
        wall, cpu = best_of(bootstrap(1, interval, weighted=True), args.repeat)
        rows.append((f"paired_bootstrap_ci, {interval}, weighted, workers=1", wall, cpu))
    ci_wall = walls[DEFAULT_INTERVAL]
    wall, cpu = best_of(
        lambda: compare_paired(
            incumbent, candidate, n_resamples=N_RESAMPLES, rng=np.random.default_rng(0), workers=args.workers
        ),
        args.repeat,
    )
    rows.append((f"compare_paired (everything), {DEFAULT_INTERVAL}", wall, cpu))
    wall, cpu = best_of(lambda: naive_numpy(d, np.random.default_rng(0)), args.repeat)
    rows.append(("naive numpy, int64 indices", wall, cpu))
    wall, cpu = best_of(lambda: naive_numpy(d, np.random.default_rng(0), np.int32), args.repeat)
    rows.append(("naive numpy, int32 indices", wall, cpu))
    fraction = 100
    values = d.tolist()
    wall, cpu = best_of(lambda: pure_python(values, N_RESAMPLES // fraction, random.Random(0)), 3)
    rows.append((f"pure Python (1/{fraction} of resamples, x{fraction})", wall * fraction, cpu * fraction))

    width = max(len(name) for name, _, _ in rows)
    print(f"{'':{width}}  {'wall ms':>9}  {'cpu ms':>9}  {'x ours':>7}")
    for name, wall, cpu in rows:
        print(f"{name:{width}}  {wall:9.1f}  {cpu:9.1f}  {wall / ci_wall:7.1f}")

    reference = naive_numpy(d, np.random.default_rng(1))
    ours = paired_bootstrap_ci(
        d, confidence=0.95, n_resamples=N_RESAMPLES, rng=np.random.default_rng(1), interval="percentile"
    )
    print(f"percentile interval: ours [{ours[0]:+.5f}, {ours[1]:+.5f}]", end="  ")
    print(f"naive [{reference[0]:+.5f}, {reference[1]:+.5f}] (different draws)")
    for interval, wall in walls.items():
        verdict = "meets" if wall <= TARGET_MS else "misses"
        print(f"paired_bootstrap_ci, {interval}: {verdict} the {TARGET_MS:.0f} ms target ({wall:.1f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
