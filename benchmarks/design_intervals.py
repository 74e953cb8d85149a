"""Does the weighted interval of a drawn sample keep its promise? Coverage, width and false verdicts by
simulation, drawn the way ``embeval sample`` draws, on real per-query differences.

    python benchmarks/design_intervals.py [--sizes 20 60 150 400] [--simulations 2000] [--resamples 1000]
                                          [--intervals NAME ...] [--floor 20] [--populations NAME ...]
                                          [--check-null] [--table] [--data DIR] [--cache DIR]
    python benchmarks/design_intervals.py --timing 5

The per-query nDCG@10 differences are those of ``benchmarks/validity.py``: the four public collections
under ``--data`` scored by the demo's two models (all-MiniLM-L6-v2 and its model2vec distillation), cached
under ``--cache`` on first use. From them, *populations* of distinct queries, each with a collection and a
traffic frequency:

* ``few hundred``: the collections' 481 queries, each once;
* ``30,000``: 7,500 per collection, each a collection's real difference drawn at random, a non-zero one
  moved by Gaussian noise (sd 0.05, kept within [-1, 1]), a zero one kept 0 (two models that rank a query
  alike);
* traffic ``zipf`` (frequency ∝ rank⁻¹) or ``flat`` (∝ rank^-0.5), rounded to searches (at least 1); ranks
  ``independent`` of the difference (a seeded shuffle) or ``correlated`` with it (ranked by the difference
  plus noise of its own sd: the candidate does better on popular queries).

The true Δ is the population's traffic-weighted mean Σ f d / Σ f. Each simulated golden set is drawn from a
query log of that population by ``embeval sample``'s own code (`golden.query_draw.draw_queries`): bands
head=0.33,torso=0.33, the head boosted x2, ``--floor`` (default 20, the command's), stratified ``--by
collection`` where the floor allows it (n >= 4 x floor) and by the bands alone below, each (stratum, band)
cell drawn uniformly without replacement with the generator ``draw_queries`` seeds for it: the allocation
comes from ``draw_queries`` itself, and simulation s draws what ``draw_queries(..., seed=s)`` draws (checked
against it for the first seeds). Each query weighs frequency / inclusion; its cell and the cells' sizes
form the design.

For each population and n it prints, per interval: coverage of the true Δ; the mean width over
``2 x 1.96 x`` the actual sd of the estimates over the simulations; and the shares of intervals wholly
below and wholly above the true Δ, which are the one-sided false rates under the true null (the
population shifted so that its weighted mean is 0, the same draw): every interval here moves with the data,
so the null's interval is this one minus the true Δ; ``--check-null`` computes it on the shifted population
and stops if it differs. Monte-Carlo standard errors at 2,000 simulations: 0.5 points on a 95 % coverage,
0.35 on a 2.5 % rate.

The intervals (``--intervals``), 95 %: ``design studentized`` and ``design percentile``, what a weighted
stratum of a drawn set gets (`stats.paired_bootstrap_ci(..., weights=, design=)`, the default and
``interval: percentile``); ``with replacement``, the interval of weights without a design; and the
candidates measured before choosing: ``rwy-t sym`` (the rescaling bootstrap-t alone, without the Student
floor), ``rwy-t equal`` (its equal-tailed version), ``rw-n t sym`` / ``rw-n t equal`` (n_h draws per cell
instead of n_h - 1), ``lin-z`` and ``lin-t`` (the linearisation variance with the normal quantile, or
Student's t on Satterthwaite's degrees of freedom) and ``jk-t`` (the stratified jackknife's variance with
the same t). A row is kept under ``--cache`` keyed by its settings and the code, so a rerun prints at once.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import os
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validity import (
    COLLECTIONS,
    DEFAULT_CACHE,
    DEFAULT_DATA,
    REPO,
    collection_report,
    populations_from_report,
    print_markdown_table,
)

from pytest_embeval.core.bootstrap_intervals import sorted_quantile
from pytest_embeval.core.design_variance import DesignResamples, design_resamples, linearise
from pytest_embeval.core.sample_design import CellLayout, SampleDesign, cell_layout
from pytest_embeval.core.sampling import frequency_bands
from pytest_embeval.core.stats import compare_paired, paired_bootstrap_ci
from pytest_embeval.golden.query_draw import draw_queries
from pytest_embeval.golden.query_log import DistinctQuery, QueriesInMemory, QueryLog

CONFIDENCE = 0.95
BANDS = (("head", 0.33), ("torso", 0.33))
HEAD_BOOST = 2.0
BY = ("collection",)
FLOOR = 20  # embeval sample's default --floor
LARGE = 7_500  # distinct queries per collection in the large populations


@dataclass(frozen=True)
class Population:
    name: str
    values: np.ndarray  # per distinct query: the paired difference
    frequencies: np.ndarray  # searches
    strata: np.ndarray  # its collection

    @property
    def truth(self) -> float:
        return float(np.dot(self.frequencies, self.values) / self.frequencies.sum())


def real_differences(data: Path, cache: Path) -> dict[str, np.ndarray]:
    """Each collection's per-query nDCG@10 differences, both arms finite."""
    result = {}
    for name in COLLECTIONS:
        (population,) = populations_from_report(collection_report(data / name, "ndcg@10", cache), "ndcg@10")
        result[name] = population.differences
    return result


