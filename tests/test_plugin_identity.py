"""A golden set is its resolved path: files outside the rootdir, same-named files in different folders and
symlinked files are each scored with their own data, serially and with -n 2.

Two golden sets with different data make a wrong pairing visible: under fake_models, `bad` misses the queries
of English and Spanish ("en"/"es"), so on set A (en/es) it is WORSE, and on set B, whose queries are French
and German, it answers exactly as `good` does: a TIE with Δ = 0. Set B reusing set A's run (the defect this
guards against) would be WORSE.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import golden_files

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]
ARMS = ("--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad")


def french_and_german(golden_path: Path) -> Path:
    """Set B: the conftest golden set with its queries' languages renamed (texts too: the fakes read them)."""
    queries = golden_path.parent / golden_path.stem / "queries.jsonl"
    text = queries.read_text(encoding="utf-8")
    queries.write_text(text.replace('"en', '"fr').replace('"es', '"de'), encoding="utf-8")
    return golden_path


def importable(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """fake_models importable whatever the rootdir (no conftest.py makes it so there), in a subprocess too."""
    monkeypatch.syspath_prepend(str(pytester.path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), os.environ.get("PYTHONPATH", "")]))


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    report = pytester.path / "report.json"
    arguments = ("--embeval", "-p", "no:cacheprovider", *ARMS, f"--embeval-json={report}", *args)
    # In process, xdist workers would take the test session's sys.path, without fake_models.
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner(*arguments)
    assert "Traceback" not in result.stdout.str()
    return result, json.loads(report.read_text(encoding="utf-8"))


def overall(report: dict[str, Any]) -> dict[str, tuple[str, float]]:
    return {g["path"]: (g["strata"][0]["verdict"], g["strata"][0]["delta"]) for g in report["golden_sets"]}


@pytest.mark.parametrize("xdist", XDIST)
def test_golden_files_outside_the_rootdir_are_scored_with_their_own_data(
    pytester: pytest.Pytester, golden: Any, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    project = pytester.mkdir("proj")
    golden_files(pytester.path / "shared" / "a", "support")
    french_and_german(golden_files(pytester.path / "shared" / "b", "support"))
    importable(pytester, monkeypatch)
    monkeypatch.chdir(project)
    result, report = run(
        pytester,
        "--rootdir",
        str(project),
        "../shared/a/support.yaml",
        "../shared/b/support.yaml",
        "-v",
        *xdist,
    )
    assert overall(report) == {
        "../shared/a/support.yaml": ("WORSE", -0.75),
        "../shared/b/support.yaml": ("TIE", 0.0),
    }
    [b] = [g for g in report["golden_sets"] if g["path"].endswith("b/support.yaml")]
    assert b["queries"][0]["text"] == "fr 0"
    for node, verdict in (
        ("../shared/a/support.yaml::overall", "WORSE"),
        ("../shared/b/support.yaml::overall", "TIE"),
    ):
        assert any(node in line and verdict in line for line in result.outlines), node
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_run_files_of_golden_sets_outside_the_rootdir_have_readable_names(
    pytester: pytest.Pytester, golden: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pytester.mkdir("proj")
    golden_files(pytester.path / "shared", "support")
    importable(pytester, monkeypatch)
    monkeypatch.chdir(project)
    runs = pytester.path / "runs"
    sheets = pytester.path / "sheets"
    run(
        pytester,
        "--rootdir",
        str(project),
        "../shared/support.yaml",
        f"--embeval-runs={runs}",
        f"--embeval-pool={sheets}",
    )
    assert sorted(path.name for path in runs.iterdir()) == [
        "up__shared__support.candidate.run",
        "up__shared__support.incumbent.run",
    ]
    assert [path.name for path in sheets.iterdir()] == ["up__shared__support.pool.csv"]


@pytest.mark.parametrize("xdist", XDIST)
def test_same_named_files_in_two_folders_are_two_golden_sets(
    pytester: pytest.Pytester, golden: Any, xdist: list[str]
) -> None:
    golden_files(pytester.path / "a", "support")
    french_and_german(golden_files(pytester.path / "b", "support"))
    _, report = run(pytester, *xdist)
    assert overall(report) == {"a/support.yaml": ("WORSE", -0.75), "b/support.yaml": ("TIE", 0.0)}


@pytest.mark.parametrize("xdist", XDIST)
def test_a_symlinked_golden_file_is_its_target_and_is_run_once(
    pytester: pytest.Pytester, golden: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, xdist: list[str]
) -> None:
    golden_files(pytester.path / "a", "support")
    target = french_and_german(golden_files(pytester.path / "b", "support"))
    (pytester.path / "link").mkdir()
    (pytester.path / "link" / "support.yaml").symlink_to(target)
    log = tmp_path / "encoded.log"
    monkeypatch.setenv("EMBEVAL_FAKE_LOG", str(log))
    report_path = pytester.path / "report.json"
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-no-cache",
        "--embeval-incumbent=fake_models:counted_good",
        "--embeval-candidate=fake_models:counted_bad",
        f"--embeval-json={report_path}",
        *xdist,
    )
    report = json.loads(report_path.read_text(encoding="utf-8"))
    # The link reads the data beside the file it links to: set B's, not set A's.
    assert overall(report) == {
        "a/support.yaml": ("WORSE", -0.75),
        "b/support.yaml": ("TIE", 0.0),
        "link/support.yaml": ("TIE", 0.0),
    }
    if not xdist:  # one process: the link and its target are one golden set, embedded once per arm
        encoded = log.read_text(encoding="utf-8").splitlines()
        french = [line for line in encoded if line.endswith("\tfr 0")]
        assert sorted(line.split("\t")[0] for line in french) == ["counted-bad", "counted-good"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED
