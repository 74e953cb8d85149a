"""Do the intervals keep their promise? Coverage and false-verdict rates by simulation from real differences.

    python benchmarks/validity.py [REPORT.json ...] [--data DIR] [--cache DIR] [--metric ndcg@10]
                                  [--sizes 20 60 150 300] [--simulations 1500] [--resamples 10000]

A *population* is every query of a collection with its per-query metric under both arms (queries without a
relevant document left out). Without reports, the populations are the public collections under ``--data``
(default: ``shared/data`` beside the repository) scored by the demo's two models, all-MiniLM-L6-v2
(incumbent) and its static distillation (candidate): the pipeline runs once per collection and the
per-query scores are cached under ``--cache`` (default ``~/.cache/pytest-embeval-validity``), so later runs
load no model. With reports (``--embeval-json``), one population per golden set, under ``--metric``.

For each population and golden-set size n, ``--simulations`` golden sets of n queries are drawn with
replacement, and each one's interval is computed exactly as a stratum's is (``stats.paired_bootstrap_ci``,
``--resamples`` resamples), for the default interval (studentized) and for ``percentile``, side by side:

* coverage: the share of intervals holding the population's mean difference, the true Δ (nominal 95 %);
* under a true Δ of 0, the share wholly below 0 (a false WORSE) and wholly above 0 (a false BETTER), each
  nominally 2.5 %, for two null populations (``pytest_embeval.core.interval_simulation``): *flipped*,
  every difference with either sign, what two interchangeable models give (zeros and lumps kept,
  symmetric); and
  *centred*, the differences minus their mean (shape and skewness kept, the zeros moved off 0), the
  harder case for one side at small n.

Monte-Carlo standard errors at 1,500 simulations: about 0.6 points on coverage, 0.4 on a 2.5 % rate.

The traffic-weighted interval (``weights: frequency``):

    python benchmarks/validity.py --weights [--skews 0 0.5 0.65 0.8] [--sizes 40 120 360]
                                  [--simulations 600] [--resamples 2000] [--floor 20]

Populations of 3,000 synthetic per-query nDCG@10 differences (`interval_simulation.metric_population`: a
slightly better and a better candidate, and the flipped null of the first, true Δ 0), each query with a
Zipfian frequency ``rank ** -skew`` over a seeded shuffle of ranks (skew 0: equal weights, the unweighted
interval); the true Δ is the traffic-weighted mean. For each skew and n: the median Kish effective number
of the drawn golden sets, the coverage of the weighted studentized and percentile intervals over every
draw and over the draws the floor admits (Kish >= ``--floor``, with their share), and under the null the
shares wholly below and above 0 (false WORSE / BETTER, nominally 2.5 % each).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_embeval.core.interval_simulation import (  # noqa: E402
    Rates,
    centred,
    flipped,
    metric_population,
    simulate,
    simulate_weighted,
    zipf_frequencies,
)
from pytest_embeval.core.stats import DEFAULT_INTERVAL  # noqa: E402

#: The public collections: ``shared/data`` beside the repository or beside any folder above it (a worktree).
DEFAULT_DATA = next(
    (folder / "shared" / "data" for folder in REPO.parents if (folder / "shared" / "data").is_dir()),
    REPO.parent / "shared" / "data",
)
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pytest-embeval-validity"
COLLECTIONS = ("adi", "medline", "nfcorpus-preprocessed", "vaswani")

GOLDEN_YAML = """\
name: {name}
beir: {folder}
metric: {metric}
"""


@dataclass(frozen=True)
class Population:
    """Paired per-query scores of one collection (queries without a relevant document left out)."""

    name: str
    metric: str
    incumbent: np.ndarray
    candidate: np.ndarray

    @property
    def differences(self) -> np.ndarray:
        return self.candidate - self.incumbent


def populations_from_report(path: Path, metric: str | None) -> list[Population]:
    """One population per golden set of a JSON report (``--embeval-json``): its queries' scores under
    ``metric`` (default: the golden set's primary metric), pairs with a missing score left out."""
    report = json.loads(path.read_text(encoding="utf-8"))
    result = []
    for golden in report["golden_sets"]:
        name = metric or golden["metric"]
        pairs = [
            (query["scores"]["incumbent"].get(name), query["scores"]["candidate"].get(name))
            for query in golden["queries"]
        ]
        kept = np.array([pair for pair in pairs if None not in pair], dtype=np.float64).reshape(-1, 2)
        result.append(Population(golden["name"], name, kept[:, 0], kept[:, 1]))
    return result


def collection_report(folder: Path, metric: str, cache: Path) -> Path:
    """The cached score file of one collection under both demo models, computed on first use.

    The file holds the part of the JSON report contract the validity table reads (golden set name and
    metric, each query's id and both arms' scores), so it is read exactly like a report from the command line.
    """
    target = cache / "populations" / f"{folder.name}-{metric}.json"
    if target.is_file():
        return target
    from pytest_embeval.arms import demo
    from pytest_embeval.cache.store import EmbeddingCache
    from pytest_embeval.core.metrics import NoRelevantDocumentsWarning
    from pytest_embeval.golden.loader import load_golden
    from pytest_embeval.run.pipeline import run_golden

    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        yaml_path = Path(tmp) / f"{folder.name}.yaml"
        yaml_path.write_text(GOLDEN_YAML.format(name=folder.name, folder=folder, metric=metric))
        golden = load_golden(yaml_path)
    embeddings = EmbeddingCache(cache / "embeddings")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoRelevantDocumentsWarning)
        run = run_golden(
            golden,
            demo.minilm_arm(),
            demo.static_minilm_arm(cache / "models" / demo.STATIC_NAME),
            embedder=embeddings.embed,
        )
    queries = []
    for i, query in enumerate(golden.queries):
        scores = {}
        for role, arm in (("incumbent", run.incumbent), ("candidate", run.candidate)):
            value = float(arm.per_query[metric][i])
            scores[role] = {metric: None if np.isnan(value) else value}
        queries.append({"id": query.id, "scores": scores})
    report: dict[str, Any] = {
        "schema_version": 1,
        "golden_sets": [{"name": folder.name, "metric": metric, "queries": queries}],
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".tmp")
    partial.write_text(json.dumps(report), encoding="utf-8")
    partial.replace(target)
    return target


