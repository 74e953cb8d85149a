"""The frontier of a golden set's arms as data: each arm's point (Δ of the primary metric against the
incumbent, its bill: index memory at the production size when declared, else as measured here), what it
stores and searches, its Δ per stratum, and which arms are on the frontier (`core.frontier`). The JSON
report keeps it (`frontier_record`), and every format renders it from that record alone (`frontier` for the
table, `charts.frontier_svg` for the chart).

A frontier is built from a list of arms (`ArmRow`: a name, its record in the report, and the strata comparing
it with the incumbent; the incumbent's are None). A golden set's comparison of two arms shows its own
(`shown_rows`) when an arm's vectors are not its model's own (a variant, `arms.variants`) or its index is a
FAISS index: a plain comparison of two models keeps the report it had. A shortlist shows one frontier of
the incumbent and every candidate (`shortlist.shortlist_frontier`) under the same condition, and its
comparisons none of their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.core.capacity import FaissLayout
from pytest_embeval.core.frontier import FrontierArm, cheapest_without_worse, on_frontier

__all__ = [
    "ArmRow",
    "bill_caption",
    "faiss_bytes_per_vector",
    "faiss_text",
    "frontier_arms",
    "frontier_record",
    "golden_arm_rows",
    "index_text",
    "recorded_arms",
    "shown_bill",
    "shown_rows",
    "shows_frontier",
    "vectors_text",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ArmRow:
    """One arm of the frontier: what reports call it, its record (spec, index, capacity) and the strata of
    its comparison with the incumbent (None for the incumbent itself)."""

    name: str
    arm: Mapping[str, Any]
    strata: Sequence[Mapping[str, Any]] | None


def golden_arm_rows(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[ArmRow]:
    """The arms of a golden set's comparison: the incumbent, and the candidate with ``strata``."""
    return [ArmRow("incumbent", golden["incumbent"], None), ArmRow("candidate", golden["candidate"], strata)]


