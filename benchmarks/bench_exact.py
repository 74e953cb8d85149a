"""Exact search alone, in one process, against the blocked-matmul floors it replaces: the float32 shortlist
with float64 rescoring (`exact_search`), the float64 scan it reproduces bit for bit (`float64_search`), and
plain numpy loops (blocked matmul + ``argpartition`` of the top k, float32 products and float64 ones), and
the float32 blocked matmul alone, keeping nothing (no search can be faster).

    python benchmarks/bench_exact.py [--docs 100000] [--queries 600] [--dimension 512] [--repeat 3]

Random unit vectors, top 100. Best of ``--repeat`` each; the ratios are against the float32 floor. The
result of ``exact_search`` is checked equal (positions and score bits) to ``float64_search``'s.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pytest_embeval.search.exact import exact_search, float64_search

DEPTH = 100


def floor(queries: np.ndarray, documents: np.ndarray, dtype: type[np.floating], select: bool = True) -> None:
    """The benchmarks' floor (as in bench_scale.py): query blocks of 256, document blocks of 8,192; without
    ``select``, the products alone (no top k kept: the hardware's matmul, below any search)."""
    for q_start in range(0, queries.shape[0], 256):
        q = queries[q_start : q_start + 256].astype(dtype, copy=False)
        best_scores, best_rows = None, None
        for d_start in range(0, documents.shape[0], 8192):
            block = documents[d_start : d_start + 8192].astype(dtype, copy=False)
            scores = (q @ block.T).astype(np.float32, copy=False)
            if not select:
                continue
            rows = np.arange(d_start, d_start + scores.shape[1])[None, :].repeat(scores.shape[0], 0)
            if best_scores is not None and best_rows is not None:
                scores = np.concatenate([best_scores, scores], axis=1)
                rows = np.concatenate([best_rows, rows], axis=1)
            keep = np.argpartition(-scores, DEPTH - 1, axis=1)[:, :DEPTH]
            best_scores = np.take_along_axis(scores, keep, axis=1)
            best_rows = np.take_along_axis(rows, keep, axis=1)


def best_of(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--dimension", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    documents = rng.standard_normal((args.docs, args.dimension), dtype=np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, args.dimension), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    doc_ids = [f"d{i:07d}" for i in range(args.docs)]
    runs: dict[str, Callable[[], object]] = {
        "float32 matmul alone (no top k)": lambda: floor(queries, documents, np.float32, select=False),
        "floor, float32 products": lambda: floor(queries, documents, np.float32),
        "floor, float64 products": lambda: floor(queries, documents, np.float64),
        "exact_search (float32 shortlist)": lambda: exact_search(queries, documents, DEPTH, doc_ids=doc_ids),
        "float64_search (float64 products)": lambda: float64_search(
            queries, documents, DEPTH, doc_ids=doc_ids
        ),
    }
    print(
        f"{args.docs:,} x {args.dimension} documents, {args.queries:,} queries, top {DEPTH}, "
        f"best of {args.repeat}"
    )
    seconds = {name: best_of(args.repeat, work) for name, work in runs.items()}
    base = seconds["floor, float32 products"]
    for name, value in seconds.items():
        print(f"{name:38s} {value:7.2f} s  {value / base:5.2f} x the float32 floor")
    same = all(
        a.tobytes() == b.tobytes()
        for a, b in zip(
            exact_search(queries, documents, DEPTH, doc_ids=doc_ids),
            float64_search(queries, documents, DEPTH, doc_ids=doc_ids),
            strict=True,
        )
    )
    print(f"exact_search equal to float64_search, positions and score bits: {same}")


if __name__ == "__main__":
    main()
