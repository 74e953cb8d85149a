"""Each stratum of a run decided: the two arms' per-query scores paired, the family of strata, ties, labels.

`evaluate_golden` decides every stratum of a golden file as one family (``multiple_comparisons``), or as
members of a larger family decided first (`decide_families`: a shortlist's, every candidate's strata);
`evaluate_stratum` pairs both arms' scores over one stratum's queries, compares every declared metric
(`stats.compare_paired`, seeded by stratum and metric), applies the verdict rule (`verdict.decide`), and
records what the verdict rests on: the queries that moved most, the ties that could change it, the
queries neither arm finds a relevant document for and, with ``corpus_sample``, the verdict per slice.

With a reranker, each stratum is also compared on the queries reranked for it, before and after the
reranker (`rerank.RerankOutcome`); with ``rerank.decides`` the verdict (and the family's p-values) rest on
the after-rerank comparison, and the ties and slices stay the first stage's.

With a vector database as the index, each stratum's Δ is also split into the model's part (the arms' exact
twins compared) and each arm's engine part (engine against its twin), seeded as the stratum's own comparison
(`index_split`).

With ``weights: frequency`` every comparison is traffic-weighted (each query by `GoldenSet.query_weights`:
its frequency, over its inclusion probability when it has one; with the design of the draw when the
queries were drawn by ``embeval sample``, `GoldenSet.design`), the verdicts, the family and the ties rest
on the weighted comparisons, the floor applies to Kish's effective number of queries, and the queries
driving a disputed mean are ranked by their weighted contribution; each stratum also carries the outcome of
the same run unweighted (`StratumOutcome.unweighted`), exactly what the file without the key decides.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from pytest_embeval.arms.rerank import RerankOutcome
from pytest_embeval.core.sample_design import SampleDesign
from pytest_embeval.core.stats import (
    DegenerateComparisonWarning,
    PairedComparison,
    compare_paired,
    stable_seed,
)
from pytest_embeval.core.step_progress import step
from pytest_embeval.core.verdict import StratumRuling, Verdict, decide, family_levels
from pytest_embeval.core.weighted_stats import kish_n
from pytest_embeval.golden.schema import GoldenSet, Stratum
from pytest_embeval.run.corpus_slices import SliceOutcome, gap_still_moving
from pytest_embeval.run.index_split import IndexSplit, index_split
from pytest_embeval.run.pipeline import GoldenRun
from pytest_embeval.search.scoring import TIE_ORDERS

#: Queries listed under a failing or disputed stratum.
MOVERS_SHOWN = 5


@dataclasses.dataclass(frozen=True, slots=True)
class Mover:
    """A query whose primary-metric score changed between the arms."""

    query_id: str
    text: str
    incumbent: float
    candidate: float

    @property
    def difference(self) -> float:
        return self.candidate - self.incumbent


@dataclasses.dataclass(frozen=True, slots=True)
class Family:
    """How a stratum was decided among the strata of its golden file (``multiple_comparisons``)."""

    method: str  # none | holm | bonferroni
    size: int  # strata tested together: those with at least min_queries (and 2) pairs
    level: float | None  # the level (1 - confidence) of this stratum's intervals; None outside the family
    #: a shortlist's: the candidates whose strata the family holds; () for one candidate's strata alone
    candidates: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class StratumTies:
    """Tied scores in one stratum: how many queries tie across each metric's cutoff, per arm, and the
    verdict under each order of tied documents a correct implementation may use (`scoring.TIE_ORDERS`)."""

    #: metric name -> (incumbent, candidate) queries of the stratum that tie across its cutoff
    across: Mapping[str, tuple[int, int]]
    #: tie order -> the stratum's verdict with both arms scored in that order; None when no tie of the
    #: stratum moves a metric
    verdicts: Mapping[str, Verdict] | None = None

    def could_change(self, verdict: Verdict) -> bool:
        """Whether another order of the tied documents gives another verdict."""
        return self.verdicts is not None and any(other is not verdict for other in self.verdicts.values())


@dataclasses.dataclass(frozen=True, slots=True)
class StratumOutcome:
    stratum: Stratum
    comparisons: Mapping[str, PairedComparison]  # every declared metric, primary first
    ruling: StratumRuling
    movers: tuple[Mover, ...]  # largest |Δ| first
    drivers: tuple[Mover, ...]  # largest contribution in the direction of Δ first
    family: Family | None = None
    ties: StratumTies | None = None
    #: queries (with judgments) where neither arm has a relevant document within the primary cutoff
    consensus_failures: tuple[str, ...] = ()
    #: before and after the reranker, on the queries reranked for the stratum; None without one
    rerank: RerankOutcome | None = None
    #: with ``corpus_sample``: the first-stage primary comparison and verdict per slice, smallest first
    slices: tuple[SliceOutcome, ...] = ()
    #: Δ moved by more than half the margin between the two largest slices (`corpus_slices.gap_still_moving`)
    gap_moving: bool = False
    #: with ``weights``: the stratum decided unweighted (every query once), shown beside; None without
    unweighted: Unweighted | None = None
    #: with a vector database as the index: Δ split into the model's part and each arm's engine part
    #: (`index_split`), on the first stage; None otherwise
    split: IndexSplit | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Unweighted:
    """A weighted stratum's comparisons and verdict with every query counted once."""

    comparisons: Mapping[str, PairedComparison]
    ruling: StratumRuling


