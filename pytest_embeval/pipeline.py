"""The one pipeline both arms go through, and the per-stratum comparison built on it.

`run_golden` embeds the corpus and the queries with each arm, searches the same index type with the same k,
and scores every query under every declared metric; `evaluate_stratum` pairs the two arms' per-query scores
of one stratum and applies the verdict rule. Nothing here knows about pytest: the items call these functions.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np

from pytest_embeval.encoders import Arm, embed
from pytest_embeval.golden import GoldenSet, Stratum
from pytest_embeval.index import exact_search, hnsw_search
from pytest_embeval.metrics import evaluate
from pytest_embeval.stats import DegenerateComparisonWarning, PairedComparison, compare_paired, stable_seed
from pytest_embeval.verdict import Decision, decide

#: Ranked documents kept per query for the report and the run files (more if a metric looks deeper).
RANKED_DEPTH = 100
#: Queries listed under a failing or disputed stratum.
MOVERS_SHOWN = 5

Role = Literal["incumbent", "candidate"]
#: progress(role, kind, done, total) while an arm encodes.
Progress = Callable[[str, str, int, int], None]
#: embed(arm, texts, kind, progress) -> unit vectors; injected so the plugin can memoise or cache.
Embedder = Callable[..., np.ndarray]


@dataclasses.dataclass(frozen=True, slots=True)
class ArmResult:
    """One arm's retrieval over a golden set: ranked documents and per-query scores, in golden query order."""

    role: Role
    arm: Arm
    ranked: tuple[tuple[str, ...], ...]
    similarities: tuple[tuple[float, ...], ...]
    per_query: Mapping[str, np.ndarray]


@dataclasses.dataclass(frozen=True, slots=True)
class GoldenRun:
    golden: GoldenSet
    incumbent: ArmResult
    candidate: ArmResult


@dataclasses.dataclass(frozen=True, slots=True)
class Mover:
    """A query whose primary-metric score changed between the arms."""

    query_id: str
    text: str
    incumbent: float
    candidate: float

    @property
    def difference(self) -> float:
        return self.candidate - self.incumbent


@dataclasses.dataclass(frozen=True, slots=True)
class StratumOutcome:
    stratum: Stratum
    comparisons: Mapping[str, PairedComparison]  # every declared metric, primary first
    decision: Decision
    movers: tuple[Mover, ...]  # largest |Δ| first
    drivers: tuple[Mover, ...]  # largest contribution in the direction of Δ first


def ranked_depth(golden: GoldenSet) -> int:
    return min(max(RANKED_DEPTH, golden.max_k()), len(golden.documents))


def run_arm(
    golden: GoldenSet,
    arm: Arm,
    role: Role,
    *,
    embedder: Embedder = embed,
    progress: Progress | None = None,
) -> ArmResult:
    """Embed, search and score one arm; identical for both arms but for `arm`."""

    def report(kind: str) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        return lambda done, total: progress(role, kind, done, total)

    doc_ids = [doc.id for doc in golden.documents]
    doc_texts = [doc.embed_text for doc in golden.documents]
    doc_vectors = embedder(arm, doc_texts, "document", progress=report("document"), role=role)
    query_vectors = embedder(
        arm, [query.text for query in golden.queries], "query", progress=report("query"), role=role
    )
    depth = ranked_depth(golden)
    if golden.index.kind == "hnsw":
        positions, scores = hnsw_search(
            query_vectors,
            doc_vectors,
            depth,
            doc_ids=doc_ids,
            M=golden.index.M,
            ef_construction=golden.index.ef_construction,
            ef_search=golden.index.ef_search,
            seed=golden.seed,
        )
    else:
        positions, scores = exact_search(query_vectors, doc_vectors, depth, doc_ids=doc_ids)
    ranked = tuple(tuple(doc_ids[p] for p in row) for row in positions.tolist())
    query_ids = [query.id for query in golden.queries]
    per_query = evaluate(
        dict(zip(query_ids, ranked, strict=True)),
        golden.qrels,
        golden.all_metrics(),
        query_ids,
        relevance_level=golden.relevance_level,
    )
    return ArmResult(
        role=role,
        arm=arm,
        ranked=ranked,
        similarities=tuple(tuple(row) for row in scores.astype(float).tolist()),
        per_query=per_query,
    )


def run_golden(
    golden: GoldenSet,
    incumbent: Arm,
    candidate: Arm,
    *,
    embedder: Embedder = embed,
    progress: Progress | None = None,
) -> GoldenRun:
    return GoldenRun(
        golden=golden,
        incumbent=run_arm(golden, incumbent, "incumbent", embedder=embedder, progress=progress),
        candidate=run_arm(golden, candidate, "candidate", embedder=embedder, progress=progress),
    )


def _movers(
    texts: Sequence[str], ids: Sequence[str], incumbent: np.ndarray, candidate: np.ndarray, order: np.ndarray
) -> tuple[Mover, ...]:
    return tuple(
        Mover(query_id=ids[i], text=texts[i], incumbent=float(incumbent[i]), candidate=float(candidate[i]))
        for i in order[:MOVERS_SHOWN]
        if np.isfinite(incumbent[i]) and np.isfinite(candidate[i]) and incumbent[i] != candidate[i]
    )


def evaluate_stratum(run: GoldenRun, stratum: Stratum) -> StratumOutcome:
    """Pair both arms' per-query scores over the stratum's queries and decide its verdict."""
    golden = run.golden
    position = {query.id: i for i, query in enumerate(golden.queries)}
    rows = np.array([position[qid] for qid in stratum.query_ids], dtype=np.intp)

    comparisons: dict[str, PairedComparison] = {}
    with warnings.catch_warnings():
        # A degenerate comparison (an A/A run, a tiny stratum) is stated in its note and the verdict's
        # reason; as a pytest warning too it would only repeat it.
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        for metric in golden.all_metrics():
            name = str(metric)
            comparisons[name] = compare_paired(
                run.incumbent.per_query[name][rows],
                run.candidate.per_query[name][rows],
                confidence=golden.confidence,
                n_resamples=golden.bootstrap,
                rng=np.random.default_rng(stable_seed(golden.seed, stratum.name, name)),
            )

    primary = str(golden.metric)
    decision = decide(
        comparisons[primary],
        tie_margin=golden.tie_margin,
        min_queries=golden.min_queries,
        guards={name: (comparisons[name], margin) for name, margin in golden.guards.items()},
    )

    incumbent = run.incumbent.per_query[primary][rows]
    candidate = run.candidate.per_query[primary][rows]
    difference = np.nan_to_num(candidate - incumbent, nan=0.0)
    ids = list(stratum.query_ids)
    texts = [golden.queries[i].text for i in rows]
    # Stable sorts keep golden-file order among equal differences, so the listing is reproducible.
    by_size = np.argsort(-np.abs(difference), kind="stable")
    direction = -1.0 if comparisons[primary].delta < 0 else 1.0
    by_contribution = np.argsort(-direction * difference, kind="stable")
    return StratumOutcome(
        stratum=stratum,
        comparisons=comparisons,
        decision=decision,
        movers=_movers(texts, ids, incumbent, candidate, by_size),
        drivers=_movers(texts, ids, incumbent, candidate, by_contribution),
    )
