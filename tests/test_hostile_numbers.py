"""Hostile numbers: no gate opened by a number that is not one (items 3 and 4 of this round, and its own
cases): weights summed so that no sum overflows, numbers beyond a stated bound refused at load, a NaN in a
verdict, a share or a decision an error or a refusal, never a pass, and routing every query never proceeding.

Each run asserts its exact line, its exit status, and that every input is byte-identical afterwards.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from file_snapshots import snapshot
from suite_helpers import CliResult
from test_decision import ROUTE_EN, run

from pytest_embeval.core import weighted_stats
from pytest_embeval.core.stats import PairedComparison
from pytest_embeval.core.verdict import NotANumber, TieReason, Verdict, classify_metric

Golden = Callable[..., Path]


def with_fields(golden: Path, **fields: Callable[[dict[str, Any]], object]) -> Path:
    """The golden set's queries file with each of ``fields`` set on every query (a function of the row)."""
    queries = golden.parent / "support" / "queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    text = "".join(json.dumps({**row, **{k: f(row) for k, f in fields.items()}}) + "\n" for row in rows)
    queries.write_text(text, encoding="utf-8")
    return golden


def inputs(pytester: pytest.Pytester) -> dict[str, str]:
    return snapshot(pytester.path / "support", pytester.path / "support.yaml")


# --- 3. huge traffic numbers --------------------------------------------------------------------------------


def test_traffic_of_1e308_per_query_is_summed_without_overflow_and_the_cap_holds(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    """English queries of frequency 1e308 carry all but 24 of the traffic: routing them is more than the
    declared half, so the target changes (the sum overflowed to NaN, whose share passed the cap)."""
    with_fields(golden(decision=ROUTE_EN), frequency=lambda row: 1e308 if row["language"] == "en" else 1)
    report, _ = changed_target(
        pytester,
        "language=en (100% of traffic by query frequency) to the incumbent would not do: 100% of traffic is "
        "more than max_traffic 50%",
    )
    decision = json.loads(report.read_text(encoding="utf-8"))["golden_sets"][0]["decision"]
    assert decision["outcome"] == "change-target" and decision["traffic_share"] == 1.0


def changed_target(pytester: pytest.Pytester, routed: str, *lines: str) -> tuple[Path, pytest.RunResult]:
    """Run the English-losing candidate with a JSON report: the decision changes the target, routing
    English as ``routed`` says, the run prints ``lines`` after it, and every input is as it was."""
    before = inputs(pytester)
    report = pytester.path / "report.json"
    result = run(pytester, "bad_english", f"--embeval-json={report}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"decision: CHANGE THE TARGET — overall WORSE, language=en WORSE; route {routed}", *lines]
    )
    assert inputs(pytester) == before
    return report, result


def test_shares_and_means_of_the_largest_weights_are_numbers() -> None:
    huge = np.array([1e308, 1e308, 1e308, 1.0])
    assert weighted_stats.traffic_share(huge, np.array([True, True, False, False])) == pytest.approx(2 / 3)
    assert weighted_stats.weighted_mean(np.array([1.0, 0.0, 0.0, 1.0]), huge) == pytest.approx(1 / 3)
    assert weighted_stats.kish_n(huge) == pytest.approx(3.0)
    assert weighted_stats.traffic_share(np.array([]), np.array([], dtype=bool)) == 0.0


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        pytest.param(
            {"frequency": lambda row: 1e10, "inclusion": lambda row: 1e-320},
            "support/queries.jsonl:1: inclusion: query 'q00': frequency 1e+10 / inclusion 9.99989e-321 is "
            "more traffic than a number holds (above 1.8e308); give frequencies on a smaller scale",
            id="frequency-over-inclusion-overflows",
        ),
        pytest.param(
            {"frequency": lambda row: 10**400},
            "support/queries.jsonl:1: frequency: query 'q00': frequency "
            + "1"
            + "0" * 400
            + " is more traffic "
            "than a number holds (above 1.8e308); give frequencies on a smaller scale",
            id="frequency-of-400-digits",
        ),
    ],
)
def test_a_weight_that_is_no_number_is_one_line_at_load(
    pytester: pytest.Pytester,
    golden: Golden,
    fields: dict[str, Callable[[dict[str, Any]], object]],
    line: str,
) -> None:
    with_fields(golden(weights="frequency"), **fields)
    before = inputs(pytester)
    result = run(pytester, "good")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert line in result.stdout.lines
    assert "Traceback" not in result.stdout.str()
    assert inputs(pytester) == before


