"""strata.evaluate_golden: strata decided as one family, ties that could change a verdict, tie groups
completed past the ranked depth, and the queries neither arm finds an answer for."""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from test_pipeline import make_golden

from pytest_embeval.arms.embedding import Arm
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.core.verdict import Verdict, family_levels
from pytest_embeval.golden.data_files import Document, Query
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.stratum_records import stratum_record
from pytest_embeval.reports.terminal import golden_table
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import GoldenRun, ranked_depth
from pytest_embeval.run.stratum_evaluation import evaluate_golden, evaluate_stratum


class TableModel:
    """Embeds each text as the vector a table gives it (texts missing from it: an axis of their own)."""

    def __init__(self, vectors: Mapping[str, np.ndarray], dimensions: int) -> None:
        self.vectors = vectors
        self.dimensions = dimensions

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vector(text) for text in texts])

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self.encode_document(texts)

    def _vector(self, text: str) -> np.ndarray:
        vector = self.vectors.get(text)
        if vector is None:
            vector = np.zeros(self.dimensions, dtype=np.float32)
            vector[zlib.crc32(text.encode()) % 7 + self.dimensions - 7] = 1.0  # an unrelated axis
        return np.asarray(vector, dtype=np.float32)


def table_arm(name: str, vectors: Mapping[str, np.ndarray], dimensions: int) -> Arm:
    return Arm(spec=name, encoder=TableModel(vectors, dimensions), fingerprint=f'"{name}"', prompts={})


def golden_set(
    n_documents: int, n_queries: int, qrels: Mapping[str, Mapping[str, int]], **changes: Any
) -> GoldenSet:
    """``make_golden``'s set with these documents ("doc i"), queries ("query i", in groups a and b) and
    judgments, primary metric hit@1."""
    settings: dict[str, Any] = {
        "documents": tuple(Document(f"d{i:03d}", f"doc {i}") for i in range(n_documents)),
        "queries": tuple(Query(f"q{i:02d}", f"query {i}", {"group": "ab"[i % 2]}) for i in range(n_queries)),
        "qrels": qrels,
        "strata_fields": ("group",),
        "metric": parse_metric("hit@1"),
        "tie_margin": 0.05,
        "bootstrap": 1000,
    }
    return make_golden(**{**settings, **changes})


def axis(i: int, dimensions: int, weight: float = 1.0) -> np.ndarray:
    vector = np.zeros(dimensions, dtype=np.float32)
    vector[i] = weight
    return vector


# ------------------------------------------------------------------------------------------------ ties

QUERIES = 40
DIMS = 2 * QUERIES + 10


def tied_at_the_top() -> tuple[GoldenSet, Arm, Arm]:
    """Query i's relevant document is d(2i); the incumbent ranks it first, the candidate ties it with
    d(2i+1) at the top, and trec_eval's order (larger id first) puts d(2i+1) ahead."""
    qrels = {f"q{i:02d}": {f"d{2 * i:03d}": 1} for i in range(QUERIES)}
    golden = golden_set(2 * QUERIES, QUERIES, qrels)
    incumbent: dict[str, np.ndarray] = {}
    candidate: dict[str, np.ndarray] = {}
    for i in range(QUERIES):
        incumbent[f"query {i}"] = candidate[f"query {i}"] = axis(i, DIMS)
        incumbent[f"doc {2 * i}"] = candidate[f"doc {2 * i}"] = axis(i, DIMS)
        incumbent[f"doc {2 * i + 1}"] = axis(QUERIES + i, DIMS)
        candidate[f"doc {2 * i + 1}"] = axis(i, DIMS)  # the same vector: the same score
    return golden, table_arm("sharp", incumbent, DIMS), table_arm("tied", candidate, DIMS)


def test_ties_that_decide_a_verdict_are_counted_and_flagged() -> None:
    golden, sharp, tied = tied_at_the_top()
    outcome = evaluate_golden(run_golden(golden, sharp, tied))[0]
    assert outcome.stratum.name == "overall"
    # trec_eval's order: the candidate finds nothing at rank 1, WORSE; with the relevant document first, a TIE
    assert outcome.comparisons["hit@1"].delta == -1.0
    assert outcome.ruling.verdict is Verdict.WORSE
    assert outcome.ties is not None
    assert outcome.ties.across["hit@1"] == (0, QUERIES)
    # ids ascending find every relevant document first (TIE); on average half of them (still WORSE)
    assert outcome.ties.verdicts == {
        "docid": Verdict.WORSE,
        "docid-ascending": Verdict.TIE,
        "expected": Verdict.WORSE,
    }
    assert outcome.ties.could_change(Verdict.WORSE)
    record = stratum_record(golden, "golden.yaml", 0, outcome)
    assert record["tied"] == {
        "metric": "hit@1",
        "incumbent": 0,
        "candidate": QUERIES,
        "could_change": True,
        "verdicts": {"docid": "WORSE", "docid-ascending": "TIE", "expected": "WORSE"},
        "across": {"hit@1": {"incumbent": 0, "candidate": QUERIES}},
    }


