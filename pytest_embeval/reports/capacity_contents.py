"""What a person reads of a golden set's capacity figures and corpus slices, as captioned text tables: each
arm's capacity measured here and projected to ``production`` (with what every projection assumes), the
primary metric's Δ at each corpus size, the ef each arm needed at a recall target, and what an endpoint arm
spent.

Pure functions of one golden set of the merged JSON report, keyed on presence: a golden set without
``production``, ``corpus_sample`` or ``recall_target`` gets nothing from here. The terminal, the Markdown
and the HTML page render the same blocks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_embeval.reports.contents import Table, fmt_interval, fmt_number
from pytest_embeval.reports.json_report import ROLES


@dataclasses.dataclass(frozen=True, slots=True)
class Block:
    """A table under a caption (a sentence ending in a colon), with notes below it."""

    caption: str
    table: Table
    notes: tuple[str, ...] = ()


def slices_block(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> Block | None:
    """Per stratum, the primary Δ, CI and verdict at each corpus size, and the strata whose gap still moved
    between the two largest sizes; None without ``corpus_sample``."""
    ran = [s for s in strata if s.get("slices")]
    if not ran:
        return None
    sample = golden["corpus_sample"]
    sizes = ran[0]["slices"]
    header = ("stratum", *(f"{one['fraction']:.0%} ({one['documents']:,} documents)" for one in sizes))
    rows = tuple(
        (
            str(s["stratum"]),
            *(
                f"{fmt_number(one['delta'], True)} {fmt_interval(one['ci'])} {one['verdict']}"
                for one in s["slices"]
            ),
        )
        for s in ran
    )
    return Block(
        caption=(
            f"{golden['metric']} Δ by corpus size, of {sample['corpus_documents']:,} documents (every "
            f"judged one in each slice, the rest a draw seeded {sample['seed']}); the verdicts are the "
            "largest slice's:"
        ),
        table=Table(header=header, kinds=("id", *("text",) * len(sizes)), rows=rows),
        notes=tuple(f"{s['stratum']}: {s['slices_note']}" for s in ran if s["gap_moving"]),
    )


def capacity_blocks(golden: Mapping[str, Any]) -> list[Block]:
    """Each arm's capacity at the production size, and per month when ``queries_per_month`` is declared;
    nothing when the golden set declares no production size."""
    arms = [(role, golden[role]["capacity"]) for role in ROLES if "capacity" in golden[role]]
    if not arms:
        return []
    measured = arms[0][1]["measured"]
    documents = arms[0][1]["production"]["documents"]
    rows = []
    for role, capacity in arms:
        here, there = capacity["measured"], capacity["production"]
        tokens = here["document_tokens"]
        latency = here["timings"]["latency_ms"]
        rows.append(
            (
                role,
                f"{here['dimension']} x {here['dtype']} ({here['bytes_per_vector']:,} B)",
                "—" if tokens is None else f"{tokens['per_text']:.1f}",
                _fmt_encoding(here["timings"]["encoding"]),
                f"{latency['p50']:.3g} / {latency['p95']:.3g} ms",
                _fmt_estimate(there["index_bytes"], lambda value: f"{value / 1e9:,.2f} GB"),
                _fmt_estimate(there["embedding_tokens"], _fmt_count),
                _fmt_estimate(there["embedding_cost"], _fmt_money),
                _fmt_estimate(there["memory_cost_per_month"], _fmt_money),
            )
        )
    header = (
        "arm",
        "vector",
        "tokens/doc",
        "encoding here",
        "latency p50/p95",
        "index memory",
        "embedding tokens",
        "embedding cost",
        "memory/month",
    )
    cached = any(capacity["measured"]["timings"]["encoding"] is None for _, capacity in arms)
    blocks = [
        Block(
            caption=(
                f"capacity at {documents:,} documents (production.documents), measured on the "
                f"{measured['documents']:,} searched here ({measured['index']} index; latency measured here, "
                "not projected):"
            ),
            table=Table(header=header, kinds=("text", *("number",) * 8), rows=tuple(rows)),
            notes=(CACHED,) if cached else (),
        )
    ]
    queries = golden["production"].get("queries_per_month")
    if queries is not None:
        monthly = tuple(
            (
                role,
                _fmt_estimate(capacity["production"]["query_tokens_per_month"], _fmt_count),
                _fmt_estimate(capacity["production"]["query_cost_per_month"], _fmt_money),
                _fmt_estimate(
                    capacity["production"]["timings"]["search_core_hours_per_month"],
                    lambda value: f"{value:,.1f}",
                ),
            )
            for role, capacity in arms
        )
        blocks.append(
            Block(
                caption=f"per month at {queries:,} queries (production.queries_per_month):",
                table=Table(
                    header=("arm", "query tokens", "query embedding cost", "search core-hours"),
                    kinds=("text", "number", "number", "number"),
                    rows=monthly,
                ),
            )
        )
    return blocks


CACHED = (
    "encoding not measured: every document vector of that arm came from the embedding cache "
    "(--embeval-no-cache measures it)"
)

_ASSUMED = (
    ("index memory", "index_bytes"),
    ("embedding tokens", "embedding_tokens"),
    ("embedding cost", "embedding_cost"),
    ("memory/month", "memory_cost_per_month"),
    ("query tokens", "query_tokens_per_month"),
    ("query embedding cost", "query_cost_per_month"),
    ("search core-hours", "search_core_hours_per_month"),
)


def capacity_assumptions(golden: Mapping[str, Any]) -> list[str]:
    """What each projected figure assumes, ``name: text`` (once when both arms assume the same, else per arm
    ``name, arm: text``)."""
    arms = [(role, golden[role]["capacity"]) for role in ROLES if "capacity" in golden[role]]
    lines: list[str] = []
    for name, key in _ASSUMED:
        said = [(role, _assumption(capacity["production"], key)) for role, capacity in arms]
        known = [(role, text) for role, text in said if text is not None]
        if len({text for _, text in known}) == 1:
            lines.append(f"{name}: {known[0][1]}")
        else:
            lines += [f"{name}, {role}: {text}" for role, text in known]
    return lines


def recall_target_note(golden: Mapping[str, Any]) -> str | None:
    """With a recall target, the ef each arm needed to reach it and which needs more; else None."""
    target = golden.get("recall_target")
    if target is None:
        return None
    ef = target["ef"]
    more = target["needs_more"]
    if more is None:
        needs = f"both arms reach it at ef {ef['incumbent']}"
    else:
        other = "incumbent" if more == "candidate" else "candidate"
        needs = f"the {more} needs more: ef {ef[more]} against the {other}'s {ef[other]}"
    return f"recall target {target['target']:g}: {needs}; {target['held_constant']}"


def usage_lines(golden: Mapping[str, Any]) -> list[str]:
    """What each endpoint arm spent on the golden set (`usage_line`); nothing for local models."""
    return [usage_line(role, golden[role]["usage"]) for role in ROLES if golden[role].get("usage")]


def usage_line(role: str, usage: Mapping[str, Any]) -> str:
    """What an endpoint arm spent on a golden set, e.g. ``candidate usage: 12,480 tokens in 42 requests
    ($0.0002 at $0.02 per million); 1,200 tokens ($2.4e-05) not spent: served from the embedding cache``."""
    requests = usage["requests"]
    line = f"{role} usage: {usage['tokens']:,} tokens in {requests:,} request{'' if requests == 1 else 's'}"
    if usage["cost"] is not None and requests:
        line += f" (${usage['cost']:.4g} at ${usage['price_per_million_tokens']:g} per million)"
    if usage["cached_tokens"]:
        saved = "" if usage["cached_cost"] is None else f" (${usage['cached_cost']:.4g})"
        line += f"; {usage['cached_tokens']:,} tokens{saved} not spent: served from the embedding cache"
    return line


def _assumption(projected: Mapping[str, Any], key: str) -> str | None:
    estimate = projected.get(key) or projected.get("timings", {}).get(key)
    return None if estimate is None else str(estimate["assumes"])


def _fmt_estimate(estimate: Mapping[str, Any], shown: Callable[[float], str]) -> str:
    return "—" if estimate["value"] is None else shown(estimate["value"])


def _fmt_money(value: float) -> str:
    return f"{value:,.2f}"


def _fmt_count(value: float) -> str:
    for size, word in ((1e9, "billion"), (1e6, "million")):
        if value >= size:
            return f"{value / size:.3g} {word}"
    return f"{value:,.0f}"


def _fmt_encoding(encoding: Mapping[str, Any] | None) -> str:
    if encoding is None:
        return "not measured (all cached)"
    tokens = encoding["tokens_per_second"]
    rate = f"{encoding['texts_per_second']:,.0f} texts/s"
    return rate if tokens is None else f"{rate}, {tokens:,.0f} tokens/s"
