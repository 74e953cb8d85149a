"""What four corpus slices cost against one corpus size: one embedding pass, and at most 1.2 x the floor.

    python benchmarks/bench_slices.py [--data DIR] [--models demo|static] [--index exact|hnsw] [--repeat 3]

On vaswani (``--data``; default ``shared/data/vaswani`` next to the repository: 11,429 abstracts, 93
queries; nfcorpus judges 92 % of its corpus, too many to slice), in process, with a fresh embedding each time
(no cache):

* single: ``run_golden`` + ``evaluate_stratum`` of every stratum, on the whole corpus;
* sliced: the same with ``corpus_sample: {sizes: [0.1, 0.25, 0.5, 1.0], seed: 7}``;
* the floor: single + the three smaller slices searched and scored on their own (``run_golden`` of the
  golden set restricted to each slice, fed the vectors the single run computed, so nothing is embedded).

Target: sliced / floor <= 1.2, in wall and in CPU time (the steadier figure on a shared machine), and the
sliced run encodes every document and query once per arm, as the single run does. ``--models demo``
compares all-MiniLM-L6-v2 with its static distillation (embedding dominates); ``--models static`` runs the
static model in both arms, so that searching and scoring weigh the most they can and the ratio shows what
slicing itself costs. ``--index hnsw`` declares ``{hnsw: {M: 16, ef_construction: 200, recall_target:
0.95}}``: every slice builds its own graph and searches it for the ef of the target. Each measurement is
the best of ``--repeat``, alternating single, sliced, floor.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_embeval.arms import demo  # noqa: E402
from pytest_embeval.arms.embedding import Arm, LazyEncoder, embed  # noqa: E402
from pytest_embeval.golden.loader import load_golden  # noqa: E402
from pytest_embeval.golden.schema import GoldenSet  # noqa: E402
from pytest_embeval.run.corpus_slices import corpus_slices, restrict  # noqa: E402
from pytest_embeval.run.pipeline import GoldenRun, run_golden  # noqa: E402
from pytest_embeval.run.stratum_evaluation import evaluate_stratum  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "vaswani"
TARGET = 1.2
INDEXES = {
    "exact": "exact",
    "hnsw": "{hnsw: {M: 16, ef_construction: 200, recall_target: 0.95}}",
}
GOLDEN_YAML = """\
name: vaswani
beir: {folder}
metric: ndcg@10
report: [recall@100]
tie_margin: 0.02
index: {index}
"""
SAMPLE = "corpus_sample: {sizes: [0.1, 0.25, 0.5, 1.0], seed: 7}\n"


def arms(models: str) -> tuple[Arm, Arm]:
    static = demo.static_minilm_arm(demo.default_static_cache(REPO))
    if models == "static":
        incumbent = dataclasses.replace(static, spec="static-incumbent")
    else:
        incumbent = demo.minilm_arm()
    for arm in (incumbent, static):
        if isinstance(arm.encoder, LazyEncoder):
            arm.encoder.get()  # loaded before anything is timed
    return incumbent, static


class Counting:
    """`encoders.embed`, counting the texts each arm encodes, and keeping the vectors for the floor."""

    def __init__(self) -> None:
        self.encoded: dict[tuple[str, str], int] = {}
        self.vectors: dict[tuple[str, str, str], np.ndarray] = {}

    def __call__(self, arm: Arm, texts: list[str], kind: str, **kwargs: Any) -> np.ndarray:
        key = (arm.spec, kind)
        self.encoded[key] = self.encoded.get(key, 0) + len(texts)
        vectors = embed(arm, texts, kind, **kwargs)  # type: ignore[arg-type]
        self.vectors.update(((arm.spec, kind, text), row) for text, row in zip(texts, vectors, strict=True))
        return vectors


def served(vectors: dict[tuple[str, str, str], np.ndarray]) -> Callable[..., np.ndarray]:
    """An embedder that serves vectors computed before, encoding nothing."""

    def embedder(arm: Arm, texts: list[str], kind: str, **kwargs: Any) -> np.ndarray:
        return np.stack([vectors[arm.spec, kind, text] for text in texts])

    return embedder


@dataclasses.dataclass(frozen=True)
class Seconds:
    wall: float
    cpu: float

    def __add__(self, other: Seconds) -> Seconds:
        return Seconds(self.wall + other.wall, self.cpu + other.cpu)


def timed(
    golden: GoldenSet, incumbent: Arm, candidate: Arm, embedder: Any
) -> tuple[Seconds, GoldenRun, list[str]]:
    wall, cpu = time.perf_counter(), time.process_time()
    run = run_golden(golden, incumbent, candidate, embedder=embedder)
    verdicts = [evaluate_stratum(run, stratum).ruling.verdict.value for stratum in golden.strata()]
    return Seconds(time.perf_counter() - wall, time.process_time() - cpu), run, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--models", choices=("demo", "static"), default="static")
    parser.add_argument("--index", choices=tuple(INDEXES), default="exact")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vaswani.yaml"
        path.write_text(
            GOLDEN_YAML.format(folder=args.data.resolve(), index=INDEXES[args.index]), encoding="utf-8"
        )
        single_golden = load_golden(path)
        path.write_text(path.read_text(encoding="utf-8") + SAMPLE, encoding="utf-8")
        sliced_golden = load_golden(path)
    incumbent, candidate = arms(args.models)
    drawn = corpus_slices(sliced_golden)
    print(
        f"golden set: {len(single_golden.documents):,} documents, {len(single_golden.queries):,} queries; "
        f"index {args.index}; incumbent {incumbent.spec}, candidate {candidate.spec}"
    )
    print("slices: " + ", ".join(f"{one.fraction:.0%} = {one.documents:,} documents" for one in drawn))
    best: dict[str, Seconds] = {}
    for round_number in range(1, args.repeat + 1):
        single_count, sliced_count = Counting(), Counting()
        single_s, single_run, single_verdicts = timed(single_golden, incumbent, candidate, single_count)
        sliced_s, sliced_run, sliced_verdicts = timed(sliced_golden, incumbent, candidate, sliced_count)
        searches = [
            timed(restrict(single_golden, one.rows), incumbent, candidate, served(single_count.vectors))[0]
            for one in drawn[:-1]
        ]
        measured = [("single", single_s), ("sliced", sliced_s)]
        measured += [(f"search {one.fraction:.0%}", s) for one, s in zip(drawn, searches, strict=False)]
        for name, seconds in measured:
            kept = best.get(name, Seconds(float("inf"), float("inf")))
            best[name] = Seconds(min(kept.wall, seconds.wall), min(kept.cpu, seconds.cpu))
        print(
            f"round {round_number}: single {single_s.wall:6.2f} s wall {single_s.cpu:6.2f} s cpu, sliced "
            f"{sliced_s.wall:6.2f} / {sliced_s.cpu:6.2f}, smaller slices searched "
            + ", ".join(f"{s.wall:.2f} / {s.cpu:.2f}" for s in searches)
        )
        assert sliced_verdicts == single_verdicts, (sliced_verdicts, single_verdicts)
        assert sliced_run.incumbent.ranked == single_run.incumbent.ranked
    print(f"texts encoded, single run: {dict(sorted(single_count.encoded.items()))}")
    print(f"texts encoded, sliced run: {dict(sorted(sliced_count.encoded.items()))}")
    one_pass = sliced_count.encoded == single_count.encoded
    searched = Seconds(0.0, 0.0)
    for one in drawn[:-1]:
        searched += best[f"search {one.fraction:.0%}"]
    floor = best["single"] + searched
    sliced = best["sliced"]
    for what in ("wall", "cpu"):
        single_s, searched_s, floor_s, sliced_s = (
            getattr(x, what) for x in (best["single"], searched, floor, sliced)
        )
        print(
            f"best of {args.repeat}, {what}: single {single_s:.2f} s + three smaller slices searched "
            f"{searched_s:.2f} s = floor {floor_s:.2f} s; sliced {sliced_s:.2f} s; sliced / floor = "
            f"{sliced_s / floor_s:.3f}"
        )
    print(
        f"one embedding pass: {'yes' if one_pass else 'NO'}; the largest slice's verdicts are the single "
        "run's: yes"
    )
    ratio = max(sliced.wall / floor.wall, sliced.cpu / floor.cpu)
    verdict = "OK" if ratio <= TARGET and one_pass else "MISSED"
    print(f"target: sliced / floor <= {TARGET} in wall and cpu time: {verdict}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
