"""Per-query retrieval metrics, defined as trec_eval defines them.

Every function returns one float per query (never only a mean), because the comparison downstream is paired:
it subtracts the two arms query by query before it averages.

Inputs
------
``run`` maps a query id to its ranking, either the document ids in rank order (``["d3", "d1"]``) or a
``{doc id: score}`` mapping. A score mapping is ranked the way trec_eval ranks a run file: score
descending, ties broken by document id *descending* by string comparison (trec_eval's ``strcmp(b, a)``; on
UTF-8 bytes that is the same order as Python's code-point comparison), so ``"d9"`` ranks above ``"d10"`` at
equal score. Scores go through ``float()``, as trec_eval reads them from text; NaN is refused.
``qrels`` maps a query id to ``{doc id: grade}`` with integer grades; a grade of 0 is a judged non-relevant
document. A document is *relevant* when its grade is ``>= relevance_level`` (default 1, trec_eval's ``-l``).

Definitions (trec_eval measure names in brackets; ``rel_i`` is 1 when the document at rank ``i`` is relevant,
``R`` the number of relevant documents of the query, retrieved or not)
--------------------------------------------------------------------------------------------------------
``recall@k``     ``sum(rel_i, i <= k) / R``                                    [``recall_k``]
``precision@k``  ``sum(rel_i, i <= k) / k``, divided by k even when fewer than k documents were retrieved
                 [``P_k``]
``ndcg@k``       ``DCG@k / IDCG@k`` with ``DCG@k = sum(gain_i / log2(i + 1), i <= k)`` [``ndcg_cut_k``]. The
                 gain is linear, the grade itself, clamped at 0: negative grades gain nothing. As in
                 trec_eval, the gain ignores ``relevance_level`` (a grade-1 document still gains 1 when the
                 level is 2), and the ideal ranking is built from every judged document of the query,
                 retrieved or not.
``mrr@k``        ``1 / rank`` of the first relevant document, 0 when it is past rank k (``recip_rank`` with a
                 cutoff; ir_measures ``RR@k``, though its msmarco provider orders equal scores by doc id
                 *ascending*, so the two agree only on runs without ties)
``map@k``        ``sum(precision@i * rel_i, i <= k) / R``                      [``map_cut_k``]
``hit@k``        1.0 when any relevant document is within rank k, else 0.0     [``success_k``]
``judged@k``     share of the top k that carries any judgment, grade 0 and negative grades included, divided
                 by k like ``P_k`` (ir_measures' ``Judged@k`` divides by the ranking length when that is
                 shorter than k, and trec_eval's ``num_nonrel_judged_ret`` ignores negative grades).

Deliberate departures from trec_eval, because the comparison needs every query in one fixed order:

* a query with no relevant document (no grade ``>= relevance_level``) scores NaN for every metric except
  ``judged@k``, and the call emits one :class:`NoRelevantDocumentsWarning` naming how many and the first ids
  (trec_eval scores such a query 0, which would reward nothing and dilute the mean);
* a query missing from the run scores as an empty ranking, 0 (pytrec_eval leaves it out of its result).
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, count, repeat
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = [
    "METRIC_NAMES",
    "MetricSpec",
    "NoRelevantDocumentsWarning",
    "Qrels",
    "Run",
    "evaluate",
    "parse_metric",
    "per_query",
    "rank_documents",
    "scored_order",
]

Run: TypeAlias = Mapping[str, Sequence[str]] | Mapping[str, Mapping[str, float]]
Qrels: TypeAlias = Mapping[str, Mapping[str, int]]

METRIC_NAMES: tuple[str, ...] = ("recall", "precision", "ndcg", "mrr", "map", "hit", "judged")
#: The metrics whose every per-query score is in [0, 1] (all of them, so far: see `MetricSpec.bounds`).
_UNIT_METRICS = frozenset(METRIC_NAMES)
_ACCEPTED = (
    "expected one of recall@k, precision@k, ndcg@k, mrr@k, map@k, hit@k, judged@k with k a positive integer"
)
# fullmatch with explicit ASCII digits: `\d` would accept other scripts' digits and `$` a trailing newline.
_METRIC_PATTERN = re.compile(r"(" + "|".join(METRIC_NAMES) + r")@([1-9][0-9]*)")

# Marks "no judgment" in the grade matrix; no real grade may take this value.
_UNJUDGED = int(np.iinfo(np.int64).min)
_LARGEST = int(np.iinfo(np.int64).max)
# Bounds the temporary (judged documents x ranking length) comparison block to about 16 MB of float64.
_COMPARE_CELLS = 1 << 21
_SHOWN_IDS = 5
_EMPTY: Mapping[str, int] = {}


class NoRelevantDocumentsWarning(UserWarning):
    """Some queries have no relevant document, so their metrics are NaN (undefined), not 0."""


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """A parsed metric name such as ``ndcg@10``."""

    name: str
    k: int

    def __post_init__(self) -> None:
        if self.name not in METRIC_NAMES or type(self.k) is not int or self.k < 1:
            raise ValueError(f"unknown metric {self.name!r} with k={self.k!r}: {_ACCEPTED}")

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The least and greatest score a query can get, or None for a metric without bounds. Every metric
        here is a share or a reciprocal rank, in [0, 1]: a difference of two means is then within (-1, 1),
        so a margin of 1 or more could never be crossed."""
        return (0.0, 1.0) if self.name in _UNIT_METRICS else None


