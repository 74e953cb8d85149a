"""The pytest side of a golden set: one `GoldenFile` collector per YAML file, one `StratumItem` per stratum,
and with a declared ``decision:`` one `DecisionItem` (``GOLDEN::decision``).

All items of a file share one `GoldenRun` per process (each arm embeds the corpus once); the item turns
its stratum's verdict into a pytest outcome: BETTER passes, WORSE fails with a table a person can act on,
TIE passes and is reported under its own status by `session.SessionHooks.pytest_report_teststatus`. With a
decision, the decision item fails when it is to change the target and passes under the status ``routed``
when it proceeds with routing; then a WORSE stratum passes as ``routed`` too, the routed system being what
ships. Each stratum item records its verdict as JUnit XML properties (``embeval_*``), the decision item its
decision.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.arms.embedding import EncoderError, embed
from pytest_embeval.arms.rerank import RerankError
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Embedder, RecallTargetError, Retriever
from pytest_embeval.cache.store import CacheStats
from pytest_embeval.core.metrics import NoRelevantDocumentsWarning
from pytest_embeval.core.progress import labelled, reporting
from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.decision_spec import CHANGE_TARGET, ROUTED
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.qrels_files import unjudged_problem
from pytest_embeval.golden.schema import GoldenSet, Stratum
from pytest_embeval.golden.yaml_nodes import declared_lines
from pytest_embeval.judging.provenance import golden_judgments
from pytest_embeval.plugin.state import (
    CACHE_PROPERTIES,
    ITEM_ERROR,
    ITEM_RECORDS,
    STATE,
    EmbevalState,
    FailedRun,
    GoldenSetError,
    ItemRecords,
)
from pytest_embeval.plugin.terminal_progress import step_line
from pytest_embeval.reports.decision_report import decision_properties, decision_record, stratum_properties
from pytest_embeval.reports.json_report import Record, error_record, golden_record, stratum_record
from pytest_embeval.reports.terminal import decision_failure, stratum_failure
from pytest_embeval.run.control import ControlMismatch
from pytest_embeval.run.decision import DecisionOutcome, decide_run, route_target
from pytest_embeval.run.pipeline import ArmFault, GoldenRun, Role, run_golden
from pytest_embeval.run.stratum_evaluation import StratumOutcome, evaluate_golden
from pytest_embeval.search.vector_index import EngineError

MISSING_MODEL = (
    "no {role} model: pass --embeval-{role} SPEC, set embeval_{role} in the ini file, "
    "or override the embeval_{role} fixture in conftest.py"
)


#: The decision item's name: its node id is ``GOLDEN::decision``.
DECISION_ITEM = "decision"


#: After the error of a golden set in which nothing is judged relevant: the run that gets it judged.
UNJUDGED_HINT = "; nothing to compare (to pool its first judgments, run with --embeval-pool DIR)"


class EmbevalFailure(Exception):
    """A WORSE stratum, or a decision to change the target; its text is the whole failure report."""


def golden_node_path(path: Path, rootpath: Path) -> str:
    """How node ids and the report name a golden file: relative to the rootdir, '/'-separated, with ``..``
    segments for a file outside it (``../shared/golden.yaml``); absolute only where no relative path exists
    (another drive). Stable on every machine with the same layout, and different for different files."""
    try:
        shown = os.path.relpath(path, rootpath)
    except ValueError:
        shown = str(path)
    return Path(shown).as_posix()


class GoldenFile(pytest.File):
    """A golden-set YAML file: loads and validates it, yields one item per stratum."""

    @classmethod
    def for_path(cls, parent: pytest.Collector, path: Path) -> GoldenFile:
        # pytest's own node id of a file outside the rootdir is relative to the argument that named it: two
        # such files given by path would both get the empty id.
        return cls.from_parent(parent, path=path, nodeid=golden_node_path(path, parent.config.rootpath))

    def collect(self) -> Iterator[pytest.Item]:
        try:
            golden = load_golden(self.path)
            # The day of the run, in UTC so that every xdist worker of a session ages them alike.
            judgments = golden_judgments(golden, today=datetime.now(timezone.utc).date())
            unjudged = unjudged_problem(golden)
            # A run that pools is how a golden set with nothing judged yet gets its first judgments.
            if unjudged is not None and self.config.stash[STATE].settings.pool_dir is None:
                raise GoldenError(unjudged.path, unjudged.key, None, unjudged.problem + UNJUDGED_HINT)
        except GoldenError as error:
            # Name the file as the user typed it, relative to where pytest was started.
            shown = os.path.relpath(error.path, self.config.invocation_params.dir)
            raise self.CollectError(str(GoldenError(shown, error.key, error.line, error.problem))) from None
        strata = golden.strata()
        for order, stratum in enumerate(strata):
            yield StratumItem.from_parent(
                self,
                name=stratum.name,
                callobj=_check_item,
                golden=golden,
                stratum=stratum,
                order=order,
                judgments=judgments,
            )
        if golden.decision is not None:
            yield DecisionItem.from_parent(
                self,
                name=DECISION_ITEM,
                callobj=_check_item,
                golden=golden,
                order=len(strata),
                judgments=judgments,
            )


def _judgments_line(path: Path) -> int:
    """The line of the golden file that names its judgments (``qrels``, ``beir``, or inline ``queries``),
    where a warning about them points; 1 when none is found."""
    lines = declared_lines(path)
    return next((lines[key] for key in ("qrels", "beir", "queries") if key in lines), 1)


def _check_item(request: pytest.FixtureRequest) -> None:
    """Run by pytest as the item's test function; `request` gives the item access to the model fixtures."""
    item = request.node
    assert isinstance(item, GoldenItem)
    item.check()


