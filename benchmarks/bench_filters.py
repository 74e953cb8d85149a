"""What a filter costs an HNSW search, and what it does to its recall: hnswlib's ``filter`` callable.

    python benchmarks/bench_filters.py [--documents 20000] [--dimension 64] [--queries 200] [--k 100]

Random unit vectors (queries near documents); each query filtered to a random share of the documents
(``--shares``). Per share: the single-threaded latency of a filtered HNSW query (the graph search with the
mask as hnswlib's filter, as `HnswIndex.query_seconds` times it), of an unfiltered one, and of hnswlib's
flat index with the same filter (the exact floor); the recall of the filtered HNSW top k against the
filtered exact top k (`index.exact_search` with the masks); and the masked exact search of all queries at
once, as the pipeline runs it. Speed is quoted at a recall, never alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from pytest_embeval.core.capacity import Latency
from pytest_embeval.golden.filters import Allowed
from pytest_embeval.search.exact import exact_search
from pytest_embeval.search.hnsw import HnswIndex, ann_recall, flat_query_seconds


def _visited(index: HnswIndex, queries: np.ndarray, k: int, mask: np.ndarray) -> float:
    """Mean filter calls per query: the nodes hnswlib's graph search visits under the filter."""
    calls = 0
    permitted = mask.tolist()

    def counted(label: int) -> bool:
        nonlocal calls
        calls += 1
        return bool(permitted[label])

    graph = index._index
    graph.set_ef(k)
    for row in queries:
        with contextlib.suppress(RuntimeError):
            graph.knn_query(row[None, :], k=k, num_threads=1, filter=counted)
    return calls / len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=20000)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--shares", type=float, nargs="+", default=[1.0, 0.5, 0.1, 0.01])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    documents = rng.standard_normal((args.documents, args.dimension)).astype(np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    picks = rng.choice(args.documents, size=args.queries, replace=False)
    queries = documents[picks] + 0.3 * rng.standard_normal((args.queries, args.dimension)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    doc_ids = [f"d{i:06d}" for i in range(args.documents)]
    start = time.perf_counter()
    index = HnswIndex(documents, doc_ids=doc_ids, M=16, ef_construction=200, seed=0)
    print(
        f"{args.documents} documents x {args.dimension}, {args.queries} queries, k={args.k}, ef=k, M=16; "
        f"built in {time.perf_counter() - start:.1f} s"
    )
    plain = Latency.of(index.query_seconds(queries, args.k, ef_search=args.k))
    print(
        f"{'share':>6}  {'recall':>7}  {'hnsw p50 ms':>11}  {'x unfiltered':>12}  {'flat p50 ms':>11}  "
        f"{'exact_search all s':>18}  {'visited':>8}"
    )
    for share in args.shares:
        mask = rng.random(args.documents) < share
        mask[picks[0]] = True
        allowed = Allowed(masks=mask[None, :], rows=np.zeros(args.queries, dtype=np.intp))
        approximate, _ = index.search(queries, args.k, ef_search=args.k, allowed=allowed)
        start = time.perf_counter()
        exact, _ = exact_search(queries, documents, args.k, doc_ids=doc_ids, allowed=allowed)
        exact_seconds = time.perf_counter() - start
        filtered = Latency.of(index.query_seconds(queries, args.k, ef_search=args.k, allowed=allowed))
        flat = Latency.of(flat_query_seconds(queries, documents, args.k, allowed=allowed))
        visited = _visited(index, queries[:20], args.k, mask)
        print(
            f"{share:>6.2f}  {ann_recall(approximate, exact):>7.4f}  {filtered.p50_ms:>11.3f}  "
            f"{filtered.p50_ms / plain.p50_ms:>12.1f}  {flat.p50_ms:>11.3f}  {exact_seconds:>18.2f}"
            f"  {visited / args.documents:>8.0%}"
        )
    start = time.perf_counter()
    exact_search(queries, documents, args.k, doc_ids=doc_ids)
    print(f"unfiltered: hnsw p50 {plain.p50_ms:.3f} ms, exact_search all {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