def parse_metric(text: str) -> MetricSpec:
    """Parse ``"<name>@<k>"`` exactly (no spaces, no leading zeros, lower case)."""
    match = _METRIC_PATTERN.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"unknown metric {text!r}: {_ACCEPTED}")
    return MetricSpec(match.group(1), int(match.group(2)))


def rank_documents(scores: Mapping[str, float]) -> list[str]:
    """Document ids in trec_eval order: score descending, equal scores by document id descending."""
    return [doc for _, doc in scored_order(scores)]


def scored_order(scores: Mapping[str, float]) -> list[tuple[float, str]]:
    """``(float score, document id)`` pairs in trec_eval order (`rank_documents`). Raises ``ValueError``
    naming the document whose score is not a number or is NaN."""
    # Converted, checked and paired in C: a tied query's ranking is ordered for each tie order and arm.
    try:
        values = list(map(float, scores.values()))
    except (TypeError, ValueError):
        values = [math.nan]
    total = sum(values)
    if total != total:  # a NaN or a non-number (or +inf with -inf): one by one, to name the document
        pairs = [(_as_score(doc, score), doc) for doc, score in scores.items()]
    else:
        pairs = list(zip(values, scores, strict=True))
    # One reverse sort of (score, doc) tuples is exactly trec_eval's comparator.
    pairs.sort(reverse=True)
    return pairs


def per_query(
    metric: str | MetricSpec,
    run: Run,
    qrels: Qrels,
    query_ids: Sequence[str],
    *,
    relevance_level: int = 1,
) -> npt.NDArray[np.float64]:
    """Score one metric for every query in ``query_ids``: a float64 array in ``query_ids`` order.

    Queries without a relevant document score NaN (one :class:`NoRelevantDocumentsWarning` per call); queries
    missing from ``run`` score as an empty ranking. Raises ``ValueError`` naming the offending metric name,
    query, document, grade or score.
    """
    spec = _as_spec(metric)
    return _evaluate(run, qrels, [spec], query_ids, relevance_level, stacklevel=3)[str(spec)]


def evaluate(
    run: Run,
    qrels: Qrels,
    metrics: Sequence[str | MetricSpec],
    query_ids: Sequence[str],
    *,
    relevance_level: int = 1,
) -> dict[str, npt.NDArray[np.float64]]:
    """Score several metrics at once, keyed by ``str(MetricSpec)``, as :func:`per_query` does for one.

    The rankings are read once, to the deepest k asked for, and every metric is computed from that table.
    """
    specs = [_as_spec(metric) for metric in metrics]
    return _evaluate(run, qrels, specs, query_ids, relevance_level, stacklevel=3)


