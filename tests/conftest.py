"""The suite's fixtures and its set-up: pytester's in-process runs keep installed libraries
(`pytester_snapshots`), hypothesis' CI profile. Helpers the tests import live in `suite_helpers`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from pytester_snapshots import keep_installed_libraries
from suite_helpers import FAKE_MODELS, CliResult, golden_files

keep_installed_libraries()

# In CI (HYPOTHESIS_PROFILE=ci, which .ci/run sets) every property test draws the same examples on every run
# and keeps no database: a fresh clone never fails on an example an earlier run happened to find (those are
# turned into @example cases). Elsewhere hypothesis explores, and remembers what failed.
hypothesis.settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def embeval(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``embeval`` in-process: (exit status, stdout, stderr)."""
    from pytest_embeval.cli import embeval as command

    def run(*args: str | Path) -> CliResult:
        status = command.main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture
def golden(pytester: pytest.Pytester) -> Callable[..., Path]:
    """Make `fake_models` importable in pytester runs (rootdir conftest puts it on sys.path, xdist workers
    included) and return the golden-set writer bound to pytester's directory."""
    pytester.makeconftest("")
    pytester.makepyfile(fake_models=FAKE_MODELS.read_text(encoding="utf-8"))

    def write(name: str = "support", **settings: Any) -> Path:
        return golden_files(pytester.path, name, **settings)

    return write