def _frequencies(size: int, exponent: float, order: np.ndarray) -> np.ndarray:
    """Searches per query: the query at ``order[k]`` gets ``size^e / (k + 1)^e`` rounded, at least 1."""
    frequencies = np.empty(size)
    frequencies[order] = np.maximum(1.0, np.round((size / np.arange(1.0, size + 1.0)) ** exponent))
    return frequencies


def populations(differences: dict[str, np.ndarray]) -> list[Population]:
    result = []
    for size in ("few hundred", "30,000"):
        g = np.random.default_rng(zlib.crc32(size.encode()))
        if size == "few hundred":
            values = np.concatenate(list(differences.values()))
            strata = np.concatenate([[name] * d.size for name, d in differences.items()])
        else:
            parts = []
            for d in differences.values():
                drawn = d[g.integers(0, d.size, LARGE)]
                moved = np.clip(drawn + g.normal(0.0, 0.05, LARGE), -1.0, 1.0)
                parts.append(np.where(drawn == 0.0, 0.0, moved))
            values = np.concatenate(parts)
            strata = np.repeat(np.array(list(differences)), LARGE)
        for traffic, exponent in (("zipf", 1.0), ("flat", 0.5)):
            for relation in ("independent", "correlated"):
                if relation == "independent":
                    order = g.permutation(values.size)
                else:
                    noisy = values + g.normal(0.0, float(values.std()), values.size)
                    order = np.argsort(-noisy, kind="stable")
                frequencies = _frequencies(values.size, exponent, order)
                name = f"{size}, {traffic}, {relation}"
                result.append(Population(name, values, frequencies, strata))
    return result


@dataclass(frozen=True)
class Allocation:
    """A population's cells as ``draw_queries`` forms them, and its allocation at one size."""

    names: list[str]  # "stratum\0band": the name draw_queries seeds a cell's generator with
    pools: list[np.ndarray]  # each cell's population rows, in draw_queries' pool order
    sampled: list[int]


def query_log(population: Population) -> tuple[QueryLog, tuple[DistinctQuery, ...]]:
    """The population as a log's distinct queries, and those queries in the log's order (most frequent
    first, then by the key: the row's number, zero-padded so that the order is the rows')."""
    order = np.lexsort((np.arange(population.values.size), -population.frequencies))
    distinct = tuple(
        DistinctQuery(f"{i:07d}", str(i), (str(population.strata[i]),), int(population.frequencies[i]))
        for i in order.tolist()
    )
    rows = int(population.frequencies.sum())
    log = QueryLog(Path("log.jsonl"), "jsonl", BY, rows, 0, "sha256:-", QueriesInMemory.of(distinct), ())
    return log, distinct


def stratified_by(n: int, floor: int) -> tuple[str, ...]:
    """``--by collection`` where the floor lets it (``floor`` queries in each of the four collections), else
    the bands alone: what ``embeval sample --floor`` draws at that size."""
    return BY if n >= floor * len(COLLECTIONS) else ()