def test_expected_ties_score_every_order_alike() -> None:
    golden, sharp, tied = tied_at_the_top()
    run = run_golden(dataclasses.replace(golden, ties="expected"), sharp, tied)
    assert run.candidate.per_query["hit@1"].tolist() == [0.5] * QUERIES
    assert run.incumbent.per_query["hit@1"].tolist() == [1.0] * QUERIES


def test_a_tie_group_past_the_ranked_depth_is_completed_from_the_index() -> None:
    # 300 documents; for each query, 9 documents above and 224 tied at the score of rank 10, of which the
    # relevant one has the smallest id: the ranked depth (100) lists 91 members, not it.
    n_docs, dims = 300, 8
    query = axis(0, dims)
    vectors: dict[str, np.ndarray] = {"query 0": query}
    for i in range(9):
        vectors[f"doc {i}"] = np.array([1.0 - 0.01 * i, np.sqrt(1 - (1.0 - 0.01 * i) ** 2), 0, 0, 0, 0, 0, 0])
    for i in range(9, 9 + 224):
        vectors[f"doc {i}"] = np.array([0.5, np.sqrt(0.75), 0, 0, 0, 0, 0, 0])
    qrels = {"q00": {"d009": 1}}
    golden = golden_set(n_docs, 1, qrels, metric=parse_metric("recall@10"), ties="expected", min_queries=1)
    assert ranked_depth(golden) == 100
    arm = table_arm("tied", vectors, dims)
    run = run_golden(golden, arm, arm)
    ties = run.candidate.ties
    assert ties is not None and len(ties.beyond[0]) == 224 - 91
    assert "d009" in ties.beyond[0] and "d009" not in run.candidate.ranked[0]
    assert run.candidate.per_query["recall@10"][0] == pytest.approx(1 / 224)
    assert ties.orders is not None
    # trec_eval's order lists the largest ids of the group, the ascending order starts with d009
    assert (ties.orders["docid"]["recall@10"][0], ties.orders["docid-ascending"]["recall@10"][0]) == (
        0.0,
        1.0,
    )


def test_the_ranked_depth_reaches_one_past_the_deepest_cutoff() -> None:
    qrels = {"q00": {"d000": 1}}
    assert ranked_depth(golden_set(500, 1, qrels, metric=parse_metric("recall@100"))) == 101
    assert ranked_depth(golden_set(500, 1, qrels, metric=parse_metric("recall@10"))) == 100
    assert ranked_depth(golden_set(50, 1, qrels, metric=parse_metric("recall@100"))) == 50


# ------------------------------------------------------------------------------------------------ families


def scored_run(golden: GoldenSet, incumbent: np.ndarray, candidate: np.ndarray) -> GoldenRun:
    """A run whose arms carry the given per-query primary scores (searching is not what is tested)."""
    base = run_golden(golden, *tied_at_the_top()[1:])
    name = str(golden.metric)
    arms = [
        dataclasses.replace(arm, per_query={name: scores}, ties=None)
        for arm, scores in ((base.incumbent, incumbent), (base.candidate, candidate))
    ]
    return dataclasses.replace(base, golden=golden, incumbent=arms[0], candidate=arms[1])


@pytest.mark.parametrize("method", ["none", "holm", "bonferroni"])
def test_the_strata_of_a_file_are_decided_as_one_family(method: str) -> None:
    golden, *_ = tied_at_the_top()
    golden = dataclasses.replace(golden, multiple_comparisons=method, tie_margin=0.0)
    gen = np.random.default_rng(5)
    incumbent = gen.uniform(0.2, 0.8, QUERIES)
    candidate = np.clip(incumbent + gen.normal(0.12, 0.25, QUERIES) * (np.arange(QUERIES) % 2), 0, 1)
    run = scored_run(golden, incumbent, candidate)
    outcomes = evaluate_golden(run)
    assert [o.stratum.name for o in outcomes] == ["overall", "group=a", "group=b"]
    # the family's p-values are those of the nominal intervals, with the stratum's own seed
    nominal = [evaluate_stratum(run, o.stratum).comparisons["hit@1"] for o in outcomes]
    levels = family_levels([c.p_value for c in nominal], alpha=0.05, method=method)
    for outcome, c, level in zip(outcomes, nominal, levels, strict=True):
        assert outcome.family is not None and (outcome.family.method, outcome.family.size) == (method, 3)
        assert outcome.family.level == pytest.approx(level)
        decided = outcome.comparisons["hit@1"]
        assert decided.p_value == c.p_value  # the same resamples at the adjusted level
        assert decided.confidence == pytest.approx(1 - level)
        assert (outcome.ruling.verdict is not Verdict.TIE) == (c.p_value < level)
    if method == "none":
        assert [o.comparisons["hit@1"] for o in outcomes] == nominal


