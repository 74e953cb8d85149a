"""Report records and rendering of the control fingerprint and the per-arm index statistics."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from test_pipeline import DIMENSIONS, DOCUMENTS, hash_arm, make_golden

from pytest_embeval.arms.usage import UsageCount
from pytest_embeval.golden.schema import IndexSpec
from pytest_embeval.reports.arm_records import usage_record
from pytest_embeval.reports.capacity_contents import usage_line
from pytest_embeval.reports.json_report import control_diff, golden_record, report_json, without_timings
from pytest_embeval.reports.terminal import golden_table
from pytest_embeval.run.pipeline import golden_control, run_golden

STRATUM = {
    "stratum": "overall",
    "n": 40,
    "excluded": 0,
    "incumbent": 0.8,
    "candidate": 0.85,
    "delta": 0.05,
    "ci": [0.01, 0.09],
    "wins": 9,
    "losses": 2,
    "sign_p": 0.065,
    "mde": 0.04,
    "verdict": "BETTER",
    "sign_disagrees": False,
}


def hnsw_index(**changes: Any) -> dict[str, Any]:
    index = {
        "kind": "hnsw",
        "dimension": 384,
        "memory_bytes": 1_234_567,
        "M": 16,
        "ef_construction": 200,
        "ef": 128,
        "seed": 0,
        "ann_recall": 0.9975,
        "sample": 200,
        "timings": {
            "latency_ms": {"p50": 0.0412, "p95": 0.0871},
            "exact_latency_ms": {"p50": 1.5, "p95": 2.25},
        },
    }
    return {**index, **changes}


def golden_set(incumbent: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "support",
        "path": "support.yaml",
        "metric": "recall@5",
        "tie_margin": 0.02,
        "confidence": 0.95,
        "depth": 100,
        "incumbent": {"spec": "old", "index": incumbent},
        "candidate": {"spec": "new", "index": candidate},
    }


def test_golden_table_title_names_the_prompts_a_model_applies() -> None:
    record = golden_set({"kind": "exact"}, {"kind": "exact"})
    record["incumbent"]["prompts"] = {"query": "", "document": ""}
    record["candidate"]["prompts"] = {"query": "query: ", "document": ""}
    title = golden_table(record, [STRATUM])[0]
    assert title.endswith("incumbent old vs candidate new (prompts: query 'query: ')")


def test_golden_table_has_one_index_line_per_hnsw_arm() -> None:
    lines = golden_table(golden_set(hnsw_index(), hnsw_index(memory_bytes=512, ann_recall=1.0)), [STRATUM])
    assert lines[-2:] == [
        "incumbent index: hnsw M=16 ef_construction=200 ef=128, ANN recall@100 0.998 (200 queries), "
        "1.2 MiB, latency p50 0.0412 ms / p95 0.0871 ms (exact 1.5 ms / 2.25 ms)",
        "candidate index: hnsw M=16 ef_construction=200 ef=128, ANN recall@100 1.000 (200 queries), "
        "512 B, latency p50 0.0412 ms / p95 0.0871 ms (exact 1.5 ms / 2.25 ms)",
    ]


def test_golden_table_has_no_index_line_for_exact_search_or_older_reports() -> None:
    exact = {"kind": "exact", "dimension": 384, "memory_bytes": 1536}
    lines = golden_table(golden_set(exact, exact), [STRATUM])
    assert not any("index:" in line for line in lines)
    older = golden_set(exact, exact)
    for role in ("incumbent", "candidate"):
        del older[role]["index"]
    assert golden_table(older, [STRATUM]) == lines


@pytest.mark.parametrize(
    ("memory", "shown"),
    [
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (5 * 2**20, "5.0 MiB"),
        (3 * 2**30, "3.0 GiB"),
        (2**42, "4096.0 GiB"),
    ],
)
def test_memory_is_shown_in_binary_units(memory: int, shown: str) -> None:
    index = hnsw_index(memory_bytes=memory)
    line = golden_table(golden_set(index, index), [STRATUM])[-1]
    assert f", {shown}, latency" in line


def test_golden_record_carries_the_control_and_each_arms_index() -> None:
    golden = make_golden(index=IndexSpec("hnsw", M=8, ef_construction=40, ef_search=150))
    run = run_golden(golden, hash_arm("old"), hash_arm("new"))
    record = golden_record(run, "golden.yaml")
    control = golden_control(golden)
    assert without_timings(record["control"]) == {
        "fingerprint": control.fingerprint,
        "components": control.components(),
    }
    # custom encoders do not say where they run
    assert record["control"]["timings"] == {"devices": {"incumbent": None, "candidate": None}}
    index = record["candidate"]["index"]
    assert {k: v for k, v in index.items() if k not in ("ann_recall", "memory_bytes", "timings")} == {
        "kind": "hnsw",
        "dimension": DIMENSIONS,
        "M": 8,
        "ef_construction": 40,
        "ef": 150,
        "seed": 0,
        "sample": 40,
    }
    assert type(index["ann_recall"]) is float and type(index["memory_bytes"]) is int
    assert index["memory_bytes"] > DOCUMENTS * DIMENSIONS * 4
    assert set(index["timings"]) == {"latency_ms", "exact_latency_ms"}
    assert all(type(v) is float for t in index["timings"].values() for v in t.values())
    # Plain types only: it crosses xdist's process boundary and must be strict JSON.
    assert json.loads(report_json(record)) == record


def test_exact_arm_record() -> None:
    run = run_golden(make_golden(), hash_arm("old"), hash_arm("new"))
    assert golden_record(run, "golden.yaml")["incumbent"]["index"] == {
        "kind": "exact",
        "dimension": DIMENSIONS,
        "memory_bytes": DOCUMENTS * DIMENSIONS * 4,
    }


def test_an_in_process_arm_has_no_usage() -> None:
    run = run_golden(make_golden(), hash_arm("old"), hash_arm("new"))
    assert golden_record(run, "golden.yaml")["candidate"]["usage"] is None


def test_usage_records_cost_what_the_price_says() -> None:
    usage = UsageCount(tokens=12_480, requests=42, cached_tokens=1_200)
    assert usage_record(usage, 0.02) == {
        "tokens": 12_480,
        "requests": 42,
        "cached_tokens": 1_200,
        "price_per_million_tokens": 0.02,
        "cost": pytest.approx(0.0002496),
        "cached_cost": pytest.approx(0.000024),
    }
    assert usage_record(usage, None)["cost"] is usage_record(usage, None)["cached_cost"] is None


def test_usage_lines_say_what_was_spent_and_what_the_cache_saved() -> None:
    priced = usage_record(UsageCount(tokens=12_480, requests=42, cached_tokens=1_200), 0.02)
    assert usage_line("candidate", priced) == (
        "candidate usage: 12,480 tokens in 42 requests ($0.0002496 at $0.02 per million); "
        "1,200 tokens ($2.4e-05) not spent: served from the embedding cache"
    )
    cached = usage_record(UsageCount(cached_tokens=500), 0.02)
    assert usage_line("incumbent", cached) == (
        "incumbent usage: 0 tokens in 0 requests; "
        "500 tokens ($1e-05) not spent: served from the embedding cache"
    )
    assert usage_line("candidate", usage_record(UsageCount(tokens=7, requests=1), None)) == (
        "candidate usage: 7 tokens in 1 request"
    )
    table = golden_table(
        {**golden_set({"kind": "exact"}, {"kind": "exact"}), "candidate": {"spec": "new", "usage": priced}},
        [STRATUM],
    )
    assert table[-1] == usage_line("candidate", priced)


def report(*golden_sets: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": 1, "golden_sets": list(golden_sets)}


def controlled(path: str, **components: str) -> dict[str, Any]:
    names = ("corpus", "queries", "qrels", "index", "depth", "plan")
    digests = {name: "sha256:" + f"{i}" * 64 for i, name in enumerate(names)}
    digests.update(components)
    return {"path": path, "control": {"fingerprint": "sha256:" + "f" * 64, "components": digests}}


def test_control_diff_of_equal_reports_is_empty() -> None:
    a = report(controlled("a.yaml"), controlled("b.yaml"))
    assert control_diff(a, copy.deepcopy(a)) == []


def test_control_diff_names_each_differing_component() -> None:
    a = report(controlled("a.yaml"), controlled("b.yaml"))
    b = report(
        controlled("a.yaml", corpus="sha256:" + "c" * 64, depth="sha256:" + "d" * 64), controlled("b.yaml")
    )
    assert control_diff(a, b) == [
        "a.yaml: corpus (sha256:000000000000… vs sha256:cccccccccccc…)",
        "a.yaml: depth (sha256:444444444444… vs sha256:dddddddddddd…)",
    ]


def test_control_diff_reports_unmatched_golden_sets_and_missing_controls() -> None:
    old = controlled("c.yaml")
    del old["control"]
    a = report(controlled("a.yaml"), old)
    b = report(controlled("b.yaml"), controlled("c.yaml"))
    assert control_diff(a, b) == [
        "a.yaml: only in the first report",
        "b.yaml: only in the second report",
        "c.yaml: no control fingerprint in the first report",
    ]


def test_the_json_report_is_indented_down_to_its_records_and_writes_each_on_one_line() -> None:
    report = {
        "schema_version": 1,
        "golden_sets": [
            {"name": "x", "queries": [{"id": "q1", "ranked": {"incumbent": ["a", "b"]}}], "guards": {}}
        ],
        "errors": [],
    }
    assert report_json(report) == (
        "{\n"
        ' "schema_version": 1,\n'
        ' "golden_sets": [\n'
        "  {\n"
        '   "name": "x",\n'
        '   "queries": [\n'
        '    {"id": "q1", "ranked": {"incumbent": ["a", "b"]}}\n'
        "   ],\n"
        '   "guards": {}\n'
        "  }\n"
        " ],\n"
        ' "errors": []\n'
        "}\n"
    )
    # Keys as json.dumps writes them; what JSON cannot hold is refused as json.dumps refuses it.
    assert json.loads(report_json({1: {True: None}, "é": [0.5]})) == {"1": {"true": None}, "é": [0.5]}
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        report_json({"golden_sets": [{"queries": [{"score": float("nan")}]}]})


def test_each_tie_and_worse_says_why_under_the_table_and_the_title_names_the_guards() -> None:
    record = golden_set({"kind": "exact"}, {"kind": "exact"})
    record["guards"] = {"recall@20": 0.05, "mrr@10": 0.1}
    tie = {
        **STRATUM,
        "stratum": "language=es",
        "verdict": "TIE",
        "reason": "below floor: n=13 < min_queries=20",
    }
    worse = {**STRATUM, "stratum": "language=en", "verdict": "WORSE", "reason": "guard recall@20 WORSE by …"}
    better = {**STRATUM, "reason": "better: Δ +0.050 ≥ 0.020 and CI [+0.010, +0.090] excludes 0 (n=40)"}
    lines = golden_table(record, [better, tie, worse])
    assert lines[0].startswith(
        "support (support.yaml): recall@5, margin 0.02, guards recall@20 margin 0.05, mrr@10 margin 0.1, "
        "95% CI"
    )
    table_end = next(i for i, line in enumerate(lines) if line.startswith("language=en ") and "WORSE" in line)
    assert lines[table_end + 1 : table_end + 3] == [
        "language=es: TIE — below floor: n=13 < min_queries=20",
        "language=en: WORSE — guard recall@20 WORSE by …",
    ]
    assert not any(
        line.startswith("overall: BETTER") for line in lines
    )  # a BETTER passes: nothing to explain
    del record["guards"]
    assert golden_table(record, [better])[0].startswith(
        "support (support.yaml): recall@5, margin 0.02, 95% CI"
    )
