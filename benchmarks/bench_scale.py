"""The plugin's own work at the practice's scale: a cached rerun of 200,000 chunks x 1,500 queries x 6 strata
against the work it cannot avoid (exact search and reading the files), and its peak memory.

    python benchmarks/bench_scale.py [--docs 200000] [--queries 1500] [--data DIR] [--repo DIR]
                                     [--rounds 2] [--profile] [--phases] [--compare REPORT]

1. The synthetic golden set is generated (deterministic, seeded) into ``--data`` (default: a folder under
   the system's temporary directory named by its parameters), outside the repository, or reused if a
   previous run left it there with the same manifest: ``--docs`` chunks of 60 words (half with a 4-word
   title) drawn from a Zipfian vocabulary of 50,000 words, ``--queries`` queries of 6-9 words taken mostly
   from their relevant chunk, each judged relevant to that chunk (grade 2) and to 0-2 others (grade 1),
   with two stratum fields, ``shape`` (3 values) and ``band`` (2 values): 6 strata with ``overall``.
2. Both arms are the cheap hashing encoder of ``benchmarks/hashing_encoder.py`` (512 and 256 dimensions),
   so encoding costs almost nothing. The plugin runs once to fill a fresh embedding cache (reported, not a
   target).
3. ``--rounds`` times, alternating: three *floors*, each a plain Python process that reads the corpus,
   queries and qrels files (``json.loads`` per line, the TSV split) and runs exact search for both arms over
   vectors of the same shapes (random, drawn before timing): a blocked matmul with ``argpartition`` of the
   top 100 per query, with float32 products (the target's floor, the issue's) and with float64 products
   rounded to float32 (the plugin's arithmetic before the float32 shortlist, shown for history), and the
   float32 blocked matmul alone, keeping nothing (``matmul``: no search can be faster; shown for
   reference, to say how much of the rerun is the hardware's product); then the *cached rerun*,
   ``python -m pytest --embeval golden.yaml`` on that cache, timed from process start to exit, with its
   peak resident memory.

Targets: cached rerun <= 1.25 x the float32 floor (wall and CPU time, best of the rounds), and its peak
memory <= 1.5 x the two arms' vectors (documents and queries, float32). The JSON report of every rerun must
equal the first run's apart from ``timings``. ``--repo`` measures another checkout's package with the same
data and encoder (``git archive COMMIT | tar -x -C DIR`` for a "before" figure); its cache is its own, and
its first run's report is kept in the data folder (``report-HASH.json``), so that ``--compare`` that file
checks a later checkout's reports against it (equal apart from ``timings``). ``--profile`` adds one rerun
under cProfile and prints where its time went; ``--phases`` one more timed in process, each call of the
`PHASES` a row with its wall, CPU and system time and its page faults (no profiler's overhead).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pytest_embeval.reports.json_report import without_timings

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SEED = 20_260_101
VOCABULARY = 50_000
CHUNK_WORDS = 60
TITLE_WORDS = 4
DIMENSIONS = (512, 256)
DEPTH = 100
WALL_TARGET = 1.25
#: The floor the target is measured against: float32 products (float64 is reported beside it, for history).
TARGET_FLOOR = "float32"
MEMORY_TARGET = 1.5
SHAPES = {"keyword": 0.5, "question": 0.3, "phrase": 0.2}
BANDS = {"head": 0.6, "tail": 0.4}
QUESTION_WORDS = ("how", "what", "why", "when", "which", "where")

GOLDEN_YAML = """\
name: scale
corpus: corpus.jsonl
queries: queries.jsonl
qrels: qrels.tsv
strata: [shape, band]
metric: recall@10
report: [ndcg@10]
tie_margin: 0.02
bootstrap: 10000
seed: 0
index: exact
"""

# The floor, as its own process (so its memory is measured alike). argv: data folder, docs, queries, depth,
# and the dtype the products are computed in (float64, rounded to float32, or float32), or "matmul": float32
# products and no top k kept, the hardware's matrix product alone (below any search, shown for reference).
FLOOR_PROGRAM = """\
import json, sys, time
import numpy as np
data, n_docs, n_queries, depth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
select = sys.argv[5] != "matmul"
dtype = np.dtype("float32" if sys.argv[5] == "matmul" else sys.argv[5])
rng = np.random.default_rng(0)
shapes = [(np.ascontiguousarray(rng.standard_normal((n_docs, d), dtype=np.float32)),
           np.ascontiguousarray(rng.standard_normal((n_queries, d), dtype=np.float32))) for d in (512, 256)]
