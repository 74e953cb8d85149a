"""A stratum item's record (`stratum_record`): its comparison of the primary metric (`comparison_record`)
and of every other, its verdict and ruling, the queries that moved most, the index's part of Δ, the
unweighted comparison beside a weighted one, the reranker's, the family of strata it was decided in, ties
across the cutoff and the corpus slices. A worker makes one per stratum item; `json_report.build_report`
merges them with the golden sets' records.
"""

from __future__ import annotations

from pytest_embeval.arms.rerank import RerankOutcome
from pytest_embeval.core.stats import PairedComparison
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.arm_records import Record, number
from pytest_embeval.run.corpus_slices import GAP_STILL_MOVING
from pytest_embeval.run.index_split import IndexSplit
from pytest_embeval.run.stratum_evaluation import Family, Mover, StratumOutcome

__all__ = ["comparison_record", "stratum_record"]


def comparison_record(comparison: PairedComparison) -> Record:
    """One comparison's numbers; a weighted one's (``weights``) are the weighted means, Δ, interval, sd and
    MDE, with Kish's effective number of queries under ``kish_n`` (absent for an unweighted one), and under
    ``design`` the cells of the draw whose variance they use (absent without a design)."""
    weighted: Record = {} if comparison.kish_n is None else {"kish_n": comparison.kish_n}
    if comparison.design is not None:
        weighted["design"] = comparison.design.record()
    return {
        "n": comparison.n,
        "effective_n": comparison.effective_n,
        "excluded": comparison.excluded,
        "incumbent": number(comparison.incumbent_mean),
        "candidate": number(comparison.candidate_mean),
        "delta": number(comparison.delta),
        "ci": [number(comparison.ci_low), number(comparison.ci_high)],
        "interval": comparison.interval,
        "ci_confidence": comparison.confidence,
        "p_value": number(comparison.p_value),
        "sd": number(comparison.sd),
        "wins": comparison.wins,
        "losses": comparison.losses,
        "sign_p": number(comparison.sign_p),
        "mde": number(comparison.mde),
        "note": comparison.note,
        **weighted,
    }


def _mover_record(mover: Mover) -> Record:
    return {
        "id": mover.query_id,
        "text": mover.text,
        "incumbent": mover.incumbent,
        "candidate": mover.candidate,
    }


def stratum_record(golden: GoldenSet, path: str, order: int, outcome: StratumOutcome) -> Record:
    """The record of one stratum item: the DESIGN.md per-stratum fields plus what the failure view needs."""
    primary = str(golden.metric)
    ruling = outcome.ruling
    return {
        "golden": path,
        "order": order,
        "stratum": outcome.stratum.name,
        "metric": primary,
        **comparison_record(outcome.comparisons[primary]),
        "verdict": ruling.verdict.value,
        "primary_verdict": ruling.primary.value,
        "reason": ruling.reason,
        "queries_needed": ruling.queries_needed,
        "sign_disagrees": ruling.sign_disagrees,
        "tie_margin": golden.tie_margin,
        "confidence": golden.confidence,
        "guards": [
            {
                "metric": guard.metric,
                "margin": guard.margin,
                **comparison_record(guard.comparison),
                "verdict": guard.verdict.value,
                "reason": guard.reason,
                "failed": guard.failed,
            }
            for guard in ruling.guards
        ],
        "metrics": {name: comparison_record(c) for name, c in outcome.comparisons.items()},
        "movers": [_mover_record(m) for m in outcome.movers],
        "drivers": [_mover_record(m) for m in outcome.drivers],
        "family": _family_record(outcome.family),
        "tied": _tied_record(outcome, primary),
        "consensus_failures": list(outcome.consensus_failures),
        **_slices_record(outcome),
        **({} if outcome.rerank is None else _rerank_stratum(outcome.rerank)),
        **_unweighted_record(golden, outcome),
        **({} if outcome.split is None else {"index_split": _split_record(outcome.split)}),
    }


def _split_record(split: IndexSplit) -> Record:
    """A stratum's Δ split: the model's part (the arms' exact twins compared, every metric, and the verdict
    the rule gives them), and per arm the engine's part (its recall@k against its twin; the primary metric
    under exact search and on the engine, the difference and its interval)."""
    model, ruling = split.model[split.metric], split.model_ruling
    return {
        "metric": split.metric,
        "k": split.k,
        "model": {
            **comparison_record(model),
            "verdict": ruling.verdict.value,
            "reason": ruling.reason,
            "metrics": {name: comparison_record(c) for name, c in split.model.items()},
        },
        "engine": {
            role: {
                "recall": number(part.recall),
                "n": part.comparison.n,
                "exact": number(part.comparison.incumbent_mean),
                "engine": number(part.comparison.candidate_mean),
                "delta": number(part.comparison.delta),
                "ci": [number(part.comparison.ci_low), number(part.comparison.ci_high)],
                "better": part.comparison.wins,
                "worse": part.comparison.losses,
                "sign_p": number(part.comparison.sign_p),
                "note": part.comparison.note,
            }
            for role, part in split.engine.items()
        },
    }


def _unweighted_record(golden: GoldenSet, outcome: StratumOutcome) -> Record:
    """Under ``weights``: which weights the stratum's numbers are (``weights``, and ``traffic_weight``: what
    a query weighs), and beside them the stratum unweighted (``unweighted``: the primary comparison, the
    verdict and reason, each guard's verdict), what the file without the key decides; nothing without
    weights."""
    unweighted = outcome.unweighted
    if golden.weights is None or unweighted is None:
        return {}
    primary, ruling = str(golden.metric), unweighted.ruling
    return {
        "weights": golden.weights,
        "traffic_weight": golden.traffic_weighting,
        "unweighted": {
            **comparison_record(unweighted.comparisons[primary]),
            "verdict": ruling.verdict.value,
            "reason": ruling.reason,
            "sign_disagrees": ruling.sign_disagrees,
            "guards": [
                {"metric": g.metric, **comparison_record(g.comparison), "verdict": g.verdict.value}
                for g in ruling.guards
            ],
            "metrics": {name: comparison_record(c) for name, c in unweighted.comparisons.items()},
        },
    }


def _rerank_stratum(rerank: RerankOutcome) -> Record:
    """A stratum's two comparisons on its reranked queries, side by side, and which one decides."""
    first, after = rerank.first_stage_ruling, rerank.after_ruling
    return {
        "decided_by": "rerank" if rerank.decides else "first_stage",
        "rerank": {
            "sampled": rerank.sampled,
            "first_stage": {
                "verdict": first.verdict.value,
                "reason": first.reason,
                "metrics": {name: comparison_record(c) for name, c in rerank.first_stage.items()},
            },
            "after_rerank": {
                "verdict": after.verdict.value,
                "reason": after.reason,
                "metrics": {name: comparison_record(c) for name, c in rerank.after.items()},
            },
            "absorbed": rerank.absorbed,
        },
    }


def _family_record(family: Family | None) -> Record | None:
    """How the stratum was adjusted for the strata decided with it: the method, the family size and the
    level its intervals were computed at (None: outside the family, under the floor); in a shortlist's
    family, the candidates whose strata are in it."""
    if family is None:
        return None
    # A shortlist's family also names the candidates whose strata it holds; one candidate's keeps its shape.
    candidates = {"candidates": list(family.candidates)} if family.candidates else {}
    return {"method": family.method, "size": family.size, "level": family.level, **candidates}


def _tied_record(outcome: StratumOutcome, primary: str) -> Record | None:
    """Per arm, the stratum's queries whose scores tie across each metric's cutoff; whether another order
    of the tied documents gives another verdict, and the verdict under each order."""
    ties = outcome.ties
    if ties is None:
        return None
    incumbent, candidate = ties.across[primary]
    return {
        "metric": primary,
        "incumbent": incumbent,
        "candidate": candidate,
        "could_change": ties.could_change(outcome.ruling.verdict),
        "verdicts": None if ties.verdicts is None else {o: v.value for o, v in ties.verdicts.items()},
        "across": {name: {"incumbent": i, "candidate": c} for name, (i, c) in ties.across.items()},
    }


def _slices_record(outcome: StratumOutcome) -> Record:
    """A stratum's primary Δ and CI per corpus slice, and whether the gap still moved; nothing without
    slices."""
    if not outcome.slices:
        return {}
    return {
        "slices": [
            {
                "fraction": one.fraction,
                "documents": one.documents,
                "delta": number(one.comparison.delta),
                "ci": [number(one.comparison.ci_low), number(one.comparison.ci_high)],
                "verdict": one.verdict.value,
            }
            for one in outcome.slices
        ],
        "gap_moving": outcome.gap_moving,
        "slices_note": GAP_STILL_MOVING if outcome.gap_moving else None,
    }