def _movers(
    texts: Sequence[str], ids: Sequence[str], incumbent: np.ndarray, candidate: np.ndarray, order: np.ndarray
) -> tuple[Mover, ...]:
    return tuple(
        Mover(query_id=ids[i], text=texts[i], incumbent=float(incumbent[i]), candidate=float(candidate[i]))
        for i in order[:MOVERS_SHOWN]
        if np.isfinite(incumbent[i]) and np.isfinite(candidate[i]) and incumbent[i] != candidate[i]
    )


def _stratum_rows(golden: GoldenSet, stratum: Stratum) -> np.ndarray:
    position = {query.id: i for i, query in enumerate(golden.queries)}
    return np.array([position[qid] for qid in stratum.query_ids], dtype=np.intp)


def _weights(golden: GoldenSet, rows: np.ndarray) -> np.ndarray | None:
    """The queries' weights on ``rows`` under ``weights``; None without it."""
    weights = golden.query_weights()
    return None if weights is None else np.asarray(weights, dtype=np.float64)[rows]


def _weighting(golden: GoldenSet, rows: np.ndarray) -> tuple[np.ndarray | None, SampleDesign | None]:
    """The queries' weights on ``rows`` under ``weights``, and the design they were drawn with (the other
    queries drawn in their cells count as outside the stratum); both None without ``weights``."""
    weights = _weights(golden, rows)
    design = None if weights is None or golden.design is None else golden.design.rows(rows)
    return weights, design


def _below_floor(golden: GoldenSet, rows: np.ndarray, incumbent: np.ndarray, candidate: np.ndarray) -> bool:
    """Fewer than 2 pairs, or fewer than ``min_queries``: pairs, or with weights Kish's effective number."""
    paired = np.isfinite(incumbent) & np.isfinite(candidate)
    weights = _weights(golden, rows)
    if int(np.count_nonzero(paired)) < 2:
        return True
    size = float(np.count_nonzero(paired)) if weights is None else kish_n(weights[paired])
    return size < golden.min_queries


def _compare(
    golden: GoldenSet,
    stratum: Stratum,
    name: str,
    incumbent: np.ndarray,
    candidate: np.ndarray,
    confidence: float,
    stage: str = "",
    weighting: tuple[np.ndarray | None, SampleDesign | None] = (None, None),
) -> PairedComparison:
    """One metric on one stratum. The seed names the stratum and metric only (and the ``stage`` of a
    comparison around the reranker), so the same pairs give the same resamples at any confidence (the
    family's first pass and its ruling share them), weighted or not (the same queries are drawn)."""
    seed = (golden.seed, stratum.name, name, stage) if stage else (golden.seed, stratum.name, name)
    with warnings.catch_warnings():
        # A degenerate comparison (an A/A run, a tiny stratum) is stated in its note and the verdict's
        # reason; as a pytest warning too it would only repeat it.
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        return compare_paired(
            incumbent,
            candidate,
            confidence=confidence,
            n_resamples=golden.bootstrap,
            rng=np.random.default_rng(stable_seed(*seed)),
            interval=golden.interval,
            weights=weighting[0],
            design=weighting[1],
        )


