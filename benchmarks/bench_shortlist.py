"""A shortlist of four candidates in one run against four one-candidate runs, and against its floor.

    python benchmarks/bench_shortlist.py [--data DIR] [--ms-per-text 1.0] [--rounds 2]

The collection is nfcorpus-preprocessed (``--data``; default ``shared/data/nfcorpus-preprocessed`` next to the
repository: 3,395 documents, 323 queries), the models hashing encoders (`hashing_encoder`) of 512 dimensions
(the incumbent) and 384, 256, 128 and 64 (the candidates), each made to cost ``--ms-per-text`` milliseconds
of wall-clock time per text it encodes (a sleep per call, so that encoding weighs what it weighs with a real
model, and a busy machine slows it no more than it slows anything else). Every encoder call is counted, in
any process.

Each is measured twice: its wall time, and its cost, the CPU time it used plus the time its encoders spent
(``--ms-per-text`` times the texts they were counted to encode), which is what a busy machine does not change:
on the shared two-core reference machine wall time is mostly waiting for a core.

(a) the shortlist: ``pytest --embeval`` with the four candidates, on a fresh embedding cache;
(b) four one-candidate runs, each on a fresh cache (four CI jobs): every run encodes the incumbent again;
(c) the floor of (a): what any run of these five models must do. A pytest process that collects the golden
    set (``--collect-only``: start-up and reading the collection), plus, in process, each model's encoding
    of the texts a run embeds (once each) and the rest of the run on those vectors: every arm searched and
    scored, the four comparisons decided as one family (`shortlist.shortlist_families`, then each
    candidate's strata).

Target: (a) / (c) <= 1.15 in cost, with each model encoded exactly once in (a); (a) against (b) is what a
team saves.
Runs alternate (a), (b) and (c) ``--rounds`` times; the best of each is reported, with the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from hashing_encoder import HashingEncoder  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "nfcorpus-preprocessed"
TARGET = 1.15
#: Where each encoder call is counted (model, kind, texts), and what a text costs, for the child processes.
LOG_ENV = "BENCH_SHORTLIST_LOG"
COST_ENV = "BENCH_SHORTLIST_MS_PER_TEXT"
INCUMBENT = 512
CANDIDATES = (384, 256, 128, 64)

GOLDEN_YAML = """\
name: nfcorpus
beir: {folder}
metric: ndcg@10
report: [recall@100]
tie_margin: 0.01
"""


class CostlyEncoder(HashingEncoder):
    """A hashing encoder whose calls take ``$BENCH_SHORTLIST_MS_PER_TEXT`` ms per text, each counted in
    ``$BENCH_SHORTLIST_LOG``."""

    def _encode(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = super()._encode(texts)
        cost = float(os.environ.get(COST_ENV, "0")) * len(texts) / 1000
        time.sleep(max(0.0, cost - (time.perf_counter() - started)))
        log = os.environ.get(LOG_ENV)
        if log:
            with open(log, "a", encoding="utf-8") as out:  # one append per call: whole lines
                out.write(f"{self.name}\t{len(texts)}\n")
        return vectors


def model(dimensions: int) -> CostlyEncoder:
    return CostlyEncoder(dimensions, f"salt-{dimensions}")


def incumbent() -> CostlyEncoder:
    return model(INCUMBENT)


def candidate_384() -> CostlyEncoder:
    return model(384)


def candidate_256() -> CostlyEncoder:
    return model(256)


def candidate_128() -> CostlyEncoder:
    return model(128)


def candidate_64() -> CostlyEncoder:
    return model(64)


def candidate_args(dimensions: tuple[int, ...]) -> list[str]:
    return [f"--embeval-candidate=h{d}=bench_shortlist:candidate_{d}" for d in dimensions]


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def pytest_run(
    folder: Path, golden: Path, candidates: tuple[int, ...], log: Path, extra: tuple[str, ...] = ()
) -> tuple[float, float, str]:
    """One ``pytest --embeval`` process on a fresh cache: its wall time, its CPU time and its output."""
    cache = Path(tempfile.mkdtemp(dir=folder, prefix="cache-"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE)]),
        LOG_ENV: str(log),
    }
    command = [
        sys.executable, "-m", "pytest", "--embeval", str(golden), "-p", "no:cacheprovider", "-q",
        "--embeval-no-progress", f"--embeval-cache-dir={cache}",
        "--embeval-incumbent=bench_shortlist:incumbent", *candidate_args(candidates), *extra,
    ]  # fmt: skip
    started, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return wall, cpu, done.stdout


def counted(log: Path) -> Counter[str]:
    """Texts encoded per model since the log was last read (and emptied)."""
    counts: Counter[str] = Counter()
    if log.exists():
        for line in log.read_text(encoding="utf-8").splitlines():
            name, texts = line.split("\t")
            counts[name] += int(texts)
        log.unlink()
    return counts


def floor(golden_path: Path) -> tuple[float, float, float, float, int]:
    """In process: each model's encoding of the texts a run embeds, and the rest of the run on those
    vectors (search, scoring, the shortlist's family and each candidate's strata); their wall and CPU
    times (encoding, rest, encoding's CPU, rest's CPU) and the texts encoded."""
    from pytest_embeval.arms.embedding import embed
    from pytest_embeval.arms.model_specs import resolve_model
    from pytest_embeval.golden.loader import load_golden
    from pytest_embeval.run.pipeline import arm_inputs, embedded_texts, pair_arms, run_arm_on
    from pytest_embeval.run.shortlist import shortlist_families
    from pytest_embeval.run.stratum_evaluation import evaluate_golden

    golden = load_golden(golden_path)
    texts = embedded_texts(golden)
    arms = {"incumbent": resolve_model(incumbent())}
    arms.update({f"h{d}": resolve_model(model(d)) for d in CANDIDATES})
    vectors: dict[tuple[str, str], np.ndarray] = {}
    encoded = 0
    started, cpu = time.perf_counter(), time.process_time()
    for arm in arms.values():
        for kind, chunk in texts.items():
            # Each distinct text once, as the embedding cache has the plugin do.
            unique = list(dict.fromkeys(chunk))
            row = {text: i for i, text in enumerate(unique)}
            vectors[(arm.digest, kind)] = embed(arm, unique, kind)[[row[text] for text in chunk]]
            encoded += len(unique)
    encoding, encoding_cpu = time.perf_counter() - started, time.process_time() - cpu

    def embedded(arm, chunk, kind, **_):  # type: ignore[no-untyped-def]
        return vectors[(arm.digest, kind)]

    started, cpu = time.perf_counter(), time.process_time()
    inputs = arm_inputs(golden, embedder=embedded)
    results = {
        name: run_arm_on(inputs, arm, "incumbent" if name == "incumbent" else "candidate")
        for name, arm in arms.items()
    }
    pairs = {
        name: pair_arms(inputs, results["incumbent"], result)
        for name, result in results.items()
        if name != "incumbent"
    }
    families = shortlist_families({name: (run, None) for name, run in pairs.items()})
    assert families is not None
    for name, run in pairs.items():
        evaluate_golden(run, families=families[name])
    return encoding, time.perf_counter() - started, encoding_cpu, time.process_time() - cpu, encoded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--ms-per-text", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        raise SystemExit(f"no collection at {args.data} (give --data)")
    os.environ[COST_ENV] = str(args.ms_per_text)
    load_before = os.getloadavg()[0]
    ms = args.ms_per_text / 1000
    best: dict[str, tuple[float, float]] = {}  # what -> (wall, cost), the best of the rounds

    def keep(what: str, wall: float, cost: float) -> None:
        known = best.get(what, (wall, cost))
        best[what] = (min(known[0], wall), min(known[1], cost))

    calls: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-shortlist-") as scratch:
        folder = Path(scratch)
        golden = folder / "nfcorpus.yaml"
        golden.write_text(GOLDEN_YAML.format(folder=args.data.resolve()), encoding="utf-8")
        log = folder / "encoded.log"
        for _ in range(args.rounds):
            wall, cpu, output = pytest_run(
                folder, golden, CANDIDATES, log, ("--embeval-json=shortlist.json",)
            )
            calls["shortlist"] = counted(log)
            keep("shortlist", wall, cpu + ms * sum(calls["shortlist"].values()))
            wall = cpu = 0.0
            for dimensions in CANDIDATES:
                one = pytest_run(folder, golden, (dimensions,), log)
                wall, cpu = wall + one[0], cpu + one[1]
            calls["four runs"] = counted(log)
            keep("four runs", wall, cpu + ms * sum(calls["four runs"].values()))
            wall, cpu, _ = pytest_run(folder, golden, CANDIDATES, log, ("--collect-only",))
            keep("collect", wall, cpu)
            encoding, rest, encoding_cpu, rest_cpu, encoded = floor(golden)
            keep("encoding", encoding, encoding_cpu + ms * encoded)
            keep("rest", rest, rest_cpu)
        shortlisted = re.search(r"cheapest passing candidate: .*|no candidate passes.*", output)
    parts = ("collect", "encoding", "rest")
    floor_total = tuple(sum(best[part][i] for part in parts) for i in (0, 1))
    texts = sum(calls["shortlist"].values()) // (1 + len(CANDIDATES))
    print(
        f"nfcorpus ({texts:,} texts per model), incumbent {INCUMBENT} dims, candidates {CANDIDATES}, "
        f"{args.ms_per_text:g} ms per text encoded; best of {args.rounds}"
    )
    print(f"{'':44}{'wall s':>9}{'cost s':>9}   (cost: CPU + encoder time)")
    rows = [
        ("(a) shortlist, one run", best["shortlist"]),
        ("(b) four one-candidate runs", best["four runs"]),
        ("(c) floor", floor_total),
        ("    collecting (a pytest process)", best["collect"]),
        ("    encoding, each model once", best["encoding"]),
        ("    search, scoring, family and strata", best["rest"]),
    ]
    for label, (wall, cost) in rows:
        print(f"{label:44}{wall:9.2f}{cost:9.2f}")
    print("texts encoded per model:")
    for run in ("shortlist", "four runs"):
        print(f"  {run:<12}" + ", ".join(f"{name} {count:,}" for name, count in sorted(calls[run].items())))
    once = len(calls["shortlist"]) == 1 + len(CANDIDATES) and set(calls["shortlist"].values()) == {texts}
    saved = best["shortlist"][1] / best["four runs"][1]
    ratio = best["shortlist"][1] / floor_total[1]
    print(
        f"cost (a) / (b) = {saved:.2f}; (a) / (c) = {ratio:.2f} "
        f"({'meets' if ratio <= TARGET else 'misses'} the {TARGET} target); wall (a) / (b) = "
        f"{best['shortlist'][0] / best['four runs'][0]:.2f}, "
        f"(a) / (c) = {best['shortlist'][0] / floor_total[0]:.2f}; "
        f"each model encoded once in (a): {'yes' if once else 'NO'}"
    )
    if shortlisted is not None:
        print(f"the shortlist's line: {shortlisted.group(0)}")
    after = os.getloadavg()[0]
    print(f"load average before and after: {load_before:.2f} and {after:.2f} ({os.cpu_count()} cores)")
    return 0 if ratio <= TARGET and once else 1


if __name__ == "__main__":
    raise SystemExit(main())
