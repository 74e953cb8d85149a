"""Specification of pytest_embeval.core.metrics: hand-derived values first, then parity with trec_eval.

Notation in the comments: ranks count from 1, ``g`` is the grade at a rank (``-`` = unjudged), ``R`` the
number of relevant documents of the query, ``lg(x)`` is log2(x).
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from functools import cmp_to_key

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_embeval.core.metrics import (
    MetricSpec,
    NoRelevantDocumentsWarning,
    evaluate,
    parse_metric,
    per_query,
    rank_documents,
)

lg = math.log2


def score(metric: str, run: Mapping[str, object], qrels: Mapping[str, Mapping[str, int]], **kw: int) -> float:
    """The score of the single query "q"."""
    return float(per_query(metric, run, qrels, ["q"], **kw)[0])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------
# Hand-derived values, graded judgments.
#
#   rank      1    2    3    4    5
#   doc       d3   d1   d5   d4   d2        d9 is relevant (grade 1) and never retrieved
#   g         0    3    -    1    2         R = 4 (d1, d2, d4, d9); d3 is judged non-relevant, d5 unjudged
# ----------------------------------------------------------------------------------------------------
GRADED_QRELS = {"q": {"d1": 3, "d2": 2, "d3": 0, "d4": 1, "d9": 1}}
GRADED_RUN = {"q": ["d3", "d1", "d5", "d4", "d2"]}

GRADED_EXPECTED = {
    "recall@1": 0 / 4,
    "recall@2": 1 / 4,  # d1
    "recall@3": 1 / 4,
    "recall@5": 3 / 4,  # d1, d4, d2; d9 never retrieved
    "recall@10": 3 / 4,
    "precision@1": 0 / 1,
    "precision@2": 1 / 2,
    "precision@5": 3 / 5,
    "precision@10": 3 / 10,  # divided by k although only 5 were retrieved
    "hit@1": 0.0,
    "hit@2": 1.0,
    "hit@10": 1.0,
    "mrr@1": 0.0,  # the first relevant document is at rank 2, past k
    "mrr@2": 1 / 2,
    "mrr@10": 1 / 2,
    # precision at each relevant rank within k, summed, over R: ranks 2, 4, 5 -> 1/2, 2/4, 3/5
    "map@1": 0.0,
    "map@2": (1 / 2) / 4,
    "map@4": (1 / 2 + 2 / 4) / 4,
    "map@5": (1 / 2 + 2 / 4 + 3 / 5) / 4,  # = 0.4
    "map@10": (1 / 2 + 2 / 4 + 3 / 5) / 4,
    # linear gain over lg(rank + 1); the ideal ranks every judged grade: 3, 2, 1, 1 (d9 included), 0
    "ndcg@1": 0 / 3,
    "ndcg@2": (3 / lg(3)) / (3 + 2 / lg(3)),
    "ndcg@3": (3 / lg(3)) / (3 + 2 / lg(3) + 1 / lg(4)),
    "ndcg@5": (3 / lg(3) + 1 / lg(5) + 2 / lg(6)) / (3 + 2 / lg(3) + 1 / lg(4) + 1 / lg(5)),
    "ndcg@10": (3 / lg(3) + 1 / lg(5) + 2 / lg(6)) / (3 + 2 / lg(3) + 1 / lg(4) + 1 / lg(5)),
    # any judgment counts, grade 0 included: d3, d1, d4, d2 (not d5)
    "judged@1": 1 / 1,
    "judged@3": 2 / 3,
    "judged@5": 4 / 5,
    "judged@10": 4 / 10,
}


@pytest.mark.parametrize(("metric", "expected"), GRADED_EXPECTED.items())
def test_graded_hand_values(metric: str, expected: float) -> None:
    assert score(metric, GRADED_RUN, GRADED_QRELS) == pytest.approx(expected, abs=1e-12)


def test_evaluate_shares_one_pass_and_matches_per_query() -> None:
    results = evaluate(GRADED_RUN, GRADED_QRELS, list(GRADED_EXPECTED), ["q"])
    assert list(results) == list(GRADED_EXPECTED)
    for metric, expected in GRADED_EXPECTED.items():
        assert results[metric].dtype == np.float64
        assert results[metric].shape == (1,)
        assert results[metric][0] == pytest.approx(expected, abs=1e-12)


# relevance_level=2: only d1 (3) and d2 (2) are relevant, R = 2; relevant ranks 2 and 5.
RELEVANCE_LEVEL_2 = {
    "recall@5": 2 / 2,
    "recall@4": 1 / 2,
    "precision@5": 2 / 5,
    "map@5": (1 / 2 + 2 / 5) / 2,
    "mrr@5": 1 / 2,
    "hit@1": 0.0,
    # trec_eval's ndcg_cut ignores the relevance level: d4 (grade 1) still gains 1
    "ndcg@5": GRADED_EXPECTED["ndcg@5"],
    "judged@5": 4 / 5,
}


@pytest.mark.parametrize(("metric", "expected"), RELEVANCE_LEVEL_2.items())
def test_relevance_level_2(metric: str, expected: float) -> None:
    assert score(metric, GRADED_RUN, GRADED_QRELS, relevance_level=2) == pytest.approx(expected, abs=1e-12)


# ----------------------------------------------------------------------------------------------------
# Binary judgments:  rank 1 x, 2 a, 3 y, 4 b;  a and b relevant, R = 2.
# ----------------------------------------------------------------------------------------------------
BINARY_QRELS = {"q": {"a": 1, "b": 1}}
BINARY_RUN = {"q": ["x", "a", "y", "b"]}
BINARY_EXPECTED = {
    "recall@2": 1 / 2,
    "recall@4": 2 / 2,
    "precision@4": 2 / 4,
    "map@4": (1 / 2 + 2 / 4) / 2,
    "ndcg@4": (1 / lg(3) + 1 / lg(5)) / (1 + 1 / lg(3)),
    "mrr@1": 0.0,
    "mrr@4": 1 / 2,
    "hit@1": 0.0,
    "hit@2": 1.0,
    "judged@4": 2 / 4,
}


@pytest.mark.parametrize(("metric", "expected"), BINARY_EXPECTED.items())
def test_binary_hand_values(metric: str, expected: float) -> None:
    assert score(metric, BINARY_RUN, BINARY_QRELS) == pytest.approx(expected, abs=1e-12)


# ----------------------------------------------------------------------------------------------------
# Ties in score: trec_eval sorts by score descending, then by doc id descending (string compare).
#   d2 0.9 first; among the 0.5s: "d3" > "d10" > "d1" as strings, so the order is d2, d3, d10, d1.
# ----------------------------------------------------------------------------------------------------
TIED = {"d1": 0.5, "d2": 0.9, "d10": 0.5, "d3": 0.5}


def test_rank_documents_breaks_ties_by_doc_id_descending() -> None:
    assert rank_documents(TIED) == ["d2", "d3", "d10", "d1"]
    assert rank_documents({"b": 1, "a": 1, "c": 2.5}) == ["c", "b", "a"]
    assert rank_documents({}) == []


def test_tied_scores_rank_like_trec_eval() -> None:
    run = {"q": TIED}
    assert score("mrr@4", run, {"q": {"d1": 1}}) == 1 / 4  # d1 comes last of the tie
    assert score("mrr@3", run, {"q": {"d1": 1}}) == 0.0
    assert score("mrr@4", run, {"q": {"d3": 1}}) == 1 / 2
    # d10 at rank 3, graded 2; ideal puts it first: (2 / lg(4)) / 2
    assert score("ndcg@4", run, {"q": {"d10": 2}}) == pytest.approx((2 / lg(4)) / 2, abs=1e-12)


def test_tie_order_is_the_one_pytrec_eval_uses() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    for doc in TIED:
        qrels = {"q": {doc: 1}}
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate({"q": TIED})
        assert score("mrr@10", {"q": TIED}, qrels) == theirs["q"]["recip_rank"]


def test_score_and_list_forms_agree() -> None:
    qrels = {"q": {"d1": 1, "d10": 3, "d3": 0}}
    names = ["ndcg@3", "recall@2", "precision@3", "map@4", "mrr@2", "hit@1", "judged@2"]
    from_scores = evaluate({"q": TIED}, qrels, names, ["q"])
    from_list = evaluate({"q": rank_documents(TIED)}, qrels, names, ["q"])
    for name in names:
        assert from_scores[name][0] == from_list[name][0]


# ----------------------------------------------------------------------------------------------------
# Edge cases.
# ----------------------------------------------------------------------------------------------------
def test_k_larger_than_the_ranking() -> None:
    # one document retrieved, relevant; R = 2 (d2 never retrieved)
    run, qrels = {"q": ["d1"]}, {"q": {"d1": 1, "d2": 1}}
    assert score("precision@10", run, qrels) == 1 / 10
    assert score("recall@10", run, qrels) == 1 / 2
    assert score("map@10", run, qrels) == (1 / 1) / 2
    assert score("ndcg@10", run, qrels) == pytest.approx(1 / (1 + 1 / lg(3)), abs=1e-12)
    assert score("mrr@10", run, qrels) == 1.0
    assert score("judged@10", run, qrels) == 1 / 10


def test_nothing_relevant_within_a_short_ranking_scores_zero() -> None:
    run, qrels = {"q": ["x"]}, {"q": {"a": 1}}
    for metric in ("mrr@10", "hit@10", "recall@10", "map@10", "ndcg@10", "precision@10", "judged@10"):
        assert score(metric, run, qrels) == 0.0, metric


@pytest.mark.parametrize("empty", [[], {}, ()])
def test_empty_rankings_score_zero(empty: object) -> None:
    for metric in ("mrr@5", "hit@5", "recall@5", "map@5", "ndcg@5", "precision@5", "judged@5"):
        assert score(metric, {"q": empty}, {"q": {"a": 1}}) == 0.0, metric


def test_grade_zero_is_judged_but_not_relevant() -> None:
    # rank 1 z (grade 0), rank 2 a (grade 2); R = 1
    run, qrels = {"q": ["z", "a"]}, {"q": {"z": 0, "a": 2}}
    assert score("precision@1", run, qrels) == 0.0
    assert score("judged@1", run, qrels) == 1.0
    assert score("ndcg@2", run, qrels) == pytest.approx((2 / lg(3)) / 2, abs=1e-12)


def test_negative_grades_gain_nothing_but_count_as_judged() -> None:
    # trec_eval gives a negative grade zero gain in DCG and in the ideal: (1 / lg(3)) / 1
    run, qrels = {"q": ["a", "b"]}, {"q": {"a": -1, "b": 1, "c": -2}}
    assert score("ndcg@2", run, qrels) == pytest.approx(1 / lg(3), abs=1e-12)
    assert score("judged@2", run, qrels) == 1.0
    assert score("precision@2", run, qrels) == 1 / 2


def test_query_missing_from_the_run_scores_zero_not_nan() -> None:
    qrels = {"q": {"d1": 1}, "other": {"d1": 1}}
    results = evaluate({"other": ["d1"]}, qrels, ["ndcg@5", "recall@5", "mrr@5", "judged@5"], ["q", "other"])
    for name, values in results.items():
        assert values.tolist() == [0.0, 1.0 if name != "judged@5" else 1 / 5], name


def test_query_without_relevant_documents_is_nan_and_warned_once() -> None:
    qrels = {"q": {"d1": 1}, "only-zero": {"d1": 0}, "unjudged": {}}
    run = {"q": ["d1"], "only-zero": ["d1"], "unjudged": ["d1"], "absent": ["d1"]}
    qids = ["q", "only-zero", "unjudged", "absent"]
    expected = re.escape(
        "3 of 4 queries have no relevant document (no grade >= 1) and score NaN: "
        "'only-zero', 'unjudged', 'absent'"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = evaluate(run, qrels, ["ndcg@5", "recall@5", "judged@5"], qids)
    assert len(caught) == 1
    assert caught[0].category is NoRelevantDocumentsWarning
    assert issubclass(NoRelevantDocumentsWarning, UserWarning)
    assert re.fullmatch(expected, str(caught[0].message))
    assert caught[0].filename == __file__  # points at the caller
    for name in ("ndcg@5", "recall@5"):
        assert results[name][0] == 1.0
        assert np.isnan(results[name][1:]).all()
    # judged@k stays defined: d1 is judged (grade 0) for "only-zero" only
    assert results["judged@5"].tolist() == [1 / 5, 1 / 5, 0.0, 0.0]

    with pytest.warns(NoRelevantDocumentsWarning, match=re.escape("(no grade >= 2)")):
        assert np.isnan(per_query("map@5", {"q": ["d1"]}, {"q": {"d1": 1}}, ["q"], relevance_level=2)[0])


def test_warning_lists_only_the_first_five_ids() -> None:
    qids = [f"q{i}" for i in range(7)]
    with pytest.warns(
        NoRelevantDocumentsWarning,
        match=re.escape(
            "7 of 7 queries have no relevant document (no grade >= 1) and score NaN: "
            "'q0', 'q1', 'q2', 'q3', 'q4', ..."
        )
        + "$",
    ):
        per_query("recall@5", {}, {}, qids)


def test_no_warning_when_every_query_has_a_relevant_document() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        per_query("ndcg@5", GRADED_RUN, GRADED_QRELS, ["q"])
        assert per_query("ndcg@5", {}, {}, []).shape == (0,)


def test_results_follow_query_ids_order_and_ignore_other_queries() -> None:
    run = {"a": ["d1"], "b": ["x", "d1"], "c": ["d1"]}
    qrels = {"a": {"d1": 1}, "b": {"d1": 1}, "c": {"d1": 1}}
    assert per_query("mrr@5", run, qrels, ["b", "a"]).tolist() == [1 / 2, 1.0]


def test_mixed_run_forms_and_ragged_lengths() -> None:
    run: dict[str, object] = {
        "a": ["x", "d1"],
        "b": {"d1": 0.1, "x": 0.2, "y": 0.3, "z": 0.05},
        "c": {"d1": 1},
    }
    qrels = {q: {"d1": 1} for q in run}
    assert per_query("mrr@5", run, qrels, ["a", "b", "c"]).tolist() == [1 / 2, 1 / 3, 1.0]  # type: ignore[arg-type]


def test_metric_spec() -> None:
    spec = MetricSpec("ndcg", 10)
    assert str(spec) == "ndcg@10"
    assert parse_metric("ndcg@10") == spec
    assert parse_metric("judged@1") == MetricSpec("judged", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.k = 5  # type: ignore[misc]
    assert not hasattr(spec, "__dict__")
    assert per_query(spec, GRADED_RUN, GRADED_QRELS, ["q"])[0] == pytest.approx(GRADED_EXPECTED["ndcg@10"])
    assert list(evaluate(GRADED_RUN, GRADED_QRELS, [spec, "mrr@1"], ["q"])) == ["ndcg@10", "mrr@1"]


# ----------------------------------------------------------------------------------------------------
# Bad input.
# ----------------------------------------------------------------------------------------------------
ACCEPTED = (
    "expected one of recall@k, precision@k, ndcg@k, mrr@k, map@k, hit@k, judged@k with k a positive integer"
)
BAD_NAMES = [
    "ndcg@0",
    "recal@5",
    "ndcg@ten",
    "ndcg",
    "@5",
    "ndcg@-1",
    " ndcg@5",
    "ndcg@5 ",
    "NDCG@5",
    "ndcg@05",
    "ndcg@5\n",
    "ndcg@\u0665",
    "P@10",
    "ndcg@1.5",
    "",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_metric_names_are_rejected_with_the_accepted_forms(name: str) -> None:
    message = "^" + re.escape(f"unknown metric {name!r}: {ACCEPTED}") + "$"
    with pytest.raises(ValueError, match=message):
        parse_metric(name)
    with pytest.raises(ValueError, match=message):
        per_query(name, GRADED_RUN, GRADED_QRELS, ["q"])
    with pytest.raises(ValueError, match=message):
        evaluate(GRADED_RUN, GRADED_QRELS, ["ndcg@10", name], ["q"])


def test_exact_message_for_a_misspelt_name() -> None:
    with pytest.raises(ValueError) as info:
        parse_metric("recal@5")
    assert str(info.value) == (
        "unknown metric 'recal@5': expected one of recall@k, precision@k, ndcg@k, mrr@k, map@k, hit@k, "
        "judged@k with k a positive integer"
    )


@pytest.mark.parametrize(("name", "k"), [("ndcg", 0), ("recal", 5), ("ndcg", True), ("ndcg", 2.0)])
def test_metric_spec_validates(name: str, k: int) -> None:
    with pytest.raises(ValueError, match=re.escape(f"unknown metric {name!r} with k={k!r}: {ACCEPTED}")):
        MetricSpec(name, k)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"q": ["d1", "d2", "d1"]}, "ranking for query 'q' lists document 'd1' more than once"),
        (
            {"q": "d1"},
            "ranking for query 'q' must be a sequence of doc ids or a {doc id: score} mapping, got 'd1'",
        ),
        ({"q": 3}, "ranking for query 'q' must be a sequence of doc ids"),
        ({"q": ["d1", 7]}, "ranking for query 'q' holds a doc id that is not a string: 7"),
        ({"q": {7: 0.5}}, "ranking for query 'q' holds a doc id that is not a string: 7"),
        (
            {"q": {"d1": float("nan")}},
            "ranking for query 'q': document 'd1' has score nan; scores must be numbers",
        ),
        (
            {"q": {"d1": "high"}},
            "ranking for query 'q': document 'd1' has score 'high'; scores must be numbers",
        ),
        ({"q": {"d1": None}}, "ranking for query 'q': document 'd1' has score None; scores must be numbers"),
    ],
)
def test_bad_runs(run: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        per_query("ndcg@5", run, {"q": {"d1": 1}}, ["q"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ({"q": {"d1": 1.0}}, "qrels grade for query 'q', document 'd1' must be an integer, got 1.0"),
        ({"q": {"d1": 0.5}}, "qrels grade for query 'q', document 'd1' must be an integer, got 0.5"),
        ({"q": {"d1": "1"}}, "qrels grade for query 'q', document 'd1' must be an integer, got '1'"),
        ({"q": {"d1": True}}, "qrels grade for query 'q', document 'd1' must be an integer, got True"),
        ({"q": {"d1": None}}, "qrels grade for query 'q', document 'd1' must be an integer, got None"),
        ({"q": {"d1": 2**70}}, "qrels grade for query 'q', document 'd1' is out of range"),
        ({"q": ["d1"]}, "qrels for query 'q' must map doc ids to grades, got list"),
        ({"q": {1: 1}}, "qrels for query 'q' name a doc id that is not a string: 1"),
        ({1: {"d1": 1}}, "qrels query ids must be strings, got 1"),
    ],
)
def test_bad_qrels(qrels: dict[object, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        per_query("ndcg@5", {"q": ["d1"]}, qrels, ["q"])  # type: ignore[arg-type]


def test_numpy_integer_grades_are_integers() -> None:
    assert score("ndcg@1", {"q": ["d1"]}, {"q": {"d1": np.int64(2)}}) == 1.0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match=re.escape("relevance_level must be an integer >= 1")):
        per_query("ndcg@5", GRADED_RUN, GRADED_QRELS, ["q"], relevance_level=0)
    with pytest.raises(ValueError, match=re.escape("query id 'q' appears more than once in query_ids")):
        per_query("ndcg@5", GRADED_RUN, GRADED_QRELS, ["q", "q"])
    with pytest.raises(ValueError, match=re.escape("not the single string 'q'")):
        per_query("ndcg@5", GRADED_RUN, GRADED_QRELS, "q")
    with pytest.raises(ValueError, match=re.escape("no metrics given")):
        evaluate(GRADED_RUN, GRADED_QRELS, [], ["q"])
    with pytest.raises(ValueError, match=re.escape("document 'd1' has score nan")):
        rank_documents({"d1": float("nan")})


# ----------------------------------------------------------------------------------------------------
# Parity with trec_eval (pytrec_eval) and ir_measures on seeded random data with ties.
# ----------------------------------------------------------------------------------------------------
KS = (1, 3, 5, 10, 20, 50)
TREC_NAMES = {
    "ndcg": "ndcg_cut_{k}",
    "recall": "recall_{k}",
    "precision": "P_{k}",
    "map": "map_cut_{k}",
    "hit": "success_{k}",
}


def random_case(
    seed: int, n_queries: int = 300
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Scores drawn from a few values so that ties are everywhere; ragged and empty rankings; grades 0..3."""
    rng = np.random.default_rng(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        retrieved = rng.choice(60, size=int(rng.integers(0, 40)), replace=False)
        run[qid] = {f"d{d}": float(rng.integers(0, 6)) / 4 for d in retrieved}
        judged = rng.choice(60, size=int(rng.integers(0, 15)), replace=False)
        qrels[qid] = {f"d{d}": int(rng.integers(0, 4)) for d in judged}
    return run, qrels


def trec_eval_scores(
    run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]], relevance_level: int
) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    measures = {template.format(k=k) for template in TREC_NAMES.values() for k in KS} | {"recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=relevance_level)
    return evaluator.evaluate(run)  # type: ignore[no-any-return]


def assert_trec_parity(
    ours: Mapping[str, np.ndarray],
    theirs: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    qids: Sequence[str],
    relevance_level: int,
) -> None:
    undefined = [not any(g >= relevance_level for g in qrels[q].values()) for q in qids]
    assert any(undefined) and not all(undefined)  # the data exercises both cases
    for name, template in TREC_NAMES.items():
        for k in KS:
            values = ours[f"{name}@{k}"]
            for row, qid in enumerate(qids):
                if undefined[row]:
                    assert np.isnan(values[row])
                else:
                    assert values[row] == pytest.approx(theirs[qid][template.format(k=k)], abs=1e-9, rel=0)


ALL_TREC_METRICS = [f"{name}@{k}" for name in TREC_NAMES for k in KS]


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_parity_with_pytrec_eval_on_scored_runs_with_ties(relevance_level: int) -> None:
    run, qrels = random_case(seed=relevance_level)
    qids = list(run)
    theirs = trec_eval_scores(run, qrels, relevance_level)
    with pytest.warns(NoRelevantDocumentsWarning):
        ours = evaluate(run, qrels, [*ALL_TREC_METRICS, "mrr@1000"], qids, relevance_level=relevance_level)
    assert_trec_parity(ours, theirs, qrels, qids, relevance_level)
    # recip_rank has no cutoff; with k past every ranking it must agree, ties included.
    for row, qid in enumerate(qids):
        if not np.isnan(ours["mrr@1000"][row]):
            assert ours["mrr@1000"][row] == pytest.approx(theirs[qid]["recip_rank"], abs=1e-12)


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_parity_with_pytrec_eval_on_ranked_lists(relevance_level: int) -> None:
    scored, qrels = random_case(seed=10 + relevance_level)
    rng = np.random.default_rng(relevance_level)
    lists = {qid: [str(d) for d in rng.permutation(list(docs))] for qid, docs in scored.items()}
    as_scores = {
        qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in lists.items()
    }
    qids = list(lists)
    theirs = trec_eval_scores(as_scores, qrels, relevance_level)
    with pytest.warns(NoRelevantDocumentsWarning):
        ours = evaluate(lists, qrels, ALL_TREC_METRICS, qids, relevance_level=relevance_level)
    assert_trec_parity(ours, theirs, qrels, qids, relevance_level)


def test_parity_with_pytrec_eval_on_negative_grades() -> None:
    run, qrels = random_case(seed=7, n_queries=100)
    qrels = {qid: {doc: grade - 1 for doc, grade in judged.items()} for qid, judged in qrels.items()}  # -1..2
    qids = list(run)
    theirs = trec_eval_scores(run, qrels, 1)
    with pytest.warns(NoRelevantDocumentsWarning):
        ours = evaluate(run, qrels, ALL_TREC_METRICS, qids)
    assert_trec_parity(ours, theirs, qrels, qids, 1)


@pytest.mark.parametrize("relevance_level", [1, 2])
def test_mrr_parity_with_ir_measures(relevance_level: int) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    run, qrels = random_case(seed=20 + relevance_level)
    # ir_measures computes RR@k with its msmarco provider, which orders equal scores by doc id *ascending*,
    # unlike trec_eval; hand it strictly decreasing scores in trec_eval order so both see one ranking.
    ranked = {qid: {doc: float(-i) for i, doc in enumerate(rank_documents(s))} for qid, s in run.items()}
    qids = list(run)
    with pytest.warns(NoRelevantDocumentsWarning):
        ours = evaluate(run, qrels, [f"mrr@{k}" for k in KS], qids, relevance_level=relevance_level)
    measures = [ir_measures.RR(cutoff=k, rel=relevance_level) for k in KS]
    theirs = {(m.query_id, m.measure): m.value for m in ir_measures.iter_calc(measures, qrels, ranked)}
    for k, measure in zip(KS, measures, strict=True):
        for row, qid in enumerate(qids):
            if any(g >= relevance_level for g in qrels[qid].values()):
                assert ours[f"mrr@{k}"][row] == pytest.approx(theirs[qid, measure], abs=1e-12)
            else:
                assert np.isnan(ours[f"mrr@{k}"][row])


def reference_order(scores: Mapping[str, float]) -> list[str]:
    """trec_eval's comparator written out independently: higher score first, then the larger doc id."""

    def compare(a: str, b: str) -> int:
        if scores[a] != scores[b]:
            return -1 if scores[a] > scores[b] else 1
        return -1 if a > b else (1 if a < b else 0)

    return sorted(scores, key=cmp_to_key(compare))


def test_hit_and_judged_against_a_plain_python_reference() -> None:
    run, qrels = random_case(seed=30)
    qids = list(run)
    names = [f"{name}@{k}" for name in ("hit", "judged") for k in KS]
    with pytest.warns(NoRelevantDocumentsWarning):
        ours = evaluate(run, qrels, names, qids)
    for row, qid in enumerate(qids):
        order, judged = reference_order(run[qid]), qrels[qid]
        has_relevant = any(g >= 1 for g in judged.values())
        for k in KS:
            top = order[:k]
            hit = float(any(judged.get(doc, 0) >= 1 for doc in top)) if has_relevant else math.nan
            assert ours[f"hit@{k}"][row] == pytest.approx(hit, nan_ok=True)
            assert ours[f"judged@{k}"][row] == pytest.approx(sum(doc in judged for doc in top) / k)


@settings(max_examples=60, deadline=None)
@given(
    scores=st.dictionaries(
        st.sampled_from([f"d{i}" for i in range(12)]), st.integers(0, 3).map(float), max_size=12
    ),
    grades=st.dictionaries(st.sampled_from([f"d{i}" for i in range(14)]), st.integers(-1, 3), max_size=14),
    k=st.integers(1, 15),
)
def test_property_parity_with_pytrec_eval(scores: dict[str, float], grades: dict[str, int], k: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    names = {"ndcg": f"ndcg_cut_{k}", "recall": f"recall_{k}", "precision": f"P_{k}", "map": f"map_cut_{k}"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NoRelevantDocumentsWarning)
        ours = evaluate({"q": scores}, {"q": grades}, [f"{name}@{k}" for name in names], ["q"])
    theirs = (
        pytrec_eval.RelevanceEvaluator({"q": grades}, set(names.values())).evaluate({"q": scores}).get("q")
    )
    for name, trec_name in names.items():
        value = ours[f"{name}@{k}"][0]
        if not any(g >= 1 for g in grades.values()):
            assert np.isnan(value)
        elif theirs is None:  # pytrec_eval leaves out an empty ranking; ours is an empty ranking, all zeros
            assert value == 0.0
        else:
            assert value == pytest.approx(theirs[trec_name], abs=1e-9, rel=0)
