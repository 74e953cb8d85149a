"""The sentences under a golden set's strata table, whatever it is rendered as: what the verdicts rest on
(the footnotes of ``*`` and ``†``, the weights and the design of a drawn set, the family of strata, ties
across the cutoff, queries neither arm finds a relevant document for) and the judgments' coverage.

Pure functions of one golden set of the merged JSON report, as `contents`' are; `reports/terminal.py`,
`reports/markdown.py` and `reports/html_page.py` render them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.core.sample_design import STRATIFIED, design_words
from pytest_embeval.core.verdict import ROUGH_BELOW, familywise_error
from pytest_embeval.judging.coverage import CoverageRow, coverage_warnings
from pytest_embeval.reports.contents import counted, join_words, rough, traffic_weight_text
from pytest_embeval.reports.shortlist import CANDIDATE_NAME

__all__ = ["Note", "coverage_notes", "strata_notes"]


@dataclasses.dataclass(frozen=True, slots=True)
class Note:
    """A sentence under the strata table; a warning asks for action."""

    text: str
    warning: bool = False


def strata_notes(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[Note]:
    """What the verdicts rest on: the footnotes of ``*`` and ``†``, the family of strata, ties across the
    cutoff, and queries neither arm finds a relevant document for."""
    notes = []
    if any(s.get("sign_disagrees") for s in strata):
        notes.append(Note("* the sign test disagrees with the mean: a few queries drive the difference."))
    if any(rough(s.get("effective_n")) for s in strata):
        notes.append(
            Note(
                f"† fewer than {ROUGH_BELOW} queries differ between the arms: the interval rests on few "
                "queries."
            )
        )
    return [
        *notes,
        *_weights_notes(golden, strata),
        *_family_notes(golden, strata),
        *_tie_notes(strata),
        *_consensus_notes(golden, strata),
    ]


def _weights_notes(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[Note]:
    """Under ``weights``: what the numbers are, and the strata whose verdict the weights change."""
    if "weights" not in golden:
        return []
    weight = traffic_weight_text(golden)
    what = (
        "its frequency"
        if weight == golden["weights"]
        else "its frequency over its inclusion probability (the traffic it stands for in the log it was "
        "drawn from)"
    )
    notes = [
        Note(
            f"traffic-weighted by {weight}: means, Δ, CI, MDE and verdicts weigh each query by {what}; "
            "Kish: the effective number of queries (min_queries applies to it); "
            "unweighted: every query once, as without the key; W/L counts queries."
        )
    ]
    if golden.get("design", {}).get("kind") == STRATIFIED:
        notes.append(
            Note(
                f"{design_words(golden['design'])}: the weighted intervals, MDE and queries needed use the "
                "variance of the draw its sidecar records (each cell drawn without replacement; a cell drawn "
                "whole has no sampling error)."
            )
        )
    changed = [
        f"{s['stratum']} ({s['verdict']} weighted, {s['unweighted']['verdict']} unweighted)"
        for s in strata
        if "unweighted" in s and s["unweighted"]["verdict"] != s["verdict"]
    ]
    if changed:
        notes.append(Note(f"the traffic weights change the verdict of {join_words(changed)}."))
    return notes


def coverage_notes(golden: Mapping[str, Any], report_path: str | None = None) -> list[Note]:
    """A warning for each arm whose top k was judged much less than another's (`coverage.coverage_warnings`,
    from the report's ``coverage`` records; the fix names ``report_path`` when there is one). Nothing for a
    shortlist's candidate: its shortlist warns once, across every arm (`shortlist_contents`)."""
    if CANDIDATE_NAME in golden:
        return []
    rows = [CoverageRow(**row) for row in golden.get("coverage", [])]
    found = coverage_warnings(rows, golden_path=golden["path"], report_path=report_path)
    return [Note(warning, warning=True) for warning in found]


def _family_notes(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[Note]:
    """How the strata were decided together: with ``none``, the family size and the chance of a false
    verdict somewhere if nothing changed; with an adjustment, the level each stratum was decided at."""
    families = [s["family"] for s in strata if s.get("family") is not None]
    if not families or families[0]["size"] < 2:
        return []
    method, size = families[0]["method"], families[0]["size"]
    alpha = 1.0 - golden["confidence"]
    if method == "none":
        chance = familywise_error(alpha, size)
        return [
            Note(
                f"{size} strata tested at {golden['confidence']:.0%} each: if nothing changed, the chance of "
                f"at least one false BETTER or WORSE among them is up to {chance:.0%} "
                f"(multiple_comparisons: holm keeps it within {alpha:.0%})."
            )
        ]
    levels = ", ".join(
        f"{s['stratum']} {s['family']['level']:.3g}"
        for s in strata
        if s.get("family") is not None and s["family"]["level"] is not None
    )
    candidates = families[0].get("candidates")
    if candidates:
        return [
            Note(
                f"multiple comparisons: {method} over {size} comparisons, the strata of "
                f"{counted(len(candidates), 'candidate')} ({', '.join(candidates)}) decided as one family "
                f"(family: candidate decides each on its own), family-wise level {alpha:g}; this candidate's "
                f"levels: {levels}."
            )
        ]
    return [
        Note(
            f"multiple comparisons: {method} over {size} strata, family-wise level {alpha:g}; "
            f"levels: {levels}."
        )
    ]


def _tie_notes(strata: Sequence[Mapping[str, Any]]) -> list[Note]:
    """Per stratum with ties across the primary cutoff: how many queries tie in each arm, and a warning when
    some order of the tied documents gives another verdict."""
    notes = []
    for s in strata:
        tied = s.get("tied")
        if tied is None or not (tied["incumbent"] or tied["candidate"] or tied["could_change"]):
            continue
        counts = (
            f"{s['stratum']}: tied scores across {tied['metric']} in {tied['incumbent']} incumbent and "
            f"{tied['candidate']} candidate queries of {s['n']}"
        )
        if tied["could_change"]:
            others = ", ".join(f"{verdict} ({order})" for order, verdict in tied["verdicts"].items())
            text = (
                f"{counts}: the tie order changes the verdict: {others}; ties: expected scores every order "
                "alike"
            )
            notes.append(Note(text, warning=True))
        else:
            notes.append(Note(f"ties: {counts}; no order of them changes the verdict"))
    return notes


def _consensus_notes(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[Note]:
    """Queries where neither arm finds a relevant document within the cutoff: counted per stratum, with the
    command that writes a sheet to re-judge them."""
    counted = [(s["stratum"], len(s.get("consensus_failures", ()))) for s in strata]
    counted = [(name, count) for name, count in counted if count]
    if not counted:
        return []
    k = str(golden["metric"]).split("@")[-1]
    per_stratum = ", ".join(f"{name} {count}" for name, count in counted)
    return [
        Note(
            f"check the labels: queries where neither arm finds a relevant document in the top {k}: "
            f"{per_stratum} (listed under consensus_failures in the JSON report; `embeval pool "
            f"{golden['path']} --from-report REPORT.json --consensus-failures` writes a sheet to re-judge "
            "them)"
        )
    ]
