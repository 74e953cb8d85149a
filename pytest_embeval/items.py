"""The pytest side of a golden set: one `GoldenFile` collector per YAML file, one `StratumItem` per stratum.

All strata of a file share one `GoldenRun` per process (each arm embeds the corpus once); the item turns
its stratum's verdict into a pytest outcome: BETTER passes, WORSE fails with a table a person can act on,
TIE passes and is reported under its own status by `session.SessionHooks.pytest_report_teststatus`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_embeval.cache import CacheStats
from pytest_embeval.encoders import Arm, EncoderError, embed, resolve_model
from pytest_embeval.golden import GoldenError, GoldenSet, Stratum, load_golden
from pytest_embeval.pipeline import (
    ControlMismatch,
    Embedder,
    GoldenRun,
    RecallTargetError,
    Role,
    run_golden,
)
from pytest_embeval.progress import PROGRESS_MIN_TEXTS, ProgressLine
from pytest_embeval.provenance import golden_judgments
from pytest_embeval.report import Record, golden_record, stratum_record
from pytest_embeval.session import CACHE_PROPERTIES, ITEM_RECORDS, STATE, EmbevalState, ItemRecords
from pytest_embeval.strata import evaluate_golden
from pytest_embeval.terminal import stratum_failure
from pytest_embeval.verdict import Verdict

MISSING_MODEL = (
    "no {role} model: pass --embeval-{role} SPEC, set embeval_{role} in the ini file, "
    "or override the embeval_{role} fixture in conftest.py"
)


class EmbevalFailure(Exception):
    """A stratum that failed for a reason the user must act on; its text is the whole failure report."""


class GoldenFile(pytest.File):
    """A golden-set YAML file: loads and validates it, yields one item per stratum."""

    def collect(self) -> Iterator[pytest.Item]:
        try:
            golden = load_golden(self.path)
            judgments = golden_judgments(self.path, golden)
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
    item.check(request)


class StratumItem(pytest.Function):
    """One stratum of one golden set: passes (BETTER), fails (WORSE) or ties."""

    def __init__(
        self, *, golden: GoldenSet, stratum: Stratum, order: int, judgments: Record, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.golden = golden
        self.stratum = stratum
        self.order = order
        #: where the judgments came from (`provenance.judgments_record`), for the report
        self.judgments = judgments

    @property
    def golden_path(self) -> str:
        """The golden file as node ids name it (rootdir-relative, '/'-separated), alike on every worker."""
        return self.nodeid.split("::", 1)[0]

    def check(self, request: pytest.FixtureRequest) -> None:
        state = self.config.stash[STATE]
        run = state.runs.get(self.golden_path)
        if run is None:
            before = state.cache.stats() if state.cache is not None else CacheStats()
            try:
                run = self._run_golden(request, state)
            except (EncoderError, EmbevalFailure, ControlMismatch, RecallTargetError) as error:
                run = EmbevalFailure(f"{self.golden.name}: {error}")
            finally:
                if state.cache is not None:
                    self._note_cache_use(state.cache.stats() - before)
            state.runs[self.golden_path] = run
        if isinstance(run, Exception):
            raise run
        golden = None
        if self.golden_path not in state.sent_golden:
            state.sent_golden.add(self.golden_path)
            golden = {**golden_record(run, self.golden_path), "judgments": self.judgments}
        outcomes = state.outcomes.get(self.golden_path)
        if outcomes is None:
            # The strata of a file are decided as one family, so all of them are evaluated at once.
            outcomes = {outcome.stratum.name: outcome for outcome in evaluate_golden(run)}
            state.outcomes[self.golden_path] = outcomes
        outcome = outcomes[self.stratum.name]
        record = stratum_record(self.golden, self.golden_path, self.order, outcome)
        self.stash[ITEM_RECORDS] = ItemRecords(stratum=record, golden=golden)
        if outcome.decision.verdict is Verdict.WORSE:
            raise EmbevalFailure(stratum_failure(record))

    def _run_golden(self, request: pytest.FixtureRequest, state: EmbevalState) -> GoldenRun:
        incumbent = _arm(request, state, "incumbent")
        candidate = _arm(request, state, "candidate")
        embedder: Embedder = state.cache.embed if state.cache is not None else embed
        return run_golden(
            self.golden, incumbent, candidate, embedder=embedder, progress=self._progress(state)
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


def _arm(request: pytest.FixtureRequest, state: EmbevalState, role: Role) -> Arm:
    """The arm's model: command line or ini spec if given, else the session fixture of that name."""
    spec: object = getattr(state.settings, role) or request.getfixturevalue(f"embeval_{role}")
    if spec is None:
        raise EmbevalFailure(MISSING_MODEL.format(role=role))
    key = spec if isinstance(spec, str) else id(spec)
    if key not in state.arms:
        state.arms[key] = resolve_model(spec)
    return state.arms[key]
