"""What a person reads of the pipeline a golden set declares besides retrieval: how many queries its filters
restrict and how many chunks were folded into documents (`pipeline_notes`), each stratum's first-stage
and after-rerank comparison side by side with which one the verdict rests on (`rerank_block`), and with a
vector database as the index each stratum's Δ split into the model's part and the engine's
(`index_split_block`).

Pure functions of one golden set of the merged JSON report, keyed on presence: a golden set without
``filters``, ``fold``, ``rerank`` or an engine gets nothing from here. The terminal, the Markdown and the HTML
page render the same notes and blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.reports.capacity_contents import Block
from pytest_embeval.reports.contents import Table, fmt_interval, fmt_number
from pytest_embeval.reports.json_report import ROLES


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


def index_split_block(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> Block | None:
    """Each stratum's Δ of the primary metric (the engine's, which the verdict rests on), the model's part
    (both arms searched exactly) with the verdict the rule gives it, and each arm's engine part (its recall
    against exact search and what the engine changed of the metric); notes where the verdict under exact
    search differs. None without a vector database."""
    ran = [s for s in strata if "index_split" in s]
    if not ran:
        return None
    first = ran[0]["index_split"]
    metric, k = first["metric"], first["k"]
    rows = []
    notes = []
    for s in ran:
        split = s["index_split"]
        model = split["model"]
        rows.append(
            (
                str(s["stratum"]),
                str(s["n"]),
                f"{fmt_number(s['delta'], True)} {fmt_interval(s['ci'])}",
                str(s["verdict"]),
                f"{fmt_number(model['delta'], True)} {fmt_interval(model['ci'])}",
                str(model["verdict"]),
                *(_engine_cell(split["engine"].get(role)) for role in ROLES),
            )
        )
        if model["verdict"] != s["verdict"]:
            notes.append(
                f"{s['stratum']}: {s['verdict']} on the engine, {model['verdict']} under exact search: what "
                "moved the verdict is the engine, not the model alone"
            )
    return Block(
        caption=(
            f"{metric} Δ split (each arm also searched exactly on the same vectors): the model's part "
            f"compares the exact searches, each engine part the engine against exact search (recall@{k} of "
            "the exact top k; Δ of the metric); Δ = model + candidate's engine part - incumbent's:"
        ),
        table=Table(
            header=(
                "stratum",
                "n",
                "Δ (engine)",
                "verdict",
                "model Δ (exact)",
                "exact verdict",
                "incumbent engine",
                "candidate engine",
            ),
            kinds=("id", "number", "number", "verdict", "number", "verdict", "number", "number"),
            rows=tuple(rows),
        ),
        notes=tuple(notes),
    )


def _engine_cell(part: Mapping[str, Any] | None) -> str:
    """One arm's engine part: ``recall 0.982, -0.004 [-0.010, +0.000]``."""
    if part is None:
        return "—"
    return (
        f"recall {fmt_number(part['recall'])}, {fmt_number(part['delta'], True)} {fmt_interval(part['ci'])}"
    )
