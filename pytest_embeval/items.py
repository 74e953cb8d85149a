"""The pytest side of a golden set: one `GoldenFile` collector per YAML file, one `StratumItem` per stratum.

All strata of a file share one `GoldenRun` per process (each arm embeds the corpus once); the item turns
its stratum's verdict into a pytest outcome: BETTER passes, WORSE fails with a table a person can act on,
TIE passes and is reported under its own status by the plugin's `pytest_report_teststatus`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval import judging
from pytest_embeval.cache import CacheStats, EmbeddingCache
from pytest_embeval.encoders import Arm, EncoderError, embed, resolve_model
from pytest_embeval.golden import GoldenError, GoldenSet, Stratum, load_golden
from pytest_embeval.options import Settings
from pytest_embeval.output import write_atomic
from pytest_embeval.pipeline import ControlMismatch, Embedder, GoldenRun, Role, evaluate_stratum, run_golden
from pytest_embeval.plugin import STATE
from pytest_embeval.report import (
    ROLES,
    Record,
    build_report,
    file_stem,
    golden_record,
    golden_table,
    report_json,
    run_file_name,
    stratum_failure,
    stratum_record,
    trec_run,
)
from pytest_embeval.verdict import Verdict

#: Corpora at least this long get a progress line while they are encoded.
PROGRESS_MIN_TEXTS = 256
#: Seconds between progress lines when the output is not a terminal (a CI log).
PROGRESS_LOG_SECONDS = 10.0

#: The item that ran a golden set carries what the embedding cache did meanwhile as user properties with
#: these names (ints, or a str for the write error), so the xdist controller can sum them over workers.
CACHE_PROPERTIES = {
    "read": "embeval_cache_read",
    "embedded": "embeval_cache_embedded",
    "corrupt": "embeval_cache_corrupt",
    "write_error": "embeval_cache_write_error",
}

MISSING_MODEL = (
    "no {role} model: pass --embeval-{role} SPEC, set embeval_{role} in the ini file, "
    "or override the embeval_{role} fixture in conftest.py"
)


@dataclasses.dataclass
class EmbevalState:
    """Per-process state of one session, kept in `config.stash`."""

    settings: Settings
    #: the embedding cache (None with --embeval-no-cache); it touches the disk only when first used
    cache: EmbeddingCache | None = dataclasses.field(init=False)
    arms: dict[Any, Arm] = dataclasses.field(default_factory=dict)
    runs: dict[str, GoldenRun | Exception] = dataclasses.field(default_factory=dict)
    #: golden paths whose golden record this process has already attached to a report
    sent_golden: set[str] = dataclasses.field(default_factory=set)
    #: what the controller received, from its own items or from xdist workers
    golden_records: dict[str, Record] = dataclasses.field(default_factory=dict)
    stratum_records: dict[str, Record] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        cache_dir = self.settings.cache_dir
        self.cache = EmbeddingCache(cache_dir) if cache_dir is not None else None


class EmbevalFailure(Exception):
    """A stratum that failed for a reason the user must act on; its text is the whole failure report."""


class GoldenFile(pytest.File):
    """A golden-set YAML file: loads and validates it, yields one item per stratum."""

    def collect(self) -> Iterator[pytest.Item]:
        try:
            golden = load_golden(self.path)
        except GoldenError as error:
            # Name the file as the user typed it, relative to where pytest was started.
            shown = os.path.relpath(error.path, self.config.invocation_params.dir)
            raise self.CollectError(str(GoldenError(shown, error.key, error.line, error.problem))) from None
        for order, stratum in enumerate(golden.strata()):
            yield StratumItem.from_parent(
                self, name=stratum.name, callobj=_check_stratum, golden=golden, stratum=stratum, order=order
            )


def _check_stratum(request: pytest.FixtureRequest) -> None:
    """Run by pytest as the item's test function; `request` gives the item access to the model fixtures."""
    item = request.node
    assert isinstance(item, StratumItem)
    item.check(request)