class GoldenItem(pytest.Function):
    """An item of one golden set; an error when the golden set could not be run.

    The golden set is run once per process, in the setup of the first of its items that runs there, so that
    a broken model is an error (pytest's ``E``), reported in full by that item and in one line by the others;
    the call then only pairs the arms over the item's stratum, or reaches the decision.
    """

    def __init__(self, *, golden: GoldenSet, order: int, judgments: Record, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._golden: GoldenSet | None = golden
        self.order = order
        #: where the judgments came from (`provenance.judgments_record`), for the report
        self.judgments = judgments
        self.run: GoldenRun | None = None

    @property
    def golden(self) -> GoldenSet:
        if self._golden is None:
            raise RuntimeError(f"{self.nodeid}: its golden set was released at the end of the session")
        return self._golden

    def release(self) -> None:
        """Let go of the golden set and its run (the outputs are written from the records alone)."""
        self._golden = None
        self.run = None

    @property
    def golden_path(self) -> str:
        """The golden file as node ids and the report name it (see `golden_node_path`)."""
        return self.nodeid.split("::", 1)[0]

    @property
    def golden_key(self) -> str:
        """What identifies the golden set within a process: its resolved path, whatever names it."""
        return str(self.path.resolve())

    def setup(self) -> None:
        super().setup()
        state = self.config.stash[STATE]
        run = state.runs.get(self.golden_key)
        if run is None:
            run = self._first_run(state)
            state.runs[self.golden_key] = run
        if isinstance(run, FailedRun):
            if run.nodeid == self.nodeid:
                raise GoldenSetError(run.message)
            raise GoldenSetError(f"{self.golden.name}: not run; the error is reported under {run.nodeid}")
        self.run = run

    def _first_run(self, state: EmbevalState) -> GoldenRun | FailedRun:
        before = state.cache.stats() if state.cache is not None else CacheStats()
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as caught, self._progress(state):
                warnings.simplefilter("always", NoRelevantDocumentsWarning)
                return self._run_golden(state)
        except (ArmFault, RerankError, ControlMismatch, RecallTargetError, EngineError) as error:
            record = error_record(self.golden, self.golden_path, error)
            self.stash[ITEM_ERROR] = record
            return FailedRun(self.nodeid, f"{self.golden.name}: {record['message']}")
        finally:
            self._warn_once(caught)
            if state.cache is not None:
                self._note_cache_use(state.cache.stats() - before)

    def _warn_once(self, caught: Iterable[warnings.WarningMessage]) -> None:
        """Each arm's scoring warns alike about the queries without a relevant document: that warning once,
        as this golden set's, at the golden file's line naming its judgments; the others as they came."""
        for message in dict.fromkeys(
            str(w.message) if issubclass(w.category, NoRelevantDocumentsWarning) else w for w in caught
        ):
            if isinstance(message, str):
                where = os.path.relpath(self.path, self.config.invocation_params.dir)
                warning = NoRelevantDocumentsWarning(message)
                warnings.warn_explicit(warning, None, where, _judgments_line(self.path))
            else:
                warnings.warn_explicit(message.message, message.category, message.filename, message.lineno)

    def check(self) -> None:
        raise NotImplementedError

    def _golden_once(self) -> Record | None:
        """The golden set's record if no item of this process has sent it yet."""
        assert self.run is not None  # set by setup
        state = self.config.stash[STATE]
        if self.golden_path in state.sent_golden:
            return None
        state.sent_golden.add(self.golden_path)
        return {**golden_record(self.run, self.golden_path), "judgments": self.judgments}

    def _evaluated(self) -> tuple[dict[str, StratumOutcome], DecisionOutcome | None]:
        """Every stratum's outcome and the declared decision, reached once per process."""
        assert self.run is not None  # set by setup
        state = self.config.stash[STATE]
        outcomes = state.outcomes.get(self.golden_key)
        if outcomes is None:
            # The strata of a file this session tests (``-k`` may deselect some) are decided as one family,
            # so all of them are evaluated at once; its decision, when selected, rests on every stratum.
            mine = [
                item
                for item in self.session.items
                if isinstance(item, GoldenItem) and item.golden_key == self.golden_key
            ]
            tested = None
            if not any(isinstance(item, DecisionItem) for item in mine):
                tested = {item.stratum.name for item in mine if isinstance(item, StratumItem)}
            with self._progress(state):
                outcomes = {outcome.stratum.name: outcome for outcome in evaluate_golden(self.run, tested)}
            state.outcomes[self.golden_key] = outcomes
            if self.golden.decision is not None:
                target = state.route_targets.get(self.golden_key)
                state.decisions[self.golden_key] = decide_run(self.run, list(outcomes.values()), target)
        return outcomes, state.decisions.get(self.golden_key)

    def _run_golden(self, state: EmbevalState) -> GoldenRun:
        request = self.funcargs["request"]
        assert isinstance(request, pytest.FixtureRequest)
        # A fixture may build its model now (the demo's distils its candidate once): its steps are the arm's.
        with labelled("incumbent"):
            incumbent = _arm(request, state, "incumbent")
        with labelled("candidate"):
            candidate = _arm(request, state, "candidate")
        embedder: Embedder = state.cache.embed if state.cache is not None else embed
        run = run_golden(
            self.golden,
            incumbent,
            candidate,
            embedder=embedder,
            cache=state.cache,
            keep_collections=state.settings.keep_collections,
        )
        # The route's own arm (``decision.route.to``) runs here too, so that its faults are the items' errors.
        target = route_target(run, incumbent, candidate, embedder=embedder)
        if target is not None:
            state.route_targets[self.golden_key] = target
        return run

    def _note_cache_use(self, used: CacheStats) -> None:
        # User properties travel with the item's reports, to the xdist controller too: see cache_totals.
        for field, name in CACHE_PROPERTIES.items():
            value = getattr(used, field)
            if value:
                self.user_properties.append((name, value))

    @contextlib.contextmanager
    def _progress(self, state: EmbevalState) -> Iterator[None]:
        """The steps taken inside, shown on the terminal as this golden set's progress line."""
        line = step_line(self.config, self.golden.name, self.nodeid) if state.settings.progress else None
        with line or contextlib.nullcontext(), reporting(line):
            yield

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, EmbevalFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.golden.name}::{self.name}"


