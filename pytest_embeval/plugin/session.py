"""One place where worker records become the report: the session's state and the hooks that need it; the
end-of-session writing of every output is `session_outputs`'.

Registered by the plugin only with ``--embeval``. Each stratum item leaves its records (plain Python types) in
its stash; `SessionHooks.pytest_runtest_makereport` attaches them to the item's report, which pytest-xdist
carries to the controller; `pytest_runtest_logreport` collects them there (serially, from the session's own
items). At the end, the controller alone merges them into one report (`json_report.build_report`) and
`session_outputs` prints and writes every output from that report: terminal tables, coverage warnings, the
JSON report, TREC runs, pool sheets, and the embedding cache's summary.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.arms.candidates import CandidateError, NamedCandidate, name_candidates
from pytest_embeval.arms.dense import DenseRetriever
from pytest_embeval.arms.devices import DEFAULT_DEVICE, DeviceError, resolve_device
from pytest_embeval.arms.embedding import Arm, EncoderError
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Retriever
from pytest_embeval.files.digests import remember_in
from pytest_embeval.files.output_paths import clash
from pytest_embeval.golden.decision_spec import PROCEED, ROUTED
from pytest_embeval.plugin.options import Settings
from pytest_embeval.plugin.session_outputs import input_clash, write_outputs
from pytest_embeval.plugin.state import (
    FIXTURE_CANDIDATE,
    ITEM_ERROR,
    ITEM_RECORDS,
    STATE,
    EmbevalState,
    GoldenSetError,
)
from pytest_embeval.plugin.terminal_progress import spec_progress
from pytest_embeval.reports.json_report import Record
from pytest_embeval.reports.shortlist import CANDIDATE_NAME
from pytest_embeval.reports.terminal import (
    device_line,
)


def start(config: pytest.Config, settings: Settings) -> None:
    """Set up the session's state and register its hooks (called by the plugin with --embeval).

    The models named on the command line or in the ini file are resolved now, before anything is collected
    or embedded (cheaply: a model folder is fingerprinted from its files, not loaded), so a spec that does not
    resolve is a usage error (exit 4), never a failure of the items.
    """
    state = EmbevalState(settings=settings)
    where = "--embeval-device" if config.getoption("--embeval-device") else "embeval_device (ini file)"
    try:
        resolve_device(settings.device)
    except DeviceError as error:
        raise pytest.UsageError(f"{where}: {error}") from None
    # Model files' digests (their fingerprints) are remembered beside the embeddings they key.
    remember_in(settings.cache_dir / "digests" if settings.cache_dir is not None else None)
    candidates, given = _candidates(config, settings)
    state.candidates = candidates or (FIXTURE_CANDIDATE,)
    specs = [(settings.incumbent, "--embeval-incumbent", "embeval_incumbent (ini file)")]
    specs += [(candidate.spec, *given) for candidate in candidates]
    for spec, option, ini in specs:
        if spec is None or spec in state.arms:
            continue
        where = option if option.startswith("--") and config.getoption(option) else ini
        try:
            with spec_progress(config, where, spec, shown=settings.progress):
                state.arms[spec] = ready_arm(spec, settings.device)
        except EncoderError as error:
            if hasattr(config, "workerinput"):
                # The controller resolved it, this worker cannot (another host, another environment): a
                # worker that fails to configure is restarted again and again, so its items report it.
                state.unresolved[spec] = f"{where}: {error}"
            else:
                raise pytest.UsageError(f"{where}: {error}") from None
    if not hasattr(config, "workerinput"):  # the controller checked: a worker refusing would be restarted
        problem = clash(settings.outputs(), folders=model_folders(state.arms))
        if problem is not None:
            raise pytest.UsageError(problem)
    config.stash[STATE] = state
    config.pluginmanager.register(SessionHooks(config, state), "embeval-session")
    # pytest-html is active when installed and writing a report (--html), which only its controller does.
    html_report = config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None)
    if html_report and not hasattr(config, "workerinput"):
        from pytest_embeval.plugin.pytest_html import PytestHtmlSection

        config.pluginmanager.register(PytestHtmlSection(state), "embeval-pytest-html")


def _candidates(
    config: pytest.Config, settings: Settings
) -> tuple[tuple[NamedCandidate, ...], tuple[str, str]]:
    """The run's candidates and where they were given (the option and the ini key that name them, for a
    spec's error): the command line's or ini file's, else the ``pytest_embeval_candidates`` hook's (named
    now, so that a clash is a usage error before anything runs); () leaves it to the fixture."""
    if settings.candidates:
        return settings.candidates, ("--embeval-candidate", "embeval_candidate (ini file)")
    hook = "pytest_embeval_candidates"
    given = config.hook.pytest_embeval_candidates(config=config)
    if given is None:
        return (), (hook, hook)
    if isinstance(given, str) or not isinstance(given, (Mapping, list, tuple)):
        raise pytest.UsageError(
            f"{hook} returned {type(given).__qualname__}: return a mapping of name to model, or a list of "
            "models"
        )
    try:
        return name_candidates(given, hook), (hook, hook)
    except CandidateError as error:
        raise pytest.UsageError(str(error)) from None


def schedule_by_candidate(config: pytest.Config) -> None:
    """Hand a shortlist's items to pytest-xdist's workers by golden file and candidate
    (`xdist_scheduling`), where xdist was left to choose how (its default ``load``)."""
    config.pluginmanager.register(CandidateScheduler(), "embeval-scheduler")


class CandidateScheduler:
    """Gives pytest-xdist's controller the `xdist_scheduling.CandidateScheduling`."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from pytest_embeval.plugin.xdist_scheduling import CandidateScheduling

        return CandidateScheduling(config, log)