@dataclasses.dataclass(frozen=True, slots=True)
class StrataFamilies:
    """How each stratum of one comparison was placed in its family: stratum name -> its `Family`, and
    under ``weights`` the same for the comparison unweighted (`Unweighted`, decided as its own family of
    the unweighted comparisons)."""

    members: Mapping[str, Family]
    unweighted: StrataFamilies | None = None


def decide_families(
    comparisons: Sequence[tuple[GoldenRun, Collection[str] | None]],
    method: str,
    *,
    candidates: Sequence[str] = (),
) -> tuple[StrataFamilies, ...]:
    """The families of several comparisons on one golden set decided together, before any of them is
    evaluated: each comparison's tested strata (``selected``, or all) with at least ``min_queries`` (and 2)
    pairs are the members of one family, adjusted by ``method``; one `StrataFamilies` per comparison, in
    order. ``candidates`` names the comparisons' candidates in the `Family` records (a shortlist's)."""
    tested = [_tested(run.golden, selected) for run, selected in comparisons]
    total = sum(len(strata) for strata in tested)
    holm = method == "holm"
    with step(f"bootstrap of {total} strata of {len(comparisons)} candidates", total=total) as advance:
        members = _family_pass(comparisons, tested, method, advance if holm else _ignore, candidates)
        if not comparisons or comparisons[0][0].golden.weights is None:
            return tuple(StrataFamilies(one) for one in members)
        # The comparisons without the key, decided as their own family: what the file without it says.
        plain = [(_unweighted_run(run), selected) for run, selected in comparisons]
        unweighted = _family_pass(plain, tested, method, _ignore, candidates)
    return tuple(
        StrataFamilies(one, StrataFamilies(other)) for one, other in zip(members, unweighted, strict=True)
    )


def _ignore(done: int) -> None:
    """An ``advance`` that shows nothing."""


def _tested(golden: GoldenSet, selected: Collection[str] | None) -> list[Stratum]:
    return [stratum for stratum in golden.strata() if selected is None or stratum.name in selected]


def _unweighted_run(run: GoldenRun) -> GoldenRun:
    """The run as the golden file without ``weights`` decides it."""
    return dataclasses.replace(run, golden=dataclasses.replace(run.golden, weights=None), slices=())


def _family_pass(
    comparisons: Sequence[tuple[GoldenRun, Collection[str] | None]],
    tested: Sequence[Sequence[Stratum]],
    method: str,
    advance: Callable[[int], None],
    candidates: Sequence[str] = (),
) -> list[dict[str, Family]]:
    """The first pass over every tested stratum of the ``comparisons``: its primary bootstrap p-value under
    ``holm`` (a placeholder for a member otherwise, None below the floor), then the levels of the family of
    all of them at once (`verdict.family_levels`); ``advance`` counts the strata bootstrapped."""
    p_values: list[float | None] = []
    for (run, _), strata in zip(comparisons, tested, strict=True):
        golden, primary = run.golden, str(run.golden.metric)
        for stratum in strata:
            scores, rows, stage = _deciding(run, stratum)
            incumbent, candidate = scores[0][primary][rows], scores[1][primary][rows]
            if _below_floor(golden, rows, incumbent, candidate):
                p_values.append(None)
            elif method == "holm":
                weighting = _weighting(golden, rows)
                compared = _compare(
                    golden, stratum, primary, incumbent, candidate, golden.confidence, stage, weighting
                )
                p_values.append(compared.p_value)
            else:
                p_values.append(0.0)  # a member; its p-value is not needed
            advance(len(p_values))
    if not comparisons:
        return []
    # Rounded: 1 - 0.95 is 0.050000000000000044 in binary, and the level is reported.
    alpha = round(1.0 - comparisons[0][0].golden.confidence, 12)
    levels = family_levels(p_values, alpha=alpha, method=method)
    size = sum(level is not None for level in levels)
    remaining = iter(levels)
    named = tuple(candidates)
    return [
        {stratum.name: Family(method, size, next(remaining), named) for stratum in strata}
        for strata in tested
    ]


