"""The golden file's declared decision (`golden.decision_spec`) reached from the strata's verdicts, routing
measured rather than assumed.

The rule, tried in order:

* **proceed** when no stratum is WORSE and every ``proceed`` condition holds (the stratum's verdict is one
  of those listed);
* **proceed with routing** when the strata that block proceeding include some that ``route`` may send
  elsewhere: those are routed (every query of their ``field=value`` answered by the route's system, the
  incumbent by default, the rest by the candidate), at most ``max_traffic`` of the traffic moves and the
  candidate keeps some of it (routing every query is keeping the incumbent, not a decision: so the
  default ``max_traffic``, 1, allows any share short of all of it), and the routed system, compared with
  the incumbent on every stratum exactly as the candidate was (`evaluate_golden`, same seeds), is not
  WORSE anywhere and meets every ``proceed`` condition;
* otherwise **change the target**.

The traffic share is that of ``overall``'s queries (queries kept ``separate`` are not traffic): weighted by
the traffic each query stands for when the golden set gives frequencies (`Query.traffic_weight`: its
frequency, over its inclusion probability when the queries were drawn by ``embeval sample``, so the share
estimates that of the log the sample was drawn from), else one per query; `DecisionOutcome.basis` says
which.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.fusion import rrf_arm
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Embedder, Retriever
from pytest_embeval.core import weighted_stats
from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.decision_spec import (
    CHANGE_TARGET,
    PROCEED,
    ROUTE_PLACEHOLDERS,
    ROUTED,
    DecisionSpec,
)
from pytest_embeval.golden.schema import OVERALL, TRAFFIC_BY_FREQUENCY, TRAFFIC_BY_INCLUSION, GoldenSet
from pytest_embeval.run.control import check_control
from pytest_embeval.run.pipeline import ArmFault, ArmResult, GoldenRun, Reranked, own_controls, run_arm
from pytest_embeval.run.stratum_evaluation import StratumOutcome, evaluate_golden

__all__ = [
    "BASES",
    "BY_COUNT",
    "BY_FREQUENCY",
    "BY_FREQUENCY_INCLUSION",
    "OUTCOME_WORDS",
    "DecisionOutcome",
    "decide_run",
    "route_arm",
    "route_target",
    "routed_arm",
    "traffic_share",
]

#: How each outcome is written in reports and on the decision item.
OUTCOME_WORDS = {PROCEED: "PROCEED", ROUTED: "PROCEED WITH ROUTING", CHANGE_TARGET: "CHANGE THE TARGET"}
BY_FREQUENCY = "query frequency"
#: the frequency over the inclusion probability: the traffic a drawn query stands for in its log
BY_FREQUENCY_INCLUSION = "query frequency / inclusion"
BY_COUNT = "query count"
#: `GoldenSet.traffic_weighting` -> the basis it gives the traffic share
BASES = {None: BY_COUNT, TRAFFIC_BY_FREQUENCY: BY_FREQUENCY, TRAFFIC_BY_INCLUSION: BY_FREQUENCY_INCLUSION}
#: How the default routing target is named.
INCUMBENT = "incumbent"


@dataclasses.dataclass(frozen=True, slots=True)
class DecisionOutcome:
    spec: DecisionSpec
    outcome: str  # one of `decision_spec.OUTCOMES`
    #: the strata whose queries the routed system sends to ``to`` (empty unless routing was tried)
    routed: tuple[str, ...]
    #: the share of the traffic those strata's queries carry; None when nothing was routed
    traffic_share: float | None
    #: what the traffic share is measured by: `BY_FREQUENCY`, `BY_FREQUENCY_INCLUSION` or `BY_COUNT`
    basis: str
    #: the system serving the routed queries: ``incumbent`` or the route's arm spec
    to: str
    reasons: tuple[str, ...]
    #: the routed system against the incumbent, every stratum (golden order); () unless routing was tried
    routed_strata: tuple[StratumOutcome, ...] = ()

    @property
    def line(self) -> str:
        """``decision (owner X): PROCEED WITH ROUTING — reason; reason``."""
        owner = "" if self.spec.owner is None else f" (owner {self.spec.owner})"
        return f"decision{owner}: {OUTCOME_WORDS[self.outcome]} — " + "; ".join(self.reasons)


def traffic_share(golden: GoldenSet, query_ids: Sequence[str]) -> tuple[float, str]:
    """The share of ``overall``'s traffic that ``query_ids`` carry (`weighted_stats.traffic_share`), and
    what it is measured by."""
    overall = golden.strata()[0].query_ids
    by_id = {query.id: query for query in golden.queries}
    weighting = golden.traffic_weighting  # the loader made sure every query has a frequency or none has

    def weight(query_id: str) -> float:
        traffic = by_id[query_id].traffic_weight
        return 1.0 if weighting is None or traffic is None else traffic

    chosen = set(query_ids)
    weights = np.array([weight(qid) for qid in overall], dtype=np.float64)
    moved = np.array([qid in chosen for qid in overall], dtype=np.bool_)
    return weighted_stats.traffic_share(weights, moved), BASES[weighting]


def route_arm(spec: str, incumbent: Retriever, candidate: Retriever) -> Retriever:
    """The arm of a ``route.to`` spec: ``INCUMBENT`` and ``CANDIDATE`` (alone or as parts of a fusion) are
    the run's own arms, anything else resolves as a model spec does (`resolve.resolve_arm`)."""
    named = dict(zip(ROUTE_PLACEHOLDERS, (incumbent, candidate), strict=True))

    def resolve(text: str) -> Retriever:
        text = text.strip()
        if text in named:
            return named[text]
        if text.startswith("rrf:"):
            return rrf_arm(text, resolve)
        return resolve_arm(text)

    try:
        return resolve(spec)
    except EncoderError as error:
        raise EncoderError(f"decision.route.to: {error}") from None


