"""pytest-embeval's hooks and fixtures; everything else lives in the modules they delegate to.

This module is loaded in every pytest run of everyone who installs the package, so at module level it
imports only pytest and the standard library; numpy, the golden-set loader and any model are imported
when `--embeval` is given, and only then.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_embeval.options import add_options, resolve_settings

if TYPE_CHECKING:
    from pytest_embeval.items import EmbevalState

#: The session's embeval state; present only when --embeval is given.
STATE: pytest.StashKey[EmbevalState] = pytest.StashKey()

#: A YAML file under a collected folder is a golden set when it has one of these top-level keys; other YAML
#: files (CI configs, fixtures) are left alone. A file named on the command line is always a golden set.
GOLDEN_KEY = re.compile(r"^[\"']?(corpus|queries|qrels|beir|metric)[\"']?\s*:", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = resolve_settings(config)
    if not settings.enabled:
        return
    from pytest_embeval.items import EmbevalState

    state = EmbevalState(settings=settings)
    config.stash[STATE] = state
    config.pluginmanager.register(SessionHooks(config, state), "embeval-session")
    # pytest-xdist's default "load" scheduling would scatter a golden set's strata over workers, each then
    # embedding the whole corpus; "loadfile" keeps every file's items on one worker.
    if getattr(config.option, "dist", None) == "load":
        config.option.dist = "loadfile"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml") or not parent.config.getoption("--embeval"):
        return None
    named = any(Path(arg.split("::", 1)[0]).resolve() == file_path.resolve() for arg in parent.config.args)
    if not named:
        try:
            text = file_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        if not GOLDEN_KEY.search(text):
            return None
    from pytest_embeval.items import GoldenFile

    return GoldenFile.from_parent(parent, path=file_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if call.when == "call" and STATE in item.config.stash:
        from pytest_embeval.items import StratumItem

        if isinstance(item, StratumItem):
            # Plain-typed attributes on a TestReport travel to the xdist controller with the report.
            report.embeval_record = item.record
            report.embeval_golden = item.golden_record
    return report


def pytest_report_teststatus(
    report: pytest.TestReport,
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    record = getattr(report, "embeval_record", None)
    if report.when != "call" or record is None:
        return None
    verdict = record["verdict"]
    if verdict == "TIE":
        return "tie", "t", ("TIE", {"yellow": True})
    if verdict == "BETTER":
        return "passed", ".", ("BETTER", {"green": True})
    return "failed", "F", ("WORSE", {"red": True})


class SessionHooks:
    """The hooks that need the session's state; registered only with --embeval."""

    def __init__(self, config: pytest.Config, state: EmbevalState) -> None:
        self.config = config
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # On the xdist controller this sees every worker's reports; serially, the session's own.
        record = getattr(report, "embeval_record", None)
        if record is not None:
            self.state.stratum_records[report.nodeid] = record
        golden = getattr(report, "embeval_golden", None)
        if golden is not None:
            self.state.golden_records.setdefault(golden["path"], golden)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if hasattr(self.config, "workerinput"):  # only the controller prints and writes
            return
        from pytest_embeval.items import write_outputs

        write_outputs(self.state, terminalreporter)


@pytest.fixture(scope="session")
def embeval_incumbent() -> object:
    """The incumbent embedding model, when neither --embeval-incumbent nor the ini key names one.

    Override it in a conftest.py to build the model in Python::

        @pytest.fixture(scope="session")
        def embeval_incumbent():
            from sentence_transformers import SentenceTransformer
            return SentenceTransformer("path/to/model")

    Return a model object (with ``encode_query``/``encode_document``) or a spec string.
    """
    return None


@pytest.fixture(scope="session")
def embeval_candidate() -> object:
    """The candidate embedding model; overridden like ``embeval_incumbent``."""
    return None
