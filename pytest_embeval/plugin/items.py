"""The pytest side of a golden set: one `GoldenFile` collector per YAML file, one `StratumItem` per stratum,
and with a declared ``decision:`` one `DecisionItem` (``GOLDEN::decision``). With several candidates (a
shortlist) each candidate has its own items, named by it: ``GOLDEN::overall[small]``,
``GOLDEN::decision[small]``.

All items of a file share its arms in a process (`golden_runs.GoldenArms`: each arm embeds the corpus once,
each candidate is paired with the incumbent); the item turns its stratum's verdict into a pytest outcome:
BETTER passes, WORSE fails with a table a person can act on, TIE passes and is reported under its own
status by `session.SessionHooks.pytest_report_teststatus`. With a decision, the decision item fails when it
is to change the target and passes under the status ``routed`` when it proceeds with routing; then a WORSE
stratum passes as ``routed`` too, the routed system being what ships. Each stratum item records its verdict
as JUnit XML properties (``embeval_*``), the decision item its decision.
"""

from __future__ import annotations

import contextlib
import functools
import os
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.arms.candidates import NamedCandidate
from pytest_embeval.arms.embedding import EncoderError, embed, error_summary
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Retriever
from pytest_embeval.cache.store import CacheStats
from pytest_embeval.core.metrics import NoRelevantDocumentsWarning
from pytest_embeval.core.step_progress import labelled, reporting
from pytest_embeval.core.verdict import NotANumber, Verdict
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.decision_spec import CHANGE_TARGET, ROUTED
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.qrels_files import unjudged_problem
from pytest_embeval.golden.schema import GoldenSet, Stratum
from pytest_embeval.golden.yaml_nodes import declared_lines
from pytest_embeval.judging.provenance import golden_judgments
from pytest_embeval.plugin.golden_runs import INCUMBENT, GoldenArms
from pytest_embeval.plugin.state import (
    CACHE_PROPERTIES,
    ITEM_ERROR,
    ITEM_RECORDS,
    STATE,
    EmbevalState,
    GoldenSetError,
    ItemRecords,
)
from pytest_embeval.plugin.terminal_progress import step_line
from pytest_embeval.reports.decision_report import decision_properties, decision_record, stratum_properties
from pytest_embeval.reports.json_report import Record, golden_record
from pytest_embeval.reports.shortlist import CANDIDATE_NAME, CANDIDATE_ORDER
from pytest_embeval.reports.stratum_records import stratum_record
from pytest_embeval.reports.terminal import decision_failure, stratum_failure
from pytest_embeval.run.decision import DecisionOutcome, decide_run
from pytest_embeval.run.pipeline import ArmFault, GoldenRun, Role
from pytest_embeval.run.shortlist import family_scope, shortlist_families, shortlist_method
from pytest_embeval.run.stratum_evaluation import StratumOutcome, evaluate_golden

