"""Tied scores and the metrics they leave undecided.

trec_eval breaks a tie in score by document id, so a metric of a ranking with tied documents depends on
the ids: two correct implementations that break ties differently can disagree. This module offers the
two honest alternatives, computed on scored rankings (``{doc id: score}``, as ``metrics`` reads them):

* :func:`expected` -- the tie-aware value of every metric (McSherry & Najork, "Computing information
  retrieval performance measures efficiently in the presence of tied scores", ECIR 2008): the mean of the
  metric over every ordering of each group of tied documents, in closed form;
* :func:`ascending` -- the metric with ties broken by document id the other way round, as another correct
  implementation (ir_measures' msmarco provider) does, so that a caller can tell whether the tie order
  could change a verdict.

A ranking must hold *every* document tied with its last one: a tie group cut off by the ranked depth
would make the expected value depend on which of its members happened to be listed. The caller completes
it from the index (``pytest_embeval.search.exact.equal_scores``).

Definitions, for one query: groups are maximal runs of equal score in trec_eval's order; in a group of
``g`` documents, ``r`` of them relevant, each position is relevant with probability ``r / g``, two
distinct positions both with ``r (r - 1) / (g (g - 1))``, and positions in different groups independently.
Linear metrics (recall, precision, nDCG's DCG, judged) take each position's group mean; ``hit@k``,
``mrr@k`` and ``map@k`` follow from the probabilities above (see the functions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby, repeat
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from pytest_embeval.core.metrics import MetricSpec, Qrels, evaluate, parse_metric, scored_order

__all__ = ["TIES", "ascending", "expected"]

#: How tied scores are ordered before a metric is computed: trec_eval's document-id order, or the expected
#: value over every ordering.
TIES: tuple[str, ...] = ("docid", "expected")

ScoredRun = Mapping[str, Mapping[str, float]]
_EMPTY: Mapping[str, int] = {}


def expected(
    run: ScoredRun,
    qrels: Qrels,
    metrics: Sequence[str | MetricSpec],
    query_ids: Sequence[str],
    *,
    relevance_level: int = 1,
) -> dict[str, npt.NDArray[np.float64]]:
    """Every metric's expected value over all orderings of tied documents, keyed as ``metrics.evaluate``
    keys them, with the same NaN for queries without a relevant document.

    Queries without a tie reaching into the deepest cutoff keep the value ``metrics.evaluate`` gives them
    (every ordering is the same there); the others are recomputed from their tie groups.
    """
    specs = [metric if isinstance(metric, MetricSpec) else parse_metric(metric) for metric in metrics]
    values = evaluate(run, qrels, specs, query_ids, relevance_level=relevance_level)
    depth = max(spec.k for spec in specs)
    for row, qid in enumerate(query_ids):
        query = _Query.of(run.get(qid), qrels.get(qid, _EMPTY), relevance_level, depth)
        if query is None:
            continue
        for spec in specs:
            if not np.isnan(values[str(spec)][row]) or spec.name == "judged":
                values[str(spec)][row] = query.expected(spec)
    return values


def ascending(
    run: ScoredRun,
    qrels: Qrels,
    metrics: Sequence[str | MetricSpec],
    query_ids: Sequence[str],
    *,
    relevance_level: int = 1,
) -> dict[str, npt.NDArray[np.float64]]:
    """Every metric with ties broken the other way round from trec_eval: equal scores by document id
    ascending, as ir_measures' msmarco provider orders them. Another correct implementation."""
    lists = {qid: _ascending(run[qid]) for qid in query_ids if qid in run}
    return evaluate(lists, qrels, metrics, query_ids, relevance_level=relevance_level)


def _ascending(ranking: Mapping[str, float]) -> list[str]:
    """Score descending, equal scores by document id ascending."""
    # trec_eval's order with each run of equal scores reversed (its ids descending become ascending).
    pairs = scored_order(ranking)
    ordered: list[str] = []
    for _, group in groupby(pairs, key=itemgetter(0)):
        ordered.extend(doc for _, doc in reversed(list(group)))
    return ordered


