"""Time the whole plugin on a real collection against the floor, a cached rerun, and the statistics alone.

    python benchmarks/bench_plugin.py [--data DIR] [--rounds 2] [--repeat 3]

(a) ``pytest --embeval`` on nfcorpus-preprocessed (``--data``; default: ``shared/data/nfcorpus-preprocessed``
    next to the repository), all-MiniLM-L6-v2 against the demo's static distillation, with a fresh embedding
    cache, timed from process start to exit; against the *floor*: a plain Python process that loads the same
    two models from the same folders with sentence-transformers and encodes the same texts (the documents'
    ``embed_text``, the queries' text, read with ``load_golden``) with ``encode_document`` /
    ``encode_query`` at the plugin's batch size, 64. Target: plugin / floor <= 1.15.
(b) the same pytest command again on the cache the first run filled. Target: rerun / first < 0.10.
(c) in process: per-query nDCG@10, recall@100 and map@100 of 1,500 synthetic queries (top 100 of 5,000
    documents, graded judgments) for both arms with ``metrics.evaluate``, then ``stats.compare_paired`` with
    10,000 resamples for 8 strata x 3 metrics; best of ``--repeat``.

Both arms of (a) and (b) run with HF_HUB_OFFLINE=1. The static model is distilled (or found current) before
anything is timed, so neither side pays for it. The machine is shared: (a) and (b) run ``--rounds`` times,
alternating floor, plugin, rerun, and the best of each is reported, with the child processes' CPU time and
the load average at start and end.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_embeval.arms import demo  # noqa: E402
from pytest_embeval.arms.embedding import embed  # noqa: E402
from pytest_embeval.core.metrics import NoRelevantDocumentsWarning, evaluate  # noqa: E402
from pytest_embeval.core.stats import compare_paired, stable_seed  # noqa: E402
from pytest_embeval.golden.loader import load_golden  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "nfcorpus-preprocessed"
#: `encoders.embed`'s default, which the plugin (through the embedding cache) uses.
BATCH_SIZE = inspect.signature(embed).parameters["batch_size"].default
FIRST_TARGET = 1.15
RERUN_TARGET = 0.10

GOLDEN_YAML = """\
name: nfcorpus
beir: {folder}
metric: ndcg@10
report: [recall@100, map@100]
tie_margin: 0.01
"""

# The floor: nothing but loading the two models and encoding the texts the plugin embeds.
FLOOR_PROGRAM = """\
import sys
from sentence_transformers import SentenceTransformer
from pytest_embeval.golden.loader import load_golden

golden = load_golden(sys.argv[1])
documents = [document.embed_text for document in golden.documents]
queries = [query.text for query in golden.queries]
batch_size = int(sys.argv[4])
for folder in sys.argv[2:4]:
    model = SentenceTransformer(folder, device="cpu")
    model.encode_document(documents, batch_size=batch_size, show_progress_bar=False)
    model.encode_query(queries, batch_size=batch_size, show_progress_bar=False)
"""

CACHE_LINE = re.compile(r"embedding cache .*: ([\d,]+) texts read, ([\d,]+) embedded")

# (c): 1,500 queries in 8 strata: overall, three languages and four query shapes.
SYNTH_QUERIES = 1_500
SYNTH_CORPUS = 5_000
SYNTH_DEPTH = 100
SYNTH_METRICS = ("ndcg@10", "recall@100", "map@100")
SYNTH_FIELDS = {
    "language": {"en": 800, "es": 450, "de": 250},
    "shape": {"question": 600, "keyword": 400, "phrase": 300, "navigational": 200},
}
SYNTH_RESAMPLES = 10_000


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float  # user + system time of the child process
    returncode: int
    stdout: str
    stderr: str


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)"


def timed(command: list[str], env: dict[str, str]) -> Timing:
    """Wall time from process start to exit, and the child's CPU time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu, done.returncode, done.stdout, done.stderr)


def fail(what: str, timing: Timing) -> None:
    tail = "\n".join((timing.stdout + timing.stderr).splitlines()[-30:])
    sys.exit(f"{what} exited {timing.returncode}:\n{tail}")


def cache_counts(stdout: str) -> tuple[int, int]:
    match = CACHE_LINE.search(stdout)
    if match is None:
        return -1, -1
    return int(match[1].replace(",", "")), int(match[2].replace(",", ""))


def overall_verdict(report_path: Path) -> str:
    report = json.loads(report_path.read_text(encoding="utf-8"))
    stratum = report["golden_sets"][0]["strata"][0]
    low, high = stratum["ci"]
    return (
        f"{stratum['stratum']} n={stratum['n']}, {stratum['metric']} {stratum['incumbent']:.4f} -> "
        f"{stratum['candidate']:.4f}, delta {stratum['delta']:+.4f} CI [{low:+.4f}, {high:+.4f}], "
        f"{stratum['wins']} wins / {stratum['losses']} losses: {stratum['verdict']}"
    )


