"""The one pipeline both arms go through, and the per-stratum comparison built on it.

`golden_run.run_golden` runs each arm (`retriever`: an embedding model searched with the declared index, a
BM25 arm, or a fusion of arms) over the same records and queries, each query restricted to what its filters
allow (`filters`); folds chunks to documents when the golden set says so (`folding`); reranks each arm's top
documents with the declared reranker (`rerank`); and scores every query under every declared metric, with the
judgments its filters allow (`scoring.score_arm`). `stratum_evaluation.evaluate_golden` then pairs the two
arms' per-query scores stratum by stratum and applies the verdict rule, to the first stage or, with
``rerank.decides``, to the after-rerank ranking (the other comparison is reported beside it). Nothing here
knows about pytest: the items call these functions.

Control: only the arm may differ. Each arm records a `Control`, digests of what it actually consumed (the
documents and queries it ranked, the index it searched, the depth, the judgments and plan it was scored with,
and when declared the filters, the chunk folding and the reranked queries); `golden_run.pair_arms` checks both
against the golden set's own and raises `ControlMismatch` naming every component that differs, rather than
compare arms that saw different inputs. An arm that embeds nothing (BM25) searches no vector index: its index
component is the declared one, as it has nothing of its own that could differ. With
``index.hnsw.recall_target``, held constant is the recall each arm's ef reaches, not the ef: each arm searches
at the smallest ef that reaches the target on the sampled queries (`RecallTargetError` if none).

With ``corpus_sample``, each arm is opened on the largest slice once and searches every slice (`slices`); the
verdicts are decided on the largest, and each stratum also gets its first-stage primary comparison per slice
(`strata`; the reranker runs on the largest slice only). With ``production``, each embedding arm's capacity is
measured (`capacity_measurement`) for the projection (`capacity`).

With a vector database as the index (`vector_index`), it is opened for the arms of a golden set
(`golden_run.engine_opened`), each arm builds its own collection in it (once, however many candidates an
incumbent is paired with) and drops it when done, and each arm is also searched exactly on the same vectors,
its exact twin (`ArmResult.exact`), by which `index_split` splits each comparison's Δ, stratum by stratum."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from pytest_embeval.arms.dense import ANN_SAMPLE, DenseRetriever, ann_sample
from pytest_embeval.arms.embedding import Arm, EncoderError, Kind, embed
from pytest_embeval.arms.rerank import Reranked, RerankScorer, rerank_sample, rerank_top, resolve_reranker
from pytest_embeval.arms.resolve import Component, components, resolve_arm
from pytest_embeval.arms.retriever import (
    Embedder,
    HnswStats,
    IndexStats,
    RecallTargetError,
    RetrievalTask,
    Retriever,
    Searcher,
)
from pytest_embeval.arms.usage import UsageCount
from pytest_embeval.arms.variants import own_index
from pytest_embeval.core.canonical import KeyedTexts
from pytest_embeval.core.capacity import ArmCapacity
from pytest_embeval.core.metrics import evaluate
from pytest_embeval.golden.filters import FilterPlan, allowed_qrels, plan_filters
from pytest_embeval.golden.folding import ChunkMap, chunk_map, search_documents
from pytest_embeval.golden.schema import GoldenSet, IndexSpec, RerankSpec
from pytest_embeval.run.control import (
    Control,
    ControlMismatch,
    InputDigests,
    check_control,
    consumed_index,
    control_differences,
    control_of,
    declared_index,
    input_digests,
    short_digest,
)
from pytest_embeval.run.corpus_slices import CorpusSlice, corpus_slices, restrict
from pytest_embeval.search.exact import tie_ranks
from pytest_embeval.search.graphs import GraphStore
from pytest_embeval.search.scoring import ArmTies, score_arm
from pytest_embeval.search.vector_index import OpenedEngine, opened_engine

__all__ = [
    "ANN_SAMPLE",
    "RANKED_DEPTH",
    "ArmResult",
    "Control",
    "ControlMismatch",
    "Embedder",
    "GoldenRun",
    "HeldConstant",
    "HnswStats",
    "IndexStats",
    "RecallTargetError",
    "Reranked",
    "Role",
    "SliceRun",
    "ann_sample",
    "check_control",
    "control_differences",
    "embedded_texts",
    "golden_control",
    "own_controls",
    "prepare",
    "ranked_depth",
    "run_arm",
    "searched_corpus",
    "short_digest",
]

#: Ranked documents kept per query for the report and the run files (more if a metric looks deeper).
RANKED_DEPTH = 100

Role = Literal["incumbent", "candidate"]


class ArmFault(EncoderError):
    """One arm's model failed: it could not be resolved, or its encoder raised or returned vectors that cannot
    be used. ``role`` and ``spec`` say which (``spec`` is None when there is no model at all); the message,
    one line, says what was wrong."""

    def __init__(self, role: Role, spec: str | None, problem: str) -> None:
        self.role = role
        self.spec = spec
        self.problem = problem
        super().__init__(problem)

    def __reduce__(self) -> tuple[type[ArmFault], tuple[Role, str | None, str]]:
        return ArmFault, (self.role, self.spec, self.problem)


@dataclasses.dataclass(frozen=True, slots=True)
class ArmResult:
    """One arm's retrieval over a golden set: ranked documents and per-query scores, in golden query order."""

    role: Role
    #: the arm: an embedding arm (`dense.DenseRetriever`, whose ``arm`` is the `embedding.Arm`), a BM25
    #: arm or a fused one; each has ``spec``, ``fingerprint`` and ``prompts``
    arm: Retriever
    ranked: tuple[tuple[str, ...], ...]
    #: the first-stage scores of ``ranked`` (cosine, BM25, RRF; with folding, each document's best chunk's)
    similarities: tuple[tuple[float, ...], ...]
    per_query: Mapping[str, np.ndarray]
    #: digests of what this arm consumed, checked against the golden set's by `golden_run.pair_arms`
    control: Control
    #: the arm's own vector index; None for an arm that embeds nothing itself (BM25, a fusion)
    index: IndexStats | None
    #: the arms a fused arm fuses, with their indexes
    components: tuple[Component, ...] = ()
    #: after the golden set's reranker; None without one
    reranked: Reranked | None = None
    #: ties across cutoffs and the metrics under the worst and best tie orders (`scoring.score_arm`)
    ties: ArmTies | None = None
    #: measured for the golden set's ``production`` projection; None when it declares none (or the arm
    #: embeds nothing)
    capacity: ArmCapacity | None = None
    #: with ``corpus_sample``: this arm on each smaller slice, smallest first (this result is the largest)
    slices: tuple[ArmResult, ...] = ()
    #: the tokens the arm's endpoint counted (and the cache saved) for this golden set; None for arms without
    #: `Arm.usage` (in-process models)
    usage: UsageCount | None = None
    #: with a vector database as the index: the same vectors searched exactly (the exact twin: first stage,
    #: scored alike, not reranked), what the report splits Δ with; None otherwise
    exact: ArmResult | None = None


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class HeldConstant:
    """What both arms of a golden set use alike, derived from the golden set once: the filter plan, the
    chunk folding, the judgments each query's filters allow, the ids the metrics rank, the reranked
    queries."""

    #: the golden set it was derived from (an arm given another golden set derives its own)
    golden: GoldenSet
    filters: FilterPlan | None
    chunks: ChunkMap | None
    #: the judgments each query's filters allow (`filters.allowed_qrels`)
    qrels: Mapping[str, Mapping[str, int]]
    #: what rankings hold: the corpus record ids, or with folding the document ids
    result_ids: tuple[str, ...]
    depth: int
    #: stratum name -> query rows reranked for it (golden order); {} without a reranker
    rerank_samples: Mapping[str, np.ndarray]
    #: every reranked query row, sorted
    rerank_rows: np.ndarray
    #: the digests of its documents, queries and judgments, shared by the controls of both arms and its own
    inputs: InputDigests
    #: its documents' texts as both arms embed them, hashed once for the cache, the digests and fingerprint
    documents: KeyedTexts


