"""Drawing a golden set from production at scale: `embeval sample` over a synthetic query log with a Zipfian
head, `embeval corpus-sample` over a generated corpus of nine million lines.

    python benchmarks/bench_production.py [--rows 1000000] [--documents 9000000] [--repeat 3]
                                          [--part log|corpus]

log: a log of --rows searches (JSONL: query, language, shape) in four languages of unequal traffic, each
query drawn from a Zipfian vocabulary of 200,000 ranks (p ∝ 1/rank^1.05) and one search in ten re-spelt
(upper case, doubled spaces, full-width letters) so that normalisation has work to do. It times the pass of
`read_query_log` + `draw_queries` against two floors measured in the same run, best of --repeat: reading
the file once (its UTF-8 lines, hashed) and reading it once with `json.loads` on every line; it states
the pass's peak memory (tracemalloc) for the log and for the log twice over (twice the rows, the same
distinct queries: memory follows the distinct queries, not the rows), the allocation table's floors, and
the distinct share of the sample against a uniform sample of as many rows.

corpus: a corpus of --documents JSONL lines and a qrels file judging 20,000 of them (plus 100 ids not in
the corpus), sampled to 200,000 documents by `draw_corpus` in a child process whose peak resident memory
is read from the kernel (``VmHWM`` in ``/proc/self/status``; Linux only), against a child that only
imports the same modules and reads the qrels, and against a child drawing from a corpus of a ninth of the
size (bounded memory: the same peak).
Its time is set against reading the file once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_embeval.files.lines import HashedLines
from pytest_embeval.golden.query_draw import draw_queries
from pytest_embeval.golden.query_log import read_query_log

LANGUAGES = {"en": 0.55, "de": 0.25, "fr": 0.15, "ja": 0.05}
VOCABULARY = 200_000
WORDS = ["parcel", "tracking", "refund", "delivery", "customs", "label", "return", "driver", "address", "fee"]


def write_log(path: Path, rows: int, seed: int = 0) -> None:
    """The synthetic log: Zipfian ranks per language, a text per rank, one search in ten re-spelt."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.05
    weights /= weights.sum()
    languages = rng.choice(list(LANGUAGES), size=rows, p=list(LANGUAGES.values()))
    ranks = rng.choice(VOCABULARY, size=rows, p=weights)
    respelt = rng.random(rows)
    with path.open("w", encoding="utf-8") as handle:
        for language, rank, spelling in zip(
            languages.tolist(), ranks.tolist(), respelt.tolist(), strict=True
        ):
            text = f"{WORDS[rank % 10]} {WORDS[(rank // 10) % 10]} {language} {rank}"
            if spelling < 0.04:
                text = text.upper()
            elif spelling < 0.08:
                text = text.replace(" ", "  ") + " "
            elif spelling < 0.10:
                text = text.replace("a", "\uff41")  # a full-width a: NFKC makes it "a"
            shape = "question" if rank % 3 == 0 else "keyword"
            handle.write(json.dumps({"query": text, "language": language, "shape": shape}) + "\n")


def _best(repeat: int, run: object) -> float:
    assert callable(run)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def read_once(path: Path) -> None:
    for _ in HashedLines(path):
        pass


def read_and_parse(path: Path) -> None:
    for line in HashedLines(path):
        if line:
            json.loads(line)


BY = ("language", "shape")
SIZE = 400


def sample(path: Path) -> tuple[object, object]:
    log = read_query_log(path, "query", BY)
    draw = draw_queries(
        log, BY, size=SIZE, floor=20, bands=(("head", 0.33), ("torso", 0.33)), head_boost=1.0, seed=0
    )
    return log, draw


