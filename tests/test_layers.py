"""The package's layers as a checked contract: import-linter's contracts in pyproject.toml hold for the
package, and each breaks when a test plants the import it forbids (in a copy of the package)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (the [test] extra)")


def lint(parent: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports with the project's contracts over the ``pytest_embeval`` found in ``parent``."""
    env = {**os.environ, "PYTHONPATH": str(parent)}
    return subprocess.run(
        [str(LINT), str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_package_keeps_every_contract() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        ("core/metrics.py", "import pytest", "Nothing below the plugin imports pytest"),
        ("golden/filters.py", "from _pytest.config import Config", "Nothing below the plugin imports pytest"),
        ("core/verdict.py", "from pytest_embeval.golden import schema", "Folders are layers"),
        ("arms/bm25.py", "from pytest_embeval.run import pipeline", "Folders are layers"),
        ("reports/terminal.py", "from pytest_embeval.plugin import options", "The reports import nothing"),
        ("core/resampling.py", "from pytest_embeval.core import stats", "No import circle between modules"),
    ],
)
def test_a_planted_import_breaks_its_contract(tmp_path: Path, module: str, planted: str, broken: str) -> None:
    copy = tmp_path / "pytest_embeval"
    shutil.copytree(ROOT / "pytest_embeval", copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}\n", encoding="utf-8")
    done = lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    broken_lines = [line for line in done.stdout.splitlines() if line.endswith(" BROKEN")]
    assert any(line.startswith(broken) for line in broken_lines), done.stdout