# ------------------------------------------------------------------------------------------------------ (c)


def synthetic_data() -> tuple[
    list[str], dict[str, dict[str, int]], list[dict[str, list[str]]], list[np.ndarray]
]:
    """Query ids, graded qrels, both arms' top-100 ranked lists, and the 8 strata as row indices."""
    rng = np.random.default_rng(0)
    doc_ids = [f"doc-{i}" for i in range(SYNTH_CORPUS)]
    qids = [f"q{i}" for i in range(SYNTH_QUERIES)]
    qrels: dict[str, dict[str, int]] = {}
    runs: list[dict[str, list[str]]] = [{}, {}]
    for qid in qids:
        judged = rng.choice(SYNTH_CORPUS, size=int(rng.integers(5, 40)), replace=False)
        grades = rng.integers(0, 3, size=judged.size)
        grades[0] = max(int(grades[0]), 1)  # at least one relevant document per query
        qrels[qid] = {doc_ids[d]: int(g) for d, g in zip(judged.tolist(), grades.tolist(), strict=True)}
        for arm, hits in enumerate((0.5, 0.4)):  # the candidate finds a few fewer judged documents
            found = judged[rng.random(judged.size) < hits]
            others = rng.choice(SYNTH_CORPUS, size=SYNTH_DEPTH, replace=False)
            ranked = np.array(list(dict.fromkeys([*found.tolist(), *others.tolist()]))[:SYNTH_DEPTH])
            # Judged documents tend to rank high, not always first: a noisy score decides the order.
            scores = rng.normal(size=SYNTH_DEPTH) + np.isin(ranked, found)
            runs[arm][qid] = [doc_ids[d] for d in ranked[np.argsort(-scores, kind="stable")].tolist()]
    strata = [np.arange(SYNTH_QUERIES)]
    for sizes in SYNTH_FIELDS.values():
        labels = rng.permutation(np.repeat(np.arange(len(sizes)), list(sizes.values())))
        strata.extend(np.flatnonzero(labels == value) for value in range(len(sizes)))
    return qids, qrels, runs, strata


