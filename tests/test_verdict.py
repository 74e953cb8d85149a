"""verdict.py: the verdict table of DESIGN.md, row by row, with the precedence of the TIE reasons.

Comparisons are built directly (no bootstrap), so every number in a reason is known exactly.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest

from pytest_embeval.stats import PairedComparison, minimum_detectable_effect, paired_n
from pytest_embeval.verdict import (
    Decision,
    TieReason,
    Verdict,
    classify_metric,
    decide,
    decide_metric,
    sign_test_disagrees,
)

M = 0.03  # tie margin used unless a test says otherwise
FLOOR = 20


def comparison(
    delta: float,
    low: float,
    high: float,
    *,
    n: int = 100,
    sd: float = 0.15,
    wins: int = 40,
    losses: int = 20,
    sign_p: float = 0.01,
    confidence: float = 0.95,
    mde: float | None = None,
    note: str | None = None,
) -> PairedComparison:
    return PairedComparison(
        n=n,
        excluded=0,
        incumbent_mean=0.5,
        candidate_mean=0.5 + delta,
        delta=delta,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        sd=sd,
        wins=wins,
        losses=losses,
        sign_p=sign_p,
        mde=minimum_detectable_effect(sd, n, alpha=1 - confidence) if mde is None else mde,
        note=note,
    )


# ---------------------------------------------------------------------------------------------------
# The table, row by row


@pytest.mark.parametrize(
    ("delta", "low", "high", "verdict", "tie_reason"),
    [
        pytest.param(0.05, 0.02, 0.08, Verdict.BETTER, None, id="better"),
        pytest.param(M, 0.001, 0.06, Verdict.BETTER, None, id="better: delta exactly the margin"),
        pytest.param(-0.05, -0.08, -0.02, Verdict.WORSE, None, id="worse"),
        pytest.param(-M, -0.06, -0.001, Verdict.WORSE, None, id="worse: delta exactly minus the margin"),
        pytest.param(0.05, 0.0, 0.1, Verdict.TIE, TieReason.UNRESOLVED, id="CI lower exactly 0 is not > 0"),
        pytest.param(-0.05, -0.1, 0.0, Verdict.TIE, TieReason.UNRESOLVED, id="CI upper exactly 0 is not < 0"),
        pytest.param(0.02, 0.005, 0.035, Verdict.TIE, TieReason.WITHIN_MARGIN, id="small real gain"),
        pytest.param(-0.02, -0.035, -0.005, Verdict.TIE, TieReason.WITHIN_MARGIN, id="small real loss"),
        pytest.param(0.01, 0.002, 0.018, Verdict.TIE, TieReason.EQUIVALENT, id="significant, inside margin"),
        pytest.param(0.001, -0.01, 0.012, Verdict.TIE, TieReason.EQUIVALENT, id="equivalent"),
        pytest.param(0.01, -0.01, M, Verdict.TIE, TieReason.WITHIN_MARGIN, id="CI ending at +m: not inside"),
        pytest.param(-0.01, -M, 0.01, Verdict.TIE, TieReason.WITHIN_MARGIN, id="CI ending at -m: not inside"),
        pytest.param(0.01, -0.03, 0.05, Verdict.TIE, TieReason.WITHIN_MARGIN, id="within margin, wide CI"),
        pytest.param(0.04, -0.01, 0.09, Verdict.TIE, TieReason.UNRESOLVED, id="unresolved gain"),
        pytest.param(-0.04, -0.09, 0.01, Verdict.TIE, TieReason.UNRESOLVED, id="unresolved loss"),
    ],
)
def test_verdict_table(
    delta: float, low: float, high: float, verdict: Verdict, tie_reason: TieReason | None
) -> None:
    c = comparison(delta, low, high)
    decision = classify_metric(c, tie_margin=M, min_queries=FLOOR)
    assert (decision.verdict, decision.tie_reason) == (verdict, tie_reason)
    assert decision.reason.startswith(tie_reason.value if tie_reason else verdict.value.lower())
    assert decide_metric(c, tie_margin=M, min_queries=FLOOR) == (decision.verdict, decision.reason)
    final = decide(c, tie_margin=M, min_queries=FLOOR)
    assert (final.verdict, final.primary, final.tie_reason, final.reason) == (
        verdict,
        verdict,
        tie_reason,
        decision.reason,
    )


@pytest.mark.parametrize(
    ("delta", "low", "high"),
    [(0.2, 0.1, 0.3), (-0.2, -0.3, -0.1), (0.0, -0.001, 0.001), (0.05, -0.1, 0.2)],
    ids=["would be better", "would be worse", "would be equivalent", "would be unresolved"],
)
def test_below_floor_never_passes_or_fails(delta: float, low: float, high: float) -> None:
    decision = decide(comparison(delta, low, high, n=19), tie_margin=M, min_queries=FLOOR)
    assert decision.verdict is Verdict.TIE
    assert decision.tie_reason is TieReason.BELOW_FLOOR
    assert decision.reason == (
        "below floor: n=19 < min_queries=20; a stratum under the floor never passes or fails"
    )
    assert decision.queries_needed is None


def test_exactly_the_floor_is_enough() -> None:
    assert decide(comparison(0.2, 0.1, 0.3, n=20), tie_margin=M, min_queries=FLOOR).verdict is Verdict.BETTER


# ---------------------------------------------------------------------------------------------------
# Precedence of the TIE reasons: below floor, equivalent, within margin, unresolved


def test_below_floor_comes_before_equivalent() -> None:
    c = comparison(0.0, -0.01, 0.01, n=5)
    assert classify_metric(c, tie_margin=M, min_queries=FLOOR).tie_reason is TieReason.BELOW_FLOOR


def test_equivalent_comes_before_within_margin() -> None:
    c = comparison(0.01, -0.01, 0.02)  # |delta| < m as well, but the CI inside +-m says more
    assert classify_metric(c, tie_margin=M, min_queries=FLOOR).tie_reason is TieReason.EQUIVALENT


def test_within_margin_comes_before_unresolved() -> None:
    c = comparison(0.01, -0.03, 0.05)  # the CI covers 0 as well
    assert classify_metric(c, tie_margin=M, min_queries=FLOOR).tie_reason is TieReason.WITHIN_MARGIN


def test_tie_reasons_are_listed_in_precedence_order() -> None:
    assert [r.value for r in TieReason] == ["below floor", "equivalent", "within margin", "unresolved"]


# ---------------------------------------------------------------------------------------------------
# Reasons are full sentences with the numbers


def test_unresolved_reason_names_the_mde_and_the_queries_needed() -> None:
    c = comparison(0.021, -0.012, 0.030, n=48, sd=0.15, mde=0.041)
    decision = decide(c, tie_margin=0.02, min_queries=FLOOR)
    assert decision.reason == (
        "unresolved: CI [-0.012, +0.030] covers 0; MDE 0.041 at n=48; "
        "~442 queries needed to resolve a 0.020 margin"
    )
    assert decision.queries_needed == 442 == paired_n(0.02, 0.15, alpha=0.05)


def test_queries_needed_use_alpha_one_minus_confidence() -> None:
    c = comparison(0.05, -0.01, 0.11, confidence=0.9)
    assert decide(c, tie_margin=M, min_queries=FLOOR).queries_needed == paired_n(M, 0.15, alpha=0.1)


def test_within_margin_reason_says_why_it_is_not_equivalent() -> None:
    c = comparison(0.009, -0.012, 0.030, n=48, sd=0.15, mde=0.041)
    decision = decide(c, tie_margin=0.02, min_queries=FLOOR)
    assert decision.reason == (
        "within margin: |Δ| 0.009 < 0.020 but CI [-0.012, +0.030] is not inside ±0.020; "
        "MDE 0.041 at n=48; ~442 queries needed to resolve a 0.020 margin"
    )
    assert decision.queries_needed == 442


@pytest.mark.parametrize(
    ("c", "reason"),
    [
        (
            comparison(0.046, 0.015, 0.077, n=118),
            "better: Δ +0.046 ≥ 0.030 and CI [+0.015, +0.077] excludes 0 (n=118)",
        ),
        (
            comparison(-0.046, -0.077, -0.015),
            "worse: Δ -0.046 ≤ -0.030 and CI [-0.077, -0.015] excludes 0 (n=100)",
        ),
        (comparison(0.001, -0.010, 0.012), "equivalent: CI [-0.010, +0.012] lies inside ±0.030 (n=100)"),
    ],
)
def test_reason_sentences(c: PairedComparison, reason: str) -> None:
    assert decide(c, tie_margin=M, min_queries=FLOOR).reason == reason


ALL_ZERO = comparison(0, 0, 0, sd=0, wins=0, losses=0, sign_p=1, note="all paired differences are zero")


def test_numbers_get_more_decimals_rather_than_contradict_the_rule() -> None:
    decision = decide(comparison(0.02999, -0.01, 0.07), tie_margin=M, min_queries=FLOOR)
    assert decision.reason.startswith(
        "within margin: |Δ| 0.02999 < 0.03000 but CI [-0.01000, +0.07000] is not inside ±0.03000; "
    )
    decision = decide(comparison(0.0300004, 0.0001, 0.06), tie_margin=M, min_queries=FLOOR)
    assert decision.reason.startswith("better: Δ +0.030000 ≥ 0.030000 and CI [+0.000100, +0.060000]")


def test_all_zero_differences_are_equivalent_and_say_so() -> None:
    decision = decide(ALL_ZERO, tie_margin=M, min_queries=FLOOR)
    assert decision.tie_reason is TieReason.EQUIVALENT
    assert decision.reason == (
        "equivalent: CI [+0.000, +0.000] lies inside ±0.030 (n=100; all paired differences are zero)"
    )


def test_zero_margin_is_a_pure_significance_test() -> None:
    assert decide(comparison(0.001, 0.0005, 0.002), tie_margin=0, min_queries=FLOOR).verdict is Verdict.BETTER
    decision = decide(ALL_ZERO, tie_margin=0, min_queries=FLOOR)
    assert (decision.tie_reason, decision.queries_needed) == (TieReason.UNRESOLVED, None)
    assert decision.reason == (
        "unresolved: CI [+0.000, +0.000] covers 0; MDE 0.000 at n=100; all paired differences are zero"
    )


def test_no_interval_above_a_tiny_floor_is_unresolved_with_the_note() -> None:
    nan = math.nan
    c = comparison(0.4, nan, nan, n=1, sd=nan, mde=nan, note="n=1: too few paired queries for an interval")
    decision = decide(c, tie_margin=M, min_queries=1)
    assert (decision.verdict, decision.tie_reason) == (Verdict.TIE, TieReason.UNRESOLVED)
    assert decision.reason == "unresolved: n=1: too few paired queries for an interval"


# ---------------------------------------------------------------------------------------------------
# Guards


BETTER_PRIMARY = comparison(0.05, 0.02, 0.08)
WORSE_GUARD = comparison(-0.041, -0.062, -0.020, n=100)


def test_guard_failure_overrides_a_better_primary() -> None:
    decision = decide(
        BETTER_PRIMARY,
        tie_margin=M,
        min_queries=FLOOR,
        guards={"recall@50": (WORSE_GUARD, 0.02)},
        primary_metric="recall@5",
    )
    assert decision.verdict is Verdict.WORSE
    assert decision.primary is Verdict.BETTER
    assert decision.reason == (
        "guard recall@50 WORSE by its own 0.02 margin: Δ -0.041 ≤ -0.020 and CI [-0.062, -0.020] excludes 0 "
        "(n=100); recall@5 alone would be BETTER: Δ +0.050 ≥ 0.030 and CI [+0.020, +0.080] excludes 0 (n=100)"
    )
    (guard,) = decision.guards
    assert (guard.metric, guard.margin, guard.verdict) == ("recall@50", 0.02, Verdict.WORSE)
    assert guard.failed
    assert guard.comparison is WORSE_GUARD
    assert decision.queries_needed is None and decision.tie_reason is None


def test_guard_is_judged_by_its_own_margin() -> None:
    guard = comparison(-0.015, -0.025, -0.005)
    strict = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR, guards={"ndcg@10": (guard, 0.01)})
    lenient = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR, guards={"ndcg@10": (guard, 0.02)})
    assert strict.verdict is Verdict.WORSE
    assert lenient.verdict is Verdict.BETTER
    assert lenient.guards[0].verdict is Verdict.TIE and not lenient.guards[0].failed


@pytest.mark.parametrize(
    "guard",
    [comparison(-0.04, -0.09, 0.01), comparison(-0.01, -0.05, 0.03), comparison(0.05, 0.02, 0.08)],
    ids=["unresolved", "within margin", "better"],
)
def test_guard_that_is_not_worse_changes_nothing(guard: PairedComparison) -> None:
    decision = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR, guards={"recall@50": (guard, 0.02)})
    alone = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR)
    assert (decision.verdict, decision.reason) == (Verdict.BETTER, alone.reason)
    assert not decision.guards[0].failed


def test_guard_cannot_fail_a_stratum_below_the_floor() -> None:
    primary = comparison(0.05, 0.02, 0.08, n=12)  # e.g. the primary has fewer judged queries
    decision = decide(primary, tie_margin=M, min_queries=FLOOR, guards={"judged@10": (WORSE_GUARD, 0.02)})
    assert decision.verdict is Verdict.TIE and decision.tie_reason is TieReason.BELOW_FLOOR
    assert decision.guards[0].verdict is Verdict.WORSE and not decision.guards[0].failed


def test_every_failing_guard_is_named_in_order() -> None:
    decision = decide(
        BETTER_PRIMARY,
        tie_margin=M,
        min_queries=FLOOR,
        guards={
            "recall@50": (WORSE_GUARD, 0.02),
            "mrr@10": (BETTER_PRIMARY, 0.02),
            "ndcg@10": (WORSE_GUARD, 0.01),
        },
    )
    assert decision.verdict is Verdict.WORSE
    assert [g.metric for g in decision.guards] == ["recall@50", "mrr@10", "ndcg@10"]
    assert [g.failed for g in decision.guards] == [True, False, True]
    assert decision.reason.startswith("guard recall@50 WORSE")
    assert "; guard ndcg@10 WORSE by its own 0.01 margin" in decision.reason
    assert "mrr@10" not in decision.reason


def test_guard_failure_with_a_worse_primary_still_names_the_guard() -> None:
    primary = comparison(-0.05, -0.08, -0.02)
    decision = decide(primary, tie_margin=M, min_queries=FLOOR, guards={"recall@50": (WORSE_GUARD, 0.02)})
    assert (decision.verdict, decision.primary) == (Verdict.WORSE, Verdict.WORSE)
    assert decision.reason.startswith("guard recall@50 WORSE")
    assert "; the primary metric alone would be WORSE: Δ -0.050" in decision.reason


def test_guard_failure_with_a_tied_primary_says_the_primary_would_tie() -> None:
    primary = comparison(0.04, -0.01, 0.09)
    decision = decide(primary, tie_margin=M, min_queries=FLOOR, guards={"recall@50": (WORSE_GUARD, 0.02)})
    assert (decision.verdict, decision.primary) == (Verdict.WORSE, Verdict.TIE)
    assert "; the primary metric alone would tie (unresolved: CI [-0.010, +0.090] covers 0;" in (
        decision.reason
    )


# ---------------------------------------------------------------------------------------------------
# Sign-test disagreement

UP, DOWN = (0.05, 0.02, 0.08), (-0.05, -0.08, -0.02)  # delta, CI low, CI high of a BETTER / a WORSE


@pytest.mark.parametrize(
    ("c", "disagrees"),
    [
        pytest.param(comparison(*UP, wins=40, losses=20, sign_p=0.01), False, id="better, agrees"),
        pytest.param(comparison(*UP, wins=30, losses=22, sign_p=0.33), True, id="better, p too big"),
        pytest.param(comparison(*UP, wins=10, losses=40, sign_p=1e-5), True, id="better, more losses"),
        pytest.param(comparison(*DOWN, wins=20, losses=40, sign_p=0.01), False, id="worse, agrees"),
        pytest.param(comparison(*DOWN, wins=25, losses=30, sign_p=0.59), True, id="worse, p too big"),
        pytest.param(comparison(*DOWN, wins=40, losses=10, sign_p=1e-5), True, id="worse, more wins"),
        pytest.param(comparison(0.04, -0.01, 0.09, wins=10, losses=40, sign_p=1e-5), False, id="tie never"),
    ],
)
def test_sign_disagreement(c: PairedComparison, disagrees: bool) -> None:
    decision = decide(c, tie_margin=M, min_queries=FLOOR)
    assert decision.sign_disagrees is disagrees
    assert sign_test_disagrees(c, decision.verdict) is disagrees


def test_sign_p_equal_to_alpha_disagrees() -> None:
    c = comparison(0.05, 0.02, 0.08, confidence=0.9, sign_p=1 - 0.9)
    assert decide(c, tie_margin=M, min_queries=FLOOR).sign_disagrees


def test_guard_failure_reports_the_guard_sign_test() -> None:
    shaky_guard = comparison(-0.041, -0.062, -0.020, wins=30, losses=28, sign_p=0.9)
    solid_primary = comparison(0.05, 0.02, 0.08, wins=50, losses=10, sign_p=1e-6)
    guards = {"recall@50": (shaky_guard, 0.02)}
    decision = decide(solid_primary, tie_margin=M, min_queries=FLOOR, guards=guards)
    assert decision.verdict is Verdict.WORSE
    assert decision.sign_disagrees and decision.guards[0].sign_disagrees


# ---------------------------------------------------------------------------------------------------
# Validation and types


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tie_margin": -0.01}, "tie_margin must be a finite number >= 0, got -0.01"),
        ({"tie_margin": math.nan}, "tie_margin must be a finite number >= 0, got nan"),
        ({"tie_margin": True}, "tie_margin must be a finite number >= 0, got True"),
        ({"min_queries": -1}, "min_queries must be an integer >= 0, got -1"),
        ({"min_queries": 2.5}, "min_queries must be an integer >= 0, got 2.5"),
        (
            {"guards": {"recall@50": (BETTER_PRIMARY, -1)}},
            "margin of guard 'recall@50' must be a finite number >= 0, got -1",
        ),
    ],
)
def test_bad_thresholds_are_rejected(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"tie_margin": M, "min_queries": FLOOR, **kwargs}
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        decide(BETTER_PRIMARY, **arguments)  # type: ignore[arg-type]


def test_verdicts_serialise_as_their_names() -> None:
    assert json.dumps([Verdict.BETTER, Verdict.WORSE, Verdict.TIE]) == '["BETTER", "WORSE", "TIE"]'
    assert Verdict("TIE") is Verdict.TIE
    assert TieReason("within margin") is TieReason.WITHIN_MARGIN


def test_decision_is_frozen() -> None:
    decision = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR)
    assert isinstance(decision, Decision)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.verdict = Verdict.WORSE  # type: ignore[misc]
