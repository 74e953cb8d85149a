"""Reciprocal rank fusion: hand-computed fusions, how a spec is split into its parts, and a hybrid arm run
through the pipeline under the same control as any arm."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_pipeline import DIMENSIONS, hash_arm, make_golden

from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.fusion import rrf_fuse, split_parts
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Hits
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.data_files import Document, Query
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import golden_control, run_arm
from pytest_embeval.search.exact import tie_ranks

IDS = ["d1", "d2", "d3", "d4", "d5"]


def hits(*rankings: list[str], width: int = 3) -> Hits:
    positions = np.full((len(rankings), width), -1, dtype=np.int64)
    for row, ranking in enumerate(rankings):
        positions[row, : len(ranking)] = [IDS.index(doc) for doc in ranking]
    return Hits(positions, np.where(positions >= 0, 1.0, np.nan))


def fused(result: Hits) -> list[list[tuple[str, float]]]:
    return [
        [(IDS[p], float(s)) for p, s in zip(row, scores, strict=True) if p >= 0]
        for row, scores in zip(result.positions.tolist(), result.scores.tolist(), strict=True)
    ]


def test_rrf_by_hand_with_ties_broken_by_id() -> None:
    # A: d1 d2 d3; B: d3 d4 d1. d1 and d3 each get 1/61 + 1/63, d2 and d4 each 1/62.
    result = rrf_fuse(
        [hits(["d1", "d2", "d3"]), hits(["d3", "d4", "d1"])], k=60, depth=4, ranks=tie_ranks(IDS)
    )
    assert fused(result) == [
        [("d3", 1 / 61 + 1 / 63), ("d1", 1 / 61 + 1 / 63), ("d4", 1 / 62), ("d2", 1 / 62)],
    ]
    # Bit-identical fused scores for equal sets of ranks, whatever the order of the parts.
    assert result.scores[0, 0] == result.scores[0, 1]


def test_rrf_by_hand_with_k_depth_and_missing_documents() -> None:
    a = hits(["d1", "d2"], ["d5"])
    b = hits(["d2", "d5"], [])
    result = rrf_fuse([a, b], k=1, depth=2, ranks=tie_ranks(IDS))
    # d2: 1/(1+2) + 1/(1+1); d1: 1/2; d5: 1/3, cut by the depth. Second query: d5 alone.
    assert fused(result) == [[("d2", 1 / 3 + 1 / 2), ("d1", 1 / 2)], [("d5", 1 / 2)]]
    assert result.positions.shape == (2, 2)


@pytest.mark.parametrize(
    ("spec", "parts", "query"),
    [
        ("rrf:a,b", ["a", "b"], ""),
        ("rrf:a,b?k=30", ["a", "b"], "k=30"),
        ("rrf:bm25?k1=0.9,models/minilm", ["bm25?k1=0.9", "models/minilm"], ""),
        ("rrf:models/minilm,[bm25?k1=0.9]", ["models/minilm", "bm25?k1=0.9"], ""),
        ("rrf:models/minilm,[bm25?k1=0.9]?k=10", ["models/minilm", "bm25?k1=0.9"], "k=10"),
        ("rrf:[rrf:a,b?k=5],c", ["rrf:a,b?k=5", "c"], ""),
        ("rrf:[models/a,b],pkg.mod:arm,bm25", ["models/a,b", "pkg.mod:arm", "bm25"], ""),
    ],
)
def test_a_spec_splits_at_commas_outside_brackets_and_its_own_parameters_come_last(
    spec: str, parts: list[str], query: str
) -> None:
    assert split_parts(spec) == (parts, query)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("rrf:a", "model spec 'rrf:a': rrf fuses at least two arms (write rrf:SPEC_A,SPEC_B)"),
        ("rrf:a,,b", "model spec 'rrf:a,,b': an empty part (write rrf:SPEC_A,SPEC_B)"),
        ("rrf:[a,b", "model spec 'rrf:[a,b': '[' without ']'"),
        ("rrf:a],b", "model spec 'rrf:a],b': ']' without '['"),
        (
            "rrf:bm25,bm25?k1=0.9",
            "model spec 'rrf:bm25,bm25?k1=0.9': unknown parameter 'k1' (accepted: k (an integer >= 1)); "
            "a part's own parameters go in brackets, e.g. rrf:A,[bm25?k1=0.9]",
        ),
        ("rrf:bm25,bm25?k=0", "model spec 'rrf:bm25,bm25?k=0': k must be an integer >= 1, got '0'"),
    ],
)
def test_a_bad_spec_is_one_line_naming_it(spec: str, message: str) -> None:
    with pytest.raises(EncoderError) as raised:
        resolve_arm(spec)
    assert str(raised.value) == message


class Fixed:
    """An encoder that ranks documents d0..d9 for every query in the order of ``order`` (document i gets
    the similarity given by its place in it)."""

    def __init__(self, name: str, order: list[int]) -> None:
        self.name = name
        self.order = order

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.eye(DIMENSIONS, dtype=np.float32)[[int(t.split()[-1]) for t in texts]]

    def encode_query(self, texts: list[str]) -> np.ndarray:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for place, doc in enumerate(self.order):
            vector[doc] = 1.0 - place / 20
        return np.stack([vector for _ in texts])


FIRST = Fixed("first", [0, 1, 2, 3])
SECOND = Fixed("second", [3, 2, 4, 0])


def test_a_fused_arm_runs_through_the_pipeline_as_computed_by_hand() -> None:
    golden = make_golden(
        documents=tuple(Document(f"d{i}", f"document {i}") for i in range(5)),
        queries=(Query("q1", "query", {"language": "en"}),),
        qrels={"q1": {"d3": 1}},
        metric=parse_metric("mrr@3"),
    )
    result = run_arm(golden, "rrf:test_fusion:FIRST,test_fusion:SECOND?k=1", "candidate")
    # Both arms rank all five documents (the fifth with similarity 0 last, then by id):
    # FIRST: d0 d1 d2 d3 d4; SECOND: d3 d2 d4 d0 d1.
    scores = {
        "d0": 1 / 2 + 1 / 5,
        "d1": 1 / 3 + 1 / 6,
        "d2": 1 / 4 + 1 / 3,
        "d3": 1 / 5 + 1 / 2,
        "d4": 1 / 6 + 1 / 4,
    }
    expected = sorted(scores, key=lambda d: (-scores[d], [-ord(c) for c in d]))
    assert expected == ["d3", "d0", "d2", "d1", "d4"]
    assert list(result.ranked[0]) == expected
    assert result.similarities[0] == pytest.approx([scores[d] for d in expected])
    assert result.per_query["mrr@3"][0] == 1.0
    assert result.arm.kind == "rrf"
    assert [part.spec for part in result.components] == ["test_fusion:FIRST", "test_fusion:SECOND"]
    assert all(part.index is not None and part.index.kind == "exact" for part in result.components)
    identity = json.loads(result.arm.fingerprint)
    assert identity["k"] == 1 and len(identity["parts"]) == 2


def test_the_new_model_plus_bm25_against_the_old_model_alone_holds_control() -> None:
    golden = make_golden()
    run = run_golden(golden, hash_arm("old"), rrf_of(hash_arm("new")))
    assert run.candidate.control == run.incumbent.control == golden_control(golden)
    assert run.candidate.arm.kind == "rrf" and run.candidate.index is None
    assert [part.kind for part in run.candidate.components] == ["dense", "bm25"]


def rrf_of(arm: object) -> object:
    from pytest_embeval.arms.fusion import rrf_arm

    return rrf_arm("rrf:new,bm25", lambda spec: resolve_arm(arm if spec == "new" else spec))
