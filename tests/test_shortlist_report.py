"""The shortlist record and its renderings, from hand-made records: who passes, the order by bill, the line,
the family, and what the terminal, Markdown and HTML show of it."""

from __future__ import annotations

from typing import Any

from pytest_embeval.reports.json_report import build_report
from pytest_embeval.reports.shortlist import shortlist_record
from pytest_embeval.reports.terminal import shortlist_lines, shortlist_warning_lines


def stratum(name: str, verdict: str, delta: float, size: int = 12) -> dict[str, Any]:
    return {
        "stratum": name,
        "verdict": verdict,
        "delta": delta,
        "ci": [delta - 0.05, delta + 0.05],
        "n": 40,
        "sign_disagrees": False,
        "family": {"method": "holm", "size": size, "level": 0.01, "candidates": ["a", "b", "c"]},
    }


def arm(dimension: int | None, production: bool = False) -> dict[str, Any]:
    if dimension is None:  # an arm without vectors of its own (BM25)
        return {"spec": "bm25", "index": None, "kind": "bm25"}
    record: dict[str, Any] = {
        "spec": f"model-{dimension}",
        "index": {"kind": "exact", "dimension": dimension, "memory_bytes": 100 * dimension * 4},
    }
    if production:
        record["capacity"] = {
            "measured": {"dimension": dimension, "bytes_per_vector": dimension * 2, "index_bytes": 0},
            "production": {
                "documents": 1_000_000,
                "index_bytes": {"value": dimension * 2e6, "assumes": "…"},
                "memory_cost_per_month": {"value": dimension * 0.01, "assumes": "…"},
                "embedding_cost": {"value": None, "assumes": "…"},
            },
        }
    return record


def entry(name: str, order: int, dimension: int | None, verdicts: list[str], **extra: Any) -> dict[str, Any]:
    strata = [
        stratum(s, v, -0.1 if v == "WORSE" else 0.0)
        for s, v in zip(("overall", "x=1"), verdicts, strict=True)
    ]
    return {
        "name": "support",
        "path": "support.yaml",
        "metric": "recall@5",
        "tie_margin": 0.03,
        "confidence": 0.95,
        "documents": 100,
        "incumbent": arm(384, extra.get("production", False)),
        "candidate": arm(dimension, extra.get("production", False)),
        "strata": strata,
        "coverage": [
            {"stratum": s, "arm": role, "k": 5, "n": 40, "judged": 1.0, "seeded": 0.0}
            for s in ("overall", "x=1")
            for role in ("incumbent", "candidate")
        ],
        "candidate_name": name,
        "candidate_order": order,
        **({"decision": extra["decision"]} if "decision" in extra else {}),
    }


def test_passing_candidates_come_first_cheapest_first() -> None:
    entries = [
        entry("big", 0, 768, ["TIE", "TIE"]),
        entry("lexical", 1, None, ["TIE", "BETTER"]),
        entry("small", 2, 128, ["TIE", "TIE"]),
        entry("tiny", 3, 64, ["WORSE", "TIE"]),
    ]
    made = shortlist_record(entries, [])
    assert [row["name"] for row in made["candidates"]] == ["small", "big", "lexical", "tiny"]
    assert [row["passes"] for row in made["candidates"]] == [True, True, True, False]
    assert made["cheapest_passing"] == "small"
    assert made["line"] == "cheapest passing candidate: small (128 dimensions, 512 B per vector)"
    assert made["family"] == {
        "method": "holm",
        "scope": "shortlist",
        "size": 12,
        "candidates": ["big", "lexical", "small", "tiny"],
        "not_run": [],
    }
    # Every arm's judged@k, the candidates' under their names.
    assert [(row["stratum"], row["arm"]) for row in made["coverage"]][:5] == [
        ("overall", "incumbent"),
        ("overall", "big"),
        ("overall", "lexical"),
        ("overall", "small"),
        ("overall", "tiny"),
    ]


def test_a_declared_decision_decides_who_passes_and_errors_come_last() -> None:
    proceed = {"outcome": "proceed", "word": "PROCEED"}
    change = {"outcome": "change-target", "word": "CHANGE THE TARGET"}
    entries = [
        entry("a", 0, 64, ["WORSE", "TIE"], decision={"outcome": "proceed-with-routing", "word": "ROUTED"}),
        entry("b", 1, 32, ["TIE", "TIE"], decision=change),
        entry("c", 3, 128, ["TIE", "TIE"], decision=proceed),
    ]
    error = {
        "path": "support.yaml",
        "name": "support",
        "spec": "x:y",
        "message": "boom",
        "candidate_name": "d",
    }
    made = shortlist_record(entries, [error])
    assert [(row["name"], row["passes"]) for row in made["candidates"]] == [
        ("a", True),
        ("c", True),
        ("b", False),
        ("d", False),
    ]
    assert made["family"]["not_run"] == ["d"]
    none_pass = shortlist_record([entries[1]], [error])
    assert none_pass["line"] == "no candidate passes: b CHANGE THE TARGET; d not run"


def test_the_bill_at_production_size_is_shown_where_declared() -> None:
    entries = [
        entry("a", 0, 256, ["TIE", "TIE"], production=True),
        entry("b", 1, 128, ["TIE", "TIE"], production=True),
    ]
    made = shortlist_record(entries, [])
    assert made["line"] == (
        "cheapest passing candidate: b (128 dimensions, 256 B per vector; 0.26 GB and 1.28 a month at "
        "1,000,000 documents)"
    )
    lines = shortlist_lines(made)
    assert lines[1].split() == [
        "candidate", "overall", "x=1", "gate", "dims", "B/vector", "index", "index", "at", "1,000,000",
        "memory/month", "embedding", "cost",
    ]  # fmt: skip
    assert lines[3].split()[0] == "b"
    assert lines[3].split()[-8:] == ["128", "256", "50.0", "KiB", "0.26", "GB", "1.28", "—"]


def test_the_report_orders_entries_by_candidate_and_adds_the_shortlist() -> None:
    entries = [entry("b", 1, 128, ["WORSE", "TIE"]), entry("a", 0, 256, ["TIE", "TIE"])]
    # As the items send them: the golden sets' records, and each stratum's apart.
    strata = [
        {**s, "golden": e["path"], "order": order, "candidate_name": e["candidate_name"]}
        for e in entries
        for order, s in enumerate(e.pop("strata"))
    ]
    report = build_report(entries, strata, [])
    assert [g["candidate_name"] for g in report["golden_sets"]] == ["a", "b"]
    assert all("candidate_order" not in g for g in report["golden_sets"])
    assert list(report) == ["schema_version", "golden_sets", "shortlist", "errors"]
    assert [row["name"] for row in report["shortlist"][0]["candidates"]] == ["a", "b"]


def test_coverage_warns_once_per_unpooled_candidate() -> None:
    entries = [entry("a", 0, 256, ["TIE", "TIE"]), entry("b", 1, 128, ["TIE", "TIE"])]
    for row in entries[1]["coverage"]:
        if row["arm"] == "candidate":
            row["judged"] = 0.5
    warnings = shortlist_warning_lines(shortlist_record(entries, []), "r.json")
    assert len(warnings) == 1
    assert warnings[0].startswith("embeval: WARNING: b's top 5 is less judged than another arm's")
