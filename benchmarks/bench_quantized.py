"""Exact search in the quantised domain against float32 exact search, each in a fresh process: packed bits by
FAISS's popcount kernel (`quantized.hamming_search`), int8 codes by float32 BLAS (`quantized.integer_search`),
float32 vectors by `exact.exact_search`, the top k included in every one.

    python benchmarks/bench_quantized.py [--docs 200000] [--queries 1500] [--dimension 384] [--k 100]
                                         [--repeat 3] [--threads N]

Generated unit vectors (documents in seeded blocks, queries noisy copies of some of them). Each precision runs
in its own process, which builds only what that precision stores: the float process holds the float32
documents, the int8 and binary processes quantise block by block (int8 against ranges calibrated on every
document: a first pass of minima and maxima) and hold only the codes, so each process's peak resident memory
(Linux's VmHWM, which starts afresh at exec) is what a search of that precision costs. Times are the best of
``--repeat`` searches of every query (the FAISS index built inside each), wall-clock and CPU (all threads);
on a machine shared with other work the CPU figures are the steadier. The targets: binary at least 10 x
faster than float32, int8 no slower than 1.1 x float32, binary's peak memory at most half of float32's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pytest_embeval.search.exact import exact_search  # noqa: E402
from pytest_embeval.search.quantization import calibration_ranges, quantize  # noqa: E402
from pytest_embeval.search.quantized import hamming_search, integer_search  # noqa: E402

BLOCK = 8192
PRECISIONS = ("float32", "int8", "binary")


def unit(rows: np.ndarray) -> np.ndarray:
    normalised: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalised.astype(np.float32)


def document_blocks(n: int, dimension: int):  # type: ignore[no-untyped-def]
    """The documents, block by block, each block from its own seed: any process makes the same ones."""
    for start in range(0, n, BLOCK):
        rng = np.random.default_rng([7, start])
        yield unit(rng.standard_normal((min(BLOCK, n - start), dimension), dtype=np.float32))


def queries_of(n_documents: int, n_queries: int, dimension: int) -> np.ndarray:
    """Noisy copies of documents drawn with a fixed seed (each regenerated from its block's seed)."""
    rng = np.random.default_rng(11)
    rows = np.sort(rng.choice(n_documents, n_queries, replace=False))
    picked = []
    for start, block in zip(
        range(0, n_documents, BLOCK), document_blocks(n_documents, dimension), strict=True
    ):
        inside = rows[(rows >= start) & (rows < start + BLOCK)] - start
        picked.append(block[inside])
    noise = 0.5 * rng.standard_normal((n_queries, dimension), dtype=np.float32) / np.sqrt(dimension)
    return unit(np.concatenate(picked) + noise)


def peak_kib() -> int:
    """Linux's VmHWM: this process's peak resident memory since exec, in KiB."""
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    return int(status.split("VmHWM:")[1].split()[0])


def run_one(precision: str, args: argparse.Namespace) -> dict[str, float]:
    """In a fresh process: build what ``precision`` stores, search every query ``repeat`` times."""
    n, dimension = args.docs, args.dimension
    queries = queries_of(n, args.queries, dimension)
    doc_ids = [f"d{i:07d}" for i in range(n)]
    if precision == "float32":
        documents = np.empty((n, dimension), dtype=np.float32)
        for start, block in zip(range(0, n, BLOCK), document_blocks(n, dimension), strict=True):
            documents[start : start + block.shape[0]] = block

        def search() -> object:
            return exact_search(queries, documents, args.k, doc_ids=doc_ids)

    elif precision == "int8":
        low = np.full(dimension, np.inf, dtype=np.float32)
        high = np.full(dimension, -np.inf, dtype=np.float32)
        for block in document_blocks(n, dimension):
            ranges = calibration_ranges(block)
            low, high = np.minimum(low, ranges[0]), np.maximum(high, ranges[1])
        calibration = np.vstack((low, high))
        codes = np.concatenate(
            [quantize(block, "int8", calibration) for block in document_blocks(n, dimension)]
        )
        query_codes = quantize(queries, "int8", calibration)

        def search() -> object:
            return integer_search(query_codes, codes, args.k, doc_ids=doc_ids)

    else:
        bits = np.concatenate([quantize(block, "ubinary") for block in document_blocks(n, dimension)])
        query_bits = quantize(queries, "ubinary")

        def search() -> object:
            return hamming_search(query_bits, bits, args.k, dims=dimension, doc_ids=doc_ids)

    times, cpu = [], []
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        search()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"seconds": min(times), "cpu_seconds": min(cpu), "peak_mib": peak_kib() / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1500)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--threads", type=int, help="OpenMP and BLAS threads of every search (default: the libraries' own)"
    )
    parser.add_argument("--run", choices=PRECISIONS, help=argparse.SUPPRESS)  # the fresh process's part
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(run_one(args.run, args)))
        return
    before = os.getloadavg()[0]
    results = {}
    for precision in PRECISIONS:
        command = [sys.executable, __file__, "--run", precision, *sys.argv[1:]]
        environment = dict(os.environ)
        if args.threads is not None:
            for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
                environment[name] = str(args.threads)
        done = subprocess.run(command, check=True, capture_output=True, text=True, env=environment)
        results[precision] = json.loads(done.stdout.strip().splitlines()[-1])
    after = os.getloadavg()[0]
    print(
        f"{args.docs:,} x {args.dimension} documents, {args.queries:,} queries, top {args.k}, best of "
        f"{args.repeat}, each precision in a fresh process"
        + ("" if args.threads is None else f", {args.threads} thread(s) each")
    )
    floor = results["float32"]
    print(
        f"{'':24}{'wall s':>8}{'x float32':>11}{'CPU s':>8}{'x float32':>11}{'peak MiB':>10}{'x float32':>11}"
    )
    for precision in PRECISIONS:
        one = results[precision]
        print(
            f"{precision + ' exact search':24}{one['seconds']:8.2f}{one['seconds'] / floor['seconds']:11.3f}"
            f"{one['cpu_seconds']:8.2f}{one['cpu_seconds'] / floor['cpu_seconds']:11.3f}"
            f"{one['peak_mib']:10.0f}{one['peak_mib'] / floor['peak_mib']:11.3f}"
        )
    speedup = floor["seconds"] / results["binary"]["seconds"]
    slower = results["int8"]["seconds"] / floor["seconds"]
    cpu_speedup = floor["cpu_seconds"] / results["binary"]["cpu_seconds"]
    cpu_slower = results["int8"]["cpu_seconds"] / floor["cpu_seconds"]
    memory = results["binary"]["peak_mib"] / floor["peak_mib"]
    for said, met in (
        (f"binary {speedup:.1f} x faster than float32, wall (target: at least 10 x)", speedup >= 10),
        (f"binary {cpu_speedup:.1f} x faster than float32, CPU (target: at least 10 x)", cpu_speedup >= 10),
        (f"int8 {slower:.2f} x float32's time, wall (target: at most 1.1 x)", slower <= 1.1),
        (f"int8 {cpu_slower:.2f} x float32's time, CPU (target: at most 1.1 x)", cpu_slower <= 1.1),
        (f"binary's peak memory {memory:.2f} x float32's (target: at most 0.5 x)", memory <= 0.5),
    ):
        print(f"{'meets' if met else 'MISSES'}: {said}")
    print(f"load average before and after: {before:.2f} and {after:.2f} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