class _Query:
    """One query's ranking as positions (trec_eval order) with their group and judgments."""

    def __init__(
        self,
        group_start: npt.NDArray[np.int64],
        group_size: npt.NDArray[np.int64],
        grades: npt.NDArray[np.float64],
        judged: npt.NDArray[np.bool_],
        relevance_level: int,
        n_relevant: int,
        ideal: npt.NDArray[np.float64],
    ) -> None:
        self.start, self.size = group_start, group_size
        self.relevant = (judged & (grades >= relevance_level)).astype(np.float64)
        self.gain = np.where(judged, np.maximum(grades, 0.0), 0.0)
        self.judged = judged.astype(np.float64)
        self.n_relevant = n_relevant
        self.ideal = ideal

    @classmethod
    def of(
        cls, ranking: Mapping[str, float] | None, qrels: Mapping[str, int], relevance_level: int, depth: int
    ) -> _Query | None:
        """The query's positions, or None when no tie group reaches into the top ``depth`` (or the ranking
        is a plain list, which has no scores to tie)."""
        if not isinstance(ranking, Mapping) or len(ranking) < 2:
            return None
        pairs = scored_order(ranking)
        scores = np.fromiter((score for score, _ in pairs), dtype=np.float64, count=len(pairs))
        order = [doc for _, doc in pairs]
        first = np.concatenate(([True], scores[1:] != scores[:-1]))
        starts = np.flatnonzero(first)
        sizes = np.diff(np.append(starts, scores.size))
        if not (sizes[starts < depth] > 1).any():
            return None
        group = np.cumsum(first) - 1
        grades = np.fromiter(map(qrels.get, order, repeat(0)), dtype=np.float64, count=len(order))
        judged = np.fromiter(map(qrels.__contains__, order), dtype=np.bool_, count=len(order))
        n_relevant = sum(1 for grade in qrels.values() if grade >= relevance_level)
        positive = sorted((float(grade) for grade in qrels.values() if grade > 0), reverse=True)
        return cls(
            starts[group],
            sizes[group],
            grades,
            judged,
            relevance_level,
            n_relevant,
            np.array(positive, dtype=np.float64),
        )

    def _group_mean(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        totals = np.zeros(self.start.size)
        np.add.at(totals, self.start, values)
        return totals[self.start] / self.size

    def expected(self, spec: MetricSpec) -> float:
        k = spec.k
        if spec.name in ("recall", "precision", "ndcg", "judged"):
            values = {"judged": self.judged, "ndcg": self.gain}.get(spec.name, self.relevant)
            top = self._group_mean(values)[:k]
            if spec.name == "recall":
                return float(top.sum() / self.n_relevant)
            if spec.name in ("precision", "judged"):
                return float(top.sum() / k)
            dcg = float((top / np.log2(np.arange(2, top.size + 2))).sum())
            ideal = self.ideal[:k]
            return dcg / float((ideal / np.log2(np.arange(2, ideal.size + 2))).sum())
        if spec.name == "hit":
            return self._hit(k)
        if spec.name == "mrr":
            return self._reciprocal_rank(k)
        return self._average_precision(k)

    def _groups(self) -> list[tuple[int, int, int]]:
        """``(start, size, relevant)`` of every group, in rank order."""
        groups = []
        # A group's first position is the start it records: no unique() over the positions.
        for start in np.flatnonzero(self.start == np.arange(self.start.size)).tolist():
            size = int(self.size[start])
            groups.append((start, size, int(self.relevant[start : start + size].sum())))
        return groups

    def _hit(self, k: int) -> float:
        """1 if a group wholly within the top k holds a relevant document; else the chance that the group
        straddling rank k puts one of its r relevant documents among its c places above the cutoff,
        ``1 - C(g - r, c) / C(g, c)``."""
        for start, size, relevant in self._groups():
            if start >= k:
                break
            if relevant == 0:
                continue
            places = min(size, k - start)
            miss = 1.0
            for t in range(places):
                miss *= max(size - relevant - t, 0) / (size - t)
            return 1.0 - miss
        return 0.0

    def _reciprocal_rank(self, k: int) -> float:
        """The first group with a relevant document starts at rank s + 1; its first relevant document is at
        rank s + j with probability ``C(g - j, r - 1) / C(g, r)``, counted only up to rank k."""
        for start, size, relevant in self._groups():
            if start >= k:
                return 0.0
            if relevant == 0:
                continue
            total, chance = 0.0, relevant / size
            for j in range(1, min(size - relevant + 1, k - start) + 1):
                total += chance / (start + j)
                if j < size:
                    chance *= (size - j - relevant + 1) / (size - j)
            return total
        return 0.0

    def _average_precision(self, k: int) -> float:
        """``E[AP@k] = (1/R) sum_{i<=k} (1/i) sum_{j<=i} E[rel_i rel_j]``, with ``E[rel_i^2] = p_i``,
        ``p_i p_j`` across groups and ``r (r - 1) / (g (g - 1))`` within one."""
        p = self._group_mean(self.relevant)
        size = self.size.astype(np.float64)
        group_relevant = p * size
        with np.errstate(divide="ignore", invalid="ignore"):
            pair = np.where(size > 1, group_relevant * (group_relevant - 1) / (size * (size - 1)), 0.0)
        ranks = np.arange(1, p.size + 1)
        before = np.concatenate(([0.0], np.cumsum(p)[:-1]))  # sum of p_j over j < i
        same = ranks - 1 - self.start  # earlier positions of i's own group
        joint = p + p * (before - same * p) + same * pair
        return float((joint / ranks)[:k].sum() / self.n_relevant)