_Row = TypeVar("_Row")


def route_target(
    run: GoldenRun,
    incumbent: Retriever,
    candidate: Retriever,
    *,
    embedder: Embedder,
) -> ArmResult | None:
    """The route's ``to`` arm run through the same pipeline over the same held-constant inputs (checked),
    or None when the routed queries go to the incumbent. Raises `pipeline.ArmFault` (one line, naming
    ``decision.route.to``) when the arm cannot be resolved or fails."""
    spec = run.golden.decision
    if spec is None or spec.route is None or spec.route.to is None:
        return None
    to = spec.route.to
    try:
        arm = route_arm(to, incumbent, candidate)
    except EncoderError as error:
        raise ArmFault("candidate", to, str(error)) from error
    result = run_arm(run.golden, arm, "candidate", embedder=embedder, held=run.held)
    own = own_controls(run.golden, run.held, incumbent=result, candidate=result)
    check_control(run.control, result.control, result.control, own=own)
    return result


def _mixed(candidate: np.ndarray, target: np.ndarray, rows: np.ndarray) -> np.ndarray:
    values = np.array(candidate, copy=True)
    values[rows] = target[rows]
    return values


def routed_arm(candidate: ArmResult, target: ArmResult, rows: np.ndarray) -> ArmResult:
    """The candidate with the queries at ``rows`` answered by ``target``: rankings and every metric's
    per-query scores (and after the reranker, when both have one). Ties are not carried over."""
    chosen = set(rows.tolist())

    def pick(mine: Sequence[_Row], theirs: Sequence[_Row]) -> tuple[_Row, ...]:
        return tuple(theirs[i] if i in chosen else row for i, row in enumerate(mine))

    reranked = None
    if candidate.reranked is not None and target.reranked is not None:
        mine, theirs = candidate.reranked, target.reranked
        reranked = Reranked(
            ranked=pick(mine.ranked, theirs.ranked),
            scores=pick(mine.scores, theirs.scores),
            per_query={name: _mixed(v, theirs.per_query[name], rows) for name, v in mine.per_query.items()},
        )
    return dataclasses.replace(
        candidate,
        ranked=pick(candidate.ranked, target.ranked),
        similarities=pick(candidate.similarities, target.similarities),
        per_query={name: _mixed(v, target.per_query[name], rows) for name, v in candidate.per_query.items()},
        reranked=reranked,
        ties=None,
        slices=(),
    )


def _blocking(spec: DecisionSpec, verdicts: Mapping[str, Verdict]) -> list[str]:
    """The strata that keep a system from proceeding: WORSE ones, and those failing a condition."""
    return [
        name
        for name, verdict in verdicts.items()
        if verdict is Verdict.WORSE or (name in spec.proceed and verdict.value not in spec.proceed[name])
    ]