def shown_rows(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[ArmRow] | None:
    """The golden set's own arms (`golden_arm_rows`) when its reports show a frontier and strata ran,
    else None."""
    return golden_arm_rows(golden, strata) if shows_frontier(golden) and strata else None


def shows_frontier(golden: Mapping[str, Any]) -> bool:
    """Whether the golden set's reports show a frontier: an arm stores its vectors in another shape
    (``variant``), or the index is a FAISS index."""
    index = golden.get("index")
    faiss = isinstance(index, Mapping) and "faiss" in index
    return faiss or any(golden[role].get("variant") is not None for role in ("incumbent", "candidate"))


def _bill(arm: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The arm's index bytes (projected to production when it has a capacity) and their monthly cost."""
    capacity = arm.get("capacity")
    if capacity is not None:
        projected = capacity["production"]
        return projected["index_bytes"]["value"], projected["memory_cost_per_month"]["value"]
    index = arm.get("index")
    return (None if index is None else float(index["memory_bytes"])), None


def _overall(strata: Sequence[Mapping[str, Any]] | None) -> Mapping[str, Any] | None:
    if strata is None:
        return None
    return next((s for s in strata if s["stratum"] == "overall"), None)


def frontier_arms(rows: Sequence[ArmRow]) -> list[FrontierArm]:
    """Each arm as a point: Δ of the primary metric over all queries (0 for the incumbent; None when its
    overall stratum did not run) and its bill."""
    arms = []
    for row in rows:
        bill, cost = _bill(row.arm)
        overall = _overall(row.strata)
        delta: float | None
        ci: tuple[float | None, float | None]
        if row.strata is None:
            delta, ci = 0.0, (0.0, 0.0)
        elif overall is None:
            delta, ci = None, (None, None)
        else:
            delta, ci = overall["delta"], (overall["ci"][0], overall["ci"][1])
        worse = (
            () if row.strata is None else tuple(s["stratum"] for s in row.strata if s["verdict"] == "WORSE")
        )
        arms.append(FrontierArm(row.name, str(row.arm["spec"]), delta, ci, bill, cost, worse))
    return arms


def faiss_bytes_per_vector(index: Mapping[str, Any], documents: int) -> int:
    """What a vector adds to a FAISS index as serialised (its codes, its id, its links), not the bytes of the
    vector it encodes: the index record's `FaissLayout.vector_bytes`, as the capacity figures count it."""
    layout = FaissLayout(str(index["factory"]), int(index["fixed_bytes"]))
    return round(layout.vector_bytes(int(index["memory_bytes"]), documents))


def vectors_text(arm: Mapping[str, Any], documents: int) -> str:
    """``384 x float32``, ``256 x int8``, ``384 bits, rescore 4``, ``384 dims, 56 B each in the index``: what
    the arm's index stores per vector (a FAISS index its own codes, over ``documents``)."""
    index = arm.get("index")
    if index is None:
        return "—"
    if index["kind"] == "faiss":
        stored = f"{faiss_bytes_per_vector(index, documents)} B each" if documents else "codes"
        return f"{index['dimension']} dims, {stored} in the index"
    shape = index.get("vectors") or {"dims": index["dimension"], "precision": "float32", "rescore": None}
    if shape["precision"] in ("binary", "ubinary"):
        text = f"{shape['dims']} bits"
    else:
        text = f"{shape['dims']} x {shape['precision']}"
    return text if shape["rescore"] is None else f"{text}, rescore {shape['rescore']}"


def index_text(arm: Mapping[str, Any]) -> str:
    """The index an arm searched: ``exact``, ``hnsw M=16 ef=64``, ``faiss IVF1024,PQ48 nprobe=16``."""
    index = arm.get("index")
    if index is None:
        return "none"
    if index["kind"] == "hnsw":
        return f"hnsw M={index['M']} ef={index['ef']}"
    if index["kind"] == "faiss":
        return faiss_text(index)
    return str(index["kind"])


def faiss_text(index: Mapping[str, Any]) -> str:
    """A FAISS index record's factory string and the search parameter it was searched with."""
    searched = "".join(f" {name}={index[name]}" for name in ("nprobe", "efSearch") if name in index)
    return f"faiss {index['factory']}{searched}"


def frontier_record(golden: Mapping[str, Any], rows: Sequence[ArmRow]) -> dict[str, Any]:
    """The frontier in the JSON report: the golden set's name, its primary metric, what the bill counts,
    and per arm its name, spec, vectors, index, bill in bytes, monthly cost, Δ overall with its interval,
    WORSE strata, whether it is on the frontier and its Δ, interval and verdict per stratum (None for the
    incumbent); and the name of the cheapest arm without a WORSE stratum (None when none has a bill)."""
    arms = frontier_arms(rows)
    cheapest = cheapest_without_worse(arms)
    return {
        "name": golden["name"],
        "metric": golden["metric"],
        "bill": bill_caption(golden),
        "arms": [
            {
                "name": arm.name,
                "spec": arm.spec,
                "vectors": vectors_text(row.arm, golden["documents"]),
                "index": index_text(row.arm),
                "bill_bytes": arm.bill,
                "cost_per_month": arm.cost,
                "delta": arm.delta,
                "ci": list(arm.ci),
                "worse": list(arm.worse),
                "on_frontier": mark,
                "strata": None
                if row.strata is None
                else [{key: s[key] for key in ("stratum", "delta", "ci", "verdict")} for s in row.strata],
            }
            for row, arm, mark in zip(rows, arms, on_frontier(arms), strict=True)
        ],
        "cheapest_without_worse": None if cheapest is None else cheapest.name,
    }


def recorded_arms(record: Mapping[str, Any]) -> list[FrontierArm]:
    """The arms of a frontier's JSON record (`frontier_record`) as points."""
    return [
        FrontierArm(
            arm["name"],
            arm["spec"],
            arm["delta"],
            (arm["ci"][0], arm["ci"][1]),
            arm["bill_bytes"],
            arm["cost_per_month"],
            tuple(arm["worse"]),
        )
        for arm in record["arms"]
    ]


def bill_caption(golden: Mapping[str, Any]) -> str:
    """What the bill counts: memory at ``production.documents``, or for the documents searched here."""
    production = golden.get("production")
    if production is not None:
        return f"memory at {production['documents']:,} documents (production.documents)"
    return f"memory for the {golden['documents']:,} documents searched here"


def shown_bill(value: float | None) -> str:
    """Decimal units, three digits: 48,000,000 -> '48 MB'; an em dash for an unknown bill."""
    if value is None:
        return "—"
    for size, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if value >= size:
            return f"{value / size:,.3g} {unit}"
    return f"{value:,.0f} B"
