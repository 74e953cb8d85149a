"""The end of a session on the controller: every output written from the merged records (the terminal
tables and warnings, the JSON report, TREC runs, pool sheets, Markdown and HTML, the embedding cache's
summary), and the check that no output would overwrite a golden set's input.

Split from `session`, whose hooks gather the records these functions read: every output is a function of
the merged report (`json_report.build_report`), whatever worker produced its records.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.files.atomic import append_text, error_line, write_atomic
from pytest_embeval.files.output_paths import clash
from pytest_embeval.golden.inputs import golden_inputs
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import TEXTLESS_SHOWN, GoldenSet
from pytest_embeval.golden.yaml_nodes import declared_lines
from pytest_embeval.judging.rankings import rankings_from_records
from pytest_embeval.plugin.options import Settings
from pytest_embeval.plugin.state import (
    CACHE_PROPERTIES,
    EmbevalState,
)
from pytest_embeval.reports.annotations import GITHUB_ACTIONS, workflow_commands
from pytest_embeval.reports.json_report import ROLES, Record, build_report, report_json
from pytest_embeval.reports.shortlist import CANDIDATE_NAME
from pytest_embeval.reports.terminal import (
    cache_lines,
    coverage_warning_lines,
    golden_table,
    margin_warning_lines,
    shelf_life_warning_lines,
    shortlist_lines,
    shortlist_warning_lines,
    textless_warning_lines,
)
from pytest_embeval.reports.trec_runs import file_stem, rerank_run, run_file_name, trec_run


def input_clash(outputs: Mapping[str, Path], golden_files: Iterable[Path], start: Path) -> str | None:
    """Why one of the ``outputs`` (`Settings.outputs`) would overwrite one of the golden files' inputs
    (`golden.inputs`; each named relative to ``start``), or None."""
    files: dict[Path, str] = {}
    folders: dict[Path, str] = {}
    for path in sorted(golden_files):
        inputs = golden_inputs(path, os.path.relpath(path, start))
        files.update(inputs.files)
        folders.update(inputs.folders)
    return clash(outputs, files, folders)


def write_outputs(state: EmbevalState, reporter: pytest.TerminalReporter) -> bool:
    """On the controller at the end of the session: the per-golden-set tables and coverage warnings, the
    pool sheets, the JSON report, the runs, and what the embedding cache did, all from the merged report.
    False when an output could not be written (`OutputWriter`)."""
    writer = OutputWriter(reporter)
    _write_outputs(state, writer)
    return not writer.failed


def _write_outputs(state: EmbevalState, writer: OutputWriter) -> None:
    reporter = writer.reporter
    settings = state.settings
    config = reporter.config
    cache = (
        []
        if settings.cache_dir is None
        else cache_lines(
            **cache_totals(reporter.stats.values()),
            where=_shown_path(settings.cache_dir, config.invocation_params.dir),
        )
    )
    report = build_report(
        state.golden_records.values(),
        state.stratum_records.values(),
        state.error_records.values(),
        state.decision_records.values(),
    )
    if not (report["golden_sets"] or report["errors"] or cache):
        return
    reporter.write_sep("=", "embeval")
    for line in cache:
        reporter.write_line(line)
    report_path = None if settings.json_path is None else str(settings.json_path)
    shortlists = {shortlist["path"]: shortlist for shortlist in report.get("shortlist", ())}
    for path, entries in itertools.groupby(report["golden_sets"], key=lambda record: record["path"]):
        shortlist = shortlists.get(path)
        records = list(entries)
        for number, record in enumerate(records):
            first = number == 0
            for line in golden_table(record, record["strata"]):
                reporter.write_line(line)
            # What is said of the golden set itself, once; of each comparison, per candidate.
            for line in [
                *(textless_warning_lines(record, TEXTLESS_SHOWN) if first else []),
                *margin_warning_lines(record),
                *coverage_warning_lines(record, report_path),
                *(shelf_life_warning_lines(record) if first else []),
            ]:
                reporter.write_line(line, yellow=True)
            if shortlist is None:
                _pool_records(records, settings, config, writer)
            reporter.write_line("")
        if shortlist is not None:
            for line in shortlist_lines(shortlist):
                reporter.write_line(line)
            for line in shortlist_warning_lines(shortlist, report_path):
                reporter.write_line(line, yellow=True)
            _pool_records(records, settings, config, writer)
            reporter.write_line("")
    for error in report["errors"]:
        named = f" [{error[CANDIDATE_NAME]}]" if CANDIDATE_NAME in error else ""
        reporter.write_line(
            f"embeval: {error['name']}{named} ({error['path']}) not run: {error['message']}", red=True
        )
    if os.environ.get(GITHUB_ACTIONS) == "true":
        # Workflow commands: GitHub turns them into annotations on the pull request's diff.
        for record in report["golden_sets"]:
            declared = declared_lines(os.path.normpath(config.rootpath / record["path"]))
            for line in workflow_commands(record, declared):
                reporter.write_line(line)
    if not (report["golden_sets"] or report["errors"]):
        return
    if settings.json_path is not None:
        written = writer.file("JSON report", settings.json_path, lambda: report_json(report))
        if written:
            reporter.write_line(f"embeval: JSON report written to {settings.json_path}")
    runs_dir = settings.runs_dir
    if runs_dir is not None:
        runs: dict[Path, str] = {}
        for golden_set in report["golden_sets"]:
            for role in ROLES:
                # A shortlist's incumbent is the same in every candidate's entry: its file is written alike.
                runs[runs_dir / run_file_name(golden_set, role)] = trec_run(golden_set, role)
                after = rerank_run(golden_set, role)
                if after is not None:
                    runs[runs_dir / run_file_name(golden_set, role, "rerank")] = after
        # Each file is checked as the folder was: a symlink left in it is followed by the write.
        golden_files = [
            Path(os.path.normpath(config.rootpath / record["path"])) for record in report["golden_sets"]
        ]
        problem = input_clash(
            {f"--embeval-runs {path}": path for path in runs}, golden_files, config.invocation_params.dir
        )
        if problem is not None:
            reporter.write_line(f"embeval: ERROR: TREC run files not written: {problem}", red=True)
            writer.failed = True
        elif writer.done("TREC run files", lambda: _write_all(runs_dir, runs)):
            reporter.write_line(f"embeval: TREC run files written to {runs_dir}")
    _write_readable(report, settings, writer)


def _write_all(folder: Path, texts: Mapping[Path, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in texts.items():
        write_atomic(path, text)


class OutputWriter:
    """Writes the session's outputs one by one at its end: one that cannot be written (a full disk, a
    folder made read-only since the start, a FIFO nobody reads) is one red line naming what to blame, and
    the others are still written; `failed` says whether any was not."""

    def __init__(self, reporter: pytest.TerminalReporter) -> None:
        self.reporter = reporter
        self.failed = False

    def done(self, what: str, write: Callable[[], None]) -> bool:
        try:
            write()
        except (OSError, ValueError) as error:  # ValueError: a number JSON cannot hold (never a partial file)
            problem = error_line(error) if isinstance(error, OSError) else str(error)
            self.reporter.write_line(f"embeval: ERROR: {what} not written: {problem}", red=True)
            self.failed = True
            return False
        return True

    def file(self, what: str, path: Path, render: Callable[[], str | bytes]) -> bool:
        """Write the file ``render`` makes at ``path``, its folders created."""

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, render())

        return self.done(what, write)


def _write_readable(report: Record, settings: Settings, writer: OutputWriter) -> None:
    """The reports people read, each when asked for: Markdown (to a file, appended to the GitHub step
    summary, or both), the HTML page and the forest plot's PNG; every one made from the merged report."""
    if not (settings.markdown_path or settings.step_summary or settings.html_path or settings.plot_path):
        return  # none asked for: nor are their modules imported
    from pytest_embeval.reports.forest_png import forest_png
    from pytest_embeval.reports.html_page import report_html
    from pytest_embeval.reports.markdown import report_markdown, size_warning

    reporter = writer.reporter
    markdown = report_markdown(report) if settings.markdown_path or settings.step_summary else ""
    made: dict[str, tuple[Path | None, Callable[[], str | bytes]]] = {
        "Markdown report": (settings.markdown_path, lambda: markdown),
        "HTML report": (settings.html_path, lambda: report_html(report)),
        "forest plot": (settings.plot_path, lambda: forest_png(report)),
    }
    for what, (path, render) in made.items():
        if path is not None and writer.file(what, path, render):
            reporter.write_line(f"embeval: {what} written to {path}")
    summary = settings.step_summary
    if summary is not None and writer.done("step summary", lambda: append_text(summary, markdown)):
        reporter.write_line(f"embeval: Markdown report appended to the step summary {summary}")
    for where, path in ((False, settings.markdown_path), (True, settings.step_summary)):
        warning = size_warning(markdown, step_summary=where) if path is not None else None
        if warning is not None:
            reporter.write_line(f"embeval: WARNING: {warning}", yellow=True)