def _as_spec(metric: str | MetricSpec) -> MetricSpec:
    return metric if isinstance(metric, MetricSpec) else parse_metric(metric)


def _evaluate(
    run: Run,
    qrels: Qrels,
    specs: Sequence[MetricSpec],
    query_ids: Sequence[str],
    relevance_level: int,
    *,
    stacklevel: int,
) -> dict[str, npt.NDArray[np.float64]]:
    if not specs:
        raise ValueError("no metrics given: expected at least one metric such as 'ndcg@10'")
    if type(relevance_level) is not int or relevance_level < 1:
        raise ValueError(
            f"relevance_level must be an integer >= 1 (grade 0 means judged non-relevant), "
            f"got {relevance_level!r}"
        )
    if not isinstance(run, Mapping):
        raise ValueError(f"run must map query ids to rankings, got {type(run).__name__}")
    qids = _check_query_ids(query_ids)
    _check_qrels(qrels)

    depth = max(spec.k for spec in specs)
    grades = _grade_matrix(run, qrels, qids, depth)
    n_relevant, ideal = _ideal_gains(qrels, qids, depth, relevance_level)
    table = _Cumulative(grades, ideal, relevance_level, {spec.name for spec in specs})

    undefined = n_relevant == 0
    results: dict[str, npt.NDArray[np.float64]] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for spec in specs:
            values = table.score(spec, n_relevant)
            if spec.name != "judged":
                values[undefined] = np.nan
            results[str(spec)] = values
    if undefined.any():
        missing = [qid for qid, flag in zip(qids, undefined.tolist(), strict=True) if flag]
        shown = ", ".join(repr(qid) for qid in missing[:_SHOWN_IDS])
        more = ", ..." if len(missing) > _SHOWN_IDS else ""
        warnings.warn(
            NoRelevantDocumentsWarning(
                f"{len(missing)} of {len(qids)} queries have no relevant document "
                f"(no grade >= {relevance_level}) and score NaN: {shown}{more}"
            ),
            stacklevel=stacklevel,
        )
    return results


def _check_query_ids(query_ids: Sequence[str]) -> list[str]:
    if isinstance(query_ids, (str, bytes)):
        raise ValueError(f"query_ids must be a sequence of query ids, not the single string {query_ids!r}")
    qids = list(query_ids)
    if not _all_str(qids):
        raise ValueError(f"query ids must be strings, got {_first_not_str(qids)!r}")
    if len(set(qids)) != len(qids):
        raise ValueError(f"query id {_first_duplicate(qids)!r} appears more than once in query_ids")
    return qids


def _all_str(values: Iterable[object]) -> bool:
    """Whether every value is a string, in one pass in C (a Python loop here costs more than the metrics)."""
    return all(issubclass(kind, str) for kind in set(map(type, values)))


def _first_not_str(values: Iterable[object]) -> object | None:
    return next((value for value in values if not isinstance(value, str)), None)


def _first_duplicate(values: Sequence[str]) -> str:
    """The first value that occurs more than once (the caller knows there is one)."""
    counts = Counter(values)
    return next(value for value in values if counts[value] > 1)