class StratumItem(pytest.Function):
    """One stratum of one golden set: passes (BETTER), fails (WORSE) or ties."""

    def __init__(self, *, golden: GoldenSet, stratum: Stratum, order: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.golden = golden
        self.stratum = stratum
        self.order = order
        self.record: Record | None = None
        self.golden_record: Record | None = None

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
            except (EncoderError, EmbevalFailure, ControlMismatch) as error:
                run = EmbevalFailure(f"{self.golden.name}: {error}")
            finally:
                if state.cache is not None:
                    self._note_cache_use(state.cache.stats() - before)
            state.runs[self.golden_path] = run
        if isinstance(run, Exception):
            raise run
        if self.golden_path not in state.sent_golden:
            state.sent_golden.add(self.golden_path)
            self.golden_record = golden_record(run, self.golden_path)
        outcome = evaluate_stratum(run, self.stratum)
        self.record = stratum_record(self.golden, self.golden_path, self.order, outcome)
        if outcome.decision.verdict is Verdict.WORSE:
            raise EmbevalFailure(stratum_failure(self.record))

    def _run_golden(self, request: pytest.FixtureRequest, state: EmbevalState) -> GoldenRun:
        incumbent = _arm(request, state, "incumbent")
        candidate = _arm(request, state, "candidate")
        embedder: Embedder = state.cache.embed if state.cache is not None else embed
        return run_golden(
            self.golden, incumbent, candidate, embedder=embedder, progress=self._progress(state)
        )

    def _note_cache_use(self, used: CacheStats) -> None:
        # User properties travel with the item's reports, to the xdist controller too: see write_outputs.
        for field, name in CACHE_PROPERTIES.items():
            value = getattr(used, field)
            if value:
                self.user_properties.append((name, value))

    def _progress(self, state: EmbevalState) -> _ProgressLine | None:
        if not state.settings.progress or len(self.golden.documents) < PROGRESS_MIN_TEXTS:
            return None
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:  # an xdist worker has no terminal
            return None
        return _ProgressLine(self.golden.name, reporter, capture)

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


class _ProgressLine:
    """Encoding progress on the terminal, past pytest's output capture (as live logging does).

    On a terminal one line is rewritten in place; in a CI log, where that would be noise, a line is printed
    when an arm starts a long list of texts, at most every `PROGRESS_LOG_SECONDS` after, and when it ends.
    The rate counts from the first report, which comes after the first batch: its duration is unknown.
    """

    def __init__(self, name: str, reporter: Any, capture: Any) -> None:
        self.name = name
        self.reporter = reporter
        self.capture = capture
        self.tty = sys.stdout.isatty()
        #: (time, texts done) at this list's first report, and the time of the last line printed
        self.first: tuple[float, int] | None = None
        self.logged = 0.0

    def __call__(self, role: str, kind: str, done: int, total: int) -> None:
        if total < PROGRESS_MIN_TEXTS:
            return
        now = time.perf_counter()
        finished = done >= total
        if self.first is None:
            self.first = (now, done)
        elif not (self.tty or finished or now - self.logged >= PROGRESS_LOG_SECONDS):
            return
        self.logged = now
        since, base = self.first
        rate = f" ({(done - base) / (now - since):,.0f}/s)" if now > since else ""
        text = f"embeval {self.name}: {role} encoding {kind} texts {done:,}/{total:,}{rate}"
        with self.capture.global_and_fixture_disabled():
            if self.tty:
                self.reporter.write(f"\r{text}", flush=True)
                if finished:
                    self.reporter.write("\n")
            else:
                self.reporter.write_line(text)
        if finished:
            self.first = None


def write_outputs(state: EmbevalState, reporter: pytest.TerminalReporter) -> None:
    """On the controller at the end of the session: the per-golden-set tables, the JSON report, the runs,
    and what the embedding cache did."""
    settings = state.settings
    cache_lines = [] if settings.cache_dir is None else cache_summary(settings.cache_dir, reporter)
    report = build_report(state.golden_records.values(), state.stratum_records.values())
    if not (report["golden_sets"] or cache_lines):
        return
    reporter.write_sep("=", "embeval")
    for line in cache_lines:
        reporter.write_line(line)
    for record in report["golden_sets"]:
        for line in golden_table(record, record["strata"]):
            reporter.write_line(line)
        golden = load_golden(reporter.config.rootpath / record["path"])
        rankings = judging.rankings_from_record(record)
        _coverage(golden, record, rankings, settings, reporter)
        if settings.pool_dir is not None:
            _pool(golden, record, rankings, settings.pool_dir, settings.pool_depth, reporter)
        reporter.write_line("")
    if not report["golden_sets"]:  # every golden set failed: no report rather than an empty one
        return
    if settings.json_path is not None:
        settings.json_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(settings.json_path, report_json(report))
        reporter.write_line(f"embeval: JSON report written to {settings.json_path}")
    if settings.runs_dir is not None:
        settings.runs_dir.mkdir(parents=True, exist_ok=True)
        for golden in report["golden_sets"]:
            for role in ROLES:
                write_atomic(settings.runs_dir / run_file_name(golden, role), trec_run(golden, role))
        reporter.write_line(f"embeval: TREC run files written to {settings.runs_dir}")


def _coverage(
    golden: GoldenSet,
    record: Record,
    rankings: judging.Rankings,
    settings: Settings,
    reporter: pytest.TerminalReporter,
) -> None:
    """Each arm's judged@k per stratum, into the report, and a warning when one arm was not pooled."""
    rows = judging.coverage(golden, rankings, k=golden.metric.k)
    record["coverage"] = [dataclasses.asdict(row) for row in rows]
    report_path = None if settings.json_path is None else str(settings.json_path)
    for warning in judging.coverage_warnings(rows, golden_path=record["path"], report_path=report_path):
        reporter.write_line(f"embeval: WARNING: {warning}", yellow=True)


def _pool(
    golden: GoldenSet,
    record: Record,
    rankings: judging.Rankings,
    folder: Path,
    depth: int,
    reporter: pytest.TerminalReporter,
) -> None:
    """A blind judging sheet of what this run retrieved and nobody judged yet, as `embeval pool` writes it.

    Never overwrites a sheet (it may hold grades): pairs on earlier, unmerged sheets of this golden set in
    the folder are left out, and the new sheet gets the next free name.
    """
    # Named after the golden file only: the name must not tell a judge which arm retrieved what.
    stem = file_stem(record)
    earlier = sorted(folder.glob(f"{stem}.pool*.csv"))
    try:
        exclude = judging.sheet_pairs([judging.read_sheet(path) for path in earlier])
    except judging.SheetError as error:
        for problem in error.problems:
            reporter.write_line(f"embeval pool: {problem}", red=True)
        return
    pool = judging.pool_from_rankings(golden, rankings, depth=depth, exclude=exclude)
    for line in judging.pool_lines(pool):
        reporter.write_line(f"embeval pool: {line}")
    if not pool.rows:
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.pool.csv"
    number = 2
    while path.exists():
        path, number = folder / f"{stem}.pool-{number}.csv", number + 1
    judging.write_sheet(path, pool)
    reporter.write_line(f"embeval pool: sheet written to {path}")


def cache_summary(cache_dir: Path, reporter: pytest.TerminalReporter) -> list[str]:
    """One line on what the embedding cache served and took, and one each, once per session, for corrupt
    entries and for a cache that could not be written; summed over xdist workers from the reports."""
    totals: dict[str, Any] = dict.fromkeys(CACHE_PROPERTIES.values(), 0)
    totals[CACHE_PROPERTIES["write_error"]] = None
    for reports in reporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            for name, value in getattr(report, "user_properties", ()):
                if name == CACHE_PROPERTIES["write_error"]:
                    totals[name] = totals[name] or value
                elif name in totals:
                    totals[name] += value
    read, embedded, corrupt, write_error = (totals[name] for name in CACHE_PROPERTIES.values())
    if not (read or embedded or corrupt or write_error):
        return []
    where = _shown_path(cache_dir, reporter.config.invocation_params.dir)
    lines = [f"embeval: embedding cache {where}: {read:,} texts read, {embedded:,} embedded"]
    if corrupt:
        entries = "entry was" if corrupt == 1 else "entries were"
        lines.append(
            f"embeval: {corrupt:,} corrupt cache {entries} found in {where}, discarded and recomputed"
        )
    if write_error:
        lines.append(f"embeval: new embeddings could not be stored in {where}: {write_error}")
    return lines


def _shown_path(path: Path, start: Path) -> str:
    """``path`` relative to ``start`` when it is inside it, with a trailing separator: it is a folder."""
    start = start.resolve()
    shown = path.relative_to(start) if path.is_relative_to(start) else path
    return os.path.join(shown, "")
