"""A stratum's Δ split into the model's part and the engine's part, for arms searched by a vector database.

Each such arm is also searched exactly on the same vectors (its exact twin, `pipeline.ArmResult.exact`). On
a stratum's queries, with E for exact search and X for the engine, per query:

    candidate_X - incumbent_X  =  (candidate_E - incumbent_E)  +  (candidate_X - candidate_E)
                                                                -  (incumbent_X - incumbent_E)

the stratum's Δ is the model's part (exact against exact: what the models differ by, whatever the engine)
plus the candidate's engine part less the incumbent's (engine against exact, per arm: what the engine costs
each model). The same identity holds for the means and for every bootstrap resample, because each part is
compared on the same queries with the same seed as the stratum's own comparison (`stratum_evaluation`:
the resamples draw the same queries). "The candidate loses 3 points on the engine and ties under exact
search" is the split saying the engine, not the model, is what moved.

Each arm's engine part also states its recall@k against its twin: the mean share of the exact top k
(k: the primary metric's cutoff) the engine returned, over the stratum's queries whose exact search found
any document. The model's part is decided by the verdict rule as the stratum is (guards included), to say
what the comparison would have been under exact search; the stratum's own verdict stays the engine's, the
system that ships.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from pytest_embeval.core.stats import PairedComparison
from pytest_embeval.core.verdict import StratumRuling, decide
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.run.pipeline import ArmResult, GoldenRun

__all__ = ["EnginePart", "IndexSplit", "index_split", "recall_against_exact"]

#: compare(metric name, incumbent scores, candidate scores) -> the paired comparison on a stratum's rows
Compare = Callable[[str, np.ndarray, np.ndarray], PairedComparison]


@dataclasses.dataclass(frozen=True, slots=True)
class EnginePart:
    """What the engine changed for one arm on a stratum's queries, against exact search of its vectors."""

    #: mean share of the exact top k the engine returned; NaN when no query's exact search found anything
    recall: float
    #: the primary metric, exact (as "incumbent") against the engine (as "candidate"): Δ < 0 is lost
    comparison: PairedComparison


@dataclasses.dataclass(frozen=True, slots=True)
class IndexSplit:
    """A stratum's Δ of the primary metric split into the model's part and each arm's engine part."""

    metric: str
    #: the cutoff recall against exact is measured at
    k: int
    #: every declared metric, candidate's exact twin against the incumbent's
    model: Mapping[str, PairedComparison]
    #: the verdict rule applied to ``model``: the comparison had both arms been searched exactly
    model_ruling: StratumRuling
    #: by role: what the engine changed for that arm
    engine: Mapping[str, EnginePart]


def recall_against_exact(engine: ArmResult, exact: ArmResult, rows: np.ndarray, k: int) -> float:
    """Mean over ``rows`` of the share of the exact top ``k`` documents the engine's top ``k`` holds (queries
    whose exact search found nothing left out; NaN if all are)."""
    shares = []
    for row in rows.tolist():
        wanted = exact.ranked[row][:k]
        if wanted:
            shares.append(len(set(engine.ranked[row][:k]).intersection(wanted)) / len(wanted))
    return float(np.mean(shares)) if shares else float("nan")


def index_split(run: GoldenRun, rows: np.ndarray, compare: Compare) -> IndexSplit | None:
    """The split of the stratum at ``rows`` (golden query order), each part compared by ``compare`` (the
    stratum's own comparison, so the parts share its resamples); None unless both arms have an exact
    twin."""
    incumbent, candidate = run.incumbent, run.candidate
    if incumbent.exact is None or candidate.exact is None:
        return None
    golden: GoldenSet = run.golden
    primary, k = str(golden.metric), golden.metric.k
    model = {
        str(m): compare(
            str(m), incumbent.exact.per_query[str(m)][rows], candidate.exact.per_query[str(m)][rows]
        )
        for m in golden.all_metrics()
    }
    ruling = decide(
        model[primary],
        tie_margin=golden.tie_margin,
        min_queries=golden.min_queries,
        guards={name: (model[name], margin) for name, margin in golden.guards.items()},
    )
    engine: dict[str, EnginePart] = {
        arm.role: EnginePart(
            recall=recall_against_exact(arm, arm.exact, rows, k),
            comparison=compare(primary, arm.exact.per_query[primary][rows], arm.per_query[primary][rows]),
        )
        for arm in (incumbent, candidate)
        if arm.exact is not None
    }
    return IndexSplit(metric=primary, k=k, model=model, model_ruling=ruling, engine=engine)
