"""A shortlist as a record of the JSON report (``shortlist``): several candidates, each compared with the
incumbent on every stratum, side by side with what each would cost.

In a run of several candidates each candidate's comparison is a golden-set entry of its own, exactly as a
run of that candidate alone writes it, tagged with the candidate's name (`CANDIDATE_NAME`). A candidate that
could not be run has an error record tagged alike. `shortlist_record` reads those records of one golden file
(a pure function of plain data): per candidate its verdict, Δ and interval on every stratum, its declared
decision, whether it passes, and its bill; the candidates that pass first, cheapest first; the line naming
the cheapest that passes; the family the verdicts were decided in; judged@k of every arm; and, when an arm
is a variant or the index a FAISS index, the frontier of the incumbent and every candidate
(`shortlist_frontier`).

A candidate passes when its items would: its declared ``decision:`` proceeds (with routing or without), or
without a decision no stratum is WORSE. Its bill is what its arm record reports: the dimension, the bytes of a
vector (its capacity's, or what its index stores: a variant's shape, else float32 vectors), the index's
memory here and, with a ``production`` block, its memory, monthly cost and embedding cost at the production
size. Cheapest is the fewest bytes per vector (what memory at any size, and its cost, scale with), then the
lowest price per token; an arm without vectors of its own (BM25) has no bill to order by and comes after
those with one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.reports.arm_records import Record
from pytest_embeval.reports.frontier_records import (
    ArmRow,
    faiss_bytes_per_vector,
    frontier_record,
    shows_frontier,
)

__all__ = ["CANDIDATE_NAME", "CANDIDATE_ORDER", "FLOAT32_BYTES", "shortlist_frontier", "shortlist_record"]

#: What a shortlist's records carry beyond those of one candidate's run: the candidate's name (in the golden
#: set's, its strata's, its decision's and its error's records) and its place among the candidates (in the
#: golden set's and the error's, dropped from the report once it has ordered them).
CANDIDATE_NAME = "candidate_name"
CANDIDATE_ORDER = "candidate_order"
#: Bytes of one component of the vectors an index searches, where an arm's capacity does not say.
FLOAT32_BYTES = 4
#: The decisions (`decision_spec`) under which a candidate passes.
_PROCEEDING = ("proceed", "proceed-with-routing")


def shortlist_record(entries: Sequence[Mapping[str, Any]], errors: Sequence[Mapping[str, Any]]) -> Record:
    """The shortlist of one golden file from the report's golden-set ``entries`` of its candidates (in the
    candidates' order) and the ``errors`` of those that could not be run."""
    anyone = entries[0] if entries else errors[0]
    strata = list(dict.fromkeys(s["stratum"] for entry in entries for s in entry["strata"]))
    ran = [_ran(entry, order) for order, entry in enumerate(entries)]
    failed = [_not_run(error, len(entries) + order) for order, error in enumerate(errors)]
    rows = sorted([*ran, *failed], key=_rank)
    for row in rows:
        del row["order"]
    passing = [row for row in rows if row["passes"]]
    frontier = None if not entries else shortlist_frontier(entries)
    return {
        "name": anyone["name"],
        "path": anyone["path"],
        "metric": entries[0]["metric"] if entries else None,
        "tie_margin": entries[0]["tie_margin"] if entries else None,
        "confidence": entries[0]["confidence"] if entries else None,
        "incumbent": None if not entries else {"spec": entries[0]["incumbent"]["spec"], **_bill(entries[0])},
        "family": _family(entries, errors),
        "strata": strata,
        "candidates": rows,
        "cheapest_passing": passing[0]["name"] if passing else None,
        "line": _line(rows),
        "coverage": _coverage(entries),
        # With a variant or a FAISS index among the arms: every arm's quality against its bill.
        **({} if frontier is None else {"frontier": frontier}),
    }


def shortlist_frontier(entries: Sequence[Mapping[str, Any]]) -> Record | None:
    """The frontier of a shortlist's arms (`frontier_records.frontier_record`): the incumbent and each
    candidate of ``entries`` (the report's golden-set entries of one golden file), when one of them shows a
    frontier (`frontier_records.shows_frontier`) and strata ran; else None."""
    if not any(shows_frontier(entry) for entry in entries) or not any(entry["strata"] for entry in entries):
        return None
    rows = [ArmRow("incumbent", entries[0]["incumbent"], None)]
    rows += [ArmRow(entry[CANDIDATE_NAME], entry["candidate"], entry["strata"]) for entry in entries]
    return frontier_record(entries[0], rows)


def _ran(entry: Mapping[str, Any], order: int) -> Record:
    strata = {
        s["stratum"]: {
            "verdict": s["verdict"],
            "delta": s["delta"],
            "ci": s["ci"],
            "n": s["n"],
            "sign_disagrees": s["sign_disagrees"],
            **({"covered_by_routing": True} if s.get("covered_by_routing") else {}),
        }
        for s in entry["strata"]
    }
    decision = entry.get("decision")
    if decision is not None:
        passes = decision["outcome"] in _PROCEEDING
    else:
        passes = not any(cell["verdict"] == "WORSE" for cell in strata.values())
    families = [s["family"] for s in entry["strata"] if s.get("family") is not None]
    return {
        "name": entry[CANDIDATE_NAME],
        "spec": entry["candidate"]["spec"],
        "ran": True,
        "strata": strata,
        "decision": None if decision is None else decision["word"],
        "passes": passes,
        "family_size": families[0]["size"] if families else None,
        "order": order,
        **_bill(entry, "candidate"),
    }


def _not_run(error: Mapping[str, Any], order: int) -> Record:
    return {
        "name": error[CANDIDATE_NAME],
        "spec": error["spec"],
        "ran": False,
        "error": error["message"],
        "strata": {},
        "decision": None,
        "passes": False,
        "family_size": None,
        "order": order,
        "bill": None,
    }