@dataclasses.dataclass(frozen=True, slots=True)
class SliceRun:
    """Both arms on one corpus slice: ``run.golden`` holds the slice's documents."""

    fraction: float
    run: GoldenRun

    @property
    def documents(self) -> int:
        return len(self.run.golden.documents)


@dataclasses.dataclass(frozen=True, slots=True)
class GoldenRun:
    golden: GoldenSet
    incumbent: ArmResult
    candidate: ArmResult
    #: what both arms were checked to have consumed
    control: Control
    #: None only for runs built by hand; `golden_run.pair_arms` always sets it
    held: HeldConstant | None = None
    #: reranker spec and fingerprint, and the pairs it scored and the cache served
    reranker: Mapping[str, Any] | None = None
    #: with ``corpus_sample``: every slice, smallest first; the arms above are the largest slice's
    slices: tuple[SliceRun, ...] = ()

    @property
    def documents(self) -> int:
        """Documents the arms above searched: the largest slice's, or the whole corpus."""
        return self.slices[-1].documents if self.slices else len(self.golden.documents)


def _results(golden: GoldenSet) -> int:
    """How many different things a ranking can hold: records, or with folding documents."""
    if golden.fold is None:
        return len(golden.documents)
    return len({doc.fields[golden.fold.field][0] for doc in golden.documents})


