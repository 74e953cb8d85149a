"""A golden file's arms in one process: each run once, when an item first needs it; each candidate paired
with the incumbent; what could not be run, kept for the items that report it; the verdicts and decisions,
reached once.

An item needs the incumbent and its own candidate, and, when every candidate's strata are one family
(`shortlist.shortlist_families`), every candidate the session tests: its verdict rests on all of their
p-values. So each process computes every arm its items need, in the same order (the incumbent, the item's
candidate, then the others in the shortlist's order after it), and the embedding cache, shared by the
processes of a run, hands each text's vector to whichever process embeds it first: under xdist every
model is still encoded once (a text another worker is embedding is waited for, `cache.claims`), and every
process reaches the same verdicts.

An arm that fails is its own items' error: the incumbent's (or the golden set's inputs') is every item's,
a candidate's (its model, its comparison's control, its route) only its own; the others are still
decided, and the family is the candidates that ran.

With a vector database as the golden set's index, each `GoldenArms.run` opens it for the arms it runs
(`pipeline.engine_opened`: an engine that cannot be opened is the error of those arms), and each arm builds
its own collection, named by the arm (``incumbent``, ``candidate NAME``) and a random token, and drops it
when it is done: the incumbent's is built once per process whatever number of candidates it is paired with,
as its vectors are embedded once; under xdist each process searches the arms it runs in collections of its
own, never another's.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence

from pytest_embeval.arms.rerank import RerankError
from pytest_embeval.arms.retriever import Embedder, RecallTargetError, Retriever
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.json_report import Record, error_record
from pytest_embeval.run.control import ControlMismatch
from pytest_embeval.run.decision import DecisionOutcome, route_target
from pytest_embeval.run.pipeline import (
    ArmFault,
    ArmInputs,
    ArmResult,
    GoldenRun,
    arm_inputs,
    engine_opened,
    pair_arms,
    run_arm_on,
)
from pytest_embeval.run.stratum_evaluation import StrataFamilies, StratumOutcome
from pytest_embeval.search.vector_index import EngineError

__all__ = ["INCUMBENT", "ArmFailure", "GoldenArms"]

#: The incumbent's key among a golden file's arms (no candidate can take the name).
INCUMBENT = "incumbent"

#: What running an arm may raise that makes it its items' error rather than a failure of ours.
ARM_ERRORS = (ArmFault, RerankError, ControlMismatch, RecallTargetError, EngineError)


@dataclasses.dataclass
class ArmFailure:
    """An arm, or a comparison, that could not be run in this process: its error record and its one-line
    message; the first of its items to set up reports it in full (`reported_by`), the others in a line
    that points there."""

    record: Record
    message: str
    reported_by: str | None = None

    def claim(self, nodeid: str, golden_name: str) -> tuple[str, bool]:
        """The message for the item ``nodeid``, and whether it is the one that reports it in full."""
        if self.reported_by is None:
            self.reported_by = nodeid
        if self.reported_by == nodeid:
            return self.message, True
        return f"{golden_name}: not run; the error is reported under {self.reported_by}", False


class GoldenArms:
    """A golden file's arms in this process, run once each (`run`), and what was decided of them."""

    def __init__(self, golden: GoldenSet, path: str) -> None:
        self.golden = golden
        self.path = path
        self.inputs: ArmInputs | ArmFailure | None = None
        #: `INCUMBENT` and each candidate's name -> its result, or why it has none
        self.results: dict[str, ArmResult | ArmFailure] = {}
        #: candidate name -> its comparison with the incumbent, or why there is none
        self.comparisons: dict[str, GoldenRun | ArmFailure] = {}
        #: candidate name -> the result of the arm its decision routes to (``decision.route.to``)
        self.route_targets: dict[str, ArmResult] = {}
        #: candidate name -> its strata's places in the shortlist's family; None: each candidate its own
        self.families: dict[str, StrataFamilies] | None = None
        self.families_decided = False
        #: the candidates the session tests, each with the strata its items test (None: every one)
        self.tested: dict[str, frozenset[str] | None] = {}
        #: candidate name -> stratum name -> its outcome; candidate name -> its declared decision
        self.outcomes: dict[str, dict[str, StratumOutcome]] = {}
        self.decisions: dict[str, DecisionOutcome] = {}

    def failure(self, name: str) -> ArmFailure | None:
        """Why the comparison of candidate ``name`` cannot be decided here (the incumbent's failure first),
        or None."""
        incumbent = self.results.get(INCUMBENT)
        if isinstance(incumbent, ArmFailure):
            return incumbent
        compared = self.comparisons.get(name)
        return compared if isinstance(compared, ArmFailure) else None

    def pending(self, names: Sequence[str]) -> bool:
        """Whether some arm the candidates ``names`` need is still to be tried in this process."""
        if isinstance(self.results.get(INCUMBENT), ArmFailure):
            return False
        return any(name not in self.comparisons for name in names)

    def ran(self, names: Sequence[str]) -> list[str]:
        """Those of the candidates ``names`` compared with the incumbent in this process."""
        return [name for name in names if isinstance(self.comparisons.get(name), GoldenRun)]

    def run(
        self,
        names: Sequence[str],
        arm_of: Callable[[str], Retriever],
        *,
        embedder: Embedder,
        cache: object,
        labels: Callable[[str], str | None],
        tag: Callable[[str, Record], Record],
        keep_collections: bool = False,
    ) -> bool:
        """Run the incumbent and each candidate of ``names`` not run here yet, in that order, and pair each
        with the incumbent (and run the arm its decision routes to). Every arm is resolved first (a model
        a fixture or a function builds is built then), and nothing runs unless the incumbent and some
        candidate resolve. ``arm_of`` resolves an arm by name (`INCUMBENT` or a candidate's; it raises
        `ArmFault`), ``labels`` names a candidate in its progress and errors, ``tag`` adds a candidate's
        name to its error record; ``keep_collections`` leaves each arm's collection in the vector database
        the golden set declares (`pipeline.engine_opened`, opened for the arms of this call). Whether
        anything was tried."""
        wanted = [name for name in names if name not in self.comparisons]
        if not self.pending(wanted):
            return False
        try:
            incumbent_arm = arm_of(INCUMBENT)
        except ARM_ERRORS as error:
            self.results[INCUMBENT] = self._failure(error)
            return True
        resolved: dict[str, Retriever] = {}
        for name in wanted:
            try:
                resolved[name] = arm_of(name)
            except ARM_ERRORS as error:
                self.results[name] = self.comparisons[name] = self._failure(
                    error, functools.partial(tag, name)
                )
        if not resolved:
            return True
        if self.inputs is None:
            try:
                self.inputs = arm_inputs(self.golden, embedder=embedder, cache=cache)
            except ARM_ERRORS as error:
                self.inputs = self._failure(error)
        if isinstance(self.inputs, ArmFailure):
            self.results[INCUMBENT] = self.inputs
            return True
        try:
            with engine_opened(self.inputs, keep=keep_collections) as inputs:
                self._compare(inputs, incumbent_arm, resolved, embedder, labels, tag)
        except ARM_ERRORS as error:
            # The golden set's vector database could not be opened: the error of the arms this call was to
            # run (the incumbent's, when it is one of them, is every item's).
            if INCUMBENT not in self.results:
                self.results[INCUMBENT] = self._failure(error)
            for name in resolved:
                if name not in self.comparisons:
                    tagged = functools.partial(tag, name)
                    self.results[name] = self.comparisons[name] = self._failure(error, tagged)
        return True

    def _compare(
        self,
        inputs: ArmInputs,
        incumbent_arm: Retriever,
        resolved: Mapping[str, Retriever],
        embedder: Embedder,
        labels: Callable[[str], str | None],
        tag: Callable[[str, Record], Record],
    ) -> None:
        """Run the incumbent (unless it ran already) and each candidate of ``resolved`` on ``inputs``, and
        pair each candidate with the incumbent."""
        if INCUMBENT not in self.results:
            self.results[INCUMBENT] = self._run_arm(inputs, incumbent_arm, INCUMBENT, None, None)
        incumbent = self.results[INCUMBENT]
        if isinstance(incumbent, ArmFailure):
            return
        for name, arm in resolved.items():
            tagged = functools.partial(tag, name)
            result = self._run_arm(inputs, arm, "candidate", labels(name), tagged)
            self.results[name] = result
            if isinstance(result, ArmFailure):
                self.comparisons[name] = result
                continue
            try:
                comparison = pair_arms(inputs, incumbent, result)
                # The route's own arm (``decision.route.to``) runs here too: its faults are the items' errors.
                target = route_target(comparison, incumbent.arm, result.arm, embedder=embedder)
            except ARM_ERRORS as error:
                self.comparisons[name] = self._failure(error, tagged)
                continue
            self.comparisons[name] = comparison
            if target is not None:
                self.route_targets[name] = target

    def _run_arm(
        self,
        inputs: ArmInputs,
        arm: Retriever,
        role: str,
        label: str | None,
        tag: Callable[[Record], Record] | None,
    ) -> ArmResult | ArmFailure:
        try:
            return run_arm_on(inputs, arm, "incumbent" if role == INCUMBENT else "candidate", label)
        except ARM_ERRORS as error:
            return self._failure(error, tag)

    def _failure(self, error: Exception, tag: Callable[[Record], Record] | None = None) -> ArmFailure:
        record = error_record(self.golden, self.path, error)
        record = record if tag is None else tag(record)
        return ArmFailure(record, f"{self.golden.name}: {record['message']}")
