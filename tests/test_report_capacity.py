"""Records and terminal lines of capacity, corpus slices and a recall target, from runs built in memory."""

from __future__ import annotations

import json
from pathlib import Path

from test_pipeline import DOCUMENTS, hash_arm, make_golden
from test_pipeline_capacity import SAMPLE, DistractedModel

from pytest_embeval.arms.embedding import Arm
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.core.capacity import Production
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.reports.json_report import golden_record, report_json
from pytest_embeval.reports.stratum_records import stratum_record
from pytest_embeval.reports.terminal import capacity_lines, golden_table, slice_lines, stratum_failure
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.stratum_evaluation import evaluate_stratum


def test_no_capacity_and_no_slices_add_nothing() -> None:
    run = run_golden(make_golden(), hash_arm("a"), hash_arm("b"))
    record = golden_record(run, "golden.yaml")
    strata = [stratum_record(run.golden, "golden.yaml", 0, evaluate_stratum(run, run.golden.strata()[0]))]
    assert "capacity" not in record["incumbent"] and "production" not in record
    assert "slices" not in strata[0]
    assert capacity_lines(record) == [] and slice_lines(record, strata) == []
    assert golden_table(record, strata)[-1].startswith("overall")


def test_capacity_record_is_plain_json_with_timings_apart(tmp_path: Path) -> None:
    golden = make_golden(production=Production(1_000_000, memory_price_per_gb_month=2.0))
    cache = EmbeddingCache(tmp_path)
    record = golden_record(run_golden(golden, hash_arm("a"), hash_arm("b"), embedder=cache.embed), "g.yaml")
    assert json.loads(report_json(record)) == record
    capacity = record["incumbent"]["capacity"]
    assert set(capacity) == {"measured", "production"}
    assert set(capacity["measured"]["timings"]) == {"encoding", "latency_ms"}
    assert capacity["measured"]["timings"]["encoding"]["texts"] == DOCUMENTS
    assert capacity["production"]["index_bytes"] == {
        "value": 1_000_000 * 32 * 4,
        "assumes": "flat index: 128 B per vector (32 x float32), nothing else; one replica",
    }
    assert capacity["production"]["memory_cost_per_month"]["value"] == 0.128 * 2.0
    lines = capacity_lines(record)
    assert lines[1] == (
        "capacity at 1,000,000 documents (production.documents), measured on the 120 searched here (exact "
        "index; latency measured here, not projected):"
    )
    assert lines[lines.index("assumptions:") :] == [
        "assumptions:",
        "  index memory: flat index: 128 B per vector (32 x float32), nothing else; one replica",
        "  embedding tokens: the model's tokens could not be counted (no tokenizer or usage figures)",
        "  embedding cost: no price_per_million_tokens for this model",
        "  memory/month: the projected index memory at 2 per GB-month (GB = 10^9 bytes), one replica",
    ]
    # All from the cache on a rerun: throughput was not measured, and the table says so.
    again = golden_record(run_golden(golden, hash_arm("a"), hash_arm("b"), embedder=cache.embed), "g.yaml")
    assert again["incumbent"]["capacity"]["measured"]["timings"]["encoding"] is None
    rerun = capacity_lines(again)
    assert any("not measured (all cached)" in line for line in rerun)
    assert (
        "encoding not measured: every document vector of that arm came from the embedding cache "
        "(--embeval-no-cache measures it)"
    ) in rerun


def test_a_worse_stratum_whose_gap_still_moves_says_so_in_its_failure() -> None:
    golden = make_golden(corpus_sample=SAMPLE, metric=parse_metric("hit@1"))
    run = run_golden(golden, hash_arm("steady"), Arm("distracted", DistractedModel(), "d", {}))
    outcome = evaluate_stratum(run, golden.strata()[0])
    record = stratum_record(golden, "golden.yaml", 0, outcome)
    assert record["verdict"] == "WORSE" and record["gap_moving"]
    assert [one["fraction"] for one in record["slices"]] == [0.2, 0.5, 1.0]
    text = stratum_failure(record)
    assert "gap still moving: the models cannot be ranked at this size yet" in text
    assert "Δ by corpus size: 20% " in text
    lines = slice_lines(golden_record(run, "golden.yaml"), [record])
    assert lines[-1] == "overall: gap still moving: the models cannot be ranked at this size yet"