def _bill(entry: Mapping[str, Any], role: str = "incumbent") -> Record:
    """The ``bill`` of the entry's arm ``role`` (None for an arm without vectors of its own)."""
    arm = entry[role]
    index, capacity = arm.get("index"), arm.get("capacity")
    if index is None and capacity is None:
        return {"bill": None}
    if capacity is not None:
        measured = capacity["measured"]
        dimension, size, index_bytes = (
            measured["dimension"],
            measured["bytes_per_vector"],
            measured["index_bytes"] if index is None else index["memory_bytes"],
        )
    else:
        dimension, index_bytes = index["dimension"], index["memory_bytes"]
        # A variant's index stores its own shape (`arms.variants`); any other index float32 vectors.
        vectors = index.get("vectors")
        size = FLOAT32_BYTES * dimension if vectors is None else vectors["bytes_per_vector"]
    if index is not None and index["kind"] == "faiss" and entry["documents"]:
        # A FAISS index stores its own codes: a vector costs what it adds to the serialised index (codes, id,
        # links), as the bill projects it, not the bytes of the vector it encodes.
        size = faiss_bytes_per_vector(index, entry["documents"])
    bill: Record = {
        "dimension": dimension,
        "bytes_per_vector": size,
        "index_bytes": index_bytes,
        "documents": entry["documents"],
        "price_per_million_tokens": _price(arm),
        "production": None,
    }
    if capacity is not None:
        projected = capacity["production"]
        bill["production"] = {
            "documents": projected["documents"],
            **{
                key: None if projected[key] is None else projected[key]["value"]
                for key in ("index_bytes", "memory_cost_per_month", "embedding_cost")
            },
        }
    return {"bill": bill}


def _price(arm: Mapping[str, Any]) -> float | None:
    usage, capacity = arm.get("usage"), arm.get("capacity")
    if usage is not None and usage.get("price_per_million_tokens") is not None:
        return float(usage["price_per_million_tokens"])
    if capacity is not None and capacity["measured"].get("price_per_million_tokens") is not None:
        return float(capacity["measured"]["price_per_million_tokens"])
    return None


def _rank(row: Mapping[str, Any]) -> tuple[bool, bool, bool, float, float, int]:
    """Passing first, then the candidates that ran; among them the fewest bytes per vector, then the
    lowest price per token (none: free); an arm with no bill after those with one; then the given order."""
    bill = row["bill"]
    size = None if bill is None else bill["bytes_per_vector"]
    price = None if bill is None else bill["price_per_million_tokens"]
    return (not row["passes"], not row["ran"], size is None, size or 0.0, price or 0.0, row["order"])


def _family(entries: Sequence[Mapping[str, Any]], errors: Sequence[Mapping[str, Any]]) -> Record:
    """The family the candidates' verdicts were decided in: its method and scope (one family of every
    candidate's strata, or each candidate's own), its size (the joint family's; None for each its own),
    the candidates in it and those that could not be run."""
    families = [s["family"] for entry in entries for s in entry["strata"] if s.get("family") is not None]
    scope = entries[0].get("family_scope", "shortlist") if entries else "shortlist"
    return {
        "method": families[0]["method"] if families else None,
        "scope": scope,
        "size": families[0]["size"] if families and scope == "shortlist" else None,
        "candidates": [entry[CANDIDATE_NAME] for entry in entries],
        "not_run": [error[CANDIDATE_NAME] for error in errors],
    }


def _line(rows: Sequence[Mapping[str, Any]]) -> str:
    """The line under the table: the cheapest candidate that passes, or why none does."""
    passing = [row for row in rows if row["passes"]]
    if passing:
        best = passing[0]
        if best["bill"] is None:
            names = ", ".join(row["name"] for row in passing)
            return f"passing: {names}; none has vectors of its own, so no bill orders them"
        return f"cheapest passing candidate: {best['name']} ({_bill_words(best['bill'])})"
    reasons = []
    for row in rows:
        if not row["ran"]:
            reasons.append(f"{row['name']} not run")
        elif row["decision"] is not None:
            reasons.append(f"{row['name']} {row['decision']}")
        else:
            worse = sum(cell["verdict"] == "WORSE" for cell in row["strata"].values())
            reasons.append(f"{row['name']} WORSE on {worse} {'stratum' if worse == 1 else 'strata'}")
    return "no candidate passes: " + "; ".join(reasons)


def _bill_words(bill: Mapping[str, Any]) -> str:
    """``256 dimensions, 1,024 B per vector; 1.02 GB and 12.34 a month at 1,000,000 documents``."""
    words = f"{bill['dimension']} dimensions, {bill['bytes_per_vector']:,} B per vector"
    production = bill["production"]
    if production is None or production["index_bytes"] is None:
        return words
    at = f"{production['index_bytes'] / 1e9:,.2f} GB"
    if production["memory_cost_per_month"] is not None:
        at += f" and {production['memory_cost_per_month']:,.2f} a month"
    return f"{words}; {at} at {production['documents']:,} documents"


def _coverage(entries: Sequence[Mapping[str, Any]]) -> list[Record]:
    """judged@k per stratum of every arm: the incumbent's, then each candidate's under its name."""
    if not entries:
        return []
    rows = []
    for row in entries[0]["coverage"]:
        if row["arm"] != "incumbent":
            continue
        rows.append(dict(row))
        for entry in entries:
            rows.extend(
                {**other, "arm": entry[CANDIDATE_NAME]}
                for other in entry["coverage"]
                if other["arm"] == "candidate" and other["stratum"] == row["stratum"]
            )
    return rows
