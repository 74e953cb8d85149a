"""verdict.py: the verdict table of DESIGN.md, row by row, with the precedence of the TIE reasons.

Comparisons are built directly (no bootstrap), so every number in a reason is known exactly.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest

from pytest_embeval.core.stats import PairedComparison, minimum_detectable_effect, paired_n
from pytest_embeval.core.verdict import (
    ROUGH_BELOW,
    StratumRuling,
    TieReason,
    Verdict,
    classify_metric,
    decide,
    decide_metric,
    family_levels,
    familywise_error,
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
    p_value: float = 0.01,
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
        interval="studentized",
        p_value=p_value,
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
    ruling = classify_metric(c, tie_margin=M, min_queries=FLOOR)
    assert (ruling.verdict, ruling.tie_reason) == (verdict, tie_reason)
    assert ruling.reason.startswith(tie_reason.value if tie_reason else verdict.value.lower())
    assert decide_metric(c, tie_margin=M, min_queries=FLOOR) == (ruling.verdict, ruling.reason)
    final = decide(c, tie_margin=M, min_queries=FLOOR)
    assert (final.verdict, final.primary, final.tie_reason, final.reason) == (
        verdict,
        verdict,
        tie_reason,
        ruling.reason,
    )


@pytest.mark.parametrize(
    ("delta", "low", "high"),
    [(0.2, 0.1, 0.3), (-0.2, -0.3, -0.1), (0.0, -0.001, 0.001), (0.05, -0.1, 0.2)],
    ids=["would be better", "would be worse", "would be equivalent", "would be unresolved"],
)
def test_below_floor_never_passes_or_fails(delta: float, low: float, high: float) -> None:
    ruling = decide(comparison(delta, low, high, n=19), tie_margin=M, min_queries=FLOOR)
    assert ruling.verdict is Verdict.TIE
    assert ruling.tie_reason is TieReason.BELOW_FLOOR
    assert ruling.reason == (
        "below floor: n=19 < min_queries=20; a stratum under the floor never passes or fails"
    )
    assert ruling.queries_needed is None


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
    ruling = decide(c, tie_margin=0.02, min_queries=FLOOR)
    assert ruling.reason == (
        "unresolved: CI [-0.012, +0.030] covers 0; MDE 0.041 at n=48; "
        "~442 queries needed to resolve a 0.020 margin"
    )
    assert ruling.queries_needed == 442 == paired_n(0.02, 0.15, alpha=0.05)


def test_queries_needed_use_alpha_one_minus_confidence() -> None:
    c = comparison(0.05, -0.01, 0.11, confidence=0.9)
    assert decide(c, tie_margin=M, min_queries=FLOOR).queries_needed == paired_n(M, 0.15, alpha=0.1)


def test_within_margin_reason_says_why_it_is_not_equivalent() -> None:
    c = comparison(0.009, -0.012, 0.030, n=48, sd=0.15, mde=0.041)
    ruling = decide(c, tie_margin=0.02, min_queries=FLOOR)
    assert ruling.reason == (
        "within margin: |Δ| 0.009 < 0.020 but CI [-0.012, +0.030] is not inside ±0.020; "
        "MDE 0.041 at n=48; ~442 queries needed to resolve a 0.020 margin"
    )
    assert ruling.queries_needed == 442


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
    ruling = decide(comparison(0.02999, -0.01, 0.07), tie_margin=M, min_queries=FLOOR)
    assert ruling.reason.startswith(
        "within margin: |Δ| 0.02999 < 0.03000 but CI [-0.01000, +0.07000] is not inside ±0.03000; "
    )
    ruling = decide(comparison(0.0300004, 0.0001, 0.06), tie_margin=M, min_queries=FLOOR)
    assert ruling.reason.startswith("better: Δ +0.030000 ≥ 0.030000 and CI [+0.000100, +0.060000]")


def test_all_zero_differences_are_equivalent_and_say_so() -> None:
    ruling = decide(ALL_ZERO, tie_margin=M, min_queries=FLOOR)
    assert ruling.tie_reason is TieReason.EQUIVALENT
    assert ruling.reason == (
        "equivalent: CI [+0.000, +0.000] lies inside ±0.030 (n=100; all paired differences are zero)"
    )


def test_zero_margin_is_a_pure_significance_test() -> None:
    assert decide(comparison(0.001, 0.0005, 0.002), tie_margin=0, min_queries=FLOOR).verdict is Verdict.BETTER
    ruling = decide(ALL_ZERO, tie_margin=0, min_queries=FLOOR)
    assert (ruling.tie_reason, ruling.queries_needed) == (TieReason.UNRESOLVED, None)
    assert ruling.reason == (
        "unresolved: CI [+0.000, +0.000] covers 0; MDE 0.000 at n=100; all paired differences are zero"
    )


def test_no_interval_above_a_tiny_floor_is_unresolved_with_the_note() -> None:
    nan = math.nan
    c = comparison(0.4, nan, nan, n=1, sd=nan, mde=nan, note="n=1: too few paired queries for an interval")
    ruling = decide(c, tie_margin=M, min_queries=1)
    assert (ruling.verdict, ruling.tie_reason) == (Verdict.TIE, TieReason.UNRESOLVED)
    assert ruling.reason == "unresolved: n=1: too few paired queries for an interval"


# ---------------------------------------------------------------------------------------------------
# Guards


BETTER_PRIMARY = comparison(0.05, 0.02, 0.08)
WORSE_GUARD = comparison(-0.041, -0.062, -0.020, n=100)


def test_guard_failure_overrides_a_better_primary() -> None:
    ruling = decide(
        BETTER_PRIMARY,
        tie_margin=M,
        min_queries=FLOOR,
        guards={"recall@50": (WORSE_GUARD, 0.02)},
        primary_metric="recall@5",
    )
    assert ruling.verdict is Verdict.WORSE
    assert ruling.primary is Verdict.BETTER
    assert ruling.reason == (
        "guard recall@50 WORSE by its own 0.02 margin: Δ -0.041 ≤ -0.020 and CI [-0.062, -0.020] excludes 0 "
        "(n=100); recall@5 alone would be BETTER: Δ +0.050 ≥ 0.030 and CI [+0.020, +0.080] excludes 0 (n=100)"
    )
    (guard,) = ruling.guards
    assert (guard.metric, guard.margin, guard.verdict) == ("recall@50", 0.02, Verdict.WORSE)
    assert guard.failed
    assert guard.comparison is WORSE_GUARD
    assert ruling.queries_needed is None and ruling.tie_reason is None


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
    ruling = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR, guards={"recall@50": (guard, 0.02)})
    alone = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR)
    assert (ruling.verdict, ruling.reason) == (Verdict.BETTER, alone.reason)
    assert not ruling.guards[0].failed


def test_guard_cannot_fail_a_stratum_below_the_floor() -> None:
    primary = comparison(0.05, 0.02, 0.08, n=12)  # e.g. the primary has fewer judged queries
    ruling = decide(primary, tie_margin=M, min_queries=FLOOR, guards={"judged@10": (WORSE_GUARD, 0.02)})
    assert ruling.verdict is Verdict.TIE and ruling.tie_reason is TieReason.BELOW_FLOOR
    assert ruling.guards[0].verdict is Verdict.WORSE and not ruling.guards[0].failed


def test_every_failing_guard_is_named_in_order() -> None:
    ruling = decide(
        BETTER_PRIMARY,
        tie_margin=M,
        min_queries=FLOOR,
        guards={
            "recall@50": (WORSE_GUARD, 0.02),
            "mrr@10": (BETTER_PRIMARY, 0.02),
            "ndcg@10": (WORSE_GUARD, 0.01),
        },
    )
    assert ruling.verdict is Verdict.WORSE
    assert [g.metric for g in ruling.guards] == ["recall@50", "mrr@10", "ndcg@10"]
    assert [g.failed for g in ruling.guards] == [True, False, True]
    assert ruling.reason.startswith("guard recall@50 WORSE")
    assert "; guard ndcg@10 WORSE by its own 0.01 margin" in ruling.reason
    assert "mrr@10" not in ruling.reason


def test_guard_failure_with_a_worse_primary_still_names_the_guard() -> None:
    primary = comparison(-0.05, -0.08, -0.02)
    ruling = decide(primary, tie_margin=M, min_queries=FLOOR, guards={"recall@50": (WORSE_GUARD, 0.02)})
    assert (ruling.verdict, ruling.primary) == (Verdict.WORSE, Verdict.WORSE)
    assert ruling.reason.startswith("guard recall@50 WORSE")
    assert "; the primary metric alone would be WORSE: Δ -0.050" in ruling.reason


def test_guard_failure_with_a_tied_primary_says_the_primary_would_tie() -> None:
    primary = comparison(0.04, -0.01, 0.09)
    ruling = decide(primary, tie_margin=M, min_queries=FLOOR, guards={"recall@50": (WORSE_GUARD, 0.02)})
    assert (ruling.verdict, ruling.primary) == (Verdict.WORSE, Verdict.TIE)
    assert "; the primary metric alone would tie (unresolved: CI [-0.010, +0.090] covers 0;" in (
        ruling.reason
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
    ruling = decide(c, tie_margin=M, min_queries=FLOOR)
    assert ruling.sign_disagrees is disagrees
    assert sign_test_disagrees(c, ruling.verdict) is disagrees


def test_sign_p_equal_to_alpha_disagrees() -> None:
    c = comparison(0.05, 0.02, 0.08, confidence=0.9, sign_p=1 - 0.9)
    assert decide(c, tie_margin=M, min_queries=FLOOR).sign_disagrees


def test_guard_failure_reports_the_guard_sign_test() -> None:
    shaky_guard = comparison(-0.041, -0.062, -0.020, wins=30, losses=28, sign_p=0.9)
    solid_primary = comparison(0.05, 0.02, 0.08, wins=50, losses=10, sign_p=1e-6)
    guards = {"recall@50": (shaky_guard, 0.02)}
    ruling = decide(solid_primary, tie_margin=M, min_queries=FLOOR, guards=guards)
    assert ruling.verdict is Verdict.WORSE
    assert ruling.sign_disagrees and ruling.guards[0].sign_disagrees


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


def test_a_ruling_is_frozen() -> None:
    ruling = decide(BETTER_PRIMARY, tie_margin=M, min_queries=FLOOR)
    assert isinstance(ruling, StratumRuling)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ruling.verdict = Verdict.WORSE  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------------
# What a tie says about more queries


def test_a_tie_within_margin_whose_interval_excludes_zero_says_so() -> None:
    # The 1,500-query stratum of issue 10: it used to ask for "~365 queries" it already had.
    c = comparison(-0.009, -0.012, -0.006, n=1500, sd=0.068, wins=400, losses=700)
    ruling = decide(c, tie_margin=0.01, min_queries=FLOOR)
    assert (ruling.verdict, ruling.tie_reason) == (Verdict.TIE, TieReason.WITHIN_MARGIN)
    assert ruling.reason == (
        "within margin: |Δ| 0.009 < 0.010; CI [-0.012, -0.006] excludes 0 and reaches past -0.010: "
        "a real difference, not shown to be smaller than the margin; MDE 0.005 at n=1500"
    )
    assert ruling.queries_needed is None
    assert paired_n(0.01, 0.068) == 363  # what the old sentence would have asked for


def test_queries_needed_appear_only_when_more_queries_would_help() -> None:
    needed = paired_n(M, 0.15)  # 197
    short = decide(comparison(0.04, -0.01, 0.09, n=needed - 1), tie_margin=M, min_queries=FLOOR)
    assert short.queries_needed == needed and f"~{needed} queries needed" in short.reason
    enough = decide(comparison(0.04, -0.01, 0.09, n=needed), tie_margin=M, min_queries=FLOOR)
    assert enough.queries_needed is None and "queries needed" not in enough.reason
    assert (
        enough.reason == f"unresolved: CI [-0.010, +0.090] covers 0; MDE {enough_mde(needed)} at n={needed}"
    )


def enough_mde(n: int) -> str:
    return f"{minimum_detectable_effect(0.15, n):.3f}"


@pytest.mark.parametrize(("wins", "losses", "noted"), [(5, 4, True), (6, 4, False), (0, 0, False)])
def test_an_interval_on_fewer_than_ten_differing_queries_is_noted(
    wins: int, losses: int, noted: bool
) -> None:
    c = comparison(0.05, 0.02, 0.08, n=40, wins=wins, losses=losses)
    reason = decide(c, tie_margin=M, min_queries=FLOOR).reason
    note = f"only {wins + losses} of 40 queries differ: the interval rests on few queries"
    assert (note in reason) is noted
    assert ROUGH_BELOW == 10


# ---------------------------------------------------------------------------------------------------
# A family of strata


def test_holm_levels_equal_a_hand_computation_on_four_strata() -> None:
    # Sorted p: 0.010 (rank 1, level 0.05/4 = 0.0125: rejected), 0.013 (rank 2, 0.05/3 = 0.01667:
    # rejected), 0.030 (rank 3, 0.05/2 = 0.025: not rejected, Holm stops), 0.20 (rank 4: retained, at the
    # stopping level 0.025).
    p = [0.010, 0.030, 0.013, 0.20]
    levels = family_levels(p, alpha=0.05, method="holm")
    assert levels == pytest.approx([0.0125, 0.025, 0.05 / 3, 0.025])
    assert [pi < level for pi, level in zip(p, levels, strict=True)] == [True, False, True, False]


def test_holm_decisions_are_the_verdicts_of_intervals_at_the_adjusted_levels() -> None:
    # The same four strata, each with a CI at its adjusted level that excludes 0 exactly when p < level.
    p = [0.010, 0.030, 0.013, 0.20]
    levels = family_levels(p, alpha=0.05, method="holm")
    strata = [
        comparison(0.05, 0.01, 0.09, p_value=p[0], confidence=1 - levels[0]),  # type: ignore[operator]
        comparison(0.05, -0.001, 0.10, p_value=p[1], confidence=1 - levels[1]),  # type: ignore[operator]
        comparison(-0.06, -0.10, -0.02, p_value=p[2], confidence=1 - levels[2]),  # type: ignore[operator]
        comparison(0.04, -0.03, 0.11, p_value=p[3], confidence=1 - levels[3]),  # type: ignore[operator]
    ]
    verdicts = [decide(c, tie_margin=M, min_queries=FLOOR).verdict for c in strata]
    assert verdicts == [Verdict.BETTER, Verdict.TIE, Verdict.WORSE, Verdict.TIE]


def test_bonferroni_and_none_levels() -> None:
    p = [0.010, 0.030, 0.013, 0.20]
    assert family_levels(p, alpha=0.05, method="bonferroni") == (0.0125,) * 4
    assert family_levels(p, alpha=0.05, method="none") == (0.05,) * 4


def test_strata_outside_the_family_get_no_level_and_do_not_count() -> None:
    p = [0.004, None, 0.02, None]
    assert family_levels(p, alpha=0.05, method="holm") == (0.025, None, 0.05, None)
    assert family_levels(p, alpha=0.05, method="bonferroni") == (0.025, None, 0.025, None)
    assert family_levels([None, None], alpha=0.05, method="holm") == (None, None)


def test_holm_ties_in_p_keep_stratum_order_and_stop_together() -> None:
    # rank 1: 0.001 < 0.05/3; ranks 2 and 3 (equal p, stratum order): 0.02 < 0.025, 0.02 < 0.05
    assert family_levels([0.02, 0.02, 0.001], alpha=0.05, method="holm") == pytest.approx(
        [0.025, 0.05, 0.05 / 3]
    )
    # 0.03 fails rank 2's 0.025: Holm stops, and the equal p of rank 3 is held at the same level
    assert family_levels([0.03, 0.03, 0.001], alpha=0.05, method="holm") == pytest.approx(
        [0.025, 0.025, 0.05 / 3]
    )


def test_familywise_error_of_eleven_strata() -> None:
    assert familywise_error(0.05, 11) == pytest.approx(1 - 0.95**11)
    assert round(familywise_error(0.05, 11), 3) == 0.431
    assert familywise_error(0.05, 1) == pytest.approx(0.05) and familywise_error(0.05, 0) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "sidak"}, "method must be one of none, holm, bonferroni, got 'sidak'"),
        ({"alpha": 0}, "alpha must be a number strictly between 0 and 1, got 0"),
        ({"p_values": [0.1, 1.5]}, "p_values[1] must be a number in [0, 1] or None, got 1.5"),
        ({"p_values": [math.nan]}, "p_values[0] must be a number in [0, 1] or None, got nan"),
    ],
)
def test_family_levels_validate(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"p_values": [0.1], "alpha": 0.05, "method": "holm", **kwargs}
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        family_levels(**arguments)  # type: ignore[arg-type]
