"""The frontier of a golden set's arms as a person reads it, from its JSON record alone
(`frontier_records.frontier_record`): a table of every arm's vectors, index and bill beside its Δ against the
incumbent (overall with its interval, and per stratum with its verdict), the arms no other beats on both
marked, and under it the line naming the cheapest arm without a WORSE stratum. The terminal, the Markdown and
the HTML page render the same block, for a comparison of two arms and for a shortlist's arms alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.core.frontier import FrontierArm, cheapest_without_worse
from pytest_embeval.reports.capacity_contents import Block
from pytest_embeval.reports.contents import Table, fmt_interval, fmt_number
from pytest_embeval.reports.frontier_records import recorded_arms, shown_bill

__all__ = ["frontier_block", "frontier_line"]


def frontier_block(record: Mapping[str, Any]) -> Block:
    """The frontier table: one row per arm (vectors, index, bill, Δ overall with its interval, Δ and verdict
    per stratum, whether it is on the frontier), and under it the cheapest arm without a WORSE stratum."""
    arms = recorded_arms(record)
    names = [str(s["stratum"]) for arm in record["arms"] for s in arm["strata"] or ()]
    strata = [name for name in dict.fromkeys(names) if name != "overall"]
    metric = record["metric"]
    table_rows = []
    for recorded, arm in zip(record["arms"], arms, strict=True):
        by_stratum = {str(s["stratum"]): s for s in recorded["strata"] or ()}
        incumbent = recorded["strata"] is None
        cells = [
            f"{fmt_number(stratum['delta'], True)} {stratum['verdict']}"
            if (stratum := by_stratum.get(name)) is not None
            else ("0" if incumbent else "—")
            for name in strata
        ]
        table_rows.append(
            (
                _label(arm),
                recorded["vectors"],
                recorded["index"],
                shown_bill(arm.bill),
                "—" if arm.cost is None else f"{arm.cost:,.2f}",
                "0" if incumbent else _overall_cell(arm, by_stratum.get("overall")),
                *cells,
                "yes" if recorded["on_frontier"] else "",
            )
        )
    header = ("arm", "vectors", "index", "memory", "cost/month", f"Δ {metric} overall", *strata, "frontier")
    kinds = ("text", "text", "text", "number", "number", "text", *("text",) * len(strata), "text")
    return Block(
        caption=(
            f"frontier of Δ {metric} against the incumbent and the bill, {record['bill']}: an arm is "
            "on it when no other arm has a Δ at least as high for at most its memory:"
        ),
        table=Table(header=header, kinds=kinds, rows=tuple(table_rows)),
        notes=(frontier_line(metric, arms),),
    )


def frontier_line(metric: str, arms: Sequence[FrontierArm]) -> str:
    """``cheapest arm without a WORSE stratum: candidate NAME (48 MB, Δ recall@5 -0.012 [-0.03, 0.006])``, or
    that no arm with a bill is without one."""
    cheapest = cheapest_without_worse(arms)
    if cheapest is None:
        return "cheapest arm without a WORSE stratum: none (every arm with a known bill has one)"
    quality = (
        "the incumbent"
        if cheapest.name == "incumbent"
        else (f"Δ {metric} {fmt_number(cheapest.delta, True)} {fmt_interval(cheapest.ci)}")
    )
    bill = shown_bill(cheapest.bill)
    return f"cheapest arm without a WORSE stratum: {_label(cheapest)} ({bill}, {quality})"


def _overall_cell(arm: FrontierArm, overall: Mapping[str, Any] | None) -> str:
    """Δ over all queries with its interval, and the overall stratum's verdict."""
    verdict = "" if overall is None else f" {overall['verdict']}"
    return f"{fmt_number(arm.delta, True)} {fmt_interval(arm.ci)}{verdict}"


def _label(arm: FrontierArm) -> str:
    """An arm's name and spec (its spec alone when that is its name)."""
    return arm.spec if arm.name == arm.spec else f"{arm.name} {arm.spec}"
