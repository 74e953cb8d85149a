"""What a person reads of the pipeline a golden set declares besides retrieval: how many queries its filters
restrict and how many chunks were folded into documents (`pipeline_notes`), and each stratum's first-stage
and after-rerank comparison side by side with which one the verdict rests on (`rerank_block`).

Pure functions of one golden set of the merged JSON report, keyed on presence: a golden set without
``filters``, ``fold`` or ``rerank`` gets nothing from here. The terminal, the Markdown and the HTML page
render the same notes and block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.reports.capacity_contents import Block
from pytest_embeval.reports.contents import Table, fmt_interval, fmt_number


def pipeline_notes(golden: Mapping[str, Any]) -> list[str]:
    """What the filters restricted (and the queries they leave nothing to) and what folding folded."""
    notes = []
    filters = golden.get("filters")
    if filters is not None:
        note = (
            f"filters: {filters['queries']} of {len(golden['queries'])} queries search only the documents "
            f"their filters allow ({filters['distinct']} distinct filters)"
        )
        empty = filters["matching_nothing"]
        if empty:
            note += f"; {len(empty)} match no document: " + ", ".join(empty)
        notes.append(note)
    fold = golden.get("fold")
    if fold is not None:
        notes.append(
            f"folded {fold['chunks']:,} chunks into {fold['documents']:,} documents by {fold['field']!r} "
            f"(a document ranks by its best chunk; {golden['depth']} documents per query)"
        )
    return notes


def rerank_block(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> Block | None:
    """Each stratum's first-stage and after-rerank comparison of the primary metric on the queries reranked
    for it, which one the verdict rests on, and where a first-stage gain or loss vanishes after reranking;
    None without a reranker."""
    ran = [s for s in strata if "rerank" in s]
    rerank = golden.get("rerank")
    if rerank is None or not ran:
        return None
    metric = golden["metric"]
    where = "all queries" if rerank["sample"] is None else f"{rerank['sample']} queries per stratum"
    decides = "the after-rerank ranking" if rerank["decides"] else "the first stage"
    rows = []
    for s in ran:
        first, after = s["rerank"]["first_stage"], s["rerank"]["after_rerank"]
        before_m, after_m = first["metrics"][metric], after["metrics"][metric]
        absorbed = s["rerank"]["absorbed"]
        rows.append(
            (
                str(s["stratum"]),
                str(after_m["n"]),
                fmt_number(before_m["delta"], True),
                fmt_interval(before_m["ci"]),
                str(first["verdict"]),
                fmt_number(after_m["delta"], True),
                fmt_interval(after_m["ci"]),
                str(after["verdict"]),
                "" if absorbed is None else f"the first-stage {absorbed} vanishes after reranking",
            )
        )
    timings = rerank.get("timings", {})
    return Block(
        caption=(
            f"reranked by {rerank['spec']} (top {rerank['depth']}, {where}, {metric}); the verdict rests on "
            f"{decides}:"
        ),
        table=Table(
            header=("stratum", "n", "first stage Δ", "CI", "verdict", "after rerank Δ", "CI", "verdict", ""),
            kinds=("id", "number", "number", "number", "verdict", "number", "number", "verdict", "text"),
            rows=tuple(rows),
        ),
        notes=(
            f"reranker: {timings.get('pairs_scored', 0):,} pairs scored, "
            f"{timings.get('pairs_from_cache', 0):,} from the cache",
        ),
    )
