"""What is held constant between the arms: the `Control` digests, comparing them, and refusing to compare
arms that differ.

Each component is the sha256 of canonical JSON lines (one per document, query, judgment, ...), so a large
corpus is hashed without being serialised whole; the component name is hashed first, so equal content under
two components never gives equal digests. The optional components (filters, folding, the reranked queries)
exist only where the golden set declares them, so a golden set without them keeps the fingerprint it always
had.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_embeval.arms.retriever import EngineStats, IndexStats
from pytest_embeval.core.canonical import KeyedTexts, hash_rows, json_line
from pytest_embeval.golden.schema import FAISS_PARAMETERS, GoldenSet, IndexSpec
from pytest_embeval.search.hnsw import effective_ef
from pytest_embeval.search.vector_index import OpenedEngine

__all__ = [
    "Control",
    "ControlMismatch",
    "InputDigests",
    "check_control",
    "consumed_index",
    "control_differences",
    "control_of",
    "declared_index",
    "input_digests",
    "short_digest",
]


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
    #: recall target, the target: each arm's ef is its own); for a vector database, its engine, version and
    #: declared parameters as it reports them
    index: str
    #: documents ranked per query
    depth: str
    #: the golden set's plan fingerprint (metric, guards, margins, confidence, bootstrap, seed, ...)
    plan: str
    #: each query's filter and the records each filter allows; None (left out) without filters
    filters: str | None = None
    #: the fold spec and the document of every chunk; None (left out) without folding
    fold: str | None = None
    #: the rerank spec and the queries reranked; None (left out) without a reranker
    rerank: str | None = None

    def components(self) -> dict[str, str]:
        """The components in order; the optional ones only when declared, so that a golden set without
        them keeps the fingerprint it always had."""
        return {name: value for name, value in dataclasses.asdict(self).items() if value is not None}

    @property
    def fingerprint(self) -> str:
        """One digest of all components: equal fingerprints mean every held-constant input is equal."""
        return _digest("fingerprint", [self.components()])


def short_digest(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to tell two digests apart in a message."""
    return digest[: len("sha256:") + 12] + "…"


#: Rows hashed at a time by `_id_rows_digest`.
_DIGEST_BLOCK = 4096