def peak_mib(path: Path) -> float:
    tracemalloc.start()
    sample(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def bench_log(rows: int, repeat: int, folder: Path) -> None:
    path = folder / "log.jsonl"
    start = time.perf_counter()
    write_log(path, rows)
    twice = folder / "twice.jsonl"  # the same searches twice over: twice the rows, the same distinct queries
    with twice.open("wb") as target:
        target.write(path.read_bytes() * 2)
    size = path.stat().st_size / 2**20
    print(f"synthetic log: {rows:,} searches, {size:.0f} MiB, written in {time.perf_counter() - start:.1f} s")
    once = _best(repeat, lambda: read_once(path))
    parsed = _best(repeat, lambda: read_and_parse(path))
    ours = _best(repeat, lambda: sample(path))
    print(f"{'':44}{'s':>8}{'x once':>9}")
    print(f"{'reading the file once (UTF-8 lines, sha256)':44}{once:8.2f}{1:9.1f}")
    print(f"{'reading it once with json.loads per line':44}{parsed:8.2f}{parsed / once:9.1f}")
    print(f"{'embeval sample (read_query_log + draw)':44}{ours:8.2f}{ours / once:9.1f}")
    log, draw = sample(path)
    assert hasattr(log, "distinct") and hasattr(draw, "strata")
    peak, peak_twice = peak_mib(path), peak_mib(twice)
    print(
        f"peak memory of the pass (tracemalloc): {peak:.0f} MiB for {rows:,} rows ({size:.0f} MiB), "
        f"{peak_twice:.0f} MiB for the same log twice over ({2 * rows:,} rows, {2 * size:.0f} MiB); "
        f"{len(log.distinct):,} distinct queries in both"
    )
    below = [s.name for s in draw.strata if s.below_floor]
    met = all(s.sampled >= 20 or s.below_floor for s in draw.strata)
    print(
        f"{len(draw.strata)} strata, every one at its floor of 20 or reported below it: {met} "
        f"(reported: {', '.join(below) or 'none'}); "
        f"smallest stratum drawn: {min(s.sampled for s in draw.strata)}"
    )
    rng = np.random.default_rng(1)
    levels = log.distinct.levels()
    frequencies = np.repeat([f for f, _ in levels], list(levels.values()))
    uniform = rng.choice(len(frequencies), size=SIZE, p=frequencies / frequencies.sum())
    print(
        f"distinct strings in the sample of {SIZE}: {len({q.id for q in draw.queries})} "
        f"({len({q.id for q in draw.queries}) / SIZE:.0%}); in a uniform sample of {SIZE} rows: "
        f"{len(set(uniform.tolist()))} ({len(set(uniform.tolist())) / SIZE:.0%}); traffic the sample covers: "
        f"{draw.traffic_covered:.1%}"
    )


CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from pytest_embeval.golden.corpus_draw import draw_corpus
from pytest_embeval.golden.data_files import judged_document_ids_in
judged = judged_document_ids_in(Path(sys.argv[3]))
start = time.perf_counter()
if sys.argv[2] != "-":
    draw = draw_corpus(Path(sys.argv[2]), size=200_000, judged=judged, seed=0)
    assert draw.sampled == 200_000 and draw.judged_found == 20_000, (draw.sampled, draw.judged_found)
    print(len(draw.missing), end=" ")
# VmHWM, not ru_maxrss: exec keeps the parent's ru_maxrss, and the parent holds the log part's data.
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
print(time.perf_counter() - start, int(peak) / 1024)
"""


def write_corpus(path: Path, documents: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        block = 100_000
        for start in range(0, documents, block):
            handle.write(
                "".join(
                    f'{{"_id": "d{i}", "text": "chunk {i} of a production corpus: {WORDS[i % 10]} '
                    f'{WORDS[(i // 10) % 10]}", "area": "a{i % 7}"}}\n'
                    for i in range(start, min(start + block, documents))
                )
            )


def child(corpus: Path | str, qrels: Path) -> list[float]:
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", CHILD, root, str(corpus), str(qrels)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [float(value) for value in out.split()]


def bench_corpus(documents: int, repeat: int, folder: Path) -> None:
    corpus, small = folder / "corpus.jsonl", folder / "small.jsonl"
    start = time.perf_counter()
    write_corpus(corpus, documents)
    write_corpus(small, documents // 9)
    rng = np.random.default_rng(0)
    judged = rng.choice(documents // 9, size=20_000, replace=False)  # in both corpora
    qrels = folder / "qrels.tsv"
    rows = [f"q{i % 500}\td{doc}\t{i % 3}" for i, doc in enumerate(judged.tolist())]
    rows += [f"q{i}\tgone-{i}\t1" for i in range(100)]
    qrels.write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8")
    size = corpus.stat().st_size / 2**20
    print(
        f"synthetic corpus: {documents:,} lines, {size:.0f} MiB (and {documents // 9:,} lines), "
        f"written in {time.perf_counter() - start:.1f} s; 20,100 judged ids"
    )
    once = _best(repeat, lambda: read_once(corpus))
    (base,) = child("-", qrels)[1:]
    runs = [child(corpus, qrels) for _ in range(repeat)]
    missing, seconds, peak = min(runs, key=lambda run: run[1])
    small_peak = child(small, qrels)[2]
    print(f"reading the file once (UTF-8 lines, sha256): {once:.1f} s")
    print(f"corpus-sample to 200,000 documents: {seconds:.1f} s ({seconds / once:.1f} x reading once)")
    print(
        f"peak resident memory: {peak:.0f} MiB over {documents:,} lines, {small_peak:.0f} MiB over "
        f"{documents // 9:,}, {base:.0f} MiB for the imports and the qrels alone"
    )
    print(f"judged documents kept: 20,000 of 20,000 in the corpus; missing from it, reported: {missing:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--documents", type=int, default=9_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--part", choices=("log", "corpus"), default=None)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)")
    with tempfile.TemporaryDirectory() as folder:
        if args.part in (None, "log"):
            bench_log(args.rows, args.repeat, Path(folder))
        if args.part in (None, "corpus"):
            bench_corpus(args.documents, args.repeat, Path(folder))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