def test_strata_below_the_floor_are_outside_the_family() -> None:
    golden, *_ = tied_at_the_top()
    golden = dataclasses.replace(golden, multiple_comparisons="holm", min_queries=QUERIES)
    outcomes = evaluate_golden(scored_run(golden, np.full(QUERIES, 0.2), np.full(QUERIES, 0.6)))
    assert [(o.family.size, o.family.level) for o in outcomes if o.family] == [
        (1, 0.05),
        (1, None),
        (1, None),
    ]


@pytest.mark.parametrize("method", ["none", "holm", "bonferroni"])
@pytest.mark.parametrize("interval", ["studentized", "percentile"])
def test_an_a_a_run_ties_everywhere(method: str, interval: str) -> None:
    golden, _, tied = tied_at_the_top()
    golden = dataclasses.replace(golden, multiple_comparisons=method, interval=interval, tie_margin=0.0)
    outcomes = evaluate_golden(run_golden(golden, tied, tied))
    assert {o.ruling.verdict for o in outcomes} == {Verdict.TIE}
    assert all(o.ties is not None and not o.ties.could_change(Verdict.TIE) for o in outcomes)


# ------------------------------------------------------------------------------------------ consensus


@pytest.mark.filterwarnings("ignore::pytest_embeval.core.metrics.NoRelevantDocumentsWarning")
def test_consensus_failures_are_the_judged_queries_neither_arm_finds() -> None:
    golden, sharp, tied = tied_at_the_top()
    qrels = {qid: dict(judged) for qid, judged in golden.qrels.items()}
    qrels["q03"] = {"d070": 1}  # judged relevant: a document neither arm ranks first for query 3
    qrels["q04"] = {"d071": 1}
    qrels["q05"] = {"d010": 0}  # no relevant judgment at all: excluded, not a consensus failure
    golden = dataclasses.replace(golden, qrels=qrels)
    outcomes = {o.stratum.name: o for o in evaluate_golden(run_golden(golden, sharp, tied))}
    assert outcomes["overall"].consensus_failures == ("q03", "q04")
    assert outcomes["group=a"].consensus_failures == ("q04",)
    assert outcomes["group=b"].consensus_failures == ("q03",)
    record = stratum_record(golden, "golden.yaml", 0, outcomes["overall"])
    assert record["consensus_failures"] == ["q03", "q04"]


def test_the_table_counts_consensus_failures_and_warns_about_ties() -> None:
    golden, sharp, tied = tied_at_the_top()
    qrels = {**golden.qrels, "q03": {"d070": 1}}
    golden = dataclasses.replace(golden, qrels=qrels)
    run = run_golden(golden, sharp, tied)
    from pytest_embeval.reports.json_report import golden_record

    record = golden_record(run, "golden.yaml")
    strata = [stratum_record(golden, "golden.yaml", i, o) for i, o in enumerate(evaluate_golden(run))]
    lines = golden_table(record, strata)
    assert lines[0].startswith(
        "golden (golden.yaml): hit@1, margin 0.05, 95% CI (studentized interval), ties docid;"
    )
    assert (
        "embeval: WARNING: overall: tied scores across hit@1 in 0 incumbent and 40 candidate queries of 40: "
        "the tie order changes the verdict: WORSE (docid), TIE (docid-ascending), WORSE (expected); "
        "ties: expected scores every order alike"
    ) in lines
    assert any(
        line.startswith(
            "check the labels: queries where neither arm finds a relevant document in the top 1: "
            "overall 1, group=b 1"
        )
        for line in lines
    )
    assert any(
        line.startswith("3 strata tested at 95% each: if nothing changed, the chance of at least one")
        for line in lines
    )
    assert not math.isnan(strata[0]["p_value"])
