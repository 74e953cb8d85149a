"""Chunks folded to documents: when the corpus records are chunks and the judgments name documents.

``fold: {field: doc_id, score: max}`` names the record field that says which document a chunk belongs to.
Every arm ranks chunks; before the metrics, each query's chunk ranking becomes a document ranking: a
document scores its best chunk's score (``max``, the one way offered: RAG evaluation ranks a document by the
passage that retrieved it) and documents are ordered by that score, equal scores by document id descending,
as trec_eval orders a run. Judgments, metrics, run files and the report are per document.

Depth: the ranked depth counts documents. A top 100 of chunks may hold fewer than 100 documents, so chunks
are searched deep enough to fill it: first ``depth x chunks per document`` (the corpus mean, rounded up),
then, for the queries still short of ``depth`` documents while more chunks were within their reach, twice
as deep, and so on, until each query has ``depth`` documents or has run out of chunks its filters allow.
A query thus gets the same documents however deep its first search went.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ChunkMap", "FoldSpec", "chunk_map", "fold_hits", "search_documents"]


@dataclass(frozen=True, slots=True)
class FoldSpec:
    field: str
    score: str = "max"

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "score": self.score}


@dataclass(frozen=True, slots=True, eq=False)
class ChunkMap:
    """Which document each chunk (corpus record) belongs to."""

    #: the documents, in order of their first chunk in the corpus
    doc_ids: tuple[str, ...]
    #: (n_chunks,) intp: each chunk's document (a position in ``doc_ids``)
    document_of: np.ndarray

    @property
    def chunks(self) -> int:
        return int(self.document_of.size)

    def records_of(self) -> dict[str, np.ndarray]:
        """Each document's chunk rows."""
        order = np.argsort(self.document_of, kind="stable")
        bounds = np.searchsorted(self.document_of[order], np.arange(len(self.doc_ids) + 1))
        return {doc_id: order[bounds[i] : bounds[i + 1]] for i, doc_id in enumerate(self.doc_ids)}


def chunk_map(fields: Sequence[Mapping[str, Sequence[str]]], spec: FoldSpec) -> ChunkMap:
    """The `ChunkMap` of records with these fields (each holds one value of ``spec.field``: the loader
    checks it)."""
    position: dict[str, int] = {}
    document_of = np.fromiter(
        (position.setdefault(record[spec.field][0], len(position)) for record in fields),
        dtype=np.intp,
        count=len(fields),
    )
    return ChunkMap(doc_ids=tuple(position), document_of=document_of)


def fold_hits(
    positions: np.ndarray, scores: np.ndarray, chunks: ChunkMap, ranks: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chunk hits (best first, padded with -1) folded to the top ``depth`` documents of each query.

    Returns document positions, their scores (the best chunk's) and that best chunk's row, each
    ``(n, depth)`` padded with -1 / NaN / -1. ``ranks`` are the documents' `exact.tie_ranks`.
    """
    n, width = positions.shape
    valid = positions >= 0
    row = np.broadcast_to(np.arange(n)[:, None], (n, width))[valid]
    column = np.broadcast_to(np.arange(width), (n, width))[valid]
    chunk = positions[valid]
    document = chunks.document_of[chunk]
    score = scores[valid]
    # Hits are best first, so a document's first chunk in its row is its best.
    order = np.lexsort((column, document, row))
    row, document, chunk, score = row[order], document[order], chunk[order], score[order]
    first = (
        np.r_[True, (row[1:] != row[:-1]) | (document[1:] != document[:-1])] if row.size else row.astype(bool)
    )
    row, document, chunk, score = row[first], document[first], chunk[first], score[first]
    order = np.lexsort((-ranks[document], -score, row))
    row, document, chunk, score = row[order], document[order], chunk[order], score[order]
    within = np.arange(row.size) - np.searchsorted(row, row)
    kept = within < depth
    out_documents = np.full((n, depth), -1, dtype=np.int64)
    out_scores = np.full((n, depth), np.nan)
    out_chunks = np.full((n, depth), -1, dtype=np.int64)
    at = (row[kept], within[kept])
    out_documents[at], out_scores[at], out_chunks[at] = document[kept], score[kept], chunk[kept]
    return out_documents, out_scores, out_chunks


def search_documents(
    search: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]],
    n_queries: int,
    chunks: ChunkMap,
    ranks: np.ndarray,
    depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The top ``depth`` documents of every query, searching chunks as deep as it takes (see the module).

    ``search(rows, chunk_depth)`` returns the chunk hits of those query rows. Returns `fold_hits`'s three
    arrays for all queries and the first chunk depth searched.
    """
    per_document = chunks.chunks / max(1, len(chunks.doc_ids))
    first_depth = min(chunks.chunks, max(depth, math.ceil(depth * per_document)))
    documents = np.full((n_queries, depth), -1, dtype=np.int64)
    scores = np.full((n_queries, depth), np.nan)
    best = np.full((n_queries, depth), -1, dtype=np.int64)
    rows = np.arange(n_queries)
    chunk_depth = first_depth
    while rows.size:
        positions, chunk_scores = search(rows, chunk_depth)
        folded = fold_hits(positions, chunk_scores, chunks, ranks, depth)
        documents[rows], scores[rows], best[rows] = folded
        # Short of documents although the search returned as many chunks as asked: there may be more.
        short = ((folded[0] >= 0).sum(axis=1) < depth) & ((positions >= 0).sum(axis=1) == chunk_depth)
        if chunk_depth >= chunks.chunks:
            break
        rows = rows[short]
        chunk_depth = min(chunks.chunks, 2 * chunk_depth)
    return documents, scores, best, first_depth