def _described(spec: DecisionSpec, names: Sequence[str], verdicts: Mapping[str, Verdict]) -> str:
    def one(name: str) -> str:
        verdict = verdicts[name].value
        wanted = spec.proceed.get(name)
        if verdict == "WORSE" or wanted is None:
            return f"{name} {verdict}"
        return f"{name} {verdict} (proceed asks {' or '.join(wanted)})"

    return ", ".join(one(name) for name in names)


def _met(spec: DecisionSpec, verdicts: Mapping[str, Verdict], system: str = "") -> str:
    """What proceeding rests on, in words: the conditions met and no stratum WORSE."""
    held = [f"{name} {verdicts[name].value}" for name in spec.proceed if name in verdicts]
    if OVERALL not in spec.proceed:
        held.insert(0, f"{OVERALL} {verdicts[OVERALL].value}")
    return f"{system}{', '.join(held)}, no stratum WORSE"


def decide_run(
    run: GoldenRun,
    outcomes: Sequence[StratumOutcome],
    target: ArmResult | None = None,
    evaluate: Callable[[GoldenRun], tuple[StratumOutcome, ...]] = evaluate_golden,
) -> DecisionOutcome:
    """The golden set's declared decision from its strata's ``outcomes`` (`evaluate_golden` of ``run``);
    ``target`` serves the routed queries (the route's ``to`` arm; None: the incumbent)."""
    golden = run.golden
    spec = golden.decision
    if spec is None:
        raise ValueError(f"{golden.name}: no decision is declared")
    to = INCUMBENT if spec.route is None or spec.route.to is None else spec.route.to
    verdicts = {outcome.stratum.name: outcome.ruling.verdict for outcome in outcomes}
    blocking = _blocking(spec, verdicts)
    _, basis = traffic_share(golden, ())
    if not blocking:
        return DecisionOutcome(spec, PROCEED, (), None, basis, to, (_met(spec, verdicts),))
    blocked = _described(spec, blocking, verdicts)
    route = spec.route
    routable = [] if route is None else [name for name in route.strata if name in blocking]
    if route is None or not routable:
        why = "no route is declared" if route is None else "none of them may be routed"
        return DecisionOutcome(spec, CHANGE_TARGET, (), None, basis, to, (f"{blocked}: {why}",))
    # A router sends every query of the field's value, those kept ``separate`` too (they are not traffic,
    # so they move no share, but the separate stratum is served by the routed system as well).
    fields = [name.split("=", 1) for name in routable]
    rows = np.array(
        [i for i, query in enumerate(golden.queries) if any(query.fields[f] == v for f, v in fields)],
        dtype=np.intp,
    )
    share, basis = traffic_share(golden, [golden.queries[i].id for i in rows.tolist()])
    served = run.incumbent if target is None else target
    system = dataclasses.replace(run, candidate=routed_arm(run.candidate, served, rows), slices=())
    routed_strata = evaluate(system)
    routed_verdicts = {outcome.stratum.name: outcome.ruling.verdict for outcome in routed_strata}
    where = "the incumbent" if to == INCUMBENT else to
    moved = f"route {', '.join(routable)} ({share:.0%} of traffic by {basis}) to {where}"
    still = _blocking(spec, routed_verdicts)
    problems = []
    routed_ids = {golden.queries[i].id for i in rows.tolist()}
    if all(query_id in routed_ids for query_id in golden.strata()[0].query_ids):
        problems.append("it leaves the candidate no traffic (routing all of it is keeping the incumbent)")
    elif not share <= route.max_traffic:  # a share that is not a number is never within the cap
        problems.append(f"{share:.0%} of traffic is more than max_traffic {route.max_traffic:.0%}")
    if still:
        problems.append(f"the routed system: {_described(spec, still, routed_verdicts)}")
    if problems:
        reasons = (blocked, f"{moved} would not do: {'; '.join(problems)}")
        return DecisionOutcome(spec, CHANGE_TARGET, tuple(routable), share, basis, to, reasons, routed_strata)
    reasons = (f"{blocked} → {moved}", _met(spec, routed_verdicts, "routed system: "))
    return DecisionOutcome(spec, ROUTED, tuple(routable), share, basis, to, reasons, routed_strata)