@pytest.mark.parametrize(
    ("setting", "line"),
    [
        pytest.param(
            {"tie_margin": 10**400},
            "support.yaml:9: tie_margin: must be a number >= 0, got 1" + "0" * 400,
            id="margin-of-400-digits",
        ),
        pytest.param(
            {"production": {"documents": 10**400}},
            "support.yaml:15: production.documents: must be an integer from 1 to 1,000,000,000,000,000, got 1"
            + "0" * 400,
            id="documents-of-400-digits",
        ),
        pytest.param(
            {"production": {"documents": 10, "memory_price_per_gb_month": 1e300}},
            "support.yaml:16: production.memory_price_per_gb_month: must be a number from 0 to "
            "1,000,000,000, got 1.0e+300",
            id="a-price-past-the-bound",
        ),
        pytest.param(
            {"bootstrap": "1e8"},
            "support.yaml:12: bootstrap: must be an integer from 100 to 1,000,000, got 1e8",
            id="bootstrap-1e8",
        ),
    ],
)
def test_a_number_past_its_bound_is_one_line_at_load(
    pytester: pytest.Pytester, golden: Golden, setting: dict[str, object], line: str
) -> None:
    golden(**setting)
    before = inputs(pytester)
    result = run(pytester, "good")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert line in result.stdout.lines, result.stdout.str()
    assert inputs(pytester) == before


# --- NaN never passes ---------------------------------------------------------------------------------------


def comparison(**changed: Any) -> PairedComparison:
    base = PairedComparison(
        n=40, excluded=0, incumbent_mean=0.5, candidate_mean=0.5, delta=0.0, ci_low=-0.01, ci_high=0.01,
        confidence=0.95, interval="percentile", p_value=1.0, sd=0.1, wins=5, losses=5, sign_p=1.0,
        mde=0.04, note=None,
    )  # fmt: skip
    return dataclasses.replace(base, **changed)


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"delta": math.nan}, "no finite interval (CI [-0.010, +0.010], Δ nan, n=40) and no reason why"),
        ({"ci_low": math.nan}, "no finite interval (CI [+nan, +0.010], Δ 0.0, n=40) and no reason why"),
        ({"kish_n": math.nan}, "the number of queries held against min_queries is not a number (n=40)"),
    ],
)
def test_a_comparison_whose_numbers_are_nan_is_an_error_not_a_tie(
    changed: dict[str, float], message: str
) -> None:
    with pytest.raises(NotANumber) as raised:
        classify_metric(comparison(**changed), tie_margin=0.05, min_queries=20)
    assert str(raised.value) == message
    # With its reason stated (too few pairs for an interval) it is the tie it says it is.
    stated = classify_metric(comparison(delta=math.nan, note="too few"), tie_margin=0.05, min_queries=20)
    assert (stated.verdict, stated.tie_reason, stated.detail) == (
        Verdict.TIE,
        TieReason.UNRESOLVED,
        "too few",
    )


def test_a_traffic_share_that_is_nan_changes_the_target_and_no_report_is_half_written(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden(decision=ROUTE_EN)
    monkeypatch.setattr(weighted_stats, "traffic_share", lambda weights, chosen: math.nan)
    report, result = changed_target(
        pytester,
        "language=en (nan% of traffic by query count) to the incumbent would not do: nan% of traffic is more "
        "than max_traffic 50%",
        "embeval: ERROR: JSON report not written: Out of range float values are not JSON compliant",
    )
    assert not report.exists() and "Traceback" not in result.stdout.str()


# --- 4. routing all the traffic ----------------------------------------------------------------------------


@pytest.mark.parametrize("max_traffic", [None, 1.0])
def test_routing_every_stratum_changes_the_target_whatever_max_traffic_says(
    pytester: pytest.Pytester, golden: Golden, max_traffic: float | None
) -> None:
    route: dict[str, Any] = {"strata": ["language=en", "language=es"]}
    if max_traffic is not None:
        route["max_traffic"] = max_traffic
    golden(decision={"route": route})
    before = inputs(pytester)
    result = run(pytester, "bad")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "decision: CHANGE THE TARGET — overall WORSE, language=en WORSE, language=es WORSE; route "
            "language=en, language=es (100% of traffic by query count) to the incumbent would not do: it "
            "leaves the candidate no traffic (routing all of it is keeping the incumbent)"
        ]
    )
    assert inputs(pytester) == before


# --- this round's own cases -------------------------------------------------------------------------------


def test_a_head_boost_up_to_the_largest_number_draws_as_any_boost_beyond_the_head_does(
    tmp_path: Path, embeval: Callable[..., CliResult]
) -> None:
    """The head band's weight was its traffic times the boost: 1e308 overflowed, and the draw was refused
    with a message about internal weights. Scaled exactly, a boost of 1e308 gives the head every query it
    holds, as a boost of 1e6 does here."""
    log = tmp_path / "log.tsv"
    rows = "".join(f"q{i}\ten\nq{i}\tes\nhot\ten\n" for i in range(30))
    log.write_text("query\tlang\n" + rows, encoding="utf-8")
    before = snapshot(log)
    drawn = []
    for boost in ("1e6", "1e308"):
        out = tmp_path / f"boost-{boost}.jsonl"
        status, _, stderr = embeval(
            "sample", log, "--by", "lang", "--size", "10", "--floor", "1", "--head-boost", boost, "--out", out
        )
        assert (status, stderr) == (0, "")
        drawn.append(out.read_text(encoding="utf-8"))
    assert drawn[0] == drawn[1]
    assert snapshot(log) == before