def evaluate_golden(
    run: GoldenRun,
    selected: Collection[str] | None = None,
    *,
    families: StrataFamilies | None = None,
    method: str | None = None,
) -> tuple[StratumOutcome, ...]:
    """Every stratum's outcome (or the ``selected`` ones', by name: those the run tests, as ``-k`` chose
    them), in `GoldenSet.strata` order, decided as one family.

    The family is the strata tested with at least ``min_queries`` (and 2) pairs, adjusted by ``method``
    (default: the golden set's ``multiple_comparisons``); ``families`` (`decide_families`) places them in
    a larger family decided beforehand instead, a shortlist's. With ``holm`` each member's primary
    bootstrap p-value (`PairedComparison.p_value`, which inverts its interval) is computed first;
    `verdict.family_levels` turns them into the level each member's intervals are then computed at, so
    that the intervals' verdicts are Holm's decisions. ``bonferroni`` needs no p-values; ``none`` decides
    every stratum at ``1 - confidence``.
    """
    golden = run.golden
    method = golden.multiple_comparisons if method is None else method
    strata = _tested(golden, selected)
    first = families is None and method == "holm"
    # A progress step counting the strata bootstrapped (twice each when holm's p-values come first).
    with step(f"bootstrap of {len(strata)} strata", total=len(strata) * (2 if first else 1)) as advance:
        if families is None:
            members = _family_pass([(run, selected)], [strata], method, advance if first else _ignore)[0]
            families = StrataFamilies(members)
        outcomes = []
        for stratum in strata:
            outcomes.append(evaluate_stratum(run, stratum, family=families.members[stratum.name]))
            advance(len(outcomes) + (len(strata) if first else 0))
    if golden.weights is None:
        return tuple(outcomes)
    # The same run without the key, decided as its own family: what the file without it would say.
    plain = evaluate_golden(_unweighted_run(run), selected, families=families.unweighted, method=method)
    return tuple(
        dataclasses.replace(outcome, unweighted=Unweighted(one.comparisons, one.ruling))
        for outcome, one in zip(outcomes, plain, strict=True)
    )


Scores = tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]]


def _deciding(run: GoldenRun, stratum: Stratum) -> tuple[Scores, np.ndarray, str]:
    """What the stratum's verdict rests on: both arms' per-query scores, the rows compared and the stage
    seeding them; the first stage on every query, or with ``rerank.decides`` the after-rerank scores on
    the queries reranked for the stratum."""
    spec, held = run.golden.rerank, run.held
    before, after = run.incumbent.reranked, run.candidate.reranked
    if spec is None or not spec.decides or held is None or before is None or after is None:
        return (run.incumbent.per_query, run.candidate.per_query), _stratum_rows(run.golden, stratum), ""
    return (before.per_query, after.per_query), held.rerank_samples[stratum.name], "after-rerank"


def _decided(
    golden: GoldenSet, stratum: Stratum, scores: Scores, rows: np.ndarray, confidence: float, stage: str = ""
) -> tuple[dict[str, PairedComparison], StratumRuling]:
    """Every metric of the golden set compared on ``rows`` of both arms' ``scores``, and the verdict rule
    applied to them (primary and guards)."""
    weighting = _weighting(golden, rows)
    comparisons = {
        str(m): _compare(
            golden,
            stratum,
            str(m),
            scores[0][str(m)][rows],
            scores[1][str(m)][rows],
            confidence,
            stage,
            weighting,
        )
        for m in golden.all_metrics()
    }
    ruling = decide(
        comparisons[str(golden.metric)],
        tie_margin=golden.tie_margin,
        min_queries=golden.min_queries,
        guards={name: (comparisons[name], margin) for name, margin in golden.guards.items()},
        primary_metric=str(golden.metric),
    )
    return comparisons, ruling


