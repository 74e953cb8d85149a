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
        ("judge_page/server.py", "from pytest_embeval.cli import support", "Folders are layers"),
        ("judge_page/pairs.py", "from pytest_embeval.reports import terminal", "Folders are layers"),
        ("judge_page/server.py", "import pytest", "Nothing below the plugin imports pytest"),
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


def test_the_library_surface_resolves_every_name_and_imports_nothing_until_asked() -> None:
    import pytest_embeval

    assert sorted(pytest_embeval.__all__) == sorted(pytest_embeval._SURFACE)
    for name in pytest_embeval.__all__:
        value = getattr(pytest_embeval, name)
        assert value.__name__ == name and value.__module__ == pytest_embeval._SURFACE[name]
    with pytest.raises(AttributeError, match="has no attribute 'metrics'"):
        pytest_embeval.metrics  # noqa: B018  (internal modules are not part of the surface)
    code = (
        "import sys, pytest_embeval; heavy = [m for m in ('numpy', 'yaml', 'scipy') if m in sys.modules]; "
        "from pytest_embeval import paired_n; print(heavy, paired_n(0.05, 0.15), 'numpy' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["[]", "71", "True"]
