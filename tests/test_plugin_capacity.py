"""Capacity through pytest: the terminal blocks and JSON records of production, corpus_sample and a recall
target, identical with and without xdist (but for timings), and an unreachable target refused in one line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_embeval.reports.json_report import without_timings

Golden = Callable[..., Path]

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]

# Models whose vectors span `rank` of 32 dimensions, and one whose documents are two opposite vectors.
MODELS = """
import numpy as np


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class Intrinsic:
    def __init__(self, rank):
        self.name = f"rank-{rank}"
        self.rank = rank
        self.basis = np.linalg.qr(np.random.default_rng(1).standard_normal((32, 32)))[0][:rank]

    def _embed(self, texts, offset):
        rows = [np.random.default_rng(offset + int(t.split()[-1])).standard_normal(self.rank) for t in texts]
        return _unit(np.stack(rows) @ self.basis)

    def encode_document(self, texts):
        return self._embed(texts, 0)

    def encode_query(self, texts):
        return self._embed(texts, 10_000)

    def count_tokens(self, texts, kind):
        return [len(text.split()) for text in texts]


class Tied:
    name = "tied"

    def encode_document(self, texts):
        return np.array([[1.0, 0.0] if int(t.split()[-1]) % 2 else [-1.0, 0.0] for t in texts])

    def encode_query(self, texts):
        return np.tile([1.0, 0.0], (len(texts), 1))