cpu, wall = time.process_time(), time.perf_counter()
documents = []
with open(f"{data}/corpus.jsonl", encoding="utf-8") as handle:
    for line in handle:
        record = json.loads(line)
        title = record.get("title") or ""
        documents.append((record["_id"], f"{title}\\n{record['text']}" if title else record["text"]))
with open(f"{data}/queries.jsonl", encoding="utf-8") as handle:
    queries = [json.loads(line) for line in handle]
qrels = {}
with open(f"{data}/qrels.tsv", encoding="utf-8") as handle:
    next(handle)
    for line in handle:
        qid, did, grade = line.rstrip("\\n").split("\\t")
        qrels.setdefault(qid, {})[did] = int(grade)
read = time.perf_counter() - wall, time.process_time() - cpu
searched = []
for docs, qs in shapes:
    cpu, wall = time.process_time(), time.perf_counter()
    for q_start in range(0, n_queries, 256):
        q = qs[q_start : q_start + 256].astype(dtype, copy=False)
        best_scores, best_rows = None, None
        for d_start in range(0, n_docs, 8192):
            block = docs[d_start : d_start + 8192].astype(dtype, copy=False)
            scores = (q @ block.T).astype(np.float32, copy=False)
            if not select:
                continue
            rows = np.arange(d_start, d_start + scores.shape[1])[None, :].repeat(scores.shape[0], 0)
            if best_scores is not None:
                scores = np.concatenate([best_scores, scores], axis=1)
                rows = np.concatenate([best_rows, rows], axis=1)
            keep = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
            best_scores = np.take_along_axis(scores, keep, axis=1)
            best_rows = np.take_along_axis(rows, keep, axis=1)
        if select:
            order = np.argsort(-best_scores, axis=1, kind="stable")
            np.take_along_axis(best_rows, order, axis=1)
    searched.append((time.perf_counter() - wall, time.process_time() - cpu))
print(json.dumps({"read": read, "search": searched, "documents": len(documents), "queries": len(queries)}))
"""


#: The functions ``--phases`` times in a rerun (module, attribute), each call a row: where a rerun's time goes
#: without a profiler's overhead, with the system time and page faults of each.
PHASES = (
    ("pytest_embeval.plugin.items", "load_golden"),
    ("pytest_embeval.run.pipeline", "prepare"),
    ("pytest_embeval.cache.store", "EmbeddingCache.embed"),
    ("pytest_embeval.arms.dense", "exact_search"),
    ("pytest_embeval.run.pipeline", "score_arm"),
    ("pytest_embeval.plugin.items", "golden_record"),
    ("pytest_embeval.plugin.items", "evaluate_golden"),
    ("pytest_embeval.plugin.session", "write_outputs"),
)

# A rerun with the PHASES wrapped. argv: the JSON file for the rows, the PHASES as JSON, then pytest's
# arguments. A row: name, start (s since the program began), wall, cpu, system time, minor page faults.
PHASES_PROGRAM = """\
import functools, importlib, json, resource, sys, time
def usage():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), time.process_time(), own.ru_stime, own.ru_minflt
start = usage()
rows = []
def timed(module, name):
    owner = importlib.import_module(module)
    *path, last = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    function = getattr(owner, last)
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        before = usage()
        try:
            return function(*args, **kwargs)
        finally:
            rows.append([name, before[0] - start[0], *(a - b for a, b in zip(usage(), before))])
    setattr(owner, last, wrapper)
import pytest
for module, name in json.loads(sys.argv[2]):
    timed(module, name)
code = pytest.main(sys.argv[3:])
rows.append(["(pytest, start to return)", 0.0, *(a - b for a, b in zip(usage(), start))])
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    json.dump(rows, handle)
sys.exit(int(code))
"""


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float  # user + system of the child
    system: float  # the system part of cpu: on a virtual machine mostly the first touch of fresh pages
    faults: int  # minor page faults: 4 KiB pages touched for the first time (or remapped)
    peak: int  # bytes, the child's maximum resident set
    returncode: int
    stdout: str
    stderr: str


def run(command: list[str], env: dict[str, str], cwd: Path) -> Run:
    """Wall time from start to exit, and the CPU time, page faults and peak memory of this child alone
    (wait4)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(
            wall=wall,
            cpu=usage.ru_utime + usage.ru_stime,
            system=usage.ru_stime,
            faults=usage.ru_minflt,
            peak=usage.ru_maxrss * 1024,
            returncode=child.returncode,
            stdout=out.read(),
            stderr=err.read(),
        )