def _rates(population: Population, n: int, args: argparse.Namespace) -> dict[str, dict[str, Rates]]:
    """interval -> {"coverage", "flipped", "centred"} -> rates, for one population and size."""
    d = population.differences
    result: dict[str, dict[str, Rates]] = {}
    for interval in (DEFAULT_INTERVAL, "percentile"):
        kwargs = {"simulations": args.simulations, "interval": interval, "n_resamples": args.resamples}
        result[interval] = {
            "coverage": simulate(d, n, seed=f"{population.name}:coverage", **kwargs),
            "flipped": simulate(flipped(d), n, seed=f"{population.name}:flipped", reference=0.0, **kwargs),
            "centred": simulate(centred(d), n, seed=f"{population.name}:centred", reference=0.0, **kwargs),
        }
    return result


def print_markdown_table(header: list[str], rows: list[list[str]]) -> None:
    """The rows as a Markdown table under ``header``."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _pct(rate: float) -> str:
    return f"{100 * rate:.1f} %"


#: The weighted table's populations: (name, metric_population kind, flipped into its null).
WEIGHTED_POPULATIONS = (
    ("null", "slightly better", True),
    ("slightly better", "slightly better", False),
    ("better", "better", False),
)


def weighted_main(args: argparse.Namespace) -> int:
    """The weighted interval's coverage table (module docstring)."""
    intervals = (DEFAULT_INTERVAL, "percentile")
    print(
        f"{args.simulations} simulations per cell, {args.resamples} resamples, 95 % weighted intervals, "
        f"synthetic ndcg@10 differences of 3,000 queries, Zipfian frequencies, floor Kish >= {args.floor:g}"
    )
    header = ["population", "true Δ", "skew", "n", "median Kish"]
    header += [f"coverage {i} % (all · Kish ≥ {args.floor:g})" for i in intervals]
    header += ["admitted %"]
    header += [f"below/above 0 % {i}" for i in intervals]
    rows = []
    started = time.perf_counter()
    for name, kind, null in WEIGHTED_POPULATIONS:
        if args.populations and name not in args.populations:
            continue
        d = metric_population(kind)
        for skew in args.skews:
            f = zipf_frequencies(d.size, skew, seed=kind)
            values, weights = (flipped(d), np.concatenate([f, f])) if null else (d, f)
            truth = float(np.dot(weights, values) / weights.sum())
            for n in args.sizes:
                rates = {
                    i: simulate_weighted(
                        values,
                        weights,
                        n,
                        simulations=args.simulations,
                        interval=i,
                        floor=args.floor,
                        n_resamples=args.resamples,
                        seed=f"{name}:{skew}",
                    )
                    for i in intervals
                }
                first = rates[intervals[0]]
                row = [name, f"{truth + 0.0:+.4f}".replace("-0.0000", "+0.0000"), f"{skew:g}", str(n)]
                row.append(f"{first.kish_median:.1f}")
                for i in intervals:
                    admitted = rates[i].admitted
                    row.append(
                        f"{100 * rates[i].every.covered:.1f} · "
                        + ("—" if admitted is None else f"{100 * admitted.covered:.1f}")
                    )
                share = 0 if first.admitted is None else first.admitted.simulations / first.every.simulations
                row.append(f"{100 * share:.0f}")
                for i in intervals:
                    every = rates[i].every
                    row.append(f"{100 * every.below:.1f}/{100 * every.above:.1f}" if null else "—")
                rows.append(row)
                print(" | ".join(row), flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")
    print()
    print_markdown_table(header, rows)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path, help="JSON reports to take populations from")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the public collections")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where scores are cached")
    parser.add_argument("--metric", default="ndcg@10")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="20 60 150 300 (--weights: 40 120 360)"
    )
    parser.add_argument("--simulations", type=int, default=None, help="1500 (--weights: 600)")
    parser.add_argument("--resamples", type=int, default=None, help="10000 (--weights: 2000)")
    parser.add_argument("--weights", action="store_true", help="the traffic-weighted interval's table")
    parser.add_argument("--skews", type=float, nargs="+", default=[0.0, 0.5, 0.65, 0.8])
    parser.add_argument("--floor", type=float, default=20.0, help="min_queries, held against Kish's n")
    parser.add_argument(
        "--populations", nargs="+", help="--weights: only these (null, 'slightly better', better)"
    )
    args = parser.parse_args()
    weighted = args.weights
    args.sizes = args.sizes or ([40, 120, 360] if weighted else [20, 60, 150, 300])
    args.simulations = args.simulations or (600 if weighted else 1500)
    args.resamples = args.resamples or (2000 if weighted else 10_000)
    if weighted:
        return weighted_main(args)
    paths = args.reports or [collection_report(args.data / c, args.metric, args.cache) for c in COLLECTIONS]
    populations = [p for path in paths for p in populations_from_report(path, args.metric)]
    print(
        f"{args.simulations} simulations per cell, {args.resamples} resamples, 95 % intervals, {args.metric}"
    )
    for p in populations:
        d = p.differences
        print(
            f"population {p.name}: {d.size} queries, true Δ {d.mean():+.4f}, sd {d.std(ddof=1):.3f}, "
            f"{np.mean(d == 0):.0%} zero differences"
        )
    intervals = (DEFAULT_INTERVAL, "percentile")
    header = ["population", "n"]
    header += [f"coverage ({i})" for i in intervals]
    header += [f"flipped null below/above 0 ({i})" for i in intervals]
    header += [f"centred null below/above 0 ({i})" for i in intervals]
    rows = []
    started = time.perf_counter()
    for p in populations:
        for n in args.sizes:
            rates = _rates(p, n, args)
            row = [p.name, str(n)]
            row += [_pct(rates[i]["coverage"].covered) for i in intervals]
            for null in ("flipped", "centred"):
                row += [f"{_pct(rates[i][null].below)} / {_pct(rates[i][null].above)}" for i in intervals]
            rows.append(row)
            print(" | ".join(row), flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")
    print()
    print_markdown_table(header, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
