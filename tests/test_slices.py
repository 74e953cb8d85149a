"""Corpus slices: every judged document in every slice, nested, a seeded draw across the whole corpus."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import warnings

import numpy as np
import pytest

from pytest_embeval.core.stats import DegenerateComparisonWarning, compare_paired
from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.schema import CorpusSample
from pytest_embeval.run.corpus_slices import (
    SliceOutcome,
    draw_slices,
    gap_still_moving,
    judged_documents,
    restrict,
    slice_size,
)

DOC_IDS = [f"doc-{i:04d}" for i in range(1000)]
# Judged documents in a cluster at the start and scattered: a draw that took the first rows would show.
JUDGED = frozenset([*DOC_IDS[:30], *DOC_IDS[500:1000:50]])
SIZES = (0.1, 0.25, 0.5, 1.0)


def slices(seed: int = 7, sizes: tuple[float, ...] = SIZES) -> list[set[str]]:
    drawn = draw_slices(DOC_IDS, JUDGED, CorpusSample(sizes=sizes, seed=seed))
    return [{DOC_IDS[row] for row in one.rows} for one in drawn]


def test_every_slice_holds_every_judged_document() -> None:
    for documents in slices():
        assert documents >= JUDGED


def test_slices_are_nested_and_sized_by_their_fraction() -> None:
    drawn = draw_slices(DOC_IDS, JUDGED, CorpusSample(sizes=SIZES, seed=7))
    assert [one.fraction for one in drawn] == list(SIZES)
    assert [one.documents for one in drawn] == [100, 250, 500, 1000]
    sets = slices()
    for smaller, larger in itertools.pairwise(sets):
        assert smaller < larger


def test_rows_are_in_corpus_order_and_the_whole_corpus_is_the_corpus() -> None:
    drawn = draw_slices(DOC_IDS, JUDGED, CorpusSample(sizes=SIZES, seed=7))
    for one in drawn:
        assert list(one.rows) == sorted(one.rows)
    assert drawn[-1].rows == tuple(range(len(DOC_IDS)))


def test_the_same_seed_draws_the_same_slices_and_another_seed_others() -> None:
    assert slices(7) == slices(7)
    assert slices(7)[:3] != slices(8)[:3]
    assert slices(7)[-1] == slices(8)[-1]  # the whole corpus is the whole corpus


def test_the_draw_spreads_over_the_whole_corpus() -> None:
    """The 70 unjudged documents of the 10 % slice come from everywhere in the corpus, not its start or end:
    about as many from each half (a binomial 35 ± 4.2)."""
    drawn = draw_slices(DOC_IDS, JUDGED, CorpusSample(sizes=(0.1,), seed=7))[0]
    unjudged = np.array([row for row in drawn.rows if DOC_IDS[row] not in JUDGED])
    assert unjudged.size == 100 - len(JUDGED)
    assert 20 <= int((unjudged < 500).sum()) <= 50
    assert unjudged.min() < 100 and unjudged.max() > 900


def test_a_fraction_smaller_than_the_judged_documents_keeps_them_all() -> None:
    drawn = draw_slices(DOC_IDS, JUDGED, CorpusSample(sizes=(0.01, 1.0), seed=7))
    assert {DOC_IDS[row] for row in drawn[0].rows} == JUDGED


@pytest.mark.parametrize(
    ("fraction", "documents", "judged", "size"),
    [(0.1, 1000, 0, 100), (0.25, 10, 0, 3), (0.05, 10, 0, 1), (0.01, 10, 0, 1), (0.1, 1000, 200, 200)],
)
def test_slice_size_rounds_half_up_never_drops_a_judged_document_and_is_never_empty(
    fraction: float, documents: int, judged: int, size: int
) -> None:
    assert slice_size(fraction, documents, judged) == size


def test_slice_size_validates() -> None:
    with pytest.raises(ValueError, match=re.escape("fraction must be in (0, 1], got 1.5")):
        slice_size(1.5, 10, 0)
    with pytest.raises(
        ValueError, match=re.escape("need 0 <= judged <= documents, got judged=11, documents=10")
    ):
        slice_size(0.5, 10, 11)


def test_judged_documents_are_any_grade_of_any_query() -> None:
    qrels = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}, "q3": {}}
    assert judged_documents(qrels) == {"a", "b", "c"}


def test_restrict_keeps_the_rows_in_order() -> None:
    from test_pipeline import make_golden

    golden = make_golden()
    kept = restrict(golden, [0, 5, 7])
    assert [doc.id for doc in kept.documents] == ["d000", "d005", "d007"]
    assert kept.queries == golden.queries and kept.qrels == golden.qrels


def outcome(delta: float, fraction: float = 1.0) -> SliceOutcome:
    """A slice whose 30 queries all moved by ``delta``."""
    incumbent = np.linspace(0.2, 0.6, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateComparisonWarning)
        comparison = compare_paired(
            incumbent, incumbent + delta, confidence=0.95, n_resamples=200, rng=np.random.default_rng(0)
        )
    return SliceOutcome(fraction=fraction, documents=100, comparison=comparison, verdict=Verdict.TIE)


@pytest.mark.parametrize(
    ("deltas", "margin", "moving"),
    [
        ((-0.01, -0.05, -0.07), 0.03, True),  # moved 0.02 > 0.015
        ((-0.01, -0.05, -0.07), 0.05, False),  # 0.02 is not more than 0.025
        ((-0.07, -0.05), 0.03, True),  # either direction
        ((0.3, -0.05, -0.06), 0.03, False),  # only the two largest slices count
        ((-0.05,), 0.03, False),  # one slice: nothing to compare
    ],
)
def test_a_gap_is_still_moving_when_delta_moved_more_than_half_the_margin(
    deltas: tuple[float, ...], margin: float, moving: bool
) -> None:
    slices = [outcome(delta) for delta in deltas]
    assert [round(one.comparison.delta, 12) for one in slices] == list(deltas)
    assert gap_still_moving(slices, margin) is moving


def test_an_undefined_delta_is_not_a_moving_gap() -> None:
    nan = dataclasses.replace(outcome(0.0).comparison, delta=math.nan)
    empty = SliceOutcome(fraction=0.5, documents=10, comparison=nan, verdict=Verdict.TIE)
    assert not gap_still_moving([empty, outcome(-0.5)], 0.03)
