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

Two floors under the binary search, measured in the same run: FAISS's ``IndexBinaryFlat`` alone on the same
bits (built and searched, results left as FAISS gives them: what `hamming_search` adds is the rest), and a
plain C loop that computes every query's Hamming distance to every document (no top k) with the CPU's
``popcnt``, blocked so the documents stay in cache, compiled by ``cc -O3 -march=native`` when a compiler
exists (skipped, saying so, when not): no exact search by popcount can be faster than computing the
distances, so float32's time over this loop's is the most any popcount kernel can gain on this CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
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
RUNS = (*PRECISIONS, "faiss-binary-flat")
#: Every Hamming distance of random codes of WORDS 64-bit words (a compile-time constant, so the compiler
#: unrolls the row), queries x documents, in blocks of 2,048 documents; prints the CPU seconds (a sum of
#: distances goes to stderr so that the loop is not elided).
POPCOUNT_LOOP = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    long nb = atol(argv[1]), nq = atol(argv[2]), w = WORDS, block = 2048;
    uint64_t *d = malloc(8 * nb * w), *q = malloc(8 * nq * w), x = 88172645463325252ULL;
    int *out = malloc(sizeof(int) * block);
    for (long i = 0; i < nb * w; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; d[i] = x; }
    for (long i = 0; i < nq * w; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; q[i] = x; }
    long sum = 0;
    clock_t start = clock();
    for (long j0 = 0; j0 < nb; j0 += block) {
        long j1 = j0 + block < nb ? j0 + block : nb;
        for (long i = 0; i < nq; i++) {
            const uint64_t *a = q + i * w;
            for (long j = j0; j < j1; j++) {
                const uint64_t *b = d + j * w;
                int h = 0;
                for (long t = 0; t < WORDS; t++) h += __builtin_popcountll(a[t] ^ b[t]);
                out[j - j0] = h;
            }
            sum += out[(i * 31) % (j1 - j0)];
        }
    }
    printf("%.6f\n", (double)(clock() - start) / CLOCKS_PER_SEC);
    fprintf(stderr, "%ld\n", sum);
    return 0;
}
"""


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

    elif precision == "binary":
        bits = np.concatenate([quantize(block, "ubinary") for block in document_blocks(n, dimension)])
        query_bits = quantize(queries, "ubinary")

        def search() -> object:
            return hamming_search(query_bits, bits, args.k, dims=dimension, doc_ids=doc_ids)

    else:
        import faiss

        bits = np.concatenate([quantize(block, "ubinary") for block in document_blocks(n, dimension)])
        query_bits = quantize(queries, "ubinary")

        def search() -> object:
            index = faiss.IndexBinaryFlat(8 * bits.shape[1])
            index.add(bits)
            return index.search(query_bits, args.k)

    times, cpu = [], []
    for _ in range(args.repeat):
        began, began_cpu = time.perf_counter(), time.process_time()
        search()
        times.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
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
    parser.add_argument("--run", choices=RUNS, help=argparse.SUPPRESS)  # the fresh process's part
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(run_one(args.run, args)))
        return
    before = os.getloadavg()[0]
    results = {}
    for precision in RUNS:
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
    for precision in RUNS:
        one = results[precision]
        label = "FAISS IndexBinaryFlat" if precision == "faiss-binary-flat" else precision + " exact search"
        print(
            f"{label:24}{one['seconds']:8.2f}{one['seconds'] / floor['seconds']:11.3f}"
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
    loop = popcount_floor(args)
    if loop is None:
        print("popcount floor: no C compiler (cc) on this machine, not measured")
    else:
        print(
            f"popcount floor: every distance by a C popcnt loop, 1 thread, {loop:.2f} s CPU: float32's CPU "
            f"time over it is {floor['cpu_seconds'] / loop:.1f} x, the most any popcount kernel gains here"
        )
    print(f"load average before and after: {before:.2f} and {after:.2f} ({os.cpu_count()} cores)")


def popcount_floor(args: argparse.Namespace) -> float | None:
    """CPU seconds of `POPCOUNT_LOOP` at the benchmark's sizes (None without a C compiler)."""
    compiler = shutil.which("cc")
    if compiler is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        source, program = Path(folder) / "popcount.c", Path(folder) / "popcount"
        source.write_text(POPCOUNT_LOOP, encoding="utf-8")
        words = -(-args.dimension // 64)
        compile_command = [
            compiler,
            "-O3",
            "-march=native",
            f"-DWORDS={words}",
            str(source),
            "-o",
            str(program),
        ]
        subprocess.run(compile_command, check=True)
        done = subprocess.run(
            [str(program), str(args.docs), str(args.queries)], check=True, capture_output=True, text=True
        )
    return float(done.stdout.strip())


if __name__ == "__main__":
    main()
