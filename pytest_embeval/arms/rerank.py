"""A reranker in the loop: the same cross-encoder reorders each arm's top documents.

``rerank: {model: SPEC, depth: 50, sample: 200, decides: false}`` in the golden file. ``model`` is a
sentence-transformers ``CrossEncoder`` folder (relative to the golden file; loaded on first use, on CPU,
remote code never trusted) or ``module:attr`` naming an object with ``score(query, documents) -> scores``
(a class or factory is called with no arguments to build it; a ``fingerprint`` or ``name`` attribute
identifies it in the cache).

What is reranked: each arm's top ``depth`` documents (after folding, a document is represented by its best
chunk's text), reordered by the reranker's score (float32, equal scores by document id descending). The
after-rerank ranking is those ``depth`` documents, as the product passes no more to what follows the
reranker: a metric whose k exceeds ``depth`` sees only them.

On which queries: all of them, or with ``sample`` a seeded draw of that many per stratum among the
stratum's queries that can be scored (those with a relevant document their filters allow), the same for
both arms. Each stratum compares the arms after rerank on its sample, beside the first-stage comparison on
the same queries; the verdict rests on the first stage unless ``decides: true``.

Scores are cached like embeddings, in the embedding cache's content-addressed packs: one-value rows under
the reranker's digest, keyed by the sha256 of the JSON pair ``[query, document text]``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.embedding import error_summary as summary
from pytest_embeval.arms.model_specs import import_attr
from pytest_embeval.arms.sentence_transformer import folder_identity
from pytest_embeval.core.stats import PairedComparison
from pytest_embeval.core.verdict import StratumRuling, Verdict
from pytest_embeval.golden.schema import RerankSpec
from pytest_embeval.search.exact import tie_ranks, top_k

__all__ = [
    "RerankError",
    "RerankOutcome",
    "RerankScorer",
    "Reranked",
    "Reranker",
    "rerank_sample",
    "rerank_top",
    "resolve_reranker",
]


class RerankError(EncoderError):
    """A reranker that cannot be resolved or returned unusable scores: an error of the golden set's items."""


@dataclass(frozen=True, slots=True)
class Reranker:
    """A resolved reranker: what reports show, what its scores are cached under, and how it scores."""

    spec: str
    fingerprint: str
    score: Callable[[str, list[str]], object]

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.fingerprint.encode("utf-8")).hexdigest()


