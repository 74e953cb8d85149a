"""The house's checks as tests, so that CI (`.ci/run`, the README's test command) fails on them: ruff's lint
rules and its formatting over the package, the tests and the benchmarks, and mypy in strict mode over the
package, all as ``pyproject.toml`` configures them; and each check, in a copy of the package, fails on an
error planted there (as ``tests/test_layers.py`` plants forbidden imports)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What ruff checks and formats: the package, its tests, its benchmarks, the documentation's scripts.
RUFF_PATHS = ("pytest_embeval", "tests", "benchmarks", "docs")


def _tool(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (the [test] extra)")


def run(tool: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", tool, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def package_copy(folder: Path) -> Path:
    """The package and its configuration copied into ``folder`` (which is returned)."""
    shutil.copytree(
        ROOT / "pytest_embeval", folder / "pytest_embeval", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def plant(folder: Path, module: str, text: str) -> None:
    target = folder / "pytest_embeval" / module
    target.write_text(target.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_ruff_finds_nothing_and_a_planted_unused_import_fails_it(tmp_path: Path) -> None:
    _tool("ruff")
    done = run("ruff", "check", "--no-cache", *RUFF_PATHS)
    assert done.returncode == 0, done.stdout + done.stderr
    copy = package_copy(tmp_path)
    plant(copy, "core/text_table.py", "\nimport os\n")
    done = run("ruff", "check", "--no-cache", "pytest_embeval", cwd=copy)
    assert done.returncode == 1 and "pytest_embeval/core/text_table.py" in done.stdout, done.stdout
    assert "F401" in done.stdout, done.stdout


def test_ruff_format_changes_nothing_and_a_planted_misformatting_fails_it(tmp_path: Path) -> None:
    _tool("ruff")
    done = run("ruff", "format", "--check", "--no-cache", *RUFF_PATHS)
    assert done.returncode == 0, done.stdout + done.stderr
    copy = package_copy(tmp_path)
    plant(copy, "core/text_table.py", "\nPLANTED = {  'spaced' :1 }\n")
    done = run("ruff", "format", "--check", "--no-cache", "pytest_embeval", cwd=copy)
    assert done.returncode == 1, done.stdout
    assert "pytest_embeval/core/text_table.py" in done.stdout, done.stdout
    assert "1 file would be reformatted" in done.stdout, done.stdout


def test_mypy_strict_finds_nothing_and_a_planted_type_error_fails_it(tmp_path: Path) -> None:
    _tool("mypy")
    # mypy keeps what it learnt in .mypy_cache/ (ignored by git): a first run takes about 40 s of CPU,
    # later ones a few seconds.
    done = run("mypy", "pytest_embeval")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found"), done.stdout
    copy = package_copy(tmp_path)
    # The copy starts from the run's cache, so that only what the planted error touches is checked again.
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", copy / ".mypy_cache")
    plant(copy, "core/text_table.py", '\n\ndef planted() -> int:\n    return "not a number"\n')
    done = run("mypy", "pytest_embeval", cwd=copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'error: Incompatible return value type (got "str", expected "int")' in done.stdout, done.stdout


def test_a_test_that_imports_from_conftest_fails_ruff(tmp_path: Path) -> None:
    """conftest.py holds fixtures and hooks; the helpers a test imports live in ``tests/suite_helpers.py``
    (ruff's banned-api rule, TID251, holds that: the run over the tests above finds none)."""
    _tool("ruff")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_planted.py").write_text(
        "import conftest\nfrom conftest import golden_files\n\nprint(conftest, golden_files)\n",
        encoding="utf-8",
    )
    done = run("ruff", "check", "--no-cache", "tests", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert done.stdout.count("TID251 `conftest` is banned") == 2, done.stdout