def ranked_depth(golden: GoldenSet) -> int:
    """Documents ranked per query: `RANKED_DEPTH`, or one past the deepest cutoff (so that a tie across it
    shows), or the reranker's depth, whichever is deepest, but no more than there are documents (folded
    documents, with folding)."""
    rerank = golden.rerank.depth if golden.rerank is not None else 0
    return min(max(RANKED_DEPTH, golden.max_k() + 1, rerank), _results(golden))


def prepare(golden: GoldenSet, *, warn: bool = True) -> HeldConstant:
    """The `HeldConstant` of a golden set (``warn``: emit the filters' `filters.EmptyFilterWarning`)."""
    query_ids = [query.id for query in golden.queries]
    with warnings.catch_warnings():
        if not warn:
            warnings.simplefilter("ignore")
        plan = plan_filters(
            [doc.fields for doc in golden.documents], [query.filters for query in golden.queries], query_ids
        )
    chunks = None if golden.fold is None else chunk_map([doc.fields for doc in golden.documents], golden.fold)
    result_ids = tuple(doc.id for doc in golden.documents) if chunks is None else chunks.doc_ids
    if plan is None:  # every judgment counts: no record is looked up
        qrels = allowed_qrels(golden.qrels, query_ids, None, {})
    elif chunks is None:
        row_of = {doc_id: row for row, doc_id in enumerate(result_ids)}
        judged = {doc_id for docs in golden.qrels.values() for doc_id in docs if doc_id in row_of}
        qrels = allowed_qrels(golden.qrels, query_ids, plan, {d: np.array([row_of[d]]) for d in judged})
    else:
        qrels = allowed_qrels(golden.qrels, query_ids, plan, chunks.records_of())
    samples: dict[str, np.ndarray] = {}
    rows = np.empty(0, dtype=np.intp)
    if golden.rerank is not None:
        level = golden.relevance_level
        scorable = {qid: any(grade >= level for grade in judged.values()) for qid, judged in qrels.items()}
        position = {qid: i for i, qid in enumerate(query_ids)}
        for stratum in golden.strata():
            chosen = rerank_sample(stratum.query_ids, scorable, golden.rerank, golden.seed, stratum.name)
            samples[stratum.name] = np.array([position[qid] for qid in chosen], dtype=np.intp)
        rows = np.array(
            sorted({row for sample in samples.values() for row in sample.tolist()}), dtype=np.intp
        )
    documents = KeyedTexts(doc.embed_text for doc in golden.documents)
    return HeldConstant(
        golden=golden,
        filters=plan,
        chunks=chunks,
        qrels=qrels,
        result_ids=result_ids,
        depth=ranked_depth(golden),
        rerank_samples=samples,
        rerank_rows=rows,
        inputs=input_digests(golden, documents),
        documents=documents,
    )