def _paging(result: Run) -> str:
    """The system time and page faults of a run: the floors draw their vectors before their clock starts, a
    rerun reads its into fresh memory, whose first touch is most of its system time on a virtual machine."""
    return f"sys {result.system:4.1f} s {result.faults / 1000:5.0f}k faults"


def fail(what: str, result: Run) -> None:
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
    sys.exit(f"{what} exited {result.returncode}:\n{tail}")


def load_text() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


# ------------------------------------------------------------------------------------------------- the set


def generate(folder: Path, n_docs: int, n_queries: int) -> dict[str, Any]:
    """Write the synthetic golden set into ``folder``; the manifest holds its parameters and file digests."""
    rng = np.random.default_rng(SEED)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(3, 11, size=VOCABULARY)
    vocabulary = list(dict.fromkeys("".join(rng.choice(letters, size=n)) for n in lengths.tolist()))
    weights = 1.0 / (np.arange(len(vocabulary)) + 2.7)
    weights /= weights.sum()
    words = rng.choice(len(vocabulary), size=(n_docs, CHUNK_WORDS + TITLE_WORDS), p=weights)
    titled = rng.random(n_docs) < 0.5
    folder.mkdir(parents=True, exist_ok=True)
    doc_ids = [f"c{i:07d}" for i in range(n_docs)]
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for i, row in enumerate(words.tolist()):
            record = {"_id": doc_ids[i], "text": " ".join(vocabulary[w] for w in row[:CHUNK_WORDS])}
            if titled[i]:
                record["title"] = " ".join(vocabulary[w] for w in row[CHUNK_WORDS:])
            handle.write(json.dumps(record) + "\n")
    relevant = rng.choice(n_docs, size=n_queries, replace=False)
    shapes = rng.choice(list(SHAPES), size=n_queries, p=list(SHAPES.values()))
    bands = rng.choice(list(BANDS), size=n_queries, p=list(BANDS.values()))
    with (
        open(folder / "queries.jsonl", "w", encoding="utf-8") as queries,
        open(folder / "qrels.tsv", "w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for i, doc in enumerate(relevant.tolist()):
            taken = rng.choice(CHUNK_WORDS, size=int(rng.integers(4, 7)), replace=False)
            picked = [vocabulary[words[doc, j]] for j in taken.tolist()]
            noise = rng.choice(len(vocabulary), size=int(rng.integers(1, 4)), p=weights)
            picked += [vocabulary[w] for w in noise.tolist()]
            if shapes[i] == "question":
                picked.insert(0, QUESTION_WORDS[i % len(QUESTION_WORDS)])
            query_id = f"q{i:05d}"
            record = {"_id": query_id, "text": " ".join(picked), "shape": shapes[i], "band": bands[i]}
            queries.write(json.dumps(record) + "\n")
            qrels.write(f"{query_id}\t{doc_ids[doc]}\t2\n")
            for other in rng.choice(n_docs, size=int(rng.integers(0, 3)), replace=False).tolist():
                if other != doc:
                    qrels.write(f"{query_id}\t{doc_ids[other]}\t1\n")
    (folder / "golden.yaml").write_text(GOLDEN_YAML, encoding="utf-8")
    return manifest(folder, n_docs, n_queries)


def manifest(folder: Path, n_docs: int, n_queries: int) -> dict[str, Any]:
    files = {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
        for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv", "golden.yaml")
        if (folder / name).exists()
    }
    return {
        "seed": SEED,
        "docs": n_docs,
        "queries": n_queries,
        "generator": generator_digest(),
        "files": files,
    }


def generator_digest() -> str:
    """The generator's own source, so that a changed generator is not served an old set."""
    source = Path(__file__).read_text(encoding="utf-8")
    start, end = source.index("def generate("), source.index("def manifest(")
    return hashlib.sha256(source[start:end].encode("utf-8")).hexdigest()[:16]


def ensure_set(folder: Path, n_docs: int, n_queries: int) -> str:
    path = folder / "manifest.json"
    if path.exists():
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if recorded == manifest(folder, n_docs, n_queries):
            return "reused"
    start = time.perf_counter()
    recorded = generate(folder, n_docs, n_queries)
    path.write_text(json.dumps(recorded, indent=1), encoding="utf-8")
    return f"generated in {time.perf_counter() - start:.1f} s"


# ------------------------------------------------------------------------------------------------ the runs


def plugin_command(data: Path, cache: Path, report: Path, runner: Sequence[str] = ()) -> list[str]:
    """The cached rerun's command; ``runner``: what runs pytest and its arguments (``python -m pytest``)."""
    return [
        *(runner or [sys.executable, "-m", "pytest"]),
        "--embeval",
        str(data / "golden.yaml"),
        "-p",
        "no:cacheprovider",
        "-q",
        f"--rootdir={data}",
        "-c",
        os.devnull,
        "--embeval-incumbent=hashing_encoder:incumbent",
        "--embeval-candidate=hashing_encoder:candidate",
        f"--embeval-cache-dir={cache}",
        f"--embeval-json={report}",
    ]


def profile_lines(path: Path, limit: int) -> list[str]:
    stats = pstats.Stats(str(path))
    rows = []
    for (filename, line, function), (_, calls, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "pytest_embeval" in filename or ("numpy" in filename and function in ("stack", "unique")):
            where = filename[filename.find("pytest_embeval") :] if "pytest_embeval" in filename else filename
            rows.append((cumulative, calls, f"{where}:{line}({function})"))
    rows.sort(reverse=True)
    return [f"{cumulative:8.2f} s {calls:9d} calls  {name}" for cumulative, calls, name in rows[:limit]]


def phase_lines(rows: list[list[Any]]) -> list[str]:
    """The ``--phases`` rows in the order they started (the whole run last)."""
    ordered = sorted(rows[:-1], key=lambda row: row[1]) + rows[-1:]
    return [
        f"{start:6.2f}s {wall:6.2f}s {cpu:6.2f}s {system:6.2f}s {faults / 1000:7.0f}k  {name}"
        for name, start, wall, cpu, system, faults in ordered
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1_500)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose package is measured")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--phases", action="store_true", help="time the plugin's phases in one more rerun")
    parser.add_argument(
        "--compare", type=Path, default=None, help="a JSON report (another checkout's) each rerun must equal"
    )
    args = parser.parse_args()
    data = args.data or Path(tempfile.gettempdir()) / f"embeval-scale-{args.docs}x{args.queries}"
    repo = args.repo.resolve()
    if data.resolve().is_relative_to(REPO) or data.resolve().is_relative_to(repo):
        sys.exit("--data must be outside the repository")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(HERE)]), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    # Measured with Python's bytecode caches, as a user's runs are (the first run writes them), as in
    # bench_startup.py: this machine's environment sets PYTHONDONTWRITEBYTECODE, under which every rerun
    # would compile every module the plugin imports, a cost the floor's few imports do not share.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"load average at start: {load_text()} (1, 5, 15 min)")
    print(f"package: {repo}")
    print(f"golden set: {data} ({ensure_set(data, args.docs, args.queries)})")
    vector_bytes = 4 * (args.docs + args.queries) * sum(DIMENSIONS)

    work = Path(tempfile.mkdtemp(prefix="embeval-scale-run-"))
    cache = data / f"cache-{hashlib.sha256(str(repo).encode()).hexdigest()[:8]}"
    first_report = work / "first.json"
    first = run(plugin_command(data, cache, first_report), env, data)
    if first.returncode not in (0, 1):
        fail("the first plugin run", first)
    print(
        f"first run (fills the cache if empty): {first.wall:.1f} s wall, {first.cpu:.1f} s cpu, "
        f"exit {first.returncode}"
    )
    expected = without_timings(json.loads(first_report.read_text(encoding="utf-8")))
    shutil.copy(first_report, data / f"report-{hashlib.sha256(str(repo).encode()).hexdigest()[:8]}.json")
    compared = None if args.compare is None else without_timings(json.loads(args.compare.read_text("utf-8")))
    if compared is not None:
        print(f"first run's report as --compare's apart from timings: {expected == compared}")

    floors: dict[str, list[tuple[Run, dict[str, Any]]]] = {"float32": [], "float64": [], "matmul": []}
    reruns: list[Run] = []
    for number in range(1, args.rounds + 1):
        for dtype, measured in floors.items():
            floor_command = [sys.executable, "-c", FLOOR_PROGRAM, str(data), str(args.docs)]
            floor = run([*floor_command, str(args.queries), str(DEPTH), dtype], env, data)
            if floor.returncode != 0:
                fail(f"the {dtype} floor", floor)
            parts = json.loads(floor.stdout)
            measured.append((floor, parts))
            search = " + ".join(f"{wall:.1f}" for wall, _ in parts["search"])
            print(
                f"round {number}: {dtype} floor  {floor.wall:6.1f} s wall {floor.cpu:6.1f} s cpu "
                f"{floor.peak / 2**20:7.0f} MiB  {_paging(floor)}  "
                f"(read {parts['read'][0]:.1f} s, search {search} s)"
            )
        report = work / f"rerun-{number}.json"
        rerun = run(plugin_command(data, cache, report), env, data)
        if rerun.returncode not in (0, 1):
            fail("the cached rerun", rerun)
        reruns.append(rerun)
        same = without_timings(json.loads(report.read_text(encoding="utf-8"))) == expected
        print(
            f"round {number}: cached rerun   {rerun.wall:6.1f} s wall {rerun.cpu:6.1f} s cpu "
            f"{rerun.peak / 2**20:7.0f} MiB  {_paging(rerun)}  (report as the first run's: {same})"
        )
        if compared is not None:
            equal = without_timings(json.loads(report.read_text(encoding="utf-8"))) == compared
            print(f"round {number}: report as --compare's apart from timings: {equal}")
    print(f"load average at end: {load_text()} (1, 5, 15 min)")

    rerun_wall = min(rerun.wall for rerun in reruns)
    rerun_cpu = min(rerun.cpu for rerun in reruns)
    peak = min(rerun.peak for rerun in reruns)
    print()
    print(f"summary: {args.docs:,} chunks x {args.queries:,} queries, best of {args.rounds} rounds")
    print(f"{'cached rerun, start to exit':58s}{rerun_wall:7.1f} s wall {rerun_cpu:7.1f} s cpu")
    for dtype, measured in floors.items():
        # The floor's own work, without its start-up and the drawing of random vectors.
        work_wall = min(parts["read"][0] + sum(wall for wall, _ in parts["search"]) for _, parts in measured)
        work_cpu = min(parts["read"][1] + sum(cpu for _, cpu in parts["search"]) for _, parts in measured)
        floor_wall = min(floor.wall for floor, _ in measured)
        floor_cpu = min(floor.cpu for floor, _ in measured)
        what = "read + float32 matmul alone" if dtype == "matmul" else "read + exact search"
        print(f"{f'{dtype} floor, {what} (timed inside)':58s}{work_wall:7.1f} s wall {work_cpu:7.1f} s cpu")
        print(f"{f'{dtype} floor process, start to exit':58s}{floor_wall:7.1f} s wall {floor_cpu:7.1f} s cpu")
        wall_ratio, cpu_ratio = rerun_wall / work_wall, rerun_cpu / work_cpu
        verdict = ""
        if dtype == TARGET_FLOOR:
            met = max(wall_ratio, cpu_ratio) <= WALL_TARGET
            verdict = f"; target <= {WALL_TARGET}: {'met' if met else 'missed'}"
        print(f"rerun / {dtype} ({what}): {wall_ratio:.2f} wall, {cpu_ratio:.2f} cpu{verdict}")
    memory_ratio = peak / vector_bytes
    print(
        f"peak memory {peak / 2**20:.0f} MiB = {memory_ratio:.2f} x the two arms' vectors "
        f"({vector_bytes / 2**20:.0f} MiB); target <= {MEMORY_TARGET}: "
        f"{'met' if memory_ratio <= MEMORY_TARGET else 'missed'}"
    )
    if args.profile:
        profile = work / "rerun.prof"
        runner = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "pytest"]
        profiled = run(plugin_command(data, cache, work / "profiled.json", runner), env, data)
        if profiled.returncode not in (0, 1):
            fail("the profiled rerun", profiled)
        print(f"\nprofiled rerun: {profiled.wall:.1f} s wall under cProfile; cumulative time per function:")
        for line in profile_lines(profile, 40):
            print(line)
    if args.phases:
        rows_path = work / "phases.json"
        runner = [sys.executable, "-c", PHASES_PROGRAM, str(rows_path), json.dumps(PHASES)]
        timed = run(plugin_command(data, cache, work / "phases-report.json", runner), env, data)
        if timed.returncode not in (0, 1):
            fail("the rerun with its phases timed", timed)
        print(f"\nphases of one rerun ({timed.wall:.1f} s wall, start to exit), timed in process:")
        print(f"{'start':>7s} {'wall':>7s} {'cpu':>7s} {'sys':>7s} {'faults':>8s}")
        for line in phase_lines(json.loads(rows_path.read_text(encoding="utf-8"))):
            print(line)


if __name__ == "__main__":
    main()