def statistics_run(
    qids: list[str],
    qrels: dict[str, dict[str, int]],
    runs: list[dict[str, list[str]]],
    strata: list[np.ndarray],
) -> tuple[float, float]:
    """Seconds for per-query metrics of both arms, and for the 24 paired comparisons."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoRelevantDocumentsWarning)
        incumbent, candidate = (evaluate(run, qrels, SYNTH_METRICS, qids) for run in runs)
    scored = time.perf_counter()
    for number, rows in enumerate(strata):
        for metric in SYNTH_METRICS:
            compare_paired(
                incumbent[metric][rows],
                candidate[metric][rows],
                n_resamples=SYNTH_RESAMPLES,
                rng=np.random.default_rng(stable_seed(0, f"stratum-{number}", metric)),
            )
    return scored - start, time.perf_counter() - scored


def bench_statistics(repeat: int) -> tuple[float, float, float, list[int]]:
    qids, qrels, runs, strata = synthetic_data()
    statistics_run(qids, qrels, runs, strata)  # warm-up: imports, first-touch allocations
    best = (float("inf"), 0.0, 0.0)
    for _ in range(repeat):
        metrics_s, bootstrap_s = statistics_run(qids, qrels, runs, strata)
        if metrics_s + bootstrap_s < best[0]:
            best = (metrics_s + bootstrap_s, metrics_s, bootstrap_s)
    return (*best, [int(rows.size) for rows in strata])


# ----------------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the nfcorpus-preprocessed folder")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of (a) and (b)")
    parser.add_argument("--repeat", type=int, default=3, help="best of, for (c)")
    args = parser.parse_args()

    data = args.data.expanduser().resolve()
    missing = [name for name in ("corpus.jsonl", "queries.jsonl") if not (data / name).is_file()]
    if not data.is_dir() or missing:
        what = "no such folder" if not data.is_dir() else "missing " + ", ".join(missing)
        sys.exit(f"bench_plugin: nfcorpus-preprocessed not found at {data} ({what}); pass --data DIR")

    print(f"load average at start: {load_text()}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    os.environ["HF_HUB_OFFLINE"] = "1"
    minilm = demo.minilm_path()
    started = time.perf_counter()
    static = demo.static_minilm_path(demo.default_static_cache(REPO))  # distilled now if missing or stale
    print(f"incumbent: {minilm}")
    print(f"candidate: {static} (ready in {time.perf_counter() - started:.1f} s, before any timing)")

    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as scratch:
        work = Path(scratch)
        golden_path = work / "nfcorpus.yaml"
        golden_path.write_text(GOLDEN_YAML.format(folder=json.dumps(str(data))), encoding="utf-8")
        golden = load_golden(golden_path)
        documents = [document.embed_text for document in golden.documents]
        queries = [query.text for query in golden.queries]
        print(
            f"golden set: {len(documents):,} documents ({len(set(documents)):,} distinct texts), "
            f"{len(queries):,} queries ({len(set(queries)):,} distinct); batch size {BATCH_SIZE}"
        )
        floor_script = work / "floor.py"
        floor_script.write_text(FLOOR_PROGRAM, encoding="utf-8")
        floor_command = [sys.executable, str(floor_script), str(golden_path), str(minilm), str(static)]
        floor_command.append(str(BATCH_SIZE))
        floor_env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))}

        def plugin_command(cache: Path, report: Path) -> list[str]:
            return [
                sys.executable,
                "-m",
                "pytest",
                "--embeval",
                str(golden_path),
                "-p",
                "no:cacheprovider",
                f"--embeval-incumbent={minilm}",
                f"--embeval-candidate={static}",
                f"--embeval-cache-dir={cache}",
                f"--embeval-json={report}",
            ]

        floors: list[Timing] = []
        firsts: list[Timing] = []
        reruns: list[Timing] = []
        for round_number in range(1, args.rounds + 1):
            floor = timed(floor_command, floor_env)
            if floor.returncode != 0:
                fail("the floor", floor)
            floors.append(floor)
            print(f"round {round_number}: floor              {floor.wall:7.1f} s wall {floor.cpu:7.1f} s cpu")

            cache = work / f"cache-{round_number}"  # fresh: nothing cached
            first_report, rerun_report = (
                work / f"first-{round_number}.json",
                work / f"rerun-{round_number}.json",
            )
            first = timed(plugin_command(cache, first_report), env)
            if first.returncode != 1:  # 1: the static model is WORSE, as expected
                fail("the plugin run", first)
            firsts.append(first)
            read, embedded = cache_counts(first.stdout)
            print(
                f"round {round_number}: plugin, first run  {first.wall:7.1f} s wall {first.cpu:7.1f} s cpu"
                f"   (cache: {read:,} read, {embedded:,} embedded)"
            )

            rerun = timed(plugin_command(cache, rerun_report), env)
            if rerun.returncode != 1:
                fail("the cached rerun", rerun)
            reruns.append(rerun)
            read, embedded = cache_counts(rerun.stdout)
            same = first_report.read_bytes() == rerun_report.read_bytes()
            print(
                f"round {round_number}: plugin, cached rerun {rerun.wall:6.1f} s wall {rerun.cpu:7.1f} s cpu"
                f"   (cache: {read:,} read, {embedded:,} embedded; JSON report identical: {same})"
            )
        print(f"verdict: {overall_verdict(first_report)}")

    print(f"load average after (a) and (b): {load_text()}")
    total, metrics_s, bootstrap_s, sizes = bench_statistics(args.repeat)
    print(
        f"(c) {SYNTH_QUERIES:,} queries x {len(SYNTH_METRICS)} metrics x {len(sizes)} strata "
        f"(sizes {', '.join(map(str, sizes))}), {SYNTH_RESAMPLES:,} resamples: {total * 1e3:.0f} ms "
        f"(metrics, both arms {metrics_s * 1e3:.0f} ms + {len(sizes) * len(SYNTH_METRICS)} paired "
        f"comparisons {bootstrap_s * 1e3:.0f} ms), best of {args.repeat}"
    )
    print(f"load average at end: {load_text()}")

    floor_best = min(t.wall for t in floors)
    first_best = min(t.wall for t in firsts)
    rerun_best = min(t.wall for t in reruns)
    first_ratio, rerun_ratio = first_best / floor_best, rerun_best / first_best
    cpu_ratio = min(t.cpu for t in firsts) / min(t.cpu for t in floors)
    print()
    print(f"summary (best of {args.rounds} rounds; 2-core machine, shared)")
    print("                                      wall s    cpu s    ratio   target   met")
    print(f"floor: load 2 models + encode          {floor_best:6.1f}   {min(t.cpu for t in floors):6.1f}")
    print(
        f"plugin, first run (empty cache)        {first_best:6.1f}   {min(t.cpu for t in firsts):6.1f}"
        f"    {first_ratio:5.2f}   <= {FIRST_TARGET:.2f}   {'yes' if first_ratio <= FIRST_TARGET else 'NO'}"
    )
    print(
        f"plugin, cached rerun                   {rerun_best:6.1f}   {min(t.cpu for t in reruns):6.1f}"
        f"    {rerun_ratio:5.3f}   <  {RERUN_TARGET:.2f}   {'yes' if rerun_ratio < RERUN_TARGET else 'NO'}"
    )
    print(f"metrics + bootstrap (c)                {total:6.2f}")
    print(f"(first run / floor in CPU time: {cpu_ratio:.2f}; rerun ratio is rerun / first run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