def _declared_parts(golden: GoldenSet, held: HeldConstant) -> dict[str, Any]:
    """The parts of the optional control components the golden set declares: each query's filter and each
    filter's mask, the document of every chunk, the rerank settings and the reranked queries."""
    query_ids = [query.id for query in golden.queries]
    parts: dict[str, Any] = {}
    if held.filters is not None:
        parts["filters"] = held.filters.digest_parts(query_ids)
    if golden.fold is not None and held.chunks is not None:
        chunks = held.chunks
        owners = (chunks.doc_ids[i] for i in chunks.document_of.tolist())
        parts["fold"] = itertools.chain([golden.fold.as_dict()], owners)
    if golden.rerank is not None:
        parts["rerank"] = [golden.rerank.as_dict(), [query_ids[i] for i in held.rerank_rows.tolist()]]
    return parts


def golden_control(
    golden: GoldenSet,
    held: HeldConstant | None = None,
    engine: OpenedEngine | None = None,
    index: IndexSpec | None = None,
) -> Control:
    """What both arms must consume: the golden set's documents, queries, judgments, declared index (with
    the ef a search of the ranked depth runs with, or the version of the ``engine`` opened for it), depth
    and plan, and its filters, folding and reranked queries when declared; with ``index``, what an arm with
    that index of its own must consume (the same, its index in place of the golden set's)."""
    held = held if held is not None else prepare(golden, warn=False)
    return control_of(
        inputs=held.inputs,
        index=declared_index(golden, held.depth, engine, index),
        depth=held.depth,
        plan=golden.plan_fingerprint(),
        **_declared_parts(golden, held),
    )


def own_controls(golden: GoldenSet, held: HeldConstant | None, **arms: ArmResult) -> dict[str, Control]:
    """What each of ``arms`` (by role) that searches an index of its own (`variants.own_index`) must
    consume: `golden_control` with its index; the others are held to the golden set's."""
    return {
        role: golden_control(golden, held, index=index)
        for role, result in arms.items()
        if (index := own_index(result.arm)) is not None
    }


def _all_indexes(own: IndexStats | None, parts: Sequence[Component]) -> list[IndexStats]:
    found = [] if own is None else [own]
    for part in parts:
        found.extend(_all_indexes(part.index, part.parts))
    return found


def searched_corpus(golden: GoldenSet, drawn: Sequence[CorpusSlice] | None = None) -> GoldenSet:
    """The golden set whose documents an arm searches (and an embedding arm embeds): with ``corpus_sample``
    its largest slice (``drawn``: its `corpus_slices.corpus_slices`, if at hand), else the golden set
    itself."""
    drawn = corpus_slices(golden) if drawn is None else drawn
    return restrict(golden, drawn[-1].rows) if drawn else golden


def embedded_texts(golden: GoldenSet) -> dict[Kind, list[str]]:
    """Exactly the texts an embedding arm embeds for ``golden``, by kind, in the order it embeds them: the
    documents of the `searched_corpus` and the golden set's queries (what `embeval embed` fills the cache
    with; `_task` hands the same texts to the arm)."""
    searched = searched_corpus(golden)
    return {
        "document": [doc.embed_text for doc in searched.documents],
        "query": [query.text for query in searched.queries],
    }


def _task(
    golden: GoldenSet,
    held: HeldConstant,
    role: str,
    embedder: Embedder,
    graphs: GraphStore | None = None,
    engine: OpenedEngine | None = None,
) -> RetrievalTask:
    return RetrievalTask(
        doc_ids=[doc.id for doc in golden.documents],
        doc_texts=held.documents,
        query_texts=[query.text for query in golden.queries],
        allowed=None if held.filters is None else held.filters.allowed,
        index=golden.index,
        seed=golden.seed,
        role=role,
        embedder=embedder,
        measure=golden.production is not None,
        graphs=graphs,
        filters=() if held.filters is None else held.filters.filters,
        doc_fields=[doc.fields for doc in golden.documents],
        engine=engine,
        cutoff=golden.max_k(),
    )


