"""ties.py: tie-aware metric values (the mean over every ordering of tied documents) and their extremes."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_embeval.core import metrics, ties
from pytest_embeval.core.metrics import METRIC_NAMES

LOG3 = math.log2(3)

# d1 ranks first; d2 and d3 tie at rank 2-3, d2 relevant (grade 1), d3 unjudged. trec_eval puts d3 (the
# larger id) first, so at cutoff 2 it finds nothing; half of the orderings put d2 there.
RUN = {"q": {"d1": 0.9, "d2": 0.5, "d3": 0.5}}
QRELS = {"q": {"d1": 0, "d2": 1}}


@pytest.mark.parametrize(
    ("metric", "docid", "expected"),
    [
        ("recall@2", 0.0, 0.5),
        ("precision@2", 0.0, 0.25),
        ("hit@2", 0.0, 0.5),
        ("mrr@2", 0.0, 0.5 * 1 / 2),
        ("map@2", 0.0, 0.5 * (1 / 2) / 1),
        ("ndcg@2", 0.0, 0.5 / LOG3),
        ("judged@2", 0.5, (1 + 0.5) / 2),
        # Past the tie only the order within the top k is in question: recall no longer, nDCG, MRR and
        # MAP still (d2 at rank 2 or 3).
        ("recall@3", 1.0, 1.0),
        ("ndcg@3", 1 / 2, 0.5 * (1 / LOG3 + 1 / 2)),
        ("mrr@3", 1 / 3, 0.5 * (1 / 2 + 1 / 3)),
        ("map@3", 1 / 3, 0.5 * (1 / 2 + 1 / 3)),
        ("judged@3", 2 / 3, 2 / 3),
    ],
)
def test_two_tied_documents_at_the_cutoff_one_relevant(metric: str, docid: float, expected: float) -> None:
    assert metrics.per_query(metric, RUN, QRELS, ["q"])[0] == pytest.approx(docid, abs=1e-15)
    assert ties.expected(RUN, QRELS, [metric], ["q"])[metric][0] == pytest.approx(expected, abs=1e-15)


def test_graded_tie_at_the_cutoff() -> None:
    # d2 (grade 2) and d3 (grade 1) tie at ranks 1-2, cutoff 1: each gains 1.5 on average at rank 1.
    run = {"q": {"d2": 0.7, "d3": 0.7, "d1": 0.1}}
    qrels = {"q": {"d2": 2, "d3": 1}}
    values = ties.expected(run, qrels, ["ndcg@1", "recall@1", "hit@1", "map@1"], ["q"], relevance_level=2)
    assert values["ndcg@1"][0] == pytest.approx(1.5 / 2)
    # relevance level 2: only d2 is relevant
    assert (values["recall@1"][0], values["hit@1"][0], values["map@1"][0]) == pytest.approx((0.5, 0.5, 0.5))


def test_a_tie_group_reaching_far_past_the_cutoff_is_counted_whole() -> None:
    # The static model's Thai queries: 224 documents tie at the score of rank 10, one of them relevant.
    tied = {f"t{i:03d}": 0.25 for i in range(224)}
    run = {"q": {**{f"a{i}": 0.9 - i / 100 for i in range(9)}, **tied}}
    qrels = {"q": {"t100": 1}}
    values = ties.expected(run, qrels, ["recall@10", "hit@10", "mrr@10", "ndcg@10", "precision@10"], ["q"])
    assert values["recall@10"][0] == pytest.approx(1 / 224)
    assert values["hit@10"][0] == pytest.approx(1 / 224)
    assert values["mrr@10"][0] == pytest.approx(1 / 224 / 10)
    assert values["ndcg@10"][0] == pytest.approx(1 / 224 / math.log2(11))
    assert values["precision@10"][0] == pytest.approx(1 / 224 / 10)
    # Cut at a ranked depth of 100, the group would be whichever 91 of its members got listed: the
    # expected value would then be 1/91 or 0, depending on ids, not on the model.
    group = sorted(tied, reverse=True)  # trec_eval's order within the group
    for listed, chance in ((group[:91], 0.0), (group[100:191], 1 / 91)):
        cut = {
            "q": {
                **{doc: run["q"][doc] for doc in run["q"] if doc.startswith("a")},
                **dict.fromkeys(listed, 0.25),
            }
        }
        assert ties.expected(cut, qrels, ["hit@10"], ["q"])["hit@10"][0] == pytest.approx(chance)


def orderings(ranking: Mapping[str, float]) -> list[list[str]]:
    """Every ordering of the ranking that keeps scores descending (each tie group permuted)."""
    order = metrics.rank_documents(ranking)
    groups = [list(group) for _, group in itertools.groupby(order, key=lambda doc: ranking[doc])]
    return [
        [doc for group in perm for doc in group]
        for perm in itertools.product(*map(itertools.permutations, groups))
    ]


SPECS = [f"{name}@{k}" for name in METRIC_NAMES for k in (1, 2, 3, 5)]


@pytest.mark.parametrize("seed", range(40))
def test_expected_is_the_mean_over_every_ordering(seed: int) -> None:
    gen = random.Random(seed)
    docs = [f"d{i}" for i in range(gen.randint(2, 7))]
    ranking = {doc: gen.choice([0.9, 0.5, 0.5, 0.3]) for doc in docs}
    judged = {doc: gen.choice([0, 1, 2, -1]) for doc in docs if gen.random() < 0.7}
    qrels = {"q": {**judged, "unretrieved": 1}}
    by_ordering = [metrics.evaluate({"q": order}, qrels, SPECS, ["q"]) for order in orderings(ranking)]
    expected = ties.expected({"q": ranking}, qrels, SPECS, ["q"])
    for spec in SPECS:
        values = np.array([result[spec][0] for result in by_ordering])
        assert expected[spec][0] == pytest.approx(values.mean(), abs=1e-12), spec


def test_ascending_breaks_ties_by_the_smaller_id_first() -> None:
    # trec_eval puts d3 ahead of d2 at equal score; the ascending order puts d2 first and finds it.
    values = ties.ascending(RUN, QRELS, ["recall@2", "mrr@3", "judged@2"], ["q"])
    assert (values["recall@2"][0], values["mrr@3"][0], values["judged@2"][0]) == (1.0, 0.5, 1.0)
    lists = {"q": ["d1", "d2", "d3"]}
    reordered, listed = ties.ascending(RUN, QRELS, SPECS, ["q"]), metrics.evaluate(lists, QRELS, SPECS, ["q"])
    assert {name: values.tolist() for name, values in reordered.items()} == {
        name: values.tolist() for name, values in listed.items()
    }


def test_queries_without_ties_keep_trec_eval_values() -> None:
    run = {"a": {"d1": 0.9, "d2": 0.8, "d3": 0.7}, "b": ["d2", "d1"], "c": {"d1": 0.5, "d2": 0.4, "d3": 0.4}}
    qrels = {"a": {"d2": 1}, "b": {"d1": 2}, "c": {"d1": 1}}
    qids = ["a", "b", "c", "missing"]
    docid = metrics.evaluate(run, {**qrels, "missing": {"d1": 1}}, SPECS, qids)
    expected = ties.expected(run, {**qrels, "missing": {"d1": 1}}, SPECS, qids)
    for spec in SPECS:  # c's tie lies below its only relevant document: every ordering scores alike
        assert expected[spec].tolist() == docid[spec].tolist(), spec


def test_a_query_without_relevant_documents_stays_nan() -> None:
    run = {"q": {"d1": 0.5, "d2": 0.5}}
    with pytest.warns(metrics.NoRelevantDocumentsWarning):
        values = ties.expected(run, {"q": {"d1": 0}}, ["ndcg@1", "judged@1"], ["q"])
    assert math.isnan(values["ndcg@1"][0])
    assert values["judged@1"][0] == 0.5


def test_ties_names() -> None:
    assert ties.TIES == ("docid", "expected")


# Scores as rankings hold them (floats, ints, bools, numpy scalars, numeric strings), few distinct values so
# that ties are the rule, and the signed zeros, which compare equal.
_SCORES = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1, True, np.float32(0.5), np.float64(1.0), "0.5", float("inf")]),
    st.floats(allow_nan=False, width=32),
)
_RANKINGS = st.dictionaries(st.text("abc", min_size=1, max_size=3), _SCORES, max_size=12)


@given(_RANKINGS)
@settings(max_examples=300, deadline=None)
def test_the_tie_orders_are_their_definitions(ranking: dict[str, object]) -> None:
    """trec_eval's order (score descending, equal scores by id descending) and the ascending one, as the
    sorts that define them, whatever type the scores have."""
    as_float = {doc: float(score) for doc, score in ranking.items()}  # type: ignore[arg-type]
    trec_eval = sorted(ranking, key=lambda doc: (as_float[doc], doc), reverse=True)
    assert metrics.rank_documents(ranking) == trec_eval
    assert metrics.scored_order(ranking) == sorted(((as_float[d], d) for d in ranking), reverse=True)
    assert ties._ascending(ranking) == sorted(ranking, key=lambda doc: (-as_float[doc], doc))


@pytest.mark.parametrize(
    ("ranking", "named"),
    [
        ({"d0": 1.0, "d1": float("nan")}, "document 'd1' has score nan"),
        ({"d0": 1.0, "d1": "high"}, "document 'd1' has score 'high'"),
        ({"d0": None, "d1": 1.0}, "document 'd0' has score None"),
    ],
)
def test_a_score_that_is_not_a_number_is_named(ranking: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        metrics.scored_order(ranking)  # type: ignore[arg-type]


def test_plus_and_minus_infinity_order_as_numbers() -> None:
    """Their sum is NaN, which sends the ranking down the one-by-one path: the order is still the sort's."""
    ranking = {"a": float("inf"), "b": float("-inf"), "c": 0.0}
    assert metrics.rank_documents(ranking) == ["a", "c", "b"]