MISSING_MODEL = (
    "no {role} model: pass --embeval-{role} SPEC, set embeval_{role} in the ini file, "
    "or override the embeval_{role} fixture in conftest.py"
)
#: The fixture gave several candidates: their names are needed before any fixture runs (node ids).
FIXTURE_SHORTLIST = (
    "the embeval_candidate fixture returned {count} candidates, but a fixture runs after the items are "
    "named: give a shortlist with the pytest_embeval_candidates hook in conftest.py, --embeval-candidate "
    "NAME=SPEC (repeated) or the ini key embeval_candidate"
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
    """A golden-set YAML file: loads and validates it, yields one item per stratum (per candidate and
    stratum, in a shortlist: each candidate's items together, in the candidates' order)."""

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
        candidates = self.config.stash[STATE].candidates
        # With one candidate the items are named by their strata alone, as they always were.
        shortlist = candidates if len(candidates) > 1 else ()
        for candidate in candidates:
            named = {"candidate": candidate, "shortlist": shortlist}
            suffix = f"[{candidate.name}]" if shortlist else ""
            for order, stratum in enumerate(strata):
                yield StratumItem.from_parent(
                    self,
                    name=stratum.name + suffix,
                    callobj=_check_item,
                    golden=golden,
                    stratum=stratum,
                    order=order,
                    judgments=judgments,
                    **named,
                )
            if golden.decision is not None:
                yield DecisionItem.from_parent(
                    self,
                    name=DECISION_ITEM + suffix,
                    callobj=_check_item,
                    golden=golden,
                    order=len(strata),
                    judgments=judgments,
                    **named,
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
    """An item of one golden set (of one candidate, in a shortlist); an error when its comparison could not
    be run.

    The golden set's arms are run once per process, in the setup of the first of its items that needs each
    (`golden_runs.GoldenArms`), so that a broken model is an error (pytest's ``E``), reported in full by the
    first of its items and in one line by the others; the call then only pairs the arms over the item's
    stratum, or reaches the decision.
    """

    def __init__(
        self,
        *,
        golden: GoldenSet,
        order: int,
        judgments: Record,
        candidate: NamedCandidate,
        shortlist: tuple[NamedCandidate, ...],
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._golden: GoldenSet | None = golden
        self.order = order
        #: where the judgments came from (`provenance.judgments_record`), for the report
        self.judgments = judgments
        #: the candidate this item compares with the incumbent
        self.candidate = candidate
        #: every candidate of the run, when there are several (a shortlist); () with one
        self.shortlist = shortlist
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
    def id(self) -> Any:
        """The structured node id of pytest 9.2 and later, as pytest reads it back from a string: a
        shortlist's item ``overall[small]`` is the name ``overall`` with the parameters ``small`` there
        (what ``--lf`` finds in its cache), not the name ``overall[small]`` a `pytest.Function` without a
        parametrization is given."""
        given = super().id
        return type(given).parse(str(given))

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
        arms = state.runs.get(self.golden_key)
        if arms is None:
            arms = state.runs[self.golden_key] = GoldenArms(self.golden, self.golden_path)
            arms.tested = _tested(self)
        self._run_arms(state, arms, self._needed(arms))
        failure = arms.failure(self.candidate.name)
        if failure is not None:
            message, in_full = failure.claim(self.nodeid, self.golden.name)
            if in_full:
                self.stash[ITEM_ERROR] = failure.record
            raise GoldenSetError(message)
        run = arms.comparisons[self.candidate.name]
        assert isinstance(run, GoldenRun)  # no failure: compared
        self.run = run

    def _needed(self, arms: GoldenArms) -> list[str]:
        """The candidates whose comparisons this item's verdict rests on: its own and, when every
        candidate's strata are one family, every candidate the session tests, in the shortlist's order
        after its own (so that processes starting on different candidates embed different models first)."""
        own = self.candidate.name
        if not self.shortlist or family_scope(self.golden) != "shortlist":
            return [own]
        names = [candidate.name for candidate in self.shortlist]
        after = names[names.index(own) :] + names[: names.index(own)]
        return [name for name in after if name == own or name in arms.tested]

    def _run_arms(self, state: EmbevalState, arms: GoldenArms, names: list[str]) -> None:
        """Run the arms ``names`` need that this process has not run yet (`GoldenArms.run`), with their
        warnings said once and what the embedding cache did noted on this item."""
        if not arms.pending(names):
            return
        before = state.cache.stats() if state.cache is not None else CacheStats()
        caught: list[warnings.WarningMessage] = []
        request = self.funcargs["request"]
        assert isinstance(request, pytest.FixtureRequest)
        try:
            with warnings.catch_warnings(record=True) as caught, self._progress(state):
                warnings.simplefilter("always", NoRelevantDocumentsWarning)
                arms.run(
                    names,
                    functools.partial(self._arm_named, request, state),
                    embedder=state.cache.embed if state.cache is not None else embed,
                    cache=state.cache,
                    labels=self._label,
                    tag=self._tagged,
                    keep_collections=state.settings.keep_collections,
                )
        finally:
            self._warn_once(caught)
            if state.cache is not None:
                self._note_cache_use(state.cache.stats() - before)

    def _arm_named(self, request: pytest.FixtureRequest, state: EmbevalState, name: str) -> Retriever:
        if name == INCUMBENT:
            # A fixture may build its model now: its steps are the arm's.
            with labelled("incumbent"):
                return _arm(request, state, "incumbent", None)
        candidate = next((one for one in self.shortlist if one.name == name), self.candidate)
        with labelled(self._label(name) or "candidate"):
            return _arm(request, state, "candidate", candidate)

    def _label(self, name: str) -> str | None:
        """How a candidate's steps and encoder errors name it: ``candidate NAME`` in a shortlist, else by
        its role alone."""
        return f"candidate {name}" if self.shortlist else None

    def _tagged(self, name: str, record: Record) -> Record:
        """A record of candidate ``name`` (its golden set's, an error's), tagged with its name and place in
        a shortlist; as it is with one candidate."""
        if not self.shortlist:
            return record
        order = [candidate.name for candidate in self.shortlist].index(name)
        return {**record, CANDIDATE_NAME: name, CANDIDATE_ORDER: order}

    def _named(self, record: Record) -> Record:
        """A stratum's or the decision's record, named by its candidate in a shortlist."""
        return {**record, CANDIDATE_NAME: self.candidate.name} if self.shortlist else record

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
        """The golden set's record (its candidate's comparison's, in a shortlist) if no item of this
        process has sent it yet."""
        assert self.run is not None  # set by setup
        state = self.config.stash[STATE]
        key = (self.golden_path, self.candidate.name)
        if key in state.sent_golden:
            return None
        state.sent_golden.add(key)
        record = {**golden_record(self.run, self.golden_path), "judgments": self.judgments}
        if self.shortlist:
            # The method the shortlist's family was adjusted by, which headings and notes name.
            record.update(
                multiple_comparisons=shortlist_method(self.golden), family_scope=family_scope(self.golden)
            )
        return self._tagged(self.candidate.name, record)

    def _evaluated(self) -> tuple[dict[str, StratumOutcome], DecisionOutcome | None]:
        """Every stratum's outcome and the declared decision of this item's candidate, reached once per
        process; in a shortlist, its family decided first with every candidate's strata in it."""
        assert self.run is not None  # set by setup
        state = self.config.stash[STATE]
        arms = state.runs[self.golden_key]
        name = self.candidate.name
        outcomes = arms.outcomes.get(name)
        if outcomes is None:
            method = shortlist_method(self.golden) if self.shortlist else None
            with self._progress(state):
                if self.shortlist and not arms.families_decided:
                    # The strata of the candidates this session tests (``-k`` may deselect some) that ran.
                    compared = {
                        ran: (arms.comparisons[ran], arms.tested[ran])
                        for ran in arms.ran([candidate.name for candidate in self.shortlist])
                        if ran in arms.tested
                    }
                    arms.families = shortlist_families(compared)  # type: ignore[arg-type]
                    arms.families_decided = True
                families = None if arms.families is None else arms.families.get(name)
                decided = evaluate_golden(self.run, arms.tested[name], families=families, method=method)
            outcomes = {outcome.stratum.name: outcome for outcome in decided}
            arms.outcomes[name] = outcomes
            if self.golden.decision is not None:
                target = arms.route_targets.get(name)
                evaluate = functools.partial(evaluate_golden, method=method)
                arms.decisions[name] = decide_run(self.run, list(outcomes.values()), target, evaluate)
        return outcomes, arms.decisions.get(name)

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
        if isinstance(excinfo.value, NotANumber):  # a number no verdict may rest on: one line, no traceback
            return f"{self.golden.name}: {self.name}: {excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.golden.name}::{self.name}"


def _tested(item: GoldenItem) -> dict[str, frozenset[str] | None]:
    """The candidates of ``item``'s golden file this session tests (``-k`` and ``--lf`` may deselect
    some), each with the strata its items test, or None when its decision item is tested: its decision
    rests on every stratum, so all of them are decided."""
    mine = [
        other
        for other in item.session.items
        if isinstance(other, GoldenItem) and other.golden_key == item.golden_key
    ]
    tested: dict[str, frozenset[str] | None] = {}
    for name in dict.fromkeys(other.candidate.name for other in mine):
        own = [other for other in mine if other.candidate.name == name]
        if any(isinstance(other, DecisionItem) for other in own):
            tested[name] = None
        else:
            tested[name] = frozenset(other.stratum.name for other in own if isinstance(other, StratumItem))
    return tested


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
        record = self._named(stratum_record(self.golden, self.golden_path, self.order, outcome))
        worse = outcome.ruling.verdict is Verdict.WORSE
        if worse and decision is not None and decision.outcome == ROUTED:
            record["covered_by_routing"] = True  # only then: a report without a decision keeps its shape
        self.user_properties.extend(stratum_properties(record))
        if outcome.ruling.verdict is Verdict.TIE:
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
        record = self._named(decision_record(self.golden, self.golden_path, decision))
        self.user_properties.extend(decision_properties(record))
        self.stash[ITEM_RECORDS] = ItemRecords(decision=record, golden=golden)
        if decision.outcome == CHANGE_TARGET:
            method = shortlist_method(self.golden) if self.shortlist else self.golden.multiple_comparisons
            settings = {"confidence": self.golden.confidence, "multiple_comparisons": method}
            raise EmbevalFailure(decision_failure(record, settings))


def _arm(
    request: pytest.FixtureRequest, state: EmbevalState, role: Role, candidate: NamedCandidate | None
) -> Retriever:
    """The arm's model: the command line's or ini file's spec (resolved when the session started), the
    candidate's model (a spec, an object, or a function that builds one, called now), else the session
    fixture of that name; resolved here once per process."""
    if role == "incumbent":
        spec: object = state.settings.incumbent or request.getfixturevalue("embeval_incumbent")
    else:
        assert candidate is not None
        spec = candidate.model
        if spec is None:
            spec = request.getfixturevalue("embeval_candidate")
            if isinstance(spec, (Mapping, list, tuple)):
                raise ArmFault(role, None, FIXTURE_SHORTLIST.format(count=len(spec)))
    if spec is None:
        raise ArmFault(role, None, MISSING_MODEL.format(role=role))
    if isinstance(spec, str) and spec in state.unresolved:
        raise ArmFault(role, spec, state.unresolved[spec])
    key = spec if isinstance(spec, str) else id(spec)
    if key not in state.arms:
        shown = (
            spec if isinstance(spec, str) else f"{type(spec).__qualname__} from the embeval_{role} fixture"
        )
        if isinstance(spec, (types.FunctionType, types.MethodType, functools.partial)):
            spec, shown = _built(spec, role)
        try:
            state.arms[key] = resolve_arm(spec, device=state.settings.device)
        except EncoderError as error:
            raise ArmFault(role, shown, f"{role} model: {error}") from error
    return state.arms[key]


def _built(build: Any, role: Role) -> tuple[object, str]:
    """The model a function of the ``pytest_embeval_candidates`` hook builds, built now, and how messages
    name it; whatever it raises is its candidate's `ArmFault`, so the other candidates still run."""
    shown = str(getattr(build, "__qualname__", getattr(getattr(build, "func", None), "__qualname__", "")))
    shown = shown or type(build).__qualname__
    try:
        return build(), shown
    except Exception as error:
        raise ArmFault(role, shown, f"{role} model: {shown}() raised {error_summary(error)}") from error


def release_golden_sets(items: Iterable[pytest.Item], state: EmbevalState) -> None:
    """Drop what ran the golden sets (their documents, both arms' results) once every item has run: the
    outputs are written from the records alone, and pytest's own garbage collections at the end (five and
    more, after the summary) would otherwise walk every document: 0.4 s at 200,000 documents."""
    state.runs.clear()
    for item in items:
        if isinstance(item, GoldenItem):
            item.release()
