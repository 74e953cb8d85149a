"""The pytest side: this module is the ``pytest11`` entry point and holds only the hooks and fixtures;
everything else lives in the modules they delegate to: every option and ini key resolved once into
`options.Settings`, the hook a conftest.py gives a shortlist of candidates with (`hooks`), the golden file's
collector and stratum items (`items`), a golden file's arms run once per process (`golden_runs`), the
session's state (`state`) and the hooks that need it, merging xdist records (`session`), writing every
output (`session_outputs`), how xdist hands out a shortlist's items (`xdist_scheduling`), the progress line
on pytest's terminal (`terminal_progress`), and pytest-html's section (`pytest_html`).

May import: everything below it (``reports``, ``judging``, ``cache``, ``run``, ``arms``, ``search``,
``golden``, ``files``, ``core``); never ``cli``.

This module is loaded in every pytest run of everyone who installs the package, so at module level it
imports only pytest and the standard library; numpy, the golden-set loader and any model are imported
when `--embeval` is given, and only then. The hooks that need the session's state live in
`pytest_embeval.plugin.session`, registered by `pytest_configure` with `--embeval` only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_embeval.plugin.options import add_options, resolve_settings

#: A YAML file under a collected folder is a golden set when it has one of these top-level keys; other YAML
#: files (CI configs, fixtures) are left alone. A file named on the command line is always a golden set.
GOLDEN_KEY = re.compile(r"^[\"']?(corpus|queries|qrels|beir|metric)[\"']?\s*:", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_embeval.plugin import hooks  # pytest and the standard library only

    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    settings = resolve_settings(config)
    if not settings.enabled:
        return
    from pytest_embeval.plugin import session

    session.start(config, settings)
    # pytest-xdist's default "load" scheduling would scatter a golden set's strata over workers, each then
    # embedding the whole corpus; "loadfile" keeps every file's items on one worker, and the session's
    # scheduler (`xdist_scheduling`) keeps each candidate's items of a shortlist's file on one.
    if getattr(config.option, "dist", None) == "load":
        config.option.dist = "loadfile"
        session.schedule_by_candidate(config)


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
    from pytest_embeval.plugin.items import GoldenFile

    return GoldenFile.for_path(parent, file_path)


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
