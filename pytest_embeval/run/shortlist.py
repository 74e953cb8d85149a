"""Several candidates against the incumbent on one golden set: the family their comparisons are decided in.

Each arm of a shortlist is run once (`pipeline.run_arm_on`, on the golden set's `pipeline.ArmInputs`) and each
candidate is paired with the incumbent (`pipeline.pair_arms`): a comparison is a `pipeline.GoldenRun` as
with one candidate. What the shortlist adds is the family. By default (``family: shortlist``) every
candidate's tested strata are one family, adjusted by ``multiple_comparisons``, and by ``holm`` where the
file says ``none``: four candidates on six strata are 24 tests, and at 95 % each the chance of a false
verdict somewhere when nothing changed would be up to 71 %. ``family: candidate`` decides each candidate's
strata as their own family, as a run of that candidate alone decides them (its declared method, ``none``
included).

A verdict must not depend on which process decided it: every process that decides a candidate's strata
decides the whole family first (`shortlist_families`), from every candidate's per-query scores, which it
computes itself (the embedding cache gives it the vectors another process embedded). Holm's step-down
ranks every member's p-value, so nothing less than all of them is exact.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pytest_embeval.golden.schema import DEFAULT_FAMILY, GoldenSet
from pytest_embeval.run.pipeline import GoldenRun
from pytest_embeval.run.stratum_evaluation import StrataFamilies, decide_families

__all__ = ["family_scope", "shortlist_families", "shortlist_method"]


def family_scope(golden: GoldenSet) -> str:
    """``shortlist`` (every candidate's strata one family) or ``candidate`` (each candidate's its own)."""
    return golden.family or DEFAULT_FAMILY


def shortlist_method(golden: GoldenSet) -> str:
    """The adjustment of a shortlist's family: the declared ``multiple_comparisons``, or ``holm`` where it
    is ``none`` (with ``family: candidate``, each candidate's family is adjusted as declared)."""
    if family_scope(golden) == "candidate" or golden.multiple_comparisons != "none":
        return golden.multiple_comparisons
    return "holm"


def shortlist_families(
    comparisons: Mapping[str, tuple[GoldenRun, Collection[str] | None]],
) -> dict[str, StrataFamilies] | None:
    """Each candidate's place in the shortlist's family, by candidate name: ``comparisons`` maps each
    candidate that ran to its comparison with the incumbent and the strata its items test (None: all).
    None with ``family: candidate``: each candidate's comparison then decides its own family
    (`stratum_evaluation.evaluate_golden` without ``families``)."""
    if not comparisons:
        return {}
    golden = next(iter(comparisons.values()))[0].golden
    if family_scope(golden) == "candidate":
        return None
    names = tuple(comparisons)
    families = decide_families(list(comparisons.values()), shortlist_method(golden), candidates=names)
    return dict(zip(names, families, strict=True))