def ready_arm(spec: str, device: str = DEFAULT_DEVICE) -> Retriever:
    """The arm of a command-line or ini spec, with everything it needs to run that can be known now: an
    endpoint arm's key variable must be set, a fused arm's parts' too (else `EncoderError`, as for a spec
    that does not resolve, or a ``bm25`` spec without its extra), and its device must exist."""
    arm = resolve_arm(spec, device=device)
    # Only that module builds an endpoint arm: without it loaded there is none (and it is not imported).
    endpoint = sys.modules.get("pytest_embeval.arms.endpoint")
    for part in _embedding_arms(arm):
        if endpoint is not None and isinstance(part.encoder, endpoint.EndpointEncoder):
            missing = part.encoder.missing_key()
            if missing is not None:
                raise EncoderError(f"model spec {part.spec!r}: {missing}")
    return arm


def model_folders(arms: Mapping[Any, Retriever]) -> dict[Path, str]:
    """The folders of the local models among ``arms`` (by spec), resolved, with what each is."""
    folders: dict[Path, str] = {}
    for arm in arms.values():
        for part in _embedding_arms(arm):
            folder = Path(part.spec)
            with contextlib.suppress(OSError, ValueError):
                if folder.is_dir():
                    folders.setdefault(folder.resolve(), f"the model folder of {part.spec!r}")
    return folders


def _embedding_arms(arm: Retriever) -> list[Arm]:
    """The embedding models an arm runs: itself, or a fused arm's parts', depth first."""
    if isinstance(arm, DenseRetriever):
        return [arm.arm]
    return [model for part in arm.parts for model in _embedding_arms(part)]


