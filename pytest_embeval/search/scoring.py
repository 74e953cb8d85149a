"""One arm's per-query scores from its search, with what tied similarity scores leave open.

`score_arm` scores every declared metric on the ranked lists, in trec_eval's document-id order of ties
(``ties: docid``) or as the expected value over every ordering of tied documents (``ties: expected``,
`ties.expected`), and records per metric which queries tie across its cutoff, and, for the queries with
ties, the metrics under each order a correct implementation may use (trec_eval's, ids ascending, the
expected value), so that a stratum can tell whether the tie order could change its verdict.

A tie group that reaches the end of the ranked list may go on past it (a static model gave 224 documents
the score of rank 10): the expected value needs all of it, so those groups are completed from the index
(`exact.equal_scores`, an exact scan of the corpus for the few queries concerned). The ranked depth is
one past the deepest cutoff (`pipeline.ranked_depth`), so a group has to span from a cutoff to the end of
the list before anything is scanned.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pytest_embeval.core.metrics import NoRelevantDocumentsWarning, evaluate
from pytest_embeval.core.ties import ascending, expected
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.search.exact import equal_scores

__all__ = ["TIE_ORDERS", "ArmTies", "score_arm"]

#: The orders of tied documents a correct implementation may score with: trec_eval's (larger id first),
#: the reverse (ir_measures' msmarco provider) and the expected value over every order.
TIE_ORDERS = ("docid", "docid-ascending", "expected")

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclasses.dataclass(frozen=True, slots=True)
class ArmTies:
    """What tied scores leave open in one arm's metrics, per query in golden order."""

    #: metric name -> whether the documents at ranks k and k + 1 tie (k the metric's cutoff)
    across: Mapping[str, BoolArray]
    #: tie order (`TIE_ORDERS`) -> metric name -> the scores under that order; None when no tie reaches
    #: into any cutoff (every order gives the scores the arm has)
    orders: Mapping[str, Mapping[str, FloatArray]] | None = None
    #: documents past the ranked list that tie with its last one, found by scanning the corpus
    beyond: tuple[tuple[str, ...], ...] = ()


def score_arm(
    golden: GoldenSet,
    ranked: Sequence[Sequence[str]],
    similarities: npt.NDArray[np.floating],
    *,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
    query_vectors: np.ndarray | None = None,
    doc_vectors: np.ndarray | None = None,
) -> tuple[dict[str, FloatArray], ArmTies]:
    """The per-query scores of every metric of ``golden`` (golden query order) and the arm's `ArmTies`.

    ``ranked`` and ``similarities`` are the search's result, ``(n_queries, depth)``, in trec_eval order (a
    query ranked fewer documents, as a filtered one may, pads its row of similarities with NaN);
    ``qrels`` are the judgments scored with (default: the golden set's; with filters, those they allow).
    The vectors are needed only to complete tie groups cut off by the depth; without them (an arm that
    embeds nothing, a filtered or folded search) the groups stay as ranked.
    """
    qrels = golden.qrels if qrels is None else qrels
    specs = golden.all_metrics()
    query_ids = [query.id for query in golden.queries]
    # float64: a fused arm's scores are float64, and rounding them could make distinct scores tie; a dense
    # arm's float32 scores convert exactly, so its ties are the same either way.
    scores = np.asarray(similarities, dtype=np.float64)
    depth = scores.shape[1] if scores.ndim == 2 else 0
    across = {
        str(spec): scores[:, spec.k - 1] == scores[:, spec.k]
        if spec.k < depth
        else np.zeros(len(query_ids), dtype=bool)
        for spec in specs
    }
    level = golden.relevance_level
    lists = dict(zip(query_ids, ranked, strict=True))
    # trec_eval's values come from the ranked lists as searched (for hnsw, a tied group's listed members
    # need not be the ones with the largest ids).
    docid = evaluate(lists, qrels, specs, query_ids, relevance_level=level)
    # Queries with two equal scores among the first (deepest cutoff + 1) ranks: their metrics could move.
    reach = min(max(spec.k for spec in specs), depth - 1)
    tied = np.empty(0, dtype=np.intp)
    if reach > 0:
        tied = np.flatnonzero((scores[:, :reach] == scores[:, 1 : reach + 1]).any(axis=1))
    if tied.size == 0:
        return docid, ArmTies(across)

    beyond: list[list[str]] = [[] for _ in ranked]
    if query_vectors is not None and doc_vectors is not None:
        beyond = _beyond(golden, ranked, scores, tied, reach, query_vectors, doc_vectors)
    subset = [query_ids[row] for row in tied.tolist()]
    run = {
        query_ids[row]: {
            **dict(zip(ranked[row], scores[row, : len(ranked[row])].tolist(), strict=True)),
            **dict.fromkeys(beyond[row], float(scores[row, -1])),
        }
        for row in tied.tolist()
    }
    with warnings.catch_warnings():
        # The queries without a relevant document were named once, by the evaluation above.
        warnings.simplefilter("ignore", NoRelevantDocumentsWarning)
        again = {
            "docid-ascending": ascending(run, qrels, specs, subset, relevance_level=level),
            "expected": expected(run, qrels, specs, subset, relevance_level=level),
        }
    orders = {"docid": docid, **{order: _merged(docid, values, tied) for order, values in again.items()}}
    return dict(orders[golden.ties]), ArmTies(across, orders, tuple(map(tuple, beyond)))


def _beyond(
    golden: GoldenSet,
    ranked: Sequence[Sequence[str]],
    scores: npt.NDArray[np.floating],
    tied: npt.NDArray[np.intp],
    reach: int,
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
) -> list[list[str]]:
    """Per query, the documents past its ranked list that tie with the list's last score, for the tied
    queries whose last group reaches back into a cutoff (so it may continue past the list)."""
    result: list[list[str]] = [[] for _ in ranked]
    if scores.shape[1] >= len(golden.documents):
        return result  # the whole corpus is ranked: no group goes on past it
    open_ended = tied[scores[tied, reach - 1] == scores[tied, -1]]
    if open_ended.size == 0:
        return result
    doc_ids = [doc.id for doc in golden.documents]
    groups = equal_scores(query_vectors[open_ended], doc_vectors, scores[open_ended, -1])
    for row, positions in zip(open_ended.tolist(), groups, strict=True):
        listed = set(ranked[row])
        # trec_eval's order within the group: larger ids first (they are the ones the list kept)
        result[row] = sorted(
            (doc_ids[p] for p in positions.tolist() if doc_ids[p] not in listed), reverse=True
        )
    return result


def _merged(
    base: Mapping[str, FloatArray], values: Mapping[str, FloatArray], rows: np.ndarray
) -> dict[str, FloatArray]:
    """``base`` with the given rows replaced by ``values`` (computed for those rows only, in that order)."""
    merged = {}
    for name, column in base.items():
        copy = column.copy()
        copy[rows] = values[name]
        merged[name] = copy
    return merged