def _rerank_outcome(run: GoldenRun, stratum: Stratum, confidence: float) -> RerankOutcome | None:
    """The stratum before and after the reranker, on the queries reranked for it; None without one."""
    golden, held = run.golden, run.held
    spec, before, after = golden.rerank, run.incumbent.reranked, run.candidate.reranked
    if spec is None or held is None or before is None or after is None:
        return None
    rows = held.rerank_samples[stratum.name]
    # The first stage is seeded as the stratum's own comparison is: reranking every query, its column
    # repeats the stratum's interval rather than one from other resamples of the same pairs.
    first, first_ruling = _decided(
        golden, stratum, (run.incumbent.per_query, run.candidate.per_query), rows, confidence
    )
    reranked, reranked_ruling = _decided(
        golden, stratum, (before.per_query, after.per_query), rows, confidence, "after-rerank"
    )
    level = golden.relevance_level
    scorable = sum(any(g >= level for g in held.qrels[qid].values()) for qid in stratum.query_ids)
    return RerankOutcome(
        first_stage=first,
        first_stage_ruling=first_ruling,
        after=reranked,
        after_ruling=reranked_ruling,
        decides=spec.decides,
        sampled=rows.size < scorable,
    )


def evaluate_stratum(run: GoldenRun, stratum: Stratum, *, family: Family | None = None) -> StratumOutcome:
    """Pair both arms' per-query scores over the stratum's queries and decide its verdict, with intervals
    at the family's level for this stratum (`evaluate_golden`) or, without a family, at ``confidence``."""
    golden = run.golden
    rows = _stratum_rows(golden, stratum)
    weighting = _weighting(golden, rows)
    level = None if family is None or family.method == "none" else family.level
    confidence = golden.confidence if level is None else 1.0 - level

    def decide_with(
        incumbent: Mapping[str, np.ndarray], candidate: Mapping[str, np.ndarray]
    ) -> StratumRuling:
        def compared(name: str) -> PairedComparison:
            return _compare(
                golden, stratum, name, incumbent[name][rows], candidate[name][rows], confidence, "", weighting
            )

        return decide(
            compared(primary),
            tie_margin=golden.tie_margin,
            min_queries=golden.min_queries,
            guards={name: (compared(name), margin) for name, margin in golden.guards.items()},
            primary_metric=str(golden.metric),
        )

    primary = str(golden.metric)
    comparisons: Mapping[str, PairedComparison]
    comparisons, ruling = _decided(
        golden, stratum, (run.incumbent.per_query, run.candidate.per_query), rows, confidence
    )

    first_stage, first_ruling = comparisons, ruling
    # Each part seeded as the stratum's own comparison: the same resampled queries.
    split = index_split(
        run, rows, lambda name, a, b: _compare(golden, stratum, name, a, b, confidence, "", weighting)
    )
    rerank = _rerank_outcome(run, stratum, confidence)
    ties = _stratum_ties(run, rows, decide_with, ruling.verdict)
    scores: Scores = (run.incumbent.per_query, run.candidate.per_query)
    if rerank is not None and rerank.decides:
        # The after-rerank comparison decides; its movers are the reranked queries'.
        comparisons, ruling, ties = rerank.after, rerank.after_ruling, None
        scores, rows, _ = _deciding(run, stratum)
    incumbent = scores[0][primary][rows]
    candidate = scores[1][primary][rows]
    difference = np.nan_to_num(candidate - incumbent, nan=0.0)
    ids = [golden.queries[i].id for i in rows]
    texts = [golden.queries[i].text for i in rows]
    # Stable sorts keep golden-file order among equal differences, so the listing is reproducible.
    by_size = np.argsort(-np.abs(difference), kind="stable")
    direction = -1.0 if comparisons[primary].delta < 0 else 1.0
    # A query's part in the mean: its difference, or with weights its difference times its weight.
    deciding_weights = _weights(golden, rows)
    contribution = difference if deciding_weights is None else difference * deciding_weights
    by_contribution = np.argsort(-direction * contribution, kind="stable")
    outcome = StratumOutcome(
        stratum=stratum,
        comparisons=comparisons,
        ruling=ruling,
        movers=_movers(texts, ids, incumbent, candidate, by_size),
        drivers=_movers(texts, ids, incumbent, candidate, by_contribution),
        family=family,
        ties=ties,
        consensus_failures=consensus_failures(run, _stratum_rows(golden, stratum)),
        rerank=rerank,
        split=split,
    )
    if not run.slices:
        return outcome
    # The largest slice is this run: its first stage is the one above (smaller slices are not reranked).
    smaller = [(one, evaluate_stratum(one.run, stratum)) for one in run.slices[:-1]]
    slices = (
        *(
            SliceOutcome(one.fraction, one.documents, r.comparisons[primary], r.ruling.verdict)
            for one, r in smaller
        ),
        SliceOutcome(
            run.slices[-1].fraction, run.slices[-1].documents, first_stage[primary], first_ruling.verdict
        ),
    )
    return dataclasses.replace(outcome, slices=slices, gap_moving=gap_still_moving(slices, golden.tie_margin))