class SessionHooks:
    """The hooks that need the session's state; registered only with --embeval."""

    def __init__(self, config: pytest.Config, state: EmbevalState) -> None:
        self.config = config
        self.state = state
        #: whether the outputs were checked against the golden sets' inputs (by the xdist controller)
        self.inputs_checked = False
        #: whether a golden file failed to collect (serially, or on an xdist worker)
        self.golden_collection_failed = False
        self.session: pytest.Session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, Any]:
        report = yield
        # Plain-typed attributes on a TestReport travel to the xdist controller with the report.
        records = item.stash.get(ITEM_RECORDS, None)
        if call.when == "call" and records is not None:
            report.embeval_record = records.stratum
            report.embeval_golden = records.golden
            report.embeval_decision = records.decision
            del item.stash[ITEM_RECORDS]  # the report carries them from here (see `forget_records`)
        failed = call.excinfo.value if call.excinfo is not None else None
        if call.when == "setup" and isinstance(failed, GoldenSetError):
            report.longrepr = str(failed)  # one line, no traceback: nothing in our code failed
            error = item.stash.get(ITEM_ERROR, None)
            if error is not None:
                report.embeval_error = error
        return report

    def pytest_report_header(self) -> list[str]:
        state = self.state
        arms: dict[str, tuple[str | None, str]] = {
            "incumbent": (state.settings.incumbent, "the embeval_incumbent fixture's")
        }
        # The hook's models are built when first needed: named together, as the hook's.
        built = [
            candidate.name
            for candidate in state.candidates
            if candidate.model is not None and not candidate.spec
        ]
        for candidate in state.candidates:
            if candidate.name in built[1:]:
                continue
            role = "candidate" if len(state.candidates) == 1 else f"candidate {candidate.name}"
            if candidate.name in built[:1] and len(built) > 1:
                role = f"candidates {', '.join(built)}"
            unresolved = (
                "the embeval_candidate fixture's"
                if candidate is FIXTURE_CANDIDATE
                else "the pytest_embeval_candidates hook's"
            )
            arms[role] = (candidate.spec, unresolved)
        devices: dict[str, Any] = {}
        for role, (spec, unresolved) in arms.items():
            arm = state.arms.get(spec) if spec is not None else None
            models = _embedding_arms(arm) if arm is not None else []
            record = next((model.device for model in models if model.device is not None), None)
            if record is not None:
                devices[role] = record.as_dict()
            else:
                devices[role] = "its own device" if spec is not None else unresolved
        return [device_line(state.settings.device, devices)]

    def pytest_unconfigure(self) -> None:
        remember_in(None)  # the next session in this process (pytester's) names its own folder
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        forget_records(self.state, [] if reporter is None else reporter.stats.values())

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Serially: refuse an output naming an input of a collected golden set (exit 4), before any work."""
        if hasattr(self.config, "workerinput"):  # the xdist controller checks, below
            return
        from pytest_embeval.plugin.items import StratumItem

        golden_files = {item.path for item in items if isinstance(item, StratumItem)}
        outputs = self.state.settings.outputs()
        problem = input_clash(outputs, golden_files, self.config.invocation_params.dir)
        if problem is not None:
            raise pytest.UsageError(problem)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: Sequence[str]) -> None:
        """On the xdist controller, as the first worker's collection arrives and before anything is
        scheduled: the same refusal, the golden files named by the collected items' ids."""
        if self.inputs_checked:
            return
        self.inputs_checked = True
        rootpath = self.config.rootpath
        golden_files = {
            Path(os.path.normpath(rootpath / nodeid.split("::", 1)[0]))
            for nodeid in ids
            if nodeid.split("::", 1)[0].endswith((".yaml", ".yml"))
        }
        outputs = self.state.settings.outputs()
        problem = input_clash(outputs, golden_files, self.config.invocation_params.dir)
        if problem is not None:
            # A UsageError raised here would be an internal error of xdist's loop: exit as pytest's does.
            sys.stderr.write(f"ERROR: {problem}\n")
            pytest.exit("usage error", returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pytest_embeval.plugin.items import release_golden_sets

        release_golden_sets(session.items, self.state)
        # pytest interrupts a session whose collection failed (exit 2, "invalid golden file or data");
        # pytest-xdist counts a worker's collection error as a failure (exit 1): the contract is pytest's.
        if self.golden_collection_failed and session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = pytest.ExitCode.INTERRUPTED

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # On the xdist controller, called with the workers' failed collection reports.
        if report.failed and report.nodeid.split("::", 1)[0].endswith((".yaml", ".yml")):
            self.golden_collection_failed = True

    def pytest_report_teststatus(
        self, report: pytest.TestReport
    ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
        if report.when != "call":
            return None
        decision = getattr(report, "embeval_decision", None)
        if decision is not None:
            return decision_status(decision)
        record = getattr(report, "embeval_record", None)
        if record is None:
            return None
        verdict = record["verdict"]
        if verdict == "TIE":
            return "tie", "t", ("TIE", {"yellow": True})
        if verdict == "BETTER":
            return "passed", ".", ("BETTER", {"green": True})
        if record.get("covered_by_routing"):
            return "routed", "r", ("ROUTED", {"yellow": True})
        return "failed", "F", ("WORSE", {"red": True})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # On the xdist controller this sees every worker's reports; serially, the session's own.
        record = getattr(report, "embeval_record", None)
        if record is not None:
            self.state.stratum_records[report.nodeid] = record
        golden = getattr(report, "embeval_golden", None)
        if golden is not None:
            self.state.golden_records.setdefault(_entry(golden, "path"), golden)
        error = getattr(report, "embeval_error", None)
        if error is not None:
            self.state.error_records.setdefault(_entry(error, "path"), error)
        decision = getattr(report, "embeval_decision", None)
        if decision is not None:
            self.state.decision_records[_entry(decision, "golden")] = decision

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if hasattr(self.config, "workerinput"):  # only the controller prints and writes
            return
        # An output that could not be written fails a run that would pass: its report is missing (exit 4,
        # as for an output refused at the start); a failing run keeps its own status.
        if not write_outputs(self.state, terminalreporter) and self.session.exitstatus == pytest.ExitCode.OK:
            self.session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _entry(record: Mapping[str, Any], path: str) -> tuple[str, str]:
    """The golden-set entry a record belongs to: its golden file's path, and a shortlist's candidate."""
    return str(record[path]), str(record.get(CANDIDATE_NAME, ""))


#: What a report carries for the session's outputs (see `SessionHooks.pytest_runtest_makereport`).
REPORT_RECORDS = ("embeval_record", "embeval_golden", "embeval_error", "embeval_decision")


def decision_status(record: Record) -> tuple[str, str, tuple[str, dict[str, bool]]]:
    """The decision item's status: passed to proceed, ``routed`` (its own word, as ``tie`` has) to proceed
    with routing, failed to change the target."""
    word = record["word"]
    if record["outcome"] == PROCEED:
        return "passed", ".", (word, {"green": True})
    if record["outcome"] == ROUTED:
        return "routed", "r", (word, {"yellow": True})
    return "failed", "F", (word, {"red": True})


def forget_records(state: EmbevalState, reports: Iterable[Iterable[object]]) -> None:
    """Drop the records once the outputs are written, the state's and those the reports carry (the
    terminal reporter keeps every report to the end): pytest's closing garbage collections would walk
    every query's ranked documents and similarities, twice (30 ms for the shipped golden sets)."""
    state.golden_records.clear()
    state.stratum_records.clear()
    state.error_records.clear()
    state.decision_records.clear()
    for report in itertools.chain.from_iterable(reports):
        for name in REPORT_RECORDS:
            with contextlib.suppress(AttributeError):
                delattr(report, name)