def _pool_records(
    records: Sequence[Record], settings: Settings, config: pytest.Config, writer: OutputWriter
) -> None:
    """With --embeval-pool, one sheet of a golden file's comparisons: every arm's top documents, the union
    over a shortlist's candidates (`_pool`)."""
    if settings.pool_dir is None:
        return
    # The node path is relative to the rootdir, '..' included (see items.golden_node_path).
    golden = load_golden(os.path.normpath(config.rootpath / records[0]["path"]))
    _pool(golden, records, settings.pool_dir, settings.pool_depth, writer)


def _pool(
    golden: GoldenSet, records: Sequence[Record], folder: Path, depth: int, writer: OutputWriter
) -> None:
    """A blind judging sheet of what this run retrieved and nobody judged yet, as `embeval pool` writes it.

    Never overwrites a sheet (it may hold grades): pairs on earlier, unmerged sheets of this golden set in
    the folder are left out, and the new sheet gets the next free name.
    """
    from pytest_embeval.judging.grade_scale import no_guidelines_note
    from pytest_embeval.judging.pooling import (
        SheetError,
        pool_from_rankings,
        pool_lines,
        read_sheet,
        sheet_pairs,
        sheet_text,
    )

    reporter = writer.reporter

    # Named after the golden file only: the name must not tell a judge which arm retrieved what.
    stem = file_stem(records[0])
    # Only regular files are sheets this run wrote: a FIFO of that name would never end (and is not reused).
    earlier = sorted(path for path in folder.glob(f"{stem}.pool*.csv") if path.is_file())
    try:
        exclude = sheet_pairs([read_sheet(path) for path in earlier])
    except SheetError as error:
        for problem in error.problems:
            reporter.write_line(f"embeval pool: {problem}", red=True)
        return
    pool = pool_from_rankings(golden, rankings_from_records(records), depth=depth, exclude=exclude)
    for line in pool_lines(pool):
        reporter.write_line(f"embeval pool: {line}")
    if not pool.rows:
        return
    path = folder / f"{stem}.pool.csv"
    number = 2
    while path.exists():
        path, number = folder / f"{stem}.pool-{number}.csv", number + 1
    if writer.file("judging sheet", path, lambda: sheet_text(pool)):
        reporter.write_line(f"embeval pool: sheet written to {path}")
        note = no_guidelines_note(golden)
        if note is not None:
            reporter.write_line(f"embeval pool: {note}")


def cache_totals(reports: Iterable[Iterable[Any]]) -> dict[str, Any]:
    """What the embedding cache did over the session, summed from the user properties of the items that ran
    a golden set (on any worker; in their setup, which runs the golden set): ``read``, ``embedded``,
    ``corrupt`` and ``unreadable`` counts and the first ``write_error``."""
    totals: dict[str, Any] = {"read": 0, "embedded": 0, "corrupt": 0, "unreadable": 0, "write_error": None}
    field_of = {name: field for field, name in CACHE_PROPERTIES.items()}
    for group in reports:
        for report in group:
            if getattr(report, "when", None) != "setup":
                continue
            for name, value in getattr(report, "user_properties", ()):
                field = field_of.get(name)
                if field == "write_error":
                    totals[field] = totals[field] or value
                elif field is not None:
                    totals[field] += value
    return totals


def _shown_path(path: Path, start: Path) -> str:
    """``path`` relative to ``start`` when it is inside it, with a trailing separator: it is a folder."""
    start = start.resolve()
    shown = path.relative_to(start) if path.is_relative_to(start) else path
    return os.path.join(shown, "")
