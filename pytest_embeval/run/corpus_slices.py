"""Corpus slices: the golden set at several corpus sizes, to see whether the gap between the arms holds.

Distractor density grows with the corpus: on a small slice both models find the judged documents among few
others and look alike, and the gap moves as the slice grows. A slice holds every judged document (a
query's relevant documents must be findable at every size) and a seeded random draw of the others, drawn
across the whole corpus (never its first or newest documents). The draw is one seeded permutation whose
prefixes fill the slices, so the slices are nested: each holds every smaller one. Rows stay in corpus order
within a slice, so the slice of the whole corpus is the corpus itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pytest_embeval.core.stats import PairedComparison, stable_seed
from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.schema import CorpusSample, GoldenSet

__all__ = [
    "GAP_STILL_MOVING",
    "CorpusSlice",
    "SliceOutcome",
    "corpus_slices",
    "draw_slices",
    "gap_still_moving",
    "judged_documents",
    "restrict",
    "slice_size",
]

GAP_STILL_MOVING = "gap still moving: the models cannot be ranked at this size yet"


@dataclass(frozen=True, slots=True)
class CorpusSlice:
    #: as declared in ``corpus_sample.sizes``
    fraction: float
    #: sorted row numbers into the golden set's documents
    rows: tuple[int, ...]

    @property
    def documents(self) -> int:
        return len(self.rows)


def judged_documents(qrels: Mapping[str, Mapping[str, int]]) -> frozenset[str]:
    """Every document some query has a judgment for, of any grade (a judged non-relevant document is as
    much a part of what the golden set measures as a relevant one)."""
    return frozenset(doc_id for judged in qrels.values() for doc_id in judged)


def slice_size(fraction: float, documents: int, judged: int) -> int:
    """Documents in a slice: ``fraction`` of the corpus rounded half up, never fewer than the judged, and at
    least one."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if not 0 <= judged <= documents or documents < 1:
        raise ValueError(f"need 0 <= judged <= documents, got judged={judged}, documents={documents}")
    return max(judged, 1, min(documents, math.floor(fraction * documents + 0.5)))


def draw_slices(
    doc_ids: Sequence[str], judged: frozenset[str], sample: CorpusSample
) -> tuple[CorpusSlice, ...]:
    """One slice per declared size, smallest first; see the module docstring for what a slice holds."""
    judged_rows = np.array([row for row, doc_id in enumerate(doc_ids) if doc_id in judged], dtype=np.int64)
    others = np.array([row for row, doc_id in enumerate(doc_ids) if doc_id not in judged], dtype=np.int64)
    order = np.random.default_rng(stable_seed(sample.seed, "corpus-sample")).permutation(others)
    slices = []
    for fraction in sorted(sample.sizes):
        drawn = order[: slice_size(fraction, len(doc_ids), judged_rows.size) - judged_rows.size]
        rows = np.sort(np.concatenate([judged_rows, drawn]))
        slices.append(CorpusSlice(fraction=fraction, rows=tuple(rows.tolist())))
    return tuple(slices)


def corpus_slices(golden: GoldenSet) -> tuple[CorpusSlice, ...]:
    """The golden set's declared slices, smallest first; none without ``corpus_sample``."""
    if golden.corpus_sample is None:
        return ()
    # With folding, judgments name documents: every chunk of a judged document is kept (other chunks are
    # drawn one by one).
    fold = golden.fold
    doc_ids = [doc.id if fold is None else doc.fields[fold.field][0] for doc in golden.documents]
    return draw_slices(doc_ids, judged_documents(golden.qrels), golden.corpus_sample)


def restrict(golden: GoldenSet, rows: Sequence[int]) -> GoldenSet:
    """The golden set with only these documents (its judgments all name documents a slice keeps)."""
    return replace(golden, documents=tuple(golden.documents[row] for row in rows))


@dataclass(frozen=True, slots=True)
class SliceOutcome:
    """A stratum's primary comparison and verdict on one corpus slice."""

    fraction: float
    documents: int
    comparison: PairedComparison
    verdict: Verdict


def gap_still_moving(slices: Sequence[SliceOutcome], margin: float) -> bool:
    """Whether Δ moved by more than half the tie margin between the two largest slices (smallest first):
    then the gap measured on the largest is not yet the gap at production size. Not known (False) with one
    slice, or when either Δ is undefined (no query of the stratum has a relevant judgment)."""
    if len(slices) < 2:
        return False
    before, last = slices[-2].comparison.delta, slices[-1].comparison.delta
    return bool(np.isfinite(before) and np.isfinite(last) and abs(last - before) > margin / 2)
