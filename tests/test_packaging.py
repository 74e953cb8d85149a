"""What the wheel ships: the package's modules, ``py.typed`` (PEP 561, so users' type checkers read the
package's annotations) and the licence, built from a copy of the project as ``pip wheel`` builds it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

setuptools = pytest.importorskip("setuptools", reason="building the wheel needs setuptools (pip's own build)")


def test_the_wheel_ships_py_typed_and_the_licence(tmp_path: Path) -> None:
    # A copy, so the build's egg-info and build/ folders never land in the checkout other tests read.
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(
        ROOT / "pytest_embeval", project / "pytest_embeval", ignore=shutil.ignore_patterns("__pycache__")
    )
    wheels = tmp_path / "wheels"
    build = ["wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), "."]
    done = subprocess.run(
        [sys.executable, "-m", "pip", *build],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = wheels.glob("pytest_embeval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "pytest_embeval/py.typed" in names
    assert "pytest_embeval/plugin/__init__.py" in names and "pytest_embeval/core/metrics.py" in names
    assert any(
        name.endswith(".dist-info/licenses/LICENSE") or name.endswith(".dist-info/LICENSE") for name in names
    )
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "embeval = pytest_embeval.plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()
