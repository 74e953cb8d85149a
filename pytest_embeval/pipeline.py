"""The one pipeline both arms go through.

`run_golden` embeds the corpus and the queries with each arm, searches the same index type with the same k,
and scores every query under every declared metric (`scoring.score_arm`); `strata.evaluate_golden` then
pairs the two arms' per-query scores stratum by stratum and applies the verdict rule. Nothing here knows
about pytest: the items call these functions.

Control: only the encoder may differ between the arms. Each arm records a `Control`, digests of what it
actually consumed (the documents and queries it embedded, the index it searched, the depth, the judgments
and plan it was scored with); `run_golden` checks both against the golden set's own and raises
`ControlMismatch` naming every component that differs, rather than compare arms that saw different inputs.
With ``index.hnsw.recall_target``, held constant is the recall each arm's ef reaches, not the ef: each arm
searches at the smallest ef that reaches the target on the sampled queries (`RecallTargetError` if none).

With ``corpus_sample``, each arm embeds the largest slice once and searches every slice (`slices`); the
verdicts are decided on the largest, and each stratum also gets its primary comparison per slice
(`strata`). With ``production``, each arm's capacity is measured (`measure`) for the projection
(`capacity`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

from pytest_embeval.capacity import ArmCapacity
from pytest_embeval.encoders import Arm, EncoderError, embed
from pytest_embeval.golden import GoldenSet, Query
from pytest_embeval.index import (
    HnswIndex,
    Latency,
    TargetNotReached,
    ann_recall,
    effective_ef,
    exact_search,
    flat_query_seconds,
)
from pytest_embeval.measure import TimedEncoder, measure_capacity
from pytest_embeval.scoring import ArmTies, score_arm
from pytest_embeval.slices import corpus_slices, restrict
from pytest_embeval.stats import stable_seed
from pytest_embeval.usage import UsageCount

#: Ranked documents kept per query for the report and the run files (more if a metric looks deeper).
RANKED_DEPTH = 100
#: Queries per arm on which an approximate index's recall against exact search and its latency are measured.
ANN_SAMPLE = 200

Role = Literal["incumbent", "candidate"]
#: progress(role, kind, done, total) while an arm encodes.
Progress = Callable[[str, str, int, int], None]
#: embed(arm, texts, kind, progress) -> unit vectors; injected so the plugin can memoise or cache.
Embedder = Callable[..., np.ndarray]


class ControlMismatch(Exception):
    """The arms did not consume identical held-constant inputs, so comparing them would measure more than the
    encoder. ``differences`` holds one description per differing component."""

    def __init__(self, differences: Sequence[str]) -> None:
        self.differences = tuple(differences)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "refusing to compare: the arms differ in what must be held constant: " + "; ".join(
            self.differences
        )

    def __reduce__(self) -> tuple[type[ControlMismatch], tuple[tuple[str, ...]]]:
        # Exception pickles its args, which here are the formatted message, not the differences.
        return ControlMismatch, (self.differences,)


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


class RecallTargetError(Exception):
    """An arm's index does not reach the declared recall target at any ef: one line naming the arm."""