class StratumItem(GoldenItem):
    """One stratum of one golden set: passes (BETTER), fails (WORSE) or ties; with a decision to proceed
    with routing, a WORSE stratum passes as routed."""

    def __init__(self, *, stratum: Stratum, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stratum = stratum

    def check(self) -> None:
        golden = self._golden_once()
        outcomes, decision = self._evaluated()
        outcome = outcomes[self.stratum.name]
        record = stratum_record(self.golden, self.golden_path, self.order, outcome)
        worse = outcome.decision.verdict is Verdict.WORSE
        if worse and decision is not None and decision.outcome == ROUTED:
            record["covered_by_routing"] = True  # only then: a report without a decision keeps its shape
        self.user_properties.extend(stratum_properties(record))
        if outcome.decision.verdict is Verdict.TIE:
            # In the test case's system-out of a JUnit file (with junit_logging = system-out or all).
            self.add_report_section("call", "stdout", f"{self.stratum.name}: TIE — {record['reason']}\n")
        self.stash[ITEM_RECORDS] = ItemRecords(stratum=record, golden=golden)
        if worse and not record.get("covered_by_routing"):
            raise EmbevalFailure(stratum_failure(record))


class DecisionItem(GoldenItem):
    """The golden set's declared decision: passes to proceed, passes as routed to proceed with routing,
    fails to change the target."""

    def check(self) -> None:
        golden = self._golden_once()
        _, decision = self._evaluated()
        assert decision is not None  # the item exists only with a declared decision
        record = decision_record(self.golden, self.golden_path, decision)
        self.user_properties.extend(decision_properties(record))
        self.stash[ITEM_RECORDS] = ItemRecords(decision=record, golden=golden)
        if decision.outcome == CHANGE_TARGET:
            settings = {
                "confidence": self.golden.confidence,
                "multiple_comparisons": self.golden.multiple_comparisons,
            }
            raise EmbevalFailure(decision_failure(record, settings))


def _arm(request: pytest.FixtureRequest, state: EmbevalState, role: Role) -> Retriever:
    """The arm's model: command line or ini spec if given (resolved when the session started), else the
    session fixture of that name, resolved here once per process."""
    spec: object = getattr(state.settings, role) or request.getfixturevalue(f"embeval_{role}")
    if spec is None:
        raise ArmFault(role, None, MISSING_MODEL.format(role=role))
    if isinstance(spec, str) and spec in state.unresolved:
        raise ArmFault(role, spec, state.unresolved[spec])
    key = spec if isinstance(spec, str) else id(spec)
    if key not in state.arms:
        try:
            state.arms[key] = resolve_arm(spec, device=state.settings.device)
        except EncoderError as error:
            shown = (
                spec
                if isinstance(spec, str)
                else f"{type(spec).__qualname__} from the embeval_{role} fixture"
            )
            raise ArmFault(role, shown, f"{role} model: {error}") from error
    return state.arms[key]


def release_golden_sets(items: Iterable[pytest.Item], state: EmbevalState) -> None:
    """Drop what ran the golden sets (their documents, both arms' results) once every item has run: the
    outputs are written from the records alone, and pytest's own garbage collections at the end (five and
    more, after the summary) would otherwise walk every document: 0.4 s at 200,000 documents."""
    state.runs.clear()
    state.outcomes.clear()
    state.decisions.clear()
    state.route_targets.clear()
    for item in items:
        if isinstance(item, GoldenItem):
            item.release()