def run_arm(
    golden: GoldenSet,
    arm: Arm | Retriever | object,
    role: Role,
    *,
    embedder: Embedder = embed,
    held: HeldConstant | None = None,
    scorer: RerankScorer | None = None,
    graphs: GraphStore | None = None,
    label: str | None = None,
    engine: OpenedEngine | None = None,
) -> ArmResult:
    """Retrieve, fold, rerank and score one arm; identical for both arms but for `arm`. ``held`` is
    `prepare`'s (made here when not given); ``scorer`` reranks (made here, uncached, when the golden set
    declares a reranker and none is given); ``graphs`` keeps and finds its HNSW graphs; ``label`` names the
    arm in its progress, its encoder's errors and its collection (default: ``role``; a shortlist's
    candidate's name); ``engine`` is the vector database the golden set declares, opened for every arm
    (opened and closed here when it declares one and none is given), in which the arm builds its collection,
    dropped before this returns or raises, and which it is also searched exactly beside (`ArmResult.exact`).
    With ``corpus_sample``, the arm is opened on the largest slice and every smaller one is searched by
    restricting it (an embedding arm embeds once). Raises `ArmFault` when the arm's encoder fails or returns
    vectors that cannot be searched, and `vector_index.EngineError` when its engine fails."""
    retriever = resolve_arm(arm)
    drawn = corpus_slices(golden)
    searched = searched_corpus(golden, drawn)
    if held is None or held.golden is not searched:
        held = prepare(searched)
    if golden.rerank is not None and scorer is None:
        scorer = RerankScorer(resolve_reranker(golden.rerank))
    # The tokens an endpoint arm is billed for this golden set (`Arm.usage`); arms without one: None.
    counter = retriever.arm.usage if isinstance(retriever, DenseRetriever) else None
    before = counter.snapshot() if counter is not None else None
    # Whatever happens, every searcher opened here drops what it built in an engine (last in, first out),
    # before an engine opened here is closed.
    with contextlib.ExitStack() as stack:
        if golden.index.engine is not None and engine is None:
            engine = stack.enter_context(opened_engine(golden.index.engine, golden.path))
        try:
            searcher = retriever.open(_task(searched, held, label or role, embedder, graphs, engine))
        except EncoderError as error:
            raise ArmFault(role, retriever.spec, str(error)) from error
        stack.callback(searcher.close)
        usage = counter.snapshot() - before if counter is not None and before is not None else None
        result = _score(searched, retriever, searcher, held, role, scorer, engine)
        twin = searcher.exact_twin()
        exact = None if twin is None else _score(searched, retriever, twin, held, role, None, engine)
        result = dataclasses.replace(result, usage=usage, exact=exact)
        if len(drawn) < 2:
            return result
        # Slice rows are sorted and nested, so each smaller slice's rows are found in the largest's by
        # bisection.
        largest = np.asarray(drawn[-1].rows)
        smaller = []
        for one in drawn[:-1]:
            piece = restrict(golden, one.rows)
            piece_held = prepare(piece, warn=False)
            task = dataclasses.replace(
                _task(piece, piece_held, label or role, embedder, graphs, engine), measure=False
            )
            opened = searcher.restrict(task, np.searchsorted(largest, one.rows))
            stack.callback(opened.close)
            smaller.append(_score(piece, retriever, opened, piece_held, role, None, engine))
        return dataclasses.replace(result, slices=tuple(smaller))