def allocate(log: QueryLog, distinct: Sequence[DistinctQuery], n: int, floor: int) -> Allocation:
    """The cells and their draws at size n, from ``draw_queries`` itself, and each cell's pool in the order
    it draws from (``distinct``: the log's queries in its order); the seed-0 and seed-1 draws of `draw` are
    checked against ``draw_queries``'."""
    by = stratified_by(n, floor)
    band_of = frequency_bands([q.frequency for q in distinct], BANDS)
    pools: dict[str, list[int]] = {}
    for query, band in zip(distinct, band_of, strict=True):
        stratum = f"collection={query.values[0]}" if by else "overall"
        pools.setdefault(f"{stratum}\0{band}", []).append(int(query.text))
    drawn = {}
    for seed in (0, 1):
        draw = draw_queries(log, by, size=n, floor=floor, bands=BANDS, head_boost=HEAD_BOOST, seed=seed)
        drawn[seed] = sorted(int(q.text) for q in draw.queries)
    sampled = {
        f"{stratum.name}\0{band}": k for stratum in draw.strata for band, (_, k) in stratum.bands.items()
    }
    names = [name for name in pools if sampled.get(name, 0)]
    allocation = Allocation(
        names, [np.array(pools[name]) for name in names], [sampled[name] for name in names]
    )
    for seed, expected in drawn.items():
        if sorted(draw_rows(allocation, seed)[0].tolist()) != expected:
            raise AssertionError(f"the simulated draw differs from draw_queries' at seed {seed}")
    return allocation