def _digest(component: str, parts: Iterable[object]) -> str:
    """sha256 of one canonical JSON line per part. The component name is hashed first, so equal content
    under two components never gives equal digests."""
    digest = hashlib.sha256(f"pytest-embeval control v1 {component}\n".encode())
    for part in parts:
        digest.update(json_line(part).encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def _corpus_digest(doc_ids: Sequence[str], text_keys: Sequence[bytes], textless: Sequence[str] = ()) -> str:
    """``_digest("corpus", [[id, sha256 hex of its text], ...])`` (``text_keys``: `canonical.text_key` of
    each text), then ``["textless", [ids]]`` if some documents have no text (never embedded; only then, so
    that other digests do not change), written by `_id_rows_digest`."""
    if len(doc_ids) != len(text_keys):
        raise ValueError(f"{len(doc_ids)} document ids but {len(text_keys)} texts")
    rows = ((doc_id, key.hex()) for doc_id, key in zip(doc_ids, text_keys, strict=True))
    return _id_rows_digest("corpus", rows, after=[["textless", list(textless)]] if textless else [])


def _qrels_digest(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """``_digest("qrels", sorted [query id, document id, grade] rows)``, written by `_id_rows_digest`."""
    return _id_rows_digest(
        "qrels", sorted((qid, did, grade) for qid, docs in qrels.items() for did, grade in docs.items())
    )


def _id_rows_digest(
    component: str, rows: Iterable[tuple[str, str] | tuple[str, str, int]], after: Iterable[object] = ()
) -> str:
    """`_digest` of rows of strings and integers (`canonical.row_lines`), then of the parts ``after``, hashed
    in blocks rather than line by line."""
    digest = hashlib.sha256(f"pytest-embeval control v1 {component}\n".encode())
    hash_rows(digest, rows, block=_DIGEST_BLOCK)
    for part in after:
        digest.update(json_line(part).encode("utf-8"))
    return "sha256:" + digest.hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class InputDigests:
    """The digests of what every arm of a golden set reads alike: its documents (ids, and the sha256 of each
    embedded text), its queries and its judgments. Hashed once per golden set, not once per arm: on 200,000
    documents the corpus digest alone is about a second."""

    corpus: str
    queries: str
    qrels: str


def input_digests(golden: GoldenSet, document_texts: KeyedTexts | None = None) -> InputDigests:
    """The `InputDigests` of ``golden``: the exact texts its arms embed, in corpus and golden order
    (``document_texts``: its documents' embedded texts, hashed already)."""
    query_rows = ([query.id, query.text, dict(query.fields)] for query in golden.queries)
    documents = golden.documents
    if document_texts is None:
        document_texts = KeyedTexts(doc.embed_text for doc in documents)
    return InputDigests(
        corpus=_corpus_digest([doc.id for doc in documents], document_texts.keys, golden.textless),
        queries=_digest("queries", query_rows),
        qrels=_qrels_digest(golden.qrels),
    )


def control_of(
    *,
    inputs: InputDigests,
    index: Mapping[str, Any],
    depth: int,
    plan: str,
    filters: Sequence[object] | None = None,
    fold: Iterable[object] | None = None,
    rerank: Sequence[object] | None = None,
) -> Control:
    """The `Control` of what an arm (or the golden set) consumed: the golden set's ``inputs``, the index, the
    depth and the plan; the optional components from their parts, only when given."""
    return Control(
        corpus=inputs.corpus,
        queries=inputs.queries,
        qrels=inputs.qrels,
        index=_digest("index", [dict(index)]),
        depth=_digest("depth", [depth]),
        plan=plan,
        filters=None if filters is None else _digest("filters", filters),
        fold=None if fold is None else _digest("fold", fold),
        rerank=None if rerank is None else _digest("rerank", rerank),
    )


def declared_index(
    golden: GoldenSet, depth: int, engine: OpenedEngine | None = None, own: IndexSpec | None = None
) -> dict[str, Any]:
    """The declared index (the golden set's, or an arm's ``own``), with the build seed and the ef a
    search of ``depth`` runs with, or the recall target that chooses each arm's; a vector database's as the
    golden file declares it (`EngineSpec.as_dict`) and, given the ``engine`` opened for it, the version its
    adapter reports."""
    spec = golden.index if own is None else own
    if spec.engine is not None:
        declared = spec.engine.as_dict()
        return declared if engine is None else {**declared, "version": engine.index.version}
    index: dict[str, Any] = {"kind": spec.kind}
    if spec.kind == "faiss":
        index.update(factory=spec.factory, seed=golden.seed)
        if spec.recall_target is not None:
            index["recall_target"] = spec.recall_target
        elif spec.faiss_parameter is not None:
            index[spec.faiss_parameter[0]] = spec.faiss_parameter[1]
    elif spec.kind == "hnsw":
        index.update(M=spec.M, ef_construction=spec.ef_construction, seed=golden.seed)
        if spec.recall_target is None:
            index["ef"] = effective_ef(spec.ef_search, depth)
        else:
            # Each arm searches at the ef its own vectors need: the recall reached is what both must share.
            index["recall_target"] = spec.recall_target
    return index


def _engine_consumed(declared: Mapping[str, Any], engine: EngineStats) -> dict[str, Any]:
    """What a collection reports it was built and searched with: the engine's version and each declared
    parameter as the engine reports it (as declared where it reports nothing of it), so an engine that
    ignored a parameter makes the arms differ from the plan; with a recall target, the target if this arm's
    search parameter reached it (else the recall it reached)."""
    # The kind as declared (``service`` for an adapter, whatever it calls its engine).
    consumed: dict[str, Any] = {"kind": declared.get("kind", engine.engine)}
    for key, value in declared.items():
        if key not in ("kind", "version", "recall_target"):
            consumed[key] = engine.parameters.get(key, value)
    consumed["version"] = engine.version
    target = engine.recall_target
    if target is not None:
        consumed["recall_target"] = target if engine.ann_recall >= target else engine.ann_recall
    return consumed


def _index_consumed(declared: Mapping[str, Any], stats: IndexStats) -> dict[str, Any]:
    """What one index reports it was built and searched with; with a recall target, the target if this
    arm's ef reached it (else the recall it reached), instead of its ef."""
    if stats.engine is not None:
        return _engine_consumed(declared, stats.engine)
    if stats.faiss is not None:
        faiss = stats.faiss
        consumed: dict[str, Any] = {"kind": stats.kind, **faiss.parameters}
        searched = [name for name in consumed if name in FAISS_PARAMETERS]
        if faiss.recall_target is not None or faiss.defaulted:
            # Each arm's own value reaches the target (or FAISS's default is what was declared).
            for name in searched:
                del consumed[name]
        if faiss.recall_target is not None:
            reached = faiss.ann_recall >= faiss.recall_target
            consumed["recall_target"] = faiss.recall_target if reached else faiss.ann_recall
        return consumed
    if stats.hnsw is None:
        return {"kind": stats.kind}
    consumed = {"kind": stats.kind, **stats.hnsw.parameters}
    target = stats.hnsw.recall_target
    if target is not None:
        del consumed["ef"]
        consumed["recall_target"] = target if stats.hnsw.ann_recall >= target else stats.hnsw.ann_recall
    return consumed


def consumed_index(declared: Mapping[str, Any], indexes: Sequence[IndexStats]) -> dict[str, Any]:
    """What the arm's vector indexes report they were built and searched with, not what was asked of them:
    one index (or several alike) gives its own; an arm with none (BM25) the declared one; indexes that
    disagree give them all, which matches nothing."""
    consumed = [_index_consumed(declared, stats) for stats in indexes]
    if not consumed:
        return dict(declared)
    if all(one == consumed[0] for one in consumed):
        return consumed[0]
    return {"parts": consumed}


def control_differences(
    expected: Control, incumbent: Control, candidate: Control, *, own: Mapping[str, Control] | None = None
) -> tuple[str, ...]:
    """One description per component where either arm differs from what it must consume, in component
    order: ``expected`` (the golden set's), or for an arm with an index of its own the control ``own``
    holds under its role (the golden set's with that index in place of the golden set's)."""
    own = own or {}
    wanted = expected.components()
    arms = {"incumbent": incumbent.components(), "candidate": candidate.components()}
    theirs = {role: own[role].components() if role in own else wanted for role in arms}

    def shown(digest: str | None) -> str:
        return "absent" if digest is None else short_digest(digest)

    differences = []
    for name, digest in wanted.items():
        if all(arms[role].get(name) == theirs[role].get(name) for role in arms):
            continue
        owned = "".join(
            f", {role}'s own {shown(theirs[role].get(name))}"
            for role in arms
            if theirs[role].get(name) != digest
        )
        differences.append(
            f"{name} (incumbent {shown(arms['incumbent'].get(name))}, candidate "
            f"{shown(arms['candidate'].get(name))}; golden set {short_digest(digest)}{owned})"
        )
    return tuple(differences)


def check_control(
    expected: Control, incumbent: Control, candidate: Control, *, own: Mapping[str, Control] | None = None
) -> None:
    """Raise `ControlMismatch` unless both arms consumed exactly the held-constant inputs ``expected`` (an
    arm with an index of its own: the control ``own`` holds under its role)."""
    differences = control_differences(expected, incumbent, candidate, own=own)
    if differences:
        raise ControlMismatch(differences)