def _canonical(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def resolve_reranker(spec: RerankSpec) -> Reranker:
    """The `Reranker` a golden file's ``rerank.model`` names; raises `RerankError` (one line)."""
    if spec.location is None:
        try:
            obj = import_attr(spec.model, ready=_is_reranker, what="the reranker")
        except EncoderError as error:
            raise RerankError(f"rerank.model: {error}") from None
        if not _is_reranker(obj):
            raise RerankError(
                f"rerank.model {spec.model!r} resolved to {type(obj).__qualname__}, which has no "
                "score(query, documents) method"
            )
        identity = getattr(obj, "fingerprint", None) or getattr(obj, "name", None)
        if not isinstance(identity, str) or not identity:
            identity = f"{type(obj).__module__}.{type(obj).__qualname__} {spec.model}"
        return Reranker(spec.model, _canonical({"reranker": identity}), obj.score)  # type: ignore[attr-defined]
    folder = Path(spec.location)
    files = folder_identity(folder)
    if files is None:
        raise RerankError(f"rerank.model {spec.model!r}: no weight files in {folder.resolve()}")
    return Reranker(spec.model, _canonical({"reranker": "CrossEncoder", **files}), _CrossEncoderScore(folder))


def _is_reranker(obj: object) -> bool:
    return callable(getattr(obj, "score", None))


class _CrossEncoderScore:
    """``score(query, documents)`` of a sentence-transformers CrossEncoder, loaded on its first call."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._model: Any = None

    def __call__(self, query: str, documents: list[str]) -> object:
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(os.fspath(self.folder), device="cpu", trust_remote_code=False)
            except Exception as exc:
                raise RerankError(f"cannot load CrossEncoder {str(self.folder)!r}: {summary(exc)}") from exc
        pairs = [(query, document) for document in documents]
        return self._model.predict(pairs, batch_size=max(1, len(pairs)), show_progress_bar=False)


def pair_text(query: str, document: str) -> str:
    """What a reranker score is cached by: the exact query and document text it scored."""
    return json.dumps([query, document], ensure_ascii=False, separators=(",", ":"))


class RerankScorer:
    """Scores (query, document) pairs with a reranker once each: memoised for the run (both arms share
    their common documents) and, with ``cache`` (an `store.EmbeddingCache`), on disk across runs.
    ``scored`` and ``cached`` count pairs the reranker scored and pairs the disk cache served."""

    def __init__(self, reranker: Reranker, cache: Any = None) -> None:
        self.reranker = reranker
        self.cache = cache
        self.memo: dict[str, float] = {}
        self.scored = 0
        self.cached = 0

    def scores(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """float32 scores of ``documents`` for ``query``."""
        keys = [pair_text(query, document) for document in documents]
        wanted = [key for key in dict.fromkeys(keys) if key not in self.memo]
        if wanted and self.cache is not None:
            found = self.cache.lookup(self.reranker, "document", wanted)
            self.memo.update((key, float(vector[0])) for key, vector in found.items())
            self.cached += len(found)
        fresh = [key for key in wanted if key not in self.memo]
        if fresh:
            texts = [json.loads(key)[1] for key in fresh]
            values = self._call(query, texts)
            self.memo.update(zip(fresh, values.tolist(), strict=True))
            self.scored += len(fresh)
            if self.cache is not None:
                # A read-only or full cache must not fail the comparison: the scores serve this run.
                with contextlib.suppress(OSError):
                    self.cache.store(self.reranker, "document", fresh, values[:, None])
        return np.array([self.memo[key] for key in keys], dtype=np.float32)

    def _call(self, query: str, documents: list[str]) -> np.ndarray:
        who = f"reranker {self.reranker.spec!r}"
        try:
            raw = self.reranker.score(query, documents)
            values = np.asarray(raw, dtype=np.float64).reshape(-1)
        except RerankError:
            raise
        except Exception as exc:
            raise RerankError(f"{who} failed on {len(documents)} documents: {summary(exc)}") from exc
        if values.size != len(documents):
            raise RerankError(f"{who} returned {values.size} scores for {len(documents)} documents")
        if not np.isfinite(values).all():
            raise RerankError(f"{who} returned NaN or inf for {len(documents)} documents of a query")
        # Rounded to float32 now, as the cache stores them, so a rerun served from the cache ranks alike.
        return values.astype(np.float32)


def rerank_sample(
    query_ids: Sequence[str], scorable: Mapping[str, bool], spec: RerankSpec, seed: int, stratum: str
) -> tuple[str, ...]:
    """The queries of one stratum that are reranked: its scorable queries (in golden order), or a seeded
    draw of ``spec.sample`` of them."""
    from pytest_embeval.core.stats import stable_seed

    candidates = [query_id for query_id in query_ids if scorable[query_id]]
    if spec.sample is None or spec.sample >= len(candidates):
        return tuple(candidates)
    rng = np.random.default_rng(stable_seed(seed, "rerank-sample", stratum))
    chosen = np.sort(rng.choice(len(candidates), size=spec.sample, replace=False))
    return tuple(candidates[i] for i in chosen.tolist())


@dataclass(frozen=True, slots=True)
class Reranked:
    """One arm after the reranker, on the reranked queries (others: an empty ranking and NaN scores)."""

    ranked: tuple[tuple[str, ...], ...]
    #: the reranker's float32 scores of ``ranked``
    scores: tuple[tuple[float, ...], ...]
    per_query: Mapping[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class RerankOutcome:
    """One stratum before and after the reranker, on the queries reranked for it."""

    #: the first stage on the reranked queries, every declared metric
    first_stage: Mapping[str, PairedComparison]
    first_stage_ruling: StratumRuling
    after: Mapping[str, PairedComparison]
    after_ruling: StratumRuling
    #: the verdict rests on ``after``
    decides: bool
    #: the stratum's queries were sampled (fewer reranked than it has)
    sampled: bool

    @property
    def absorbed(self) -> str | None:
        """ "gain" or "loss" when the first stage is BETTER or WORSE on these queries and the after-rerank
        comparison is not: the reranker absorbs the difference the first stage showed."""
        before, after = self.first_stage_ruling.primary, self.after_ruling.primary
        if before is Verdict.BETTER and after is not Verdict.BETTER:
            return "gain"
        if before is Verdict.WORSE and after is not Verdict.WORSE:
            return "loss"
        return None


def rerank_top(
    scorer: RerankScorer,
    positions: np.ndarray,
    records: np.ndarray,
    rows: np.ndarray,
    depth: int,
    result_ids: Sequence[str],
    doc_texts: Sequence[str],
    query_texts: Sequence[str],
) -> tuple[list[tuple[str, ...]], list[tuple[float, ...]]]:
    """Each query row's top ``depth`` results reordered by the reranker (float32 score descending, equal
    scores by id descending): their ids and reranker scores, row by row (empty for rows not reranked)."""
    ranked: list[tuple[str, ...]] = [() for _ in range(positions.shape[0])]
    scores: list[tuple[float, ...]] = [() for _ in range(positions.shape[0])]
    for row in rows.tolist():
        top = positions[row, :depth]
        kept = top >= 0
        ids = [result_ids[p] for p in top[kept].tolist()]
        if not ids:
            continue
        values = scorer.scores(query_texts[row], [doc_texts[r] for r in records[row, :depth][kept].tolist()])
        order, ordered = top_k(values[None, :], len(ids), ranks=tie_ranks(ids))
        ranked[row] = tuple(ids[i] for i in order[0].tolist())
        scores[row] = tuple(float(v) for v in ordered[0].tolist())
    return ranked, scores