@dataclasses.dataclass(frozen=True, slots=True)
class Control:
    """``sha256:`` digests of everything held constant between the arms, one per component."""

    #: document ids with the sha256 of the exact text embedded, in corpus order
    corpus: str
    #: query ids, texts and stratum fields, in golden order
    queries: str
    #: every (query, document, grade) judgment
    qrels: str
    #: index kind and, for hnsw, M, ef_construction, the build seed and the ef searched with (or, with a
    #: recall target, the target: each arm's ef is its own)
    index: str
    #: documents ranked per query
    depth: str
    #: the golden set's plan fingerprint (metric, guards, margins, confidence, bootstrap, seed, ...)
    plan: str

    def components(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    @property
    def fingerprint(self) -> str:
        """One digest of all components: equal fingerprints mean every held-constant input is equal."""
        return _digest("fingerprint", [self.components()])


@dataclasses.dataclass(frozen=True, slots=True)
class HnswStats:
    """How an arm's HNSW index compares with exact search, measured on a sample of its queries."""

    #: as the built hnswlib index reports them: M, ef_construction, ef (as searched), seed
    parameters: Mapping[str, int]
    #: mean share of the exact top-depth documents the index returned
    ann_recall: float
    sample: int
    latency: Latency
    exact_latency: Latency
    #: the recall target this arm's ef was chosen to reach; None: searched at the declared ef_search
    recall_target: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class IndexStats:
    """What one arm's index held and cost; ``hnsw`` is None for exact search."""

    dimension: int
    #: exact: the float32 document vectors; hnsw: `HnswIndex.memory_bytes` (vectors, labels and graph)
    memory_bytes: int
    hnsw: HnswStats | None = None

    @property
    def kind(self) -> str:
        return "exact" if self.hnsw is None else "hnsw"


@dataclasses.dataclass(frozen=True, slots=True)
class ArmResult:
    """One arm's retrieval over a golden set: ranked documents and per-query scores, in golden query order."""

    role: Role
    arm: Arm
    ranked: tuple[tuple[str, ...], ...]
    similarities: tuple[tuple[float, ...], ...]
    per_query: Mapping[str, np.ndarray]
    #: digests of what this arm consumed, checked against the golden set's by `run_golden`
    control: Control
    index: IndexStats
    #: ties across cutoffs and the metrics under the worst and best tie orders (`scoring.score_arm`)
    ties: ArmTies | None = None
    #: measured for the golden set's ``production`` projection; None when it declares none
    capacity: ArmCapacity | None = None
    #: with ``corpus_sample``: this arm on each smaller slice, smallest first (this result is the largest)
    slices: tuple[ArmResult, ...] = ()
    #: the tokens the arm's endpoint counted (and the cache saved) for this golden set; None for arms without
    #: `Arm.usage` (in-process models)
    usage: UsageCount | None = None


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
    #: with ``corpus_sample``: every slice, smallest first; the arms above are the largest slice's
    slices: tuple[SliceRun, ...] = ()

    @property
    def documents(self) -> int:
        """Documents the arms above searched: the largest slice's, or the whole corpus."""
        return self.slices[-1].documents if self.slices else len(self.golden.documents)


def ranked_depth(golden: GoldenSet) -> int:
    """`RANKED_DEPTH`, or one past the deepest cutoff (so that a tie across it shows), at most the corpus."""
    return min(max(RANKED_DEPTH, golden.max_k() + 1), len(golden.documents))


def short_digest(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to tell two digests apart in a message."""
    return digest[: len("sha256:") + 12] + "…"


def _digest(component: str, parts: Iterable[object]) -> str:
    """sha256 of one canonical JSON line per part. The component name is hashed first, so equal content
    under two components never gives equal digests."""
    digest = hashlib.sha256(f"pytest-embeval control v1 {component}\n".encode())
    for part in parts:
        line = json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        digest.update(line.encode("utf-8") + b"\n")
    return "sha256:" + digest.hexdigest()


def _control(
    *,
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    queries: Sequence[Query],
    query_texts: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    index: Mapping[str, str | int | float],
    depth: int,
    plan: str,
    textless: Sequence[str] = (),
) -> Control:
    # Texts are hashed one by one so a large corpus is never serialised whole.
    documents: Iterable[object] = (
        [doc_id, hashlib.sha256(text.encode("utf-8")).hexdigest()]
        for doc_id, text in zip(doc_ids, doc_texts, strict=True)
    )
    if textless:  # documents without text, never embedded; only then, so other digests do not change
        documents = itertools.chain(documents, [["textless", list(textless)]])
    query_rows = (
        [query.id, text, dict(query.fields)] for query, text in zip(queries, query_texts, strict=True)
    )
    judgments = sorted([qid, did, grade] for qid, docs in qrels.items() for did, grade in docs.items())
    return Control(
        corpus=_digest("corpus", documents),
        queries=_digest("queries", query_rows),
        qrels=_digest("qrels", judgments),
        index=_digest("index", [index]),
        depth=_digest("depth", [depth]),
        plan=plan,
    )


def golden_control(golden: GoldenSet) -> Control:
    """What both arms must consume: the golden set's documents, queries, judgments, declared index (with
    the ef a search of the ranked depth runs with, or the recall target that chooses each arm's), depth and
    plan."""
    depth = ranked_depth(golden)
    spec = golden.index
    index: dict[str, str | int | float] = {"kind": spec.kind}
    if spec.kind == "hnsw":
        index.update(M=spec.M, ef_construction=spec.ef_construction, seed=golden.seed)
        if spec.recall_target is None:
            index["ef"] = effective_ef(spec.ef_search, depth)
        else:
            # Each arm searches at the ef its own vectors need: the recall reached is what both must share.
            index["recall_target"] = spec.recall_target
    return _control(
        doc_ids=[doc.id for doc in golden.documents],
        doc_texts=[doc.embed_text for doc in golden.documents],
        queries=golden.queries,
        query_texts=[query.text for query in golden.queries],
        qrels=golden.qrels,
        index=index,
        depth=depth,
        plan=golden.plan_fingerprint(),
        textless=golden.textless,
    )


def control_differences(expected: Control, incumbent: Control, candidate: Control) -> tuple[str, ...]:
    """One description per component where either arm differs from ``expected``, in component order."""
    wanted = expected.components()
    arms = incumbent.components(), candidate.components()
    return tuple(
        f"{name} (incumbent {short_digest(arms[0][name])}, candidate {short_digest(arms[1][name])}; "
        f"golden set {short_digest(digest)})"
        for name, digest in wanted.items()
        if arms[0][name] != digest or arms[1][name] != digest
    )


def check_control(expected: Control, incumbent: Control, candidate: Control) -> None:
    """Raise `ControlMismatch` unless both arms consumed exactly the held-constant inputs ``expected``."""
    differences = control_differences(expected, incumbent, candidate)
    if differences:
        raise ControlMismatch(differences)


def ann_sample(n_queries: int, seed: int) -> np.ndarray:
    """Sorted query rows on which ANN recall and latency are measured: all of them up to `ANN_SAMPLE`, else a
    seeded draw, so both arms (and every run with the same seed and query count) measure the same queries."""
    if n_queries <= ANN_SAMPLE:
        return np.arange(n_queries)
    rng = np.random.default_rng(stable_seed(seed, "ann-sample"))
    return np.sort(rng.choice(n_queries, size=ANN_SAMPLE, replace=False))


def _search_hnsw(
    golden: GoldenSet,
    queries: np.ndarray,
    documents: np.ndarray,
    doc_ids: Sequence[str],
    depth: int,
    role: Role,
) -> tuple[np.ndarray, np.ndarray, IndexStats]:
    spec = golden.index
    # The golden seed, not the arm, seeds the build: both arms get the same construction randomness.
    index = HnswIndex(
        documents, doc_ids=doc_ids, M=spec.M, ef_construction=spec.ef_construction, seed=golden.seed
    )
    sample = ann_sample(queries.shape[0], golden.seed)
    exact_positions, _ = exact_search(queries[sample], documents, depth, doc_ids=doc_ids)
    ef = spec.ef_search
    if spec.recall_target is not None:
        try:
            ef, _ = index.ef_for_recall(queries[sample], exact_positions, spec.recall_target)
        except TargetNotReached as missed:
            raise RecallTargetError(
                f"{role}: index.hnsw.recall_target {missed.target:g} is out of reach: ANN recall@{depth} "
                f"{missed.recall:.4f} on {sample.size} sampled queries at the largest ef, {missed.ef} (every "
                f"document); lower the target, or raise M ({spec.M}) or ef_construction "
                f"({spec.ef_construction})"
            ) from None
    positions, scores = index.search(queries, depth, ef_search=ef)
    hnsw = HnswStats(
        parameters=index.parameters(),
        ann_recall=ann_recall(positions[sample], exact_positions),
        sample=int(sample.size),
        latency=Latency.of(index.query_seconds(queries[sample], depth, ef_search=ef)),
        exact_latency=Latency.of(flat_query_seconds(queries[sample], documents, depth)),
        recall_target=spec.recall_target,
    )
    stats = IndexStats(dimension=int(documents.shape[1]), memory_bytes=index.memory_bytes(), hnsw=hnsw)
    return positions, scores, stats


def _consumed_index(stats: IndexStats) -> dict[str, str | int | float]:
    """What the index reports it was built and searched with, not what was asked of it; with a recall
    target, the target if this arm's ef reached it (else the recall it reached), instead of its ef."""
    if stats.hnsw is None:
        return {"kind": stats.kind}
    consumed: dict[str, str | int | float] = {"kind": stats.kind, **stats.hnsw.parameters}
    target = stats.hnsw.recall_target
    if target is not None:
        del consumed["ef"]
        consumed["recall_target"] = target if stats.hnsw.ann_recall >= target else stats.hnsw.ann_recall
    return consumed


def run_arm(
    golden: GoldenSet,
    arm: Arm,
    role: Role,
    *,
    embedder: Embedder = embed,
    progress: Progress | None = None,
) -> ArmResult:
    """Embed, search and score one arm; identical for both arms but for `arm`. With ``corpus_sample``, the
    largest slice is embedded and searched, and every smaller one searched with its rows of those vectors.
    Raises `ArmFault` when the arm's encoder fails or returns vectors that cannot be searched."""

    def report(kind: str) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        return lambda done, total: progress(role, kind, done, total)

    drawn = corpus_slices(golden)
    searched = restrict(golden, drawn[-1].rows) if drawn else golden
    # Encoding is timed only when a capacity is to be projected; the timer changes nothing else.
    timer = TimedEncoder(arm.encoder) if golden.production is not None else None
    encoding = arm if timer is None else dataclasses.replace(arm, encoder=timer)
    doc_texts = [doc.embed_text for doc in searched.documents]
    query_texts = [query.text for query in golden.queries]
    before = _usage(arm)
    try:
        doc_vectors = embedder(encoding, doc_texts, "document", progress=report("document"), role=role)
        after_documents = _usage(arm)
        query_vectors = embedder(encoding, query_texts, "query", progress=report("query"), role=role)
    except EncoderError as error:
        raise ArmFault(role, arm.spec, str(error)) from error
    after = _usage(arm)
    if query_vectors.shape[1] != doc_vectors.shape[1]:
        problem = (
            f"{role} encoder {arm.spec!r} returned {query_vectors.shape[1]}-dimensional query vectors but "
            f"{doc_vectors.shape[1]}-dimensional document vectors: they cannot be compared"
        )
        raise ArmFault(role, arm.spec, problem)
    usage = None if before is None or after is None else after - before
    result = dataclasses.replace(
        _search_arm(
            searched,
            arm,
            role,
            doc_vectors,
            query_vectors,
            timer,
            document_usage=None if before is None or after_documents is None else after_documents - before,
            query_usage=None if after_documents is None or after is None else after - after_documents,
        ),
        usage=usage,
    )
    if len(drawn) < 2:
        return result
    # Slice rows are sorted and nested, so each smaller slice's rows are found in the largest's by bisection.
    largest = np.asarray(drawn[-1].rows)
    smaller = tuple(
        _search_arm(
            restrict(golden, one.rows),
            arm,
            role,
            doc_vectors[np.searchsorted(largest, one.rows)],
            query_vectors,
            timer=None,
            measure=False,
        )
        for one in drawn[:-1]
    )
    return dataclasses.replace(result, slices=smaller)


def _usage(arm: Arm) -> UsageCount | None:
    """What the arm's endpoint has counted so far (None for an in-process arm)."""
    return arm.usage.snapshot() if arm.usage is not None else None


def _search_arm(
    golden: GoldenSet,
    arm: Arm,
    role: Role,
    doc_vectors: np.ndarray,
    query_vectors: np.ndarray,
    timer: TimedEncoder | None,
    *,
    document_usage: UsageCount | None = None,
    query_usage: UsageCount | None = None,
    measure: bool = True,
) -> ArmResult:
    """Search the golden set's documents (these vectors, in its corpus order) and score every query."""
    doc_ids = [doc.id for doc in golden.documents]
    depth = ranked_depth(golden)
    if golden.index.kind == "hnsw":
        positions, scores, stats = _search_hnsw(golden, query_vectors, doc_vectors, doc_ids, depth, role)
    else:
        positions, scores = exact_search(query_vectors, doc_vectors, depth, doc_ids=doc_ids)
        # A flat index holds the float32 vectors and nothing else.
        memory = int(doc_vectors.shape[0] * doc_vectors.shape[1] * 4)
        stats = IndexStats(dimension=int(doc_vectors.shape[1]), memory_bytes=memory)
    ranked = tuple(tuple(doc_ids[p] for p in row) for row in positions.tolist())
    per_query, ties = score_arm(golden, ranked, scores, query_vectors=query_vectors, doc_vectors=doc_vectors)
    doc_texts = [doc.embed_text for doc in golden.documents]
    query_texts = [query.text for query in golden.queries]
    control = _control(
        doc_ids=doc_ids,
        doc_texts=doc_texts,
        queries=golden.queries,
        query_texts=query_texts,
        qrels=golden.qrels,
        index=_consumed_index(stats),
        depth=depth,
        plan=golden.plan_fingerprint(),
        textless=golden.textless,
    )
    capacity = None
    if measure and golden.production is not None:
        if stats.hnsw is not None:
            latency, ef = stats.hnsw.latency, stats.hnsw.parameters["ef"]
        else:  # exact search is timed here, on hnswlib's flat index, on the queries hnsw would sample
            sample = ann_sample(query_vectors.shape[0], golden.seed)
            latency, ef = Latency.of(flat_query_seconds(query_vectors[sample], doc_vectors, depth)), None
        capacity = measure_capacity(
            arm,
            documents=doc_vectors,
            document_texts=doc_texts,
            query_texts=query_texts,
            timer=timer,
            document_usage=document_usage,
            query_usage=query_usage,
            index=stats.kind,
            index_bytes=stats.memory_bytes,
            M=golden.index.M if stats.hnsw is not None else None,
            latency=latency,
            latency_ef=ef,
        )
    return ArmResult(
        role=role,
        arm=arm,
        ranked=ranked,
        similarities=tuple(tuple(row) for row in scores.astype(float).tolist()),
        per_query=per_query,
        control=control,
        index=stats,
        ties=ties,
        capacity=capacity,
    )


def run_golden(
    golden: GoldenSet,
    incumbent: Arm,
    candidate: Arm,
    *,
    embedder: Embedder = embed,
    progress: Progress | None = None,
) -> GoldenRun:
    """Run both arms through `run_arm`; raise `ControlMismatch` if either consumed other held-constant inputs
    than the golden set (each corpus slice of it) declares."""
    incumbent_result = run_arm(golden, incumbent, "incumbent", embedder=embedder, progress=progress)
    candidate_result = run_arm(golden, candidate, "candidate", embedder=embedder, progress=progress)
    drawn = corpus_slices(golden)
    if not drawn:
        control = golden_control(golden)
        check_control(control, incumbent_result.control, candidate_result.control)
        return GoldenRun(
            golden=golden, incumbent=incumbent_result, candidate=candidate_result, control=control
        )
    pairs = zip(
        (*incumbent_result.slices, incumbent_result),
        (*candidate_result.slices, candidate_result),
        strict=True,
    )
    slices = []
    for one, (incumbent_slice, candidate_slice) in zip(drawn, pairs, strict=True):
        searched = restrict(golden, one.rows)
        control = golden_control(searched)
        check_control(control, incumbent_slice.control, candidate_slice.control)
        run = GoldenRun(
            golden=searched, incumbent=incumbent_slice, candidate=candidate_slice, control=control
        )
        slices.append(SliceRun(fraction=one.fraction, run=run))
    largest = slices[-1].run
    return dataclasses.replace(largest, golden=golden, slices=tuple(slices))