def draw_rows(allocation: Allocation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The population rows ``draw_queries(..., seed=seed)`` draws, and each one's cell (an index)."""
    rows, cells = [], []
    cells_drawn = zip(allocation.names, allocation.pools, allocation.sampled, strict=True)
    for cell, (name, pool, k) in enumerate(cells_drawn):
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        rows.append(pool[np.sort(rng.choice(pool.size, size=k, replace=False))])
        cells.append(np.full(k, cell))
    return np.concatenate(rows), np.concatenate(cells)


Interval = tuple[float, float]


@dataclass
class Drawn:
    """One drawn golden set and what its intervals share, each computed when first asked for."""

    d: np.ndarray
    w: np.ndarray
    design: SampleDesign
    resamples: int
    seed: int

    def __post_init__(self) -> None:
        self.layout = cell_layout(self.design, np.ones(self.d.size, dtype=bool))
        self.lin = linearise(self.d, self.w, self.layout)
        self.df = _satterthwaite(self.lin.cell_variances, self.layout)
        self._replicates: dict[int, DesignResamples] = {}

    def replicates(self, fewer: int) -> DesignResamples:
        """The rescaling bootstrap drawing n_h - ``fewer`` per cell (1: Rao-Wu-Yue's, 0: n_h)."""
        if fewer not in self._replicates:
            generator = np.random.default_rng([self.seed, 1 + 2 * fewer])
            self._replicates[fewer] = design_resamples(
                self.d, self.w, self.layout, self.resamples, generator, fewer
            )
        return self._replicates[fewer]


def _student(df: float) -> float:
    from scipy.stats import t as student

    return float(student.ppf(0.975, df))


def _symmetric(drawn: Drawn, fewer: int) -> Interval:
    half = sorted_quantile(np.sort(np.abs(drawn.replicates(fewer).t)), CONFIDENCE) * drawn.lin.se
    return drawn.lin.delta - half, drawn.lin.delta + half


def _design(drawn: Drawn, interval: str) -> Interval:
    """The interval a weighted stratum of a drawn set gets (`stats.paired_bootstrap_ci` with the design)."""
    generator = np.random.default_rng([drawn.seed, 5])
    return paired_bootstrap_ci(
        drawn.d,
        confidence=CONFIDENCE,
        n_resamples=drawn.resamples,
        rng=generator,
        interval=interval,
        weights=drawn.w,
        design=drawn.design,
    )


def _equal_tailed(drawn: Drawn, fewer: int) -> Interval:
    ordered = np.sort(drawn.replicates(fewer).t)
    high, low = sorted_quantile(ordered, 0.975), sorted_quantile(ordered, 0.025)
    return drawn.lin.delta - high * drawn.lin.se, drawn.lin.delta - low * drawn.lin.se


def _t(delta: float, se: float, df: float) -> Interval:
    q = _student(df)
    return delta - q * se, delta + q * se


def _with_replacement(drawn: Drawn) -> Interval:
    d = drawn.d
    if d.min() == d.max():
        return float(d[0]), float(d[0])
    generator = np.random.default_rng([drawn.seed, 2])
    return paired_bootstrap_ci(
        d, confidence=CONFIDENCE, n_resamples=drawn.resamples, rng=generator, weights=drawn.w
    )


def _satterthwaite(cells: np.ndarray, layout: CellLayout) -> float:
    """Satterthwaite's degrees of freedom of a sum of cell variances, ``(Σ V_h)² / Σ V_h² / (n_h - 1)`` (a
    lonely cell counts one); infinite for a variance of 0."""
    weight = float(np.sum(cells * cells / np.maximum(layout.sampled - 1.0, 1.0)))
    return float(cells.sum()) ** 2 / weight if weight > 0 else math.inf


def _jackknife(drawn: Drawn) -> float:
    """The stratified jackknife (JKn) variance of Δ_w with the finite-population correction, as R survey's
    ``as.svrepdesign(type = "JKn")`` with ``fpc``: each query left out in turn, the others of its cell
    weighted up by n_h / (n_h - 1); cell h adds ``(1 - f_h)(n_h - 1)/n_h Σ_i (Δ_(hi) - Δ_(h·))²``, a lonely
    cell what the linearisation gives it."""
    layout = drawn.layout
    w, dev = drawn.w[layout.rows], drawn.d[layout.rows] - drawn.lin.delta
    n = layout.sampled.astype(np.float64)
    cell = np.repeat(np.arange(n.size), layout.present)
    starts = layout.starts[:-1]
    totals_w, totals_we = np.add.reduceat(w, starts), np.add.reduceat(w * dev, starts)
    big_w, big_we = float(totals_w.sum()), float(totals_we.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        up = n / (n - 1.0)
        left = (big_we - totals_we[cell] + up[cell] * (totals_we[cell] - w * dev)) / (
            big_w - totals_w[cell] + up[cell] * (totals_w[cell] - w)
        )
        # Leaving out one of a cell's queries outside the domain (a zero): the same for all of them.
        zero = (big_we + (up - 1.0) * totals_we) / (big_w + (up - 1.0) * totals_w)
    zeros = n - layout.present
    mean = (np.add.reduceat(left, starts) + zeros * zero) / n
    spread = np.add.reduceat((left - mean[cell]) ** 2, starts) + zeros * (zero - mean) ** 2
    cells = np.where(
        layout.sampled == 1, drawn.lin.cell_variances, (1 - layout.fraction) * (n - 1) / n * spread
    )
    cells[layout.whole] = 0.0
    return float(cells.sum())


#: Every interval measured, by name: the chosen one first, today's without a design last.
INTERVALS: dict[str, Callable[[Drawn], Interval]] = {
    "design studentized": lambda drawn: _design(drawn, "studentized"),
    "design percentile": lambda drawn: _design(drawn, "percentile"),
    "rwy-t sym": lambda drawn: _symmetric(drawn, 1),
    "lin-z": lambda drawn: _t(drawn.lin.delta, drawn.lin.se, math.inf),
    "lin-t": lambda drawn: _t(drawn.lin.delta, drawn.lin.se, drawn.df),
    "jk-t": lambda drawn: _t(drawn.lin.delta, math.sqrt(_jackknife(drawn)), drawn.df),
    "rwy-t equal": lambda drawn: _equal_tailed(drawn, 1),
    "rw-n t sym": lambda drawn: _symmetric(drawn, 0),
    "rw-n t equal": lambda drawn: _equal_tailed(drawn, 0),
    "with replacement": _with_replacement,
}
DEFAULT_INTERVALS = ("design studentized", "design percentile", "lin-t", "with replacement")


def intervals(drawn: Drawn, names: list[str]) -> dict[str, Interval]:
    """The named intervals of one drawn golden set; a point at Δ_w where the design's variance is 0."""
    point = (drawn.lin.delta, drawn.lin.delta)
    return {
        name: point if drawn.lin.variance == 0.0 and name != "with replacement" else INTERVALS[name](drawn)
        for name in names
    }


@dataclass(frozen=True)
class Row:
    population: str
    n: int
    cells: int
    whole: int
    kish: float
    estimates: np.ndarray
    bounds: dict[str, np.ndarray]  # interval -> (simulations, 2)


def simulate(population: Population, n: int, args: argparse.Namespace) -> Row:
    log, distinct = query_log(population)
    allocation = allocate(log, distinct, n, args.floor)
    sizes = {name: pool.size for name, pool in zip(allocation.names, allocation.pools, strict=True)}
    whole = sum(k == sizes[name] for name, k in zip(allocation.names, allocation.sampled, strict=True))
    estimates = np.empty(args.simulations)
    kish = np.empty(args.simulations)
    bounds: dict[str, list[Interval]] = {}
    for s in range(args.simulations):
        rows, cells = draw_rows(allocation, s)
        pool_sizes = np.array([p.size for p in allocation.pools])
        inclusion = np.array(allocation.sampled)[cells] / pool_sizes[cells]
        d, w = population.values[rows], population.frequencies[rows] / inclusion
        design = SampleDesign(tuple(cells.tolist()), dict(enumerate(pool_sizes.tolist())))
        found = intervals(Drawn(d, w, design, args.resamples, s), args.intervals)
        if args.check_null:
            shifted = intervals(Drawn(d - population.truth, w, design, args.resamples, s), args.intervals)
            for name, (low, high) in found.items():
                moved = shifted[name]
                gap = max(abs(low - population.truth - moved[0]), abs(high - population.truth - moved[1]))
                if gap > 1e-9:
                    raise AssertionError(f"{name}: the null's interval is not this one moved ({gap:.2e})")
        estimates[s] = np.dot(w, d) / w.sum()
        kish[s] = w.sum() ** 2 / np.dot(w, w)
        for name, interval in found.items():
            bounds.setdefault(name, []).append(interval)
    return Row(
        population.name,
        n,
        len(allocation.names),
        int(whole),
        float(np.median(kish)),
        estimates,
        {name: np.array(values) for name, values in bounds.items()},
    )


#: The code a row's numbers depend on: a row cached by other code is computed again.
SOURCES = (
    Path(__file__),
    REPO / "pytest_embeval" / "core" / "design_variance.py",
    REPO / "pytest_embeval" / "core" / "sample_design.py",
    REPO / "pytest_embeval" / "core" / "stats.py",
    REPO / "pytest_embeval" / "core" / "weighted_stats.py",
    REPO / "pytest_embeval" / "core" / "resampling.py",
    REPO / "pytest_embeval" / "golden" / "query_log.py",
)


def code_digest() -> str:
    """The sha256 of `SOURCES`' syntax trees, docstrings aside (comments are not in them): what a row's
    numbers depend on, which a change of wording does not alter."""
    digest = hashlib.sha256()
    for source in SOURCES:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            if docstring and isinstance(first.value.value, str):  # type: ignore[union-attr]
                body[0] = ast.Pass()
        digest.update(ast.dump(tree).encode())
    return digest.hexdigest()


def cached_row(population: Population, n: int, args: argparse.Namespace) -> Row:
    """`simulate`'s row, kept under ``--cache`` (keyed by the population, n, the settings and the code), so
    that a rerun of the same code reads it instead of simulating again."""
    key = hashlib.sha256(code_digest().encode())
    settings = [population.name, n, args.simulations, args.resamples, sorted(args.intervals), args.floor]
    key.update(json.dumps(settings).encode())
    path = args.cache / "design-intervals" / f"{key.hexdigest()[:24]}.npz"
    if path.is_file():
        with np.load(path) as stored:
            bounds = {name: stored[f"bounds {name}"] for name in args.intervals}
            numbers = stored["numbers"]
            return Row(
                population.name,
                n,
                int(numbers[0]),
                int(numbers[1]),
                float(numbers[2]),
                stored["estimates"],
                bounds,
            )
    row = simulate(population, n, args)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial.npz")
    np.savez(
        partial,
        numbers=np.array([row.cells, row.whole, row.kish]),
        estimates=row.estimates,
        **{f"bounds {name}": bounds for name, bounds in row.bounds.items()},
    )
    partial.replace(path)
    return row


def describe(row: Row, truth: float, name: str) -> tuple[float, float, float, float]:
    """(coverage, width ratio, below, above) of one interval."""
    low, high = row.bounds[name][:, 0], row.bounds[name][:, 1]
    covered = float(np.mean((low <= truth) & (truth <= high)))
    spread = 2.0 * 1.959964 * float(np.std(row.estimates, ddof=1))
    width = float(np.mean(high - low)) / spread if spread > 0 else math.nan
    return covered, width, float(np.mean(high < truth)), float(np.mean(low > truth))


def timing(repeat: int) -> int:
    """CPU time of one comparison of 1,500 queries with 10,000 resamples, one thread: unweighted (the floor),
    weights alone, and weights with a design of 10 cells; best of ``repeat``."""
    g = np.random.default_rng(0)
    n = 1500
    a = np.full(n, 0.5)
    b = a + g.normal(0.02, 0.2, n)
    w = g.pareto(1.5, n) + 1.0
    design = SampleDesign(tuple(f"c{i % 10}" for i in range(n)), {f"c{h}": 2000 for h in range(10)})
    runs: dict[str, dict[str, Any]] = {
        "unweighted": {},
        "weights alone": {"weights": w},
        "weights and design": {"weights": w, "design": design},
    }
    times = {}
    for name, kwargs in runs.items():
        best = math.inf
        for _ in range(repeat):
            started = time.process_time()
            compare_paired(a, b, rng=np.random.default_rng(1), n_resamples=10_000, workers=1, **kwargs)
            best = min(best, time.process_time() - started)
        times[name] = best
    print(f"compare_paired, 1,500 queries x 10,000 resamples, one thread, best of {repeat}:")
    print("CPU ms, and x the unweighted comparison's")
    for name, seconds in times.items():
        print(f"{name:<20} {1000 * seconds:7.1f}  {seconds / times['unweighted']:5.1f}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 60, 150, 400])
    parser.add_argument("--floor", type=int, default=FLOOR, help="embeval sample's --floor (default 20)")
    parser.add_argument("--simulations", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument(
        "--intervals", nargs="+", choices=list(INTERVALS), default=list(DEFAULT_INTERVALS), help="to measure"
    )
    parser.add_argument("--check-null", action="store_true", help="compute the null's intervals too")
    parser.add_argument("--populations", nargs="+", help="only these populations (by name)")
    parser.add_argument("--timing", type=int, metavar="REPEAT", help="time one comparison instead")
    parser.add_argument("--table", action="store_true", help="print the Markdown table alone")
    args = parser.parse_args()
    if args.timing:
        return timing(args.timing)
    pops = populations(real_differences(args.data, args.cache))
    if args.populations:
        pops = [p for p in pops if p.name in args.populations]
    say = (lambda *_, **__: None) if args.table else print
    load = os.getloadavg()[0]
    say(
        f"{args.simulations} simulations per row, {args.resamples} resamples, 95 % intervals, nDCG@10 "
        f"differences of all-MiniLM-L6-v2 and its static distillation; load average {load:.2f}"
    )
    names: list[str] = []
    lines = []
    started = time.perf_counter()
    for population in pops:
        say(
            f"population {population.name}: {population.values.size:,} distinct queries, "
            f"{int(population.frequencies.sum()):,} searches, true Δ {population.truth:+.4f}",
            flush=True,
        )
        for n in args.sizes:
            if n >= population.values.size:
                continue
            row = cached_row(population, n, args)
            names = names or [name for name in INTERVALS if name in row.bounds]
            cells = [population.name, str(n), f"{row.cells} ({row.whole})", f"{row.kish:.1f}"]
            for name in names:
                covered, width, below, above = describe(row, population.truth, name)
                cells.append(f"{100 * covered:.1f} · {width:.2f} · {100 * below:.1f}/{100 * above:.1f}")
            lines.append(cells)
            say(" | ".join(cells), flush=True)
    elapsed = time.perf_counter() - started
    say(f"({elapsed:.0f} s; load average now {os.getloadavg()[0]:.2f})")
    header = ["population", "n", "cells (whole)", "median Kish"]
    header += [f"{name}: coverage % · width · below/above %" for name in names]
    say()
    print_markdown_table(header, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