low = Intrinsic(2)
high = Intrinsic(32)
tied = Tied()
"""


def write_golden(root: Path, documents: int, **settings: Any) -> Path:
    """``documents`` documents "doc i" and 60 queries "query j", query j judged relevant: document j."""
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i:04d}", "text": f"doc {i}"}) + "\n" for i in range(documents)),
        encoding="utf-8",
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{j:02d}", "text": f"query {j}"}) + "\n" for j in range(60)),
        encoding="utf-8",
    )
    qrels = ["query-id\tcorpus-id\tscore", *(f"q{j:02d}\td{j:04d}\t1" for j in range(60))]
    (root / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    plan = {
        "corpus": "corpus.jsonl",
        "queries": "queries.jsonl",
        "qrels": "qrels.tsv",
        "metric": "recall@10",
        "bootstrap": 500,
        **settings,
    }
    path = root / "capacity.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any] | None]:
    pytester.makepyfile(capacity_models=MODELS)
    report = pytester.path / name
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-no-cache",
        "--embeval-incumbent=capacity_models:low",
        f"--embeval-json={report}",
        *args,
    )
    return result, json.loads(report.read_text(encoding="utf-8")) if report.exists() else None


CAPACITY = {
    "index": {"hnsw": {"M": 4, "ef_construction": 20, "recall_target": 0.95}},
    "corpus_sample": {"sizes": [0.25, 0.5, 1.0], "seed": 7},
    "production": {"documents": 10_000_000, "queries_per_month": 1_000_000, "memory_price_per_gb_month": 4.0},
}


def test_capacity_slices_and_recall_target_reported_alike_with_and_without_xdist(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest("")
    write_golden(pytester.path, 1500, **CAPACITY)
    serial, first = run(pytester, "serial.json", "--embeval-candidate=capacity_models:high")
    parallel, second = run(pytester, "parallel.json", "--embeval-candidate=capacity_models:high", "-n", "2")
    assert first is not None and second is not None
    assert serial.ret == parallel.ret
    assert without_timings(first) == without_timings(second)

    (golden,) = first["golden_sets"]
    assert golden["production"] == CAPACITY["production"]
    assert golden["corpus_sample"] == {"sizes": [0.25, 0.5, 1.0], "seed": 7, "corpus_documents": 1500}
    target = golden["recall_target"]
    assert target["ef"]["incumbent"] == 100 < target["ef"]["candidate"]
    assert target["needs_more"] == "candidate"
    (overall,) = golden["strata"]
    assert [(s["fraction"], s["documents"]) for s in overall["slices"]] == [
        (0.25, 375),
        (0.5, 750),
        (1.0, 1500),
    ]
    assert overall["slices"][-1]["delta"] == overall["delta"]
    assert overall["slices"][-1]["verdict"] == overall["verdict"]
    assert set(overall) >= {"gap_moving", "slices_note"}
    capacity = golden["candidate"]["capacity"]
    assert capacity["measured"]["dimension"] == 32
    assert capacity["measured"]["document_tokens"]["tokens"] == 2 * 1500  # "doc i": two words
    assert capacity["measured"]["timings"]["encoding"]["texts"] == 1500
    # M=4: level 0 holds 8 links and their count (36 B), the vector (128 B) and the label (8 B); then the
    # 4-byte length of the upper lists, and 1/3 of an upper list (4 links and a count, 20 B) on average.
    assert capacity["production"]["index_bytes"]["value"] == pytest.approx(96 + 10_000_000 * (176 + 20 / 3))
    assert capacity["production"]["memory_cost_per_month"]["value"] == pytest.approx(
        capacity["production"]["index_bytes"]["value"] / 1e9 * 4.0
    )

    serial.stdout.fnmatch_lines(
        [
            "capacity (capacity.yaml): recall@10*",
            "incumbent index: hnsw M=4 ef_construction=20 ef=100 (smallest to reach recall 0.95), *",
            "candidate index: hnsw M=4 ef_construction=20 ef=* (smallest to reach recall 0.95), *",
            "recall target 0.95: the candidate needs more: ef * against the incumbent's 100; held constant "
            "is the recall target, not the ef: *",
            "",
            "recall@10 Δ by corpus size, of 1,500 documents *",
            "stratum*25% (375 documents)*50% (750 documents)*100% (1,500 documents)",
            "*",
            "overall*",
            "*",
            "capacity at 10,000,000 documents (production.documents), measured on the 1,500 searched here *",
            "arm*vector*tokens/doc*encoding here*latency p50/p95*index memory*embedding tokens*",
            "*",
            "incumbent*32 x float32 (128 B)*2.0*texts/s, * tokens/s*ms*1.83 GB*20 million*—*7.31",
            "candidate*32 x float32 (128 B)*2.0*",
            "",
            "per month at 1,000,000 queries (production.queries_per_month):",
            "*",
            "*",
            "incumbent*2 million*—*",
            "*",
            "assumptions:",
            "  index memory: hnswlib's layout: 128 B float32 vector + 54.67 B graph per document (M=4: *",
            "  embedding tokens: 10,000,000 documents with this run's mean of 2.0 tokens (the encoder's "
            "count_tokens; 1,500 texts counted)",
            "  embedding cost: no price_per_million_tokens for this model",
            "*",
        ]
    )


@pytest.mark.parametrize("xdist", XDIST)
def test_an_unreachable_recall_target_is_an_error_of_the_golden_set_in_one_line(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pytester.makeconftest("")
    write_golden(pytester.path, 300, index={"hnsw": {"M": 4, "ef_construction": 20, "recall_target": 1.0}})
    result, report = run(pytester, "report.json", "--embeval-candidate=capacity_models:tied", *xdist)
    result.assert_outcomes(errors=1)  # not a WORSE: the golden set could not be run as declared
    result.stdout.fnmatch_lines(
        [
            "capacity: candidate: index.hnsw.recall_target 1 is out of reach: ANN recall@100 0.* on 60 "
            "sampled queries at the largest ef, 300 (every document); lower the target, or raise M (4) or "
            "ef_construction (20)"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert report is not None and report["golden_sets"] == []
    assert [error["message"].split(":", 1)[0] for error in report["errors"]] == ["candidate"]


def test_a_recall_target_outside_zero_to_one_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("")
    write_golden(pytester.path, 100, index={"hnsw": {"recall_target": 1.5}})
    result, _ = run(pytester, "report.json", "--embeval-candidate=capacity_models:high")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*capacity.yaml:*: index.hnsw.recall_target: must be a number in (0, 1], got 1.5"]
    )