def _check_qrels(qrels: Qrels) -> None:
    if not isinstance(qrels, Mapping):
        raise ValueError(f"qrels must map query ids to {{doc id: grade}}, got {type(qrels).__name__}")
    if not _all_str(qrels):
        raise ValueError(f"qrels query ids must be strings, got {_first_not_str(qrels)!r}")
    for qid, judged in qrels.items():
        if not isinstance(judged, Mapping):
            raise ValueError(
                f"qrels for query {qid!r} must map doc ids to grades, got {type(judged).__name__}"
            )
    if not _all_str(chain.from_iterable(qrels.values())):
        qid, doc = next(
            (qid, _first_not_str(judged)) for qid, judged in qrels.items() if not _all_str(judged)
        )
        raise ValueError(f"qrels for query {qid!r} name a doc id that is not a string: {doc!r}")
    grades = list(chain.from_iterable(judged.values() for judged in qrels.values()))
    kinds = set(map(type, grades))
    # bool is an int subclass, but True is not a grade anyone means to write.
    integers = all(issubclass(kind, (int, np.integer)) and not issubclass(kind, bool) for kind in kinds)
    if integers and (not grades or (min(grades) > _UNJUDGED and max(grades) <= _LARGEST)):
        return
    for qid, judged in qrels.items():
        for doc, grade in judged.items():
            if not isinstance(grade, (int, np.integer)) or isinstance(grade, bool):
                raise ValueError(
                    f"qrels grade for query {qid!r}, document {doc!r} must be an integer, got {grade!r}"
                )
            if not _UNJUDGED < grade <= _LARGEST:
                raise ValueError(
                    f"qrels grade for query {qid!r}, document {doc!r} is out of range: {grade!r}"
                )


def _grade_matrix(run: Run, qrels: Qrels, qids: Sequence[str], depth: int) -> npt.NDArray[np.int64]:
    """Grades of the top ``depth`` documents of every query, ``_UNJUDGED`` where none (or nothing retrieved).

    The width is trimmed to the longest ranking: ranks past it are unjudged for every query anyway.
    """
    list_rows: list[int] = []
    lists: list[Sequence[str]] = []
    score_rows: list[int] = []
    scored: list[Mapping[str, float]] = []
    for row, qid in enumerate(qids):
        ranking = run.get(qid)
        if ranking is None:
            continue
        if isinstance(ranking, Mapping):
            score_rows.append(row)
            scored.append(ranking)
        elif isinstance(ranking, (str, bytes)) or not isinstance(ranking, Iterable):
            raise ValueError(
                f"ranking for query {qid!r} must be a sequence of doc ids or a {{doc id: score}} mapping, "
                f"got {ranking!r}"
            )
        else:
            list_rows.append(row)
            lists.append(ranking if isinstance(ranking, (list, tuple)) else list(ranking))
    if not _all_str(chain(chain.from_iterable(lists), chain.from_iterable(scored))):
        every = chain(zip(list_rows, lists, strict=True), zip(score_rows, scored, strict=True))
        row, doc = next((row, _first_not_str(ranking)) for row, ranking in every if not _all_str(ranking))
        qid = qids[row]
        raise ValueError(f"ranking for query {qid!r} holds a doc id that is not a string: {doc!r}")
    longest = max(chain(map(len, lists), map(len, scored)), default=0)
    width = max(1, min(depth, longest))
    grades = np.full((len(qids), width), _UNJUDGED, dtype=np.int64)
    if lists:
        _fill_from_lists(grades, list_rows, qids, lists, qrels)
    if scored:
        _fill_from_scores(grades, score_rows, qids, scored, qrels)
    return grades


