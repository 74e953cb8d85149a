"""The family of a shortlist, simulated: every candidate equals the incumbent (a true null on every stratum of
every candidate), so any WORSE is a false one. Decided as one family (the default), the chance of any WORSE
among four candidates' three strata stays within 5 %; each candidate on its own, unadjusted, it does not.

The comparisons are real ones (`run_golden` on the tests' golden set) whose per-query scores are replaced by
draws: each query has a difficulty, and each arm's score is it plus independent noise, so the incumbent and
every candidate have the same distribution and the candidates share the incumbent's scores, as in a run.
The margin is 0, so that WORSE is the interval's decision alone.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import fake_models
import numpy as np
import pytest
from suite_helpers import golden_files

from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.run.pipeline import GoldenRun, run_golden
from pytest_embeval.run.shortlist import shortlist_families
from pytest_embeval.run.stratum_evaluation import evaluate_golden

CANDIDATES = 4
REPLICATES = 400


def any_worse_rate(root: Path, replicates: int, **settings: object) -> float:
    """The share of simulated shortlist runs with some WORSE stratum, under the golden file ``settings``."""
    golden = load_golden(golden_files(root, bootstrap=1000, tie_margin=0.0, **settings))
    base = run_golden(golden, fake_models.good, fake_models.good)
    rng = np.random.default_rng(20240601)
    queries = len(golden.queries)
    hits = 0
    for replicate in range(replicates):
        difficulty = rng.uniform(0.2, 0.8, queries)

        def scores(difficulty: np.ndarray = difficulty) -> dict[str, np.ndarray]:
            drawn = np.clip(difficulty + rng.normal(0.0, 0.25, queries), 0.0, 1.0)
            return {"hit@1": drawn, "mrr@10": drawn}

        incumbent = dataclasses.replace(base.incumbent, per_query=scores(), ties=None)
        runs: dict[str, tuple[GoldenRun, None]] = {
            f"c{k}": (
                dataclasses.replace(
                    base,
                    golden=dataclasses.replace(golden, seed=replicate),
                    incumbent=incumbent,
                    candidate=dataclasses.replace(base.candidate, per_query=scores(), ties=None),
                ),
                None,
            )
            for k in range(CANDIDATES)
        }
        families = shortlist_families(runs)
        outcomes = [
            outcome
            for name, (run, _) in runs.items()
            for outcome in evaluate_golden(run, families=None if families is None else families[name])
        ]
        hits += any(outcome.ruling.verdict is Verdict.WORSE for outcome in outcomes)
    return hits / replicates


@pytest.mark.slow
def test_one_family_keeps_the_chance_of_any_false_worse_within_five_percent(tmp_path: Path) -> None:
    # The default: one family of 4 x 3 comparisons, adjusted by holm (the file says none).
    joint = any_worse_rate(tmp_path / "joint", REPLICATES, multiple_comparisons="none")
    # 2.0 % of 400; at 5 % the chance of 8 or fewer in 400 is below 1e-3.
    assert joint <= 0.05
    # The same runs, each candidate its own family and unadjusted: the simulation sees the inflation.
    alone = any_worse_rate(
        tmp_path / "alone", REPLICATES // 2, multiple_comparisons="none", family="candidate"
    )
    assert alone > 0.10