def _score(
    golden: GoldenSet,
    retriever: Retriever,
    searcher: Searcher,
    held: HeldConstant,
    role: Role,
    scorer: RerankScorer | None,
    engine: OpenedEngine | None = None,
) -> ArmResult:
    """Search the golden set's records with an opened arm (`_searched`), fold, score each query, rerank
    (with ``scorer``: `_reranked`) and record what the arm consumed."""
    positions, scores, records, searched = _searched(searcher, held, len(golden.queries))
    index = searcher.index_stats(searched)
    parts = components(retriever, searcher, searched)
    ranked, similarities = _ranked(positions, scores, held.result_ids)
    # Tie groups cut off by the depth are completed by an exact scan of the arm's vectors; an arm without
    # vectors of its own, a filtered or a folded search keeps the groups as ranked.
    vectors = searcher.vectors() if held.filters is None and held.chunks is None else None
    per_query, ties = score_arm(
        golden,
        ranked,
        scores,
        qrels=held.qrels,
        query_vectors=None if vectors is None else vectors[0],
        doc_vectors=None if vectors is None else vectors[1],
    )
    reranked = None
    if golden.rerank is not None and scorer is not None:
        reranked = _reranked(golden, golden.rerank, scorer, held, positions, records)
    control = control_of(
        inputs=held.inputs,
        index=consumed_index(
            declared_index(golden, held.depth, engine, own_index(retriever)), _all_indexes(index, parts)
        ),
        depth=held.depth,
        plan=golden.plan_fingerprint(),
        **_declared_parts(golden, held),
    )
    return ArmResult(
        role=role,
        arm=retriever,
        ranked=ranked,
        similarities=similarities,
        per_query=per_query,
        control=control,
        index=index,
        components=parts,
        reranked=reranked,
        ties=ties,
        capacity=searcher.capacity(searched),
    )


def _searched(
    searcher: Searcher, held: HeldConstant, queries: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Every query's top ``held.depth`` results: (positions among the results, scores, positions among the
    records searched, the depth searched). With chunks, the records are chunks folded to documents
    (`folding.search_documents`, which searches deeper until each query has its documents)."""
    rows = np.arange(queries)
    if held.chunks is None:
        hits = searcher.search(rows, held.depth)
        return hits.positions, hits.scores, hits.positions, held.depth

    def chunk_hits(wanted: np.ndarray, chunk_depth: int) -> tuple[np.ndarray, np.ndarray]:
        found = searcher.search(wanted, chunk_depth)
        return found.positions, found.scores

    return search_documents(chunk_hits, queries, held.chunks, tie_ranks(held.result_ids), held.depth)


def _ranked(
    positions: np.ndarray, scores: np.ndarray, result_ids: Sequence[str]
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[float, ...], ...]]:
    """Each query's ranked ids and similarities, without the padding (-1) a filter leaves."""
    found = positions >= 0
    if found.all():  # no row padded (no filter left a query fewer results): converted whole, in C
        ranked = tuple(tuple(map(result_ids.__getitem__, row)) for row in positions.tolist())
        return ranked, tuple(map(tuple, np.asarray(scores, dtype=np.float64).tolist()))
    ranked = tuple(tuple(result_ids[p] for p in row if p >= 0) for row in positions.tolist())
    similarities = tuple(tuple(float(v) for v in row[keep]) for row, keep in zip(scores, found, strict=True))
    return ranked, similarities


def _reranked(
    golden: GoldenSet,
    rerank: RerankSpec,
    scorer: RerankScorer,
    held: HeldConstant,
    positions: np.ndarray,
    records: np.ndarray,
) -> Reranked:
    """The reranked queries' top ``rerank.depth`` reordered by the reranker, and scored under every metric
    (NaN for the queries not reranked)."""
    query_ids = [query.id for query in golden.queries]
    after, after_scores = rerank_top(
        scorer,
        positions,
        records,
        held.rerank_rows,
        rerank.depth,
        held.result_ids,
        [doc.embed_text for doc in golden.documents],
        [query.text for query in golden.queries],
    )
    reranked_ids = [query_ids[i] for i in held.rerank_rows.tolist()]
    metrics = golden.all_metrics()
    after_per_query = {str(m): np.full(len(query_ids), np.nan) for m in metrics}
    if reranked_ids:
        values = evaluate(
            {query_ids[i]: after[i] for i in held.rerank_rows.tolist()},
            held.qrels,
            metrics,
            reranked_ids,
            relevance_level=golden.relevance_level,
        )
        for name, array in values.items():
            after_per_query[name][held.rerank_rows] = array
    return Reranked(ranked=tuple(after), scores=tuple(after_scores), per_query=after_per_query)