def _judgments(
    qrels: Qrels, qids: Sequence[str], rows: list[int]
) -> tuple[list[Mapping[str, int]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The judgments of the given rows' queries, and flattened: for each judgment, the index of its ranking
    (position in ``rows``) and its grade."""
    judged = [qrels.get(qids[row], _EMPTY) for row in rows]
    counts = np.fromiter(map(len, judged), dtype=np.int64, count=len(judged))
    owners = np.repeat(np.arange(len(rows)), counts)
    flat_grades = np.fromiter(
        chain.from_iterable(mapping.values() for mapping in judged), dtype=np.int64, count=owners.size
    )
    return judged, owners, flat_grades


def _fill_from_lists(
    grades: npt.NDArray[np.int64],
    rows: list[int],
    qids: Sequence[str],
    lists: list[Sequence[str]],
    qrels: Qrels,
) -> None:
    """Place each judged document of a ranked list at its rank (its list position)."""
    judged, owners, flat_grades = _judgments(qrels, qids, rows)
    found: list[int] = []
    for row, ranking, judgments in zip(rows, lists, judged, strict=True):
        # Built in C; it doubles as the duplicate check, and leaves one lookup per judgment, not per document.
        position = dict(zip(ranking, count()))
        if len(position) != len(ranking):
            duplicate = _first_duplicate(ranking)
            raise ValueError(f"ranking for query {qids[row]!r} lists document {duplicate!r} more than once")
        found.extend(map(position.get, judgments, repeat(-1)))
    ranks = np.array(found, dtype=np.int64)
    kept = (ranks >= 0) & (ranks < grades.shape[1])
    grades[np.asarray(rows)[owners[kept]], ranks[kept]] = flat_grades[kept]


def _fill_from_scores(
    grades: npt.NDArray[np.int64],
    rows: list[int],
    qids: Sequence[str],
    scored: list[Mapping[str, float]],
    qrels: Qrels,
) -> None:
    """Place each judged document of a scored ranking at its trec_eval rank.

    Only judged documents can change a metric, so instead of sorting every ranking, the rank of each retrieved
    judged document is counted directly: documents with a higher score, plus documents with an equal score and
    a larger id. The Python-level work is one dictionary lookup per judgment, done in C by ``map``, and one
    string comparison per pair of equal scores (rare with embedding similarities).
    """
    lengths = np.fromiter(map(len, scored), dtype=np.int64, count=len(scored))
    try:
        flat_scores = np.fromiter(
            chain.from_iterable(ranking.values() for ranking in scored),
            dtype=np.float64,
            count=int(lengths.sum()),
        )
    except (TypeError, ValueError):
        flat_scores = np.array(
            [
                _as_score(doc, score, qids[row])
                for row, ranking in zip(rows, scored, strict=True)
                for doc, score in ranking.items()
            ]
        )
    if np.isnan(flat_scores).any():
        for row, ranking in zip(rows, scored, strict=True):
            for doc, score in ranking.items():
                _as_score(doc, score, qids[row])
    # One row per ranking; NaN pads ragged rows, as it compares neither greater than nor equal to any score.
    if lengths.min() == lengths.max():
        matrix = flat_scores.reshape(len(scored), int(lengths[0]))
    else:
        matrix = np.full((len(scored), int(lengths.max())), np.nan)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        matrix[np.repeat(np.arange(len(scored)), lengths), np.arange(flat_scores.size) - starts] = flat_scores

    judged, owners, flat_grades = _judgments(qrels, qids, rows)
    # The score of every judged document, NaN (never a real score, those were refused) when not retrieved.
    found = np.fromiter(
        chain.from_iterable(
            map(ranking.get, judgments, repeat(np.nan))
            for ranking, judgments in zip(scored, judged, strict=True)
        ),
        dtype=np.float64,
        count=owners.size,
    )
    retrieved = np.flatnonzero(~np.isnan(found))
    if retrieved.size == 0:
        return
    local = owners[retrieved]
    targets = found[retrieved][:, None]
    ranks = np.empty(retrieved.size, dtype=np.int64)
    tied = np.empty(retrieved.size, dtype=bool)
    step = max(1, _COMPARE_CELLS // matrix.shape[1])
    for start in range(0, retrieved.size, step):
        block = matrix[local[start : start + step]]
        target = targets[start : start + step]
        ranks[start : start + step] = (block > target).sum(axis=1)
        tied[start : start + step] = (block == target).sum(axis=1) > 1
    if tied.any():
        # Equal scores: trec_eval puts the larger doc id first, so add the equal-scored documents whose id is
        # larger. Only the (judged document, equal-scored document) pairs need a comparison of ids in Python.
        docs = list(chain.from_iterable(judged))
        tied_at = np.flatnonzero(tied)
        keys = {index: list(scored[index]) for index in sorted(set(local[tied_at].tolist()))}
        for start in range(0, tied_at.size, step):
            chunk = tied_at[start : start + step]
            pair, column = np.nonzero(matrix[local[chunk]] == targets[chunk])
            names = [docs[at] for at in retrieved[chunk].tolist()]
            owners_of_pair = local[chunk][pair].tolist()
            larger = [
                keys[index][at] > names[of]
                for index, at, of in zip(owners_of_pair, column.tolist(), pair.tolist(), strict=True)
            ]
            ranks[chunk] += np.bincount(pair, weights=larger, minlength=chunk.size).astype(np.int64)
    kept = ranks < grades.shape[1]
    grades[np.asarray(rows)[local[kept]], ranks[kept]] = flat_grades[retrieved][kept]


def _as_score(doc: str, score: object, qid: str | None = None) -> float:
    """``float(score)``, as trec_eval converts its text input; NaN is refused, having no place in an order."""
    try:
        value = float(score)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = float("nan")
    if value != value:
        where = f"ranking for query {qid!r}: " if qid is not None else ""
        raise ValueError(f"{where}document {doc!r} has score {score!r}; scores must be numbers, not NaN")
    return value


def _ideal_gains(
    qrels: Qrels, qids: Sequence[str], depth: int, relevance_level: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Number of relevant documents per query, and the best possible gains in rank order (depth-trimmed)."""
    judged = [qrels.get(qid, _EMPTY) for qid in qids]
    counts = np.fromiter(map(len, judged), dtype=np.int64, count=len(judged))
    grades = np.fromiter(
        chain.from_iterable(mapping.values() for mapping in judged), dtype=np.int64, count=int(counts.sum())
    )
    rows = np.repeat(np.arange(len(qids)), counts)
    n_relevant = np.bincount(rows, weights=grades >= relevance_level, minlength=len(qids))
    positive = grades > 0
    rows, grades = rows[positive], grades[positive]
    order = np.lexsort((-grades, rows))
    rows, grades = rows[order], grades[order]
    # Position of each gain within its query's descending list.
    position = np.arange(rows.size) - np.searchsorted(rows, rows)
    kept = position < depth
    ideal = np.zeros((len(qids), int(position[kept].max(initial=0)) + 1), dtype=np.float64)
    ideal[rows[kept], position[kept]] = grades[kept]
    return n_relevant.astype(np.float64), ideal


class _Cumulative:
    """Running sums over rank of everything the metrics need, computed once for the deepest k asked for."""

    def __init__(
        self,
        grades: npt.NDArray[np.int64],
        ideal: npt.NDArray[np.float64],
        relevance_level: int,
        names: set[str],
    ) -> None:
        self.width = grades.shape[1]
        self.ideal_width = ideal.shape[1]
        relevant = grades >= relevance_level
        self.relevant = np.cumsum(relevant, axis=1, dtype=np.float64)
        if "ndcg" in names:
            # trec_eval divides by log2(rank + 1), rank counted from 1.
            self.dcg = np.cumsum(np.maximum(grades, 0) / np.log2(np.arange(2, self.width + 2)), axis=1)
            self.idcg = np.cumsum(ideal / np.log2(np.arange(2, self.ideal_width + 2)), axis=1)
        if "map" in names:
            self.precision_sum = np.cumsum(relevant * (self.relevant / np.arange(1, self.width + 1)), axis=1)
        if "mrr" in names:
            # Rank of the first relevant document, 0 when there is none in the table.
            self.first = np.where(relevant.any(axis=1), relevant.argmax(axis=1) + 1, 0)
        if "judged" in names:
            self.judged = np.cumsum(grades != _UNJUDGED, axis=1, dtype=np.float64)

    def score(self, spec: MetricSpec, n_relevant: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        k = spec.k
        at = min(k, self.width) - 1
        if spec.name == "recall":
            return self.relevant[:, at] / n_relevant
        if spec.name == "precision":
            return self.relevant[:, at] / k
        if spec.name == "hit":
            return (self.relevant[:, at] > 0).astype(np.float64)
        if spec.name == "map":
            return self.precision_sum[:, at] / n_relevant
        if spec.name == "mrr":
            found = (self.first > 0) & (self.first <= k)
            return np.where(found, 1.0 / np.maximum(self.first, 1), 0.0)
        if spec.name == "ndcg":
            return self.dcg[:, at] / self.idcg[:, min(k, self.ideal_width) - 1]
        return self.judged[:, at] / k
