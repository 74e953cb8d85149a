"""What a calibration sample of the shipped set holds: relevant pairs (by the shipped grades) in 100 pairs
drawn uniformly from the pool and drawn by `pooling.sample_pool` (evenly over the best rank), at depth 5 and
20, over seeded pools; and how many pairs of a uniform draw land on each best rank.

    pytest --embeval golden/support.yaml --embeval-json report.json    # both arms' rankings
    python benchmarks/calibration_sample.py golden/support.yaml report.json

The pool is made as if nothing were judged yet (the grades are only read to count), so the depth-20 pool
is every pair either arm ranks in its top 20.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter

import numpy as np

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judging.pooling import pool_from_rankings, sample_pool
from pytest_embeval.judging.rankings import find_golden_record, load_report, rankings_from_record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("golden")
    parser.add_argument("report")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    golden = load_golden(args.golden)
    unjudged = dataclasses.replace(golden, qrels={query.id: {} for query in golden.queries})
    rankings = rankings_from_record(find_golden_record(load_report(args.report), golden, args.report))

    def grade(query_id: str, doc_id: str) -> int:
        return golden.qrels.get(query_id, {}).get(doc_id, 0)

    for depth in (5, 20):
        for name in ("uniform", "by rank"):
            relevant, grades = [], np.zeros(3)
            for seed in range(args.seeds):
                pool = pool_from_rankings(unjudged, rankings, depth=depth, seed=seed)
                if name == "uniform":
                    rng = np.random.default_rng(seed)
                    chosen = rng.choice(len(pool.rows), args.size, replace=False)
                    rows = [pool.rows[i] for i in chosen]
                else:
                    rows = list(sample_pool(pool, args.size).rows)
                given = [grade(row.query_id, row.doc_id) for row in rows]
                relevant.append(sum(1 for g in given if g >= 1))
                grades += np.bincount(given, minlength=3)[:3]
            mean = "/".join(f"{count / args.seeds:.1f}" for count in grades)
            print(
                f"depth {depth:2d}, {name:7s}: relevant per {args.size}: mean {np.mean(relevant):.1f}, "
                f"min {min(relevant)}, max {max(relevant)}; grades 0/1/2 mean {mean}"
            )
    pool = pool_from_rankings(unjudged, rankings, depth=5)
    best = {
        (q.query_id, row.doc_id): rank
        for q in pool.queries
        for row, rank in zip(q.rows, q.best_ranks, strict=True)
    }
    print("depth 5 pool by best rank:", dict(sorted(Counter(best.values()).items())))
    print(
        "  of them relevant:",
        dict(sorted(Counter(rank for pair, rank in best.items() if grade(*pair) >= 1).items())),
    )
    for seed in range(5):
        chosen = np.random.default_rng(seed).choice(len(pool.rows), args.size, replace=False)
        ranks = Counter(best[(pool.rows[i].query_id, pool.rows[i].doc_id)] for i in chosen)
        print(f"  uniform draw, seed {seed}, per best rank:", dict(sorted(ranks.items())))


if __name__ == "__main__":
    main()
