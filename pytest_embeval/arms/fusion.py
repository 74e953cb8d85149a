"""A hybrid arm: reciprocal rank fusion of other arms (``rrf:SPEC_A,SPEC_B[?k=N]``).

Each part ranks the golden set's records exactly as it would alone (same records, queries, filters and
depth); a record's fused score is ``sum(1 / (k + rank))`` over the parts that ranked it (rank from 1, a
part that did not rank it adds nothing), with ``k = 60`` by default (Cormack, Clarke and Büttcher, 2009).
The fused ranking orders by that score, equal scores by record id descending (as every arm orders), and
keeps the top ``depth``. Each part contributes its own top ``depth``.

Splitting a spec: the parts are separated by commas; the fused arm's own parameters are the ``?`` part of
the last one (``rrf:A,B?k=30``). A part whose spec holds a comma, or whose own ``?`` parameters come last,
is written in square brackets: ``rrf:minilm,[bm25?k1=0.9]``, ``rrf:[rrf:a,b],c``. Brackets nest. Any number
of parts (at least two) may be fused. Every part searches the golden set's index: a variant with an index of
its own (``faiss=``, `variants`) is refused as a part.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.retriever import (
    EmbedsNothing,
    Hits,
    RetrievalTask,
    Retriever,
    Searcher,
    spec_parameters,
)
from pytest_embeval.search.exact import tie_ranks

__all__ = ["DEFAULT_K", "FusedRetriever", "rrf_arm", "rrf_fuse", "split_parts"]

DEFAULT_K = 60
_PARAMETERS = {"k": "an integer >= 1"}


def split_parts(spec: str) -> tuple[list[str], str]:
    """The part specs of ``rrf:…`` (brackets removed) and the fused arm's own ``?`` parameters."""
    body = spec.removeprefix("rrf:")
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in body:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise EncoderError(f"model spec {spec!r}: ']' without '['")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise EncoderError(f"model spec {spec!r}: '[' without ']'")
    last = "".join(current)
    # The fused arm's parameters: a '?' in the last part outside its brackets.
    outside = 0
    query = ""
    for position, char in enumerate(last):
        outside += {"[": 1, "]": -1}.get(char, 0)
        if char == "?" and outside == 0:
            last, query = last[:position], last[position + 1 :]
            break
    parts.append(last)
    cleaned = []
    for part in parts:
        text = part.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1].strip()
        if not text:
            raise EncoderError(f"model spec {spec!r}: an empty part (write rrf:SPEC_A,SPEC_B)")
        cleaned.append(text)
    if len(cleaned) < 2:
        raise EncoderError(f"model spec {spec!r}: rrf fuses at least two arms (write rrf:SPEC_A,SPEC_B)")
    return cleaned, query


def rrf_arm(spec: str, resolve: Callable[[str], Retriever]) -> FusedRetriever:
    """A `FusedRetriever` from ``rrf:…``, its parts resolved with ``resolve``."""
    texts, query = split_parts(spec)
    try:
        given = spec_parameters(spec, query, _PARAMETERS)
    except EncoderError as error:
        raise EncoderError(
            f"{error}; a part's own parameters go in brackets, e.g. rrf:A,[bm25?k1=0.9]"
        ) from None
    k = DEFAULT_K
    if "k" in given:
        text = given["k"]
        if not text.isdigit() or int(text) < 1:
            raise EncoderError(f"model spec {spec!r}: k must be {_PARAMETERS['k']}, got {text!r}")
        k = int(text)
    parts = tuple(resolve(text) for text in texts)
    from pytest_embeval.arms.variants import own_index

    owning = next((part for part in parts if own_index(part) is not None), None)
    if owning is not None:
        raise EncoderError(
            f"model spec {spec!r}: part {owning.spec!r} has an index of its own: a fused arm's parts search "
            "the golden set's index (run that variant as an arm of its own)"
        )
    identity = {"retriever": "rrf", "k": k, "parts": [part.fingerprint for part in parts]}
    return FusedRetriever(
        spec=spec,
        k=k,
        parts=parts,
        fingerprint=json.dumps(identity, ensure_ascii=False, separators=(",", ":")),
    )


@dataclass(frozen=True, slots=True)
class FusedRetriever:
    """Reciprocal rank fusion of ``parts``."""

    spec: str
    k: int
    parts: tuple[Retriever, ...]
    fingerprint: str
    prompts: dict[str, str] = field(default_factory=lambda: {"query": "", "document": ""})
    kind: str = field(default="rrf", init=False)

    def open(self, task: RetrievalTask) -> FusedSearcher:
        return FusedSearcher(self.k, tuple(part.open(task) for part in self.parts), tie_ranks(task.doc_ids))


class FusedSearcher(EmbedsNothing):
    def __init__(self, k: int, parts: tuple[Searcher, ...], ranks: np.ndarray) -> None:
        self.k = k
        self.parts = parts
        self.ranks = ranks

    def search(self, rows: np.ndarray, depth: int) -> Hits:
        return rrf_fuse(
            [part.search(rows, depth) for part in self.parts], k=self.k, depth=depth, ranks=self.ranks
        )

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> FusedSearcher:
        return FusedSearcher(
            self.k, tuple(part.restrict(task, rows) for part in self.parts), tie_ranks(task.doc_ids)
        )

    def close(self) -> None:
        for part in self.parts:
            part.close()


def rrf_fuse(rankings: Sequence[Hits], *, k: int, depth: int, ranks: np.ndarray) -> Hits:
    """Reciprocal rank fusion of rankings of the same queries (rows aligned), to ``depth`` per query.

    ``ranks`` are the records' `exact.tie_ranks`. Each record's contributions are summed largest first, so
    equal sets of ranks give bit-identical scores (then ordered by record id, descending).
    """
    if not rankings:
        raise ValueError("nothing to fuse")
    n = rankings[0].positions.shape[0]
    positions = np.concatenate([hits.positions for hits in rankings], axis=1)
    rank = np.concatenate(
        [
            np.broadcast_to(np.arange(1, hits.positions.shape[1] + 1), hits.positions.shape)
            for hits in rankings
        ],
        axis=1,
    )
    row = np.broadcast_to(np.arange(n)[:, None], positions.shape)
    valid = positions >= 0
    row, record, rank = row[valid], positions[valid], rank[valid]
    contribution = 1.0 / (k + rank.astype(np.float64))
    order = np.lexsort((-contribution, record, row))
    row, record, contribution = row[order], record[order], contribution[order]
    starts = np.flatnonzero(np.r_[True, (row[1:] != row[:-1]) | (record[1:] != record[:-1])])
    fused_row, fused_record = row[starts], record[starts]
    fused = np.add.reduceat(contribution, starts) if starts.size else contribution[:0]
    order = np.lexsort((-ranks[fused_record], -fused, fused_row))
    fused_row, fused_record, fused = fused_row[order], fused_record[order], fused[order]
    within = np.arange(fused_row.size) - np.searchsorted(fused_row, fused_row)
    kept = within < depth
    out = Hits.empty(n, depth)
    out.positions[fused_row[kept], within[kept]] = fused_record[kept]
    out.scores[fused_row[kept], within[kept]] = fused[kept]
    return out
