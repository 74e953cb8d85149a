"""The declared decision (``decision:``): read and refused as the golden file declares it, reached after the
strata with routing measured, a ``GOLDEN::decision`` item, JUnit properties and GitHub workflow commands;
with the deterministic fake encoders of fake_models.py (the shipped golden set: test_decision_shipped.py)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.annotations import escape_data, escape_property, workflow_commands
from pytest_embeval.run.decision import traffic_share

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]

Golden = Callable[..., Path]

ROUTE_EN = {"route": {"strata": ["language=en"], "max_traffic": 0.5}}


def run(pytester: pytest.Pytester, candidate: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-incumbent=fake_models:good",
        f"--embeval-candidate=fake_models:{candidate}",
        *args,
    )


def report_of(result: pytest.RunResult, path: Path) -> dict[str, Any]:
    assert path.exists(), result.stdout.str()
    return json.loads(path.read_text(encoding="utf-8"))


# --- the golden file ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        pytest.param(
            {"route": {"strata": ["language=de"]}},
            "support.yaml:17: decision.route.strata[0]: unknown stratum 'language=de' (the strata are "
            "language=en, language=es)",
            id="unknown-routed-stratum",
        ),
        pytest.param(
            {"proceed": {"language=de": ["TIE"]}},
            "support.yaml:16: decision.proceed.language=de: unknown stratum 'language=de' (the strata are "
            "overall, language=en, language=es, or a field: language)",
            id="unknown-condition-stratum",
        ),
        pytest.param(
            {"route": {"strata": ["language=en"], "max_traffic": 0}},
            "support.yaml:18: decision.route.max_traffic: must be a share of traffic in (0, 1], got 0",
            id="cap-zero",
        ),
        pytest.param(
            {"route": {"strata": ["language=en"], "max_traffic": 1.5}},
            "support.yaml:18: decision.route.max_traffic: must be a share of traffic in (0, 1], got 1.5",
            id="cap-above-one",
        ),
        pytest.param(
            {"otherwise": "abandon"},
            "support.yaml:15: decision.otherwise: unknown outcome 'abandon': when neither proceed nor route "
            "holds the outcome is change-target",
            id="unknown-outcome",
        ),
        pytest.param(
            {"proceed": {"overall": ["GOOD"]}},
            "support.yaml:17: decision.proceed.overall[0]: unknown verdict 'GOOD' (a condition lists BETTER "
            "and/or TIE)",
            id="unknown-verdict",
        ),
        pytest.param(
            {"proceed": {"overall": ["WORSE"]}},
            "support.yaml:17: decision.proceed.overall[0]: WORSE never lets a decision proceed (a WORSE "
            "stratum blocks it unless routed)",
            id="worse-as-a-condition",
        ),
        pytest.param(
            {"route": {"strata": ["overall"]}},
            "support.yaml:17: decision.route.strata[0]: 'overall' is the whole traffic: routing it is "
            "keeping the incumbent, not a decision",
            id="route-overall",
        ),
        pytest.param(
            {"owners": "search"},
            "support.yaml:15: decision.owners: unknown key, did you mean 'owner'?",
            id="unknown-key",
        ),
        pytest.param(
            {"route": {"strata": ["language=en"], "too": "bm25"}},
            "support.yaml:18: decision.route.too: unknown key, did you mean 'to'?",
            id="unknown-route-key",
        ),
        pytest.param(
            {"route": {"max_traffic": 0.2}},
            "support.yaml:16: decision.route.strata: missing required key (the strata that may be routed, "
            "e.g. [language=de])",
            id="route-without-strata",
        ),
    ],
)
def test_a_bad_decision_is_a_one_line_collection_error(
    pytester: pytest.Pytester, golden: Golden, decision: dict[str, Any], message: str
) -> None:
    golden(decision=decision)
    result = run(pytester, "good")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting support.yaml*", message, "*short test summary*"])
    assert "Traceback" not in result.stdout.str()


def test_the_decision_is_part_of_the_plan_fingerprint_only_when_declared(golden: Golden) -> None:
    plain = load_golden(golden())
    declared = load_golden(golden(decision=ROUTE_EN))
    other = load_golden(golden(decision={"route": {"strata": ["language=es"], "max_traffic": 0.5}}))
    assert "decision" not in plain.plan()
    assert declared.plan()["decision"] == {
        "owner": None,
        "proceed": {},
        "route": {"strata": ["language=en"], "max_traffic": 0.5, "to": None},
        "otherwise": "change-target",
    }
    assert len({plain.plan_fingerprint(), declared.plan_fingerprint(), other.plan_fingerprint()}) == 3
    # A field name stands for each of its strata.
    field = load_golden(golden(decision={"proceed": {"language": ["TIE"]}}))
    assert field.decision is not None
    assert dict(field.decision.proceed) == {"language=en": ("TIE",), "language=es": ("TIE",)}


def with_frequencies(path: Path, frequency: Callable[[dict[str, Any]], float]) -> Path:
    queries = path.parent / "support" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    queries.write_text(
        "".join(json.dumps({**row, "frequency": frequency(row)}) + "\n" for row in rows), encoding="utf-8"
    )
    return path


def load_golden_drawn(path: Path, inclusion: tuple[float, float]) -> GoldenSet:
    """The golden set at ``path`` with an inclusion on every query: ``inclusion`` (English, Spanish)."""
    queries = path.parent / "support" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    text = "".join(
        json.dumps({**row, "inclusion": inclusion[0] if row["language"] == "en" else inclusion[1]}) + "\n"
        for row in rows
    )
    queries.write_text(text, encoding="utf-8")
    return load_golden(path)


def test_the_traffic_share_is_by_frequency_when_given_else_by_query_count(golden: Golden) -> None:
    counted = load_golden(golden())
    english = [query.id for query in counted.queries if query.fields["language"] == "en"]
    assert traffic_share(counted, english) == (0.5, "query count")
    weighted = load_golden(with_frequencies(golden(), lambda row: 1 if row["language"] == "en" else 3))
    assert traffic_share(weighted, english) == (0.25, "query frequency")
    # Drawn English queries with inclusion 1/4 stand for 4 searches each, Spanish ones (inclusion 1) for 3:
    # English is 24 x 4 / (24 x 4 + 24 x 3) = 4/7 of the traffic.
    drawn = load_golden_drawn(
        with_frequencies(golden(), lambda row: 1 if row["language"] == "en" else 3), (0.25, 1.0)
    )
    share, basis = traffic_share(drawn, english)
    assert (share, basis) == (pytest.approx(4 / 7), "query frequency / inclusion")


# --- the outcomes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("xdist", XDIST)
def test_routing_the_losing_stratum_to_the_incumbent_proceeds_and_passes_as_routed(
    pytester: pytest.Pytester,
    golden: Golden,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    xdist: list[str],
) -> None:
    golden(decision={"owner": "search-platform", "proceed": {"overall": ["BETTER", "TIE"]}, **ROUTE_EN})
    path = tmp_path / "report.json"
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    readable = [f"--embeval-md={tmp_path / 'report.md'}", f"--embeval-html={tmp_path / 'report.html'}"]
    result = run(
        pytester, "bad_english", f"--embeval-json={path}", "-v", "--embeval-step-summary", *readable, *xdist
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # -v writes "NODEID WORD" serially, "[gw0] [ 25%] WORD NODEID" with xdist.
    statuses = {
        node: word
        for line in result.stdout.lines
        for node in ("overall", "language=en", "language=es", "decision")
        for word in ("ROUTED", "TIE", "PROCEED WITH ROUTING")
        if f"support.yaml::{node} " in f"{line} " and word in line
    }
    assert statuses == {
        "overall": "ROUTED",
        "language=en": "ROUTED",
        "language=es": "TIE",
        "decision": "PROCEED WITH ROUTING",
    }
    result.stdout.fnmatch_lines(
        [
            "routed system (language=en to the incumbent, 50% of traffic by query count) against the "
            "incumbent:",
            "stratum *verdict",
            "overall*TIE",
            "decision (owner search-platform): PROCEED WITH ROUTING — overall WORSE, language=en WORSE → "
            "route language=en (50% of traffic by query count) to the incumbent; routed system: overall TIE, "
            "no stratum WORSE",
            "*= 3 routed, 1 tie in *",
        ]
    )
    decision = report_of(result, path)["golden_sets"][0]["decision"]
    assert {
        k: decision[k] for k in ("outcome", "owner", "routed", "traffic_share", "traffic_basis", "to")
    } == {
        "outcome": "proceed-with-routing",
        "owner": "search-platform",
        "routed": ["language=en"],
        "traffic_share": 0.5,
        "traffic_basis": "query count",
        "to": "incumbent",
    }
    # The Markdown report (and the step summary, the same text) and the HTML page carry the line and the
    # routed system's table.
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert summary.read_text(encoding="utf-8") == markdown
    assert f"**{decision['line']}**" in markdown
    assert (
        "Routed system (language=en to the incumbent, 50% of traffic by query count) against the" in markdown
    )
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.escape(decision["line"]) in page and "<h3>Decision</h3>" in page
    routed = {row["stratum"]: row for row in decision["routed_system"]}
    # The routed system answers the English queries as the incumbent does and the Spanish ones as the
    # candidate, which gets them right: identical to the incumbent everywhere.
    assert routed["overall"]["delta"] == 0.0 and routed["overall"]["verdict"] == "TIE"
    assert routed["language=en"]["candidate"] == routed["language=en"]["incumbent"] == 1.0


def test_a_routed_system_still_worse_overall_changes_the_target(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    golden(decision=ROUTE_EN)
    path = tmp_path / "report.json"
    result = run(pytester, "bad", f"--embeval-json={path}", "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line = (
        "decision: CHANGE THE TARGET — overall WORSE, language=en WORSE, language=es WORSE; route "
        "language=en (50% of traffic by query count) to the incumbent would not do: the routed system: "
        "overall WORSE, language=es WORSE"
    )
    result.stdout.fnmatch_lines(
        ["*support.yaml::decision CHANGE THE TARGET*", "*_ support::decision _*", line]
    )
    decision = report_of(result, path)["golden_sets"][0]["decision"]
    assert decision["outcome"] == "change-target"
    routed = {row["stratum"]: row for row in decision["routed_system"]}
    assert routed["overall"]["verdict"] == "WORSE"
    assert routed["overall"]["delta"] == pytest.approx(-18 / 48)


def test_routing_more_traffic_than_declared_changes_the_target_and_frequencies_say_how_much(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    route = {"route": {"strata": ["language=en"], "max_traffic": 0.3}}
    golden(decision=route)
    result = run(pytester, "bad_english")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*50% of traffic by query count) to the incumbent would not do: 50% of traffic is more than "
            "max_traffic 30%"
        ]
    )
    # English queries a quarter of the traffic by frequency: within the cap.
    with_frequencies(golden(decision=route), lambda row: 1 if row["language"] == "en" else 3)
    result = run(pytester, "bad_english")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*route language=en (25% of traffic by query frequency) to the incumbent;*"])


def test_a_decision_forbidding_any_worse_fails_its_own_item_which_k_selects(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(decision={"owner": "search-platform", "proceed": {"overall": ["BETTER", "TIE"]}})
    result = run(pytester, "bad_english", "-k", "decision")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines(
        [
            "decision (owner search-platform): CHANGE THE TARGET — overall WORSE, language=en WORSE: no "
            "route is declared",
            "CHANGE THE TARGET support.yaml::decision - decision (owner search-platform): *",
        ]
    )


def test_a_condition_can_ask_more_than_no_worse(pytester: pytest.Pytester, golden: Golden) -> None:
    golden(decision={"proceed": {"overall": ["BETTER"]}})
    result = run(pytester, "good", "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["decision: CHANGE THE TARGET — overall TIE (proceed asks BETTER): no route is declared"]
    )
    golden(decision={"proceed": {"overall": ["BETTER"]}})
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-incumbent=fake_models:bad",
        "--embeval-candidate=fake_models:good",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["decision: PROCEED — overall BETTER, no stratum WORSE", "*= 4 passed in *"])


def test_routing_to_bm25_is_measured_not_assumed(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    pytest.importorskip("bm25s")
    golden(decision={"route": {"strata": ["language=en"], "max_traffic": 0.5, "to": "bm25"}})
    path = tmp_path / "report.json"
    result = run(pytester, "bad_english", f"--embeval-json={path}")
    # BM25 tokens are two characters or more: "en 3" shares no token with "doc 3", so BM25 misses the
    # English queries 0-9 that the incumbent gets right, and the routed system is WORSE on them.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*route language=en (50% of traffic by query count) to bm25 would not do:*"])
    decision = report_of(result, path)["golden_sets"][0]["decision"]
    routed = {row["stratum"]: row for row in decision["routed_system"]}
    assert decision["to"] == "bm25"
    assert routed["language=en"]["candidate"] == pytest.approx(14 / 24)
    assert routed["language=es"]["delta"] == 0.0


def test_routing_to_a_fusion_with_the_candidate_names_the_runs_own_arms(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    pytest.importorskip("bm25s")
    golden(decision={"route": {"strata": ["language=en"], "max_traffic": 0.5, "to": "rrf:bm25,INCUMBENT"}})
    path = tmp_path / "report.json"
    result = run(pytester, "bad_english", f"--embeval-json={path}")
    decision = report_of(result, path)["golden_sets"][0]["decision"]
    assert decision["to"] == "rrf:bm25,INCUMBENT"
    routed = {row["stratum"]: row for row in decision["routed_system"]}
    assert routed["language=es"]["delta"] == 0.0  # answered by the candidate, as it answers them
    assert set(routed) == {"overall", "language=en", "language=es"}


def test_an_unresolvable_route_target_is_an_error_of_the_golden_set(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(decision={"route": {"strata": ["language=en"], "to": "rrf:bm25"}})
    result = run(pytester, "bad_english")
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(["*decision.route.to: model spec 'rrf:bm25': rrf fuses at least two arms*"])


def test_without_a_decision_nothing_changes(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    golden()
    path = tmp_path / "report.json"
    result = run(pytester, "bad_english", f"--embeval-json={path}", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["support.yaml::overall", "support.yaml::language=en", "support.yaml::language=es"]
    )
    assert "decision" not in result.stdout.str()
    result = run(pytester, "bad_english", f"--embeval-json={path}")
    result.assert_outcomes(failed=2)
    golden_set = report_of(result, path)["golden_sets"][0]
    assert "decision" not in golden_set
    assert not any("covered_by_routing" in s for s in golden_set["strata"])
    assert "decision (" not in result.stdout.str() and "decision:" not in result.stdout.str()


# --- JUnit XML and GitHub annotations -------------------------------------------------------------------


def junit_cases(path: Path) -> dict[str, dict[str, Any]]:
    """Each test case of a JUnit file as CI tools read it: its properties (without the cache's counts,
    which depend on what the cache held) and its system-out."""
    junitparser = pytest.importorskip("junitparser")
    cases = {}
    for suite in junitparser.JUnitXml.fromfile(str(path)):
        for case in suite:
            found = case.child(junitparser.Properties)
            listed = [] if found is None else list(found)
            properties = {p.name: p.value for p in listed if not p.name.startswith("embeval_cache")}
            result = [type(r).__name__ for r in case.result]
            cases[case.name] = {"properties": properties, "result": result, "system_out": case.system_out}
    return cases


def test_the_junit_file_carries_every_verdict_and_the_decision_serially_and_with_xdist(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    golden(decision={"owner": "search-platform", "proceed": {"overall": ["BETTER", "TIE"]}})
    files = {}
    for name, xdist in (("serial", []), ("xdist", ["-n", "2"])):
        files[name] = tmp_path / f"{name}.xml"
        run(pytester, "bad_english", f"--junitxml={files[name]}", "-o", "junit_logging=system-out", *xdist)
    cases = junit_cases(files["serial"])
    assert junit_cases(files["xdist"]) == cases
    assert set(cases) == {"overall", "language=en", "language=es", "decision"}
    english = cases["language=en"]
    assert english["properties"] == {
        "embeval_verdict": "WORSE",
        "embeval_metric": "hit@1",
        "embeval_delta": str(-18 / 24),
        "embeval_ci_low": english["properties"]["embeval_ci_low"],
        "embeval_ci_high": english["properties"]["embeval_ci_high"],
        "embeval_n": "24",
        "embeval_margin": "0.05",
        "embeval_reason": english["properties"]["embeval_reason"],
    }
    assert float(english["properties"]["embeval_ci_high"]) < 0 and english["result"] == ["Failure"]
    assert english["properties"]["embeval_reason"].startswith("worse: Δ -0.750")
    spanish = cases["language=es"]
    assert spanish["properties"]["embeval_verdict"] == "TIE" and spanish["result"] == []
    assert spanish["properties"]["embeval_reason"] in spanish["system_out"]
    assert "language=es: TIE — equivalent" in spanish["system_out"]
    decision = cases["decision"]
    assert decision["result"] == ["Failure"]
    assert decision["properties"] == {
        "embeval_decision": "change-target",
        "embeval_owner": "search-platform",
        "embeval_routed": "",
        "embeval_traffic_share": "",
        "embeval_traffic_basis": "query count",
        "embeval_routed_to": "incumbent",
        "embeval_reason": "decision (owner search-platform): CHANGE THE TARGET — overall WORSE, language=en "
        "WORSE: no route is declared",
    }


@pytest.mark.parametrize("xdist", XDIST)
def test_github_annotations_only_under_github_actions(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    golden(decision={"owner": "search-platform"})
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    quiet = run(pytester, "bad_english", *xdist)
    assert "::error" not in quiet.stdout.str() and "::notice" not in quiet.stdout.str()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    shown = run(pytester, "bad_english", *xdist)
    lines = [line for line in shown.stdout.lines if line.startswith("::")]
    # The stratum field `language` is declared on line 5 (strata:\n- language); overall has no field.
    assert lines == [
        "::error file=support.yaml,line=1,title=embeval support%3A overall WORSE::overall: WORSE — worse: "
        "Δ -0.375 ≤ -0.050 and CI [-0.515, -0.235] excludes 0 (n=48)",
        "::error file=support.yaml,line=5,title=embeval support%3A language=en WORSE::language=en: WORSE — "
        "worse: Δ -0.750 ≤ -0.050 and CI [-0.931, -0.569] excludes 0 (n=24)",
        "::notice file=support.yaml,line=14,title=embeval support%3A CHANGE THE TARGET::decision (owner "
        "search-platform): CHANGE THE TARGET — overall WORSE, language=en WORSE: no route is declared",
    ]


def test_workflow_commands_escape_as_github_specifies() -> None:
    assert escape_data("50% a\r\nb: c, d") == "50%25 a%0D%0Ab: c, d"
    assert escape_property("50% a\r\nb: c, d") == "50%25 a%0D%0Ab%3A c%2C d"
    golden = {
        "name": "g",
        "path": "dir,with:odd.yaml",
        "strata": [
            {"stratum": "kind=a,b", "verdict": "WORSE", "reason": "two\nlines", "covered_by_routing": True}
        ],
    }
    assert workflow_commands(golden, {"strata.kind": 7}) == [
        "::error file=dir%2Cwith%3Aodd.yaml,line=7,title=embeval g%3A kind=a%2Cb WORSE (routed)::"
        "kind=a,b: WORSE — two%0Alines"
    ]


def test_every_junit_property_an_item_records_is_a_declared_one(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    from pytest_embeval.reports.decision_report import JUNIT_PROPERTIES

    golden(decision=ROUTE_EN)
    run(pytester, "bad_english", f"--junitxml={tmp_path / 'junit.xml'}")
    recorded = {name for case in junit_cases(tmp_path / "junit.xml").values() for name in case["properties"]}
    assert recorded == set(JUNIT_PROPERTIES)


def test_routing_to_an_arm_with_its_own_faiss_index_searches_that_index(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    """``route.to`` an arm with its own FAISS index (``SPEC?faiss=...``): the routed queries are answered from
    that index, not from the golden set's exact one. The incumbent's model through an exact ``Flat`` index
    answers as the incumbent does; through a lossy IVF-PQ one searched in one list of four, it misses most
    English queries, and the routed system is WORSE."""
    pytest.importorskip("faiss")
    path = tmp_path / "report.json"
    routed: dict[str, dict[str, Any]] = {}
    for name, spec in (
        ("flat", "fake_models:good?faiss=Flat"),
        ("lossy", "fake_models:good?faiss=IVF4,PQ2x1&nprobe=1"),
    ):
        golden(decision={"route": {"strata": ["language=en"], "max_traffic": 0.5, "to": spec}})
        result = run(pytester, "bad_english", f"--embeval-json={path}")
        decision = report_of(result, path)["golden_sets"][0]["decision"]
        assert decision["to"] == spec
        routed[name] = {row["stratum"]: row for row in decision["routed_system"]}
        if name == "flat":
            assert result.ret == pytest.ExitCode.OK, result.stdout.str()
            assert decision["outcome"] == "proceed-with-routing"
        else:
            assert result.ret == pytest.ExitCode.TESTS_FAILED
            result.stdout.fnmatch_lines(
                [f"*route language=en (50% of traffic by query count) to {spec} would not do:*"]
            )
    assert routed["flat"]["language=en"]["candidate"] == 1.0 and routed["flat"]["overall"]["verdict"] == "TIE"
    assert (
        routed["lossy"]["language=en"]["candidate"] < 0.5
        and routed["lossy"]["language=en"]["verdict"] == "WORSE"
    )
    assert routed["lossy"]["language=es"]["delta"] == 0.0  # answered by the candidate, as it answers them
