"""``weights: frequency`` through pytest: verdicts on the traffic-weighted means, the unweighted beside them
in every output, serially and with ``-n 2``, and the collection error of a set without frequencies."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from suite_helpers import run_good_against_bad_english

Golden = Callable[..., Path]

# English queries: 1 search each; Spanish: 100 each. Overall Kish n = (24 + 2400)² / (24 + 240000) = 24.46.
KISH_OVERALL = (24 + 2400) ** 2 / (24 + 24 * 100**2)


def _weighted(golden: Golden, path: Path, *, declared: bool = True, **settings: object) -> Path:
    """The small golden set with a frequency on every query, and ``weights: frequency`` if ``declared``."""
    written = golden(**({"weights": "frequency"} if declared else {}), **settings)
    queries = path / "support" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row["frequency"] = 1 if row["language"] == "en" else 100
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return written


_run = run_good_against_bad_english


def test_the_verdict_rests_on_the_weighted_mean_and_the_unweighted_is_shown_beside(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    _weighted(golden, pytester.path)
    report_path, markdown, html = (pytester.path / name for name in ("r.json", "r.md", "r.html"))
    result = _run(
        pytester, f"--embeval-json={report_path}", f"--embeval-md={markdown}", f"--embeval-html={html}"
    )
    # The candidate misses 18 of the 24 English queries, 1 % of the traffic: WORSE unweighted overall (Δ
    # -18/48), a tie weighted (Δ -18/2424, equivalent within the 0.05 margin); language=en still fails.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 failed, 2 tie*"])
    result.stdout.fnmatch_lines(
        [
            "*language=en: WORSE — worse:*(n=24, Kish 24.0)*",
            "margin 0.05, confidence 0.95",
            "traffic-weighted by frequency (n=24, Kish 24.0); unweighted: Δ -0.750 [-0.931, -0.569], WORSE",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*traffic-weighted by frequency, design: none; incumbent*",
            f"overall*48 (Kish {KISH_OVERALL:.1f})*-0.007*TIE",
            "  unweighted*-0.375*(WORSE)",
            "language=en*24 (Kish 24.0)*-0.750*WORSE",
            "  unweighted*-0.750*(WORSE)",
            "traffic-weighted by frequency: means, Δ, CI, MDE and verdicts weigh each query by its*",
            "the traffic weights change the verdict of overall (TIE weighted, WORSE unweighted).",
        ]
    )
    report = json.loads(report_path.read_text(encoding="utf-8"))
    (golden_set,) = report["golden_sets"]
    assert golden_set["weights"] == "frequency" and golden_set["traffic_weight"] == "frequency"
    assert golden_set["design"] == {"kind": "none"}  # weights alone: the with-replacement interval
    assert all("design" not in s for s in golden_set["strata"])
    assert {q["frequency"] for q in golden_set["queries"]} == {1, 100}
    assert all("inclusion" not in q for q in golden_set["queries"])
    overall = golden_set["strata"][0]
    assert overall["weights"] == "frequency"
    assert overall["kish_n"] == pytest.approx(KISH_OVERALL)
    assert overall["delta"] == pytest.approx(-18 / 2424)
    assert overall["incumbent"] == 1.0 and overall["candidate"] == pytest.approx(2406 / 2424)
    assert overall["verdict"] == "TIE" and overall["reason"].startswith("equivalent:")
    assert "(n=48, Kish 24.5)" in overall["reason"]
    assert overall["unweighted"]["verdict"] == "WORSE" and overall["unweighted"]["delta"] == -0.375
    assert "kish_n" not in overall["unweighted"]
    assert overall["metrics"]["hit@1"]["kish_n"] == pytest.approx(KISH_OVERALL)
    assert [s["verdict"] for s in golden_set["strata"]] == ["TIE", "WORSE", "TIE"]
    md = markdown.read_text(encoding="utf-8")
    assert "| unweighted |" in md and "-0.375 [" in md and f"48 (Kish {KISH_OVERALL:.1f})" in md
    page = html.read_text(encoding="utf-8")
    assert "<th>unweighted</th>" in page and "traffic-weighted by frequency" in page


def test_drawn_queries_weigh_frequency_over_inclusion(pytester: pytest.Pytester, golden: Golden) -> None:
    # English queries: frequency 1 but inclusion 0.01, so each stands for 100 searches, as each Spanish one
    # (frequency 100, inclusion 1) does: the weights are equal, and the weighted numbers the unweighted ones
    # (Δ -18/48, WORSE, Kish 48), where frequency alone made English 1 % of the traffic and overall a TIE.
    _weighted(golden, pytester.path)
    queries = pytester.path / "support" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row["inclusion"] = 0.01 if row["language"] == "en" else 1
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    report_path = pytester.path / "r.json"
    result = _run(pytester, f"--embeval-json={report_path}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*traffic-weighted by frequency / inclusion, design: none; incumbent*",
            "overall*48 (Kish 48.0)*-0.375*WORSE",
            "traffic-weighted by frequency / inclusion: means, Δ, CI, MDE and verdicts weigh each query "
            "by its frequency over its inclusion probability*",
        ]
    )
    (golden_set,) = json.loads(report_path.read_text(encoding="utf-8"))["golden_sets"]
    assert (golden_set["weights"], golden_set["traffic_weight"]) == ("frequency", "frequency / inclusion")
    assert {(q["frequency"], q["inclusion"]) for q in golden_set["queries"]} == {(1, 0.01), (100, 1)}
    overall = golden_set["strata"][0]
    assert overall["traffic_weight"] == "frequency / inclusion"
    assert overall["kish_n"] == pytest.approx(48) and overall["delta"] == pytest.approx(-18 / 48)
    assert overall["verdict"] == "WORSE" == overall["unweighted"]["verdict"]


def test_the_unweighted_numbers_are_those_of_the_file_without_the_key(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    from pytest_embeval.reports.json_report import without_timings

    _weighted(golden, pytester.path)
    weighted_path = pytester.path / "weighted.json"
    _run(pytester, f"--embeval-json={weighted_path}")
    _weighted(golden, pytester.path, declared=False)
    plain_path = pytester.path / "plain.json"
    _run(pytester, f"--embeval-json={plain_path}")
    weighted = without_timings(json.loads(weighted_path.read_text(encoding="utf-8")))["golden_sets"][0]
    plain = without_timings(json.loads(plain_path.read_text(encoding="utf-8")))["golden_sets"][0]
    assert "weights" not in plain and all("unweighted" not in s for s in plain["strata"])
    assert weighted["plan_fingerprint"] != plain["plan_fingerprint"]
    for beside, alone in zip(weighted["strata"], plain["strata"], strict=True):
        assert beside["unweighted"]["verdict"] == alone["verdict"]
        assert beside["unweighted"]["reason"] == alone["reason"]
        for key in ("n", "delta", "ci", "sd", "mde", "p_value", "wins", "losses", "sign_p"):
            assert beside["unweighted"][key] == alone[key], key


def test_weighted_json_report_is_identical_with_and_without_xdist(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    _weighted(
        golden,
        pytester.path,
        multiple_comparisons="holm",
        strata=["language", "shape"],
        guards={"mrr@10": 0.05},
    )
    reports = []
    for name, args in (("serial.json", ()), ("parallel.json", ("-n", "2"))):
        path = pytester.path / name
        _run(pytester, f"--embeval-json={path}", *args)
        reports.append(json.loads(path.read_text(encoding="utf-8")))
    assert reports[0] == reports[1]
    strata = reports[0]["golden_sets"][0]["strata"]
    assert all(s["family"]["method"] == "holm" and "unweighted" in s for s in strata)
    # Guards are weighted like the primary metric, and shown unweighted beside it.
    overall = strata[0]
    (guard,) = overall["guards"]
    assert guard["metric"] == "mrr@10" and guard["kish_n"] == pytest.approx(KISH_OVERALL)
    assert guard["delta"] == pytest.approx(overall["metrics"]["mrr@10"]["delta"])
    (plain_guard,) = overall["unweighted"]["guards"]
    assert (
        "kish_n" not in plain_guard
        and plain_guard["delta"] == overall["unweighted"]["metrics"]["mrr@10"]["delta"]
    )


def test_weights_on_queries_without_frequencies_is_a_collection_error(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(weights="frequency")
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error: exit 2
    result.stdout.fnmatch_lines(
        [
            "*support.yaml:*: weights: 'frequency' weighs each query by its frequency in the traffic, but "
            "the queries have none (give every query a frequency: a JSONL key, a TSV column or an inline key)"
        ]
    )


def test_every_tie_order_is_decided_on_the_weighted_comparison(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    # The candidate ties every Spanish query's documents; Spanish is 1 % of the traffic here (each Spanish
    # query 1 search, each English one 100). Unweighted, the tie order decides overall (WORSE under docid,
    # TIE under docid-ascending); weighted, Δ is at most 24/2424 under any order: a TIE under every order.
    _weighted(golden, pytester.path)
    queries = pytester.path / "support" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row["frequency"] = 100 if row["language"] == "en" else 1
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    path = pytester.path / "r.json"
    pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:tied_spanish",
        f"--embeval-json={path}",
    )
    overall = json.loads(path.read_text(encoding="utf-8"))["golden_sets"][0]["strata"][0]
    assert overall["delta"] == pytest.approx(-24 / 2424)
    assert overall["verdict"] == "TIE" and overall["unweighted"]["verdict"] == "WORSE"
    assert overall["tied"]["verdicts"] == {"docid": "TIE", "docid-ascending": "TIE", "expected": "TIE"}
    assert overall["tied"]["could_change"] is False