def _stratum_ties(
    run: GoldenRun,
    rows: np.ndarray,
    decide_with: Callable[[Mapping[str, np.ndarray], Mapping[str, np.ndarray]], StratumRuling],
    verdict: Verdict,
) -> StratumTies | None:
    """The stratum's ties; the verdict under each tie order only when some order moves a metric of its
    queries (both arms in the same order: one implementation scores both). ``verdict`` is the stratum's
    own, under the golden set's order."""
    incumbent, candidate = run.incumbent.ties, run.candidate.ties
    if incumbent is None or candidate is None:
        return None
    across = {}
    for name in incumbent.across:
        # Only the pairs the comparison uses: a query without a relevant document is excluded anyway.
        paired = np.isfinite(run.incumbent.per_query[name][rows]) & np.isfinite(
            run.candidate.per_query[name][rows]
        )
        across[name] = (
            int((incumbent.across[name][rows] & paired).sum()),
            int((candidate.across[name][rows] & paired).sum()),
        )
    orders = {
        order: (
            run.incumbent.per_query if incumbent.orders is None else incumbent.orders[order],
            run.candidate.per_query if candidate.orders is None else candidate.orders[order],
        )
        for order in TIE_ORDERS
    }
    moved = any(
        not np.array_equal(scores[side][name][rows], orders["docid"][side][name][rows], equal_nan=True)
        for scores in orders.values()
        for side in (0, 1)
        for name in scores[side]
    )
    if not moved:
        return StratumTies(across)
    return StratumTies(
        across,
        {
            order: verdict if order == run.golden.ties else decide_with(*scores).verdict
            for order, scores in orders.items()
        },
    )


def consensus_failures(run: GoldenRun, rows: np.ndarray) -> tuple[str, ...]:
    """Ids of the stratum's queries (those with a relevant judgment) where neither arm ranks a relevant
    document within the primary metric's cutoff: both models miss, so the labels may be what is wrong."""
    golden = run.golden
    k, level = golden.metric.k, golden.relevance_level
    # The judgments scored with: with filters, those they allow.
    qrels = golden.qrels if run.held is None else run.held.qrels
    failures = []
    for row in rows.tolist():
        query = golden.queries[row]
        judged = qrels.get(query.id, {})
        if not any(grade >= level for grade in judged.values()):
            continue
        ranked = run.incumbent.ranked[row][:k] + run.candidate.ranked[row][:k]
        if not any(judged.get(doc, 0) >= level for doc in ranked):
            failures.append(query.id)
    return tuple(failures)
