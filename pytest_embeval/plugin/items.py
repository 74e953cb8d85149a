"""The pytest side of a golden set: one `GoldenFile` collector per YAML file, one `StratumItem` per stratum.

All strata of a file share one `GoldenRun` per process (each arm embeds the corpus once); the item turns
its stratum's verdict into a pytest outcome: BETTER passes, WORSE fails with a table a person can act on,
TIE passes and is reported under its own status by `session.SessionHooks.pytest_report_teststatus`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.arms.embedding import EncoderError, embed
from pytest_embeval.arms.rerank import RerankError
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Embedder, RecallTargetError, Retriever
from pytest_embeval.cache.store import CacheStats
from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet, Stratum
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
from pytest_embeval.reports.json_report import Record, error_record, golden_record, stratum_record
from pytest_embeval.reports.progress import PROGRESS_MIN_TEXTS, ProgressLine
from pytest_embeval.reports.terminal import stratum_failure
from pytest_embeval.run.control import ControlMismatch
from pytest_embeval.run.pipeline import ArmFault, GoldenRun, Role, run_golden
from pytest_embeval.run.stratum_evaluation import evaluate_golden

MISSING_MODEL = (
    "no {role} model: pass --embeval-{role} SPEC, set embeval_{role} in the ini file, "
    "or override the embeval_{role} fixture in conftest.py"
)


class EmbevalFailure(Exception):
    """A WORSE stratum; its text is the whole failure report."""


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
            judgments = golden_judgments(golden)
        except GoldenError as error:
            # Name the file as the user typed it, relative to where pytest was started.
            shown = os.path.relpath(error.path, self.config.invocation_params.dir)
            raise self.CollectError(str(GoldenError(shown, error.key, error.line, error.problem))) from None
        for order, stratum in enumerate(golden.strata()):
            yield StratumItem.from_parent(
                self,
                name=stratum.name,
                callobj=_check_stratum,
                golden=golden,
                stratum=stratum,
                order=order,
                judgments=judgments,
            )


def _check_stratum(request: pytest.FixtureRequest) -> None:
    """Run by pytest as the item's test function; `request` gives the item access to the model fixtures."""
    item = request.node
    assert isinstance(item, StratumItem)
    item.check()


class StratumItem(pytest.Function):
    """One stratum of one golden set: passes (BETTER), fails (WORSE) or ties; an error when the golden set
    could not be run.

    The golden set is run once per process, in the setup of the first of its items that runs there, so that
    a broken model is an error (pytest's ``E``), reported in full by that item and in one line by the others;
    the call then only pairs the arms over the item's stratum.
    """

    def __init__(
        self, *, golden: GoldenSet, stratum: Stratum, order: int, judgments: Record, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._golden: GoldenSet | None = golden
        self.stratum = stratum
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
        try:
            return self._run_golden(state)
        except (ArmFault, RerankError, ControlMismatch, RecallTargetError) as error:
            record = error_record(self.golden, self.golden_path, error)
            self.stash[ITEM_ERROR] = record
            return FailedRun(self.nodeid, f"{self.golden.name}: {record['message']}")
        finally:
            if state.cache is not None:
                self._note_cache_use(state.cache.stats() - before)

    def check(self) -> None:
        assert self.run is not None  # set by setup
        state = self.config.stash[STATE]
        golden = None
        if self.golden_path not in state.sent_golden:
            state.sent_golden.add(self.golden_path)
            golden = {**golden_record(self.run, self.golden_path), "judgments": self.judgments}
        outcomes = state.outcomes.get(self.golden_key)
        if outcomes is None:
            # The strata of a file are decided as one family, so all of them are evaluated at once.
            outcomes = {outcome.stratum.name: outcome for outcome in evaluate_golden(self.run)}
            state.outcomes[self.golden_key] = outcomes
        outcome = outcomes[self.stratum.name]
        record = stratum_record(self.golden, self.golden_path, self.order, outcome)
        self.stash[ITEM_RECORDS] = ItemRecords(stratum=record, golden=golden)
        if outcome.decision.verdict is Verdict.WORSE:
            raise EmbevalFailure(stratum_failure(record))

    def _run_golden(self, state: EmbevalState) -> GoldenRun:
        request = self.funcargs["request"]
        assert isinstance(request, pytest.FixtureRequest)
        incumbent = _arm(request, state, "incumbent")
        candidate = _arm(request, state, "candidate")
        embedder: Embedder = state.cache.embed if state.cache is not None else embed
        return run_golden(
            self.golden,
            incumbent,
            candidate,
            embedder=embedder,
            progress=self._progress(state),
            cache=state.cache,
        )

    def _note_cache_use(self, used: CacheStats) -> None:
        # User properties travel with the item's reports, to the xdist controller too: see cache_totals.
        for field, name in CACHE_PROPERTIES.items():
            value = getattr(used, field)
            if value:
                self.user_properties.append((name, value))

    def _progress(self, state: EmbevalState) -> ProgressLine | None:
        if not state.settings.progress or len(self.golden.documents) < PROGRESS_MIN_TEXTS:
            return None
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:  # an xdist worker has no terminal
            return None
        return ProgressLine(self.golden.name, reporter, capture)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, EmbevalFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.golden.name}::{self.stratum.name}"


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
    for item in items:
        if isinstance(item, StratumItem):
            item.release()
