"""Drawing from production, the pure part (`core.sampling`): the apportionment computed by hand, frequency
bands (and their spans over levels of equal frequency, against the walk one query at a time), query
normalisation (and the strings already in normal form), and the reservoir's uniformity against the exact
distribution (and its counted offers against offers one at a time)."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from pytest_embeval.core.draws_ahead import Draws
from pytest_embeval.core.sampling import (
    NORMAL_ASCII,
    TAIL,
    Reservoir,
    apportion,
    band_names,
    band_spans,
    frequency_bands,
    normalise_query,
    parse_bands,
)
from pytest_embeval.golden.columnar_log import JSON_NORMAL_ASCII


def test_apportion_equals_the_hand_computation_with_floors() -> None:
    # 11 seats, traffic 500/300/150/50, floor 2 (the last stratum has only 2 distinct queries).
    # Proportion alone: 5.5, 3.3, 1.65, 0.55: C and D fall below the floor of 2 and are fixed there.
    # The 7 seats left go to A and B in proportion 500:300: 4.375 and 2.625. Integer parts 4 + 2 + 2 + 2
    # = 10; the one seat left goes to the largest fraction, B's .625 (A's is .375): 4, 3, 2, 2.
    assert apportion(11, [500, 300, 150, 50], caps=[100, 100, 100, 2], floors=[2, 2, 2, 2]) == [4, 3, 2, 2]


def test_apportion_equals_the_hand_computation_with_a_cap() -> None:
    # As above, but A has only 3 distinct queries: capped at 3. The 8 left: C and D at their floor of 2
    # (proportion gives C 150/450 * 6 = 2, not below it), B 300/450 * 6 = 4: 3, 4, 2, 2.
    assert apportion(11, [500, 300, 150, 50], caps=[3, 100, 100, 2], floors=[2, 2, 2, 2]) == [3, 4, 2, 2]
    # A floor fixed first would be wrong here: B's floor of 5 exceeds its share, A takes the rest.
    assert apportion(10, [100, 1], caps=[9, 5], floors=[0, 5]) == [5, 5]


def test_apportion_gives_ties_to_the_earlier_part_and_is_exact() -> None:
    assert apportion(7, [1, 1, 1], caps=[7, 7, 7]) == [3, 2, 2]
    assert apportion(0, [1, 2], caps=[3, 3]) == [0, 0]
    # Zero weights get their floor; the rest is shared by the others.
    assert apportion(5, [0, 1, 1], caps=[4, 4, 4], floors=[1, 0, 0]) == [1, 2, 2]
    rng = np.random.default_rng(3)
    for _ in range(300):  # every seat given, every bound held
        n = int(rng.integers(1, 8))
        caps = rng.integers(1, 30, n).tolist()
        floors = [int(rng.integers(0, c + 1)) for c in caps]
        total = int(rng.integers(sum(floors), sum(caps) + 1))
        seats = apportion(total, rng.random(n).tolist(), caps, floors)
        assert sum(seats) == total
        assert all(f <= s <= c for f, s, c in zip(floors, seats, caps, strict=True))


def test_apportion_refuses_bounds_it_cannot_meet() -> None:
    with pytest.raises(ValueError, match="the floors add up to 6, more than the 5 to give"):
        apportion(5, [1, 1], caps=[3, 3], floors=[3, 3])
    with pytest.raises(ValueError, match="the caps add up to 4, fewer than the 5 to give"):
        apportion(5, [1, 1], caps=[2, 2])
    with pytest.raises(ValueError, match="weights must be finite and >= 0"):
        apportion(1, [-1.0], caps=[1])


def test_bands_by_cumulative_share_of_traffic() -> None:
    bands = parse_bands("head=0.33,torso=0.33")
    assert bands == (("head", 0.33), ("torso", 0.33)) and band_names(bands) == ("head", "torso", TAIL)
    # 100 searches. "50" alone reaches a third: the head. "20" starts at 50 >= 33 and ends at 70 >= 66:
    # the torso. The rest start at 70 or later: the tail.
    assert frequency_bands([50, 20, 10, 10, 5, 5], bands) == ["head", "torso", "tail", "tail", "tail", "tail"]
    # The query that crosses a boundary belongs to the band it completes; one that starts exactly on a
    # boundary belongs to the next band.
    assert frequency_bands([25, 25, 25, 25], parse_bands("head=0.5")) == ["head", "head", "tail", "tail"]
    assert frequency_bands([40, 30, 30], parse_bands("head=0.5")) == ["head", "head", "tail"]
    with pytest.raises(ValueError, match="most frequent first"):
        frequency_bands([1, 2], bands)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("head", "expected NAME=SHARE"),
        ("head=0.5,head=0.2", "band 'head' declared twice"),
        ("tail=0.3", "'tail' is the traffic left"),
        ("head=abc", "band 'head': expected a share of traffic above 0 and below 1, got 'abc'"),
        ("head=0", "band 'head': expected a share"),
        ("head=0.6,torso=0.4", "the bands' shares add up to 1"),
    ],
)
def test_bad_bands(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("(", r"\(")):
        parse_bands(text)


def test_normalisation_folds_case_whitespace_and_compatibility_forms() -> None:
    spellings = ["Track my parcel", "  track   MY\tparcel ", "\uff34\uff52\uff41\uff43\uff4b my parcel"]
    assert {normalise_query(text) for text in spellings} == {"track my parcel"}
    assert normalise_query("Straße") == normalise_query("STRASSE") == "strasse"
    assert normalise_query("ﬁle") == "file"  # the ligature, a compatibility form
    assert normalise_query(" \t ") == ""


def test_the_reservoir_draws_every_subset_equally_often() -> None:
    # 10 items, samples of 3: each of the 120 subsets has probability 1/120. 24,000 seeded draws give 200
    # expected per subset; a reservoir that favoured early or late items (an off-by-one in the skip) or
    # kept the first k would be far from it. Seeded, so the p-value is a fixed number, not a flake.
    counts: Counter[tuple[int, ...]] = Counter()
    rng = np.random.default_rng(20231)
    for _ in range(24_000):
        reservoir: Reservoir[int] = Reservoir.of(3, rng)
        for item in range(10):
            reservoir.offer(item)
        counts[tuple(sorted(item for _, item in reservoir.items))] += 1
    subsets = list(itertools.combinations(range(10), 3))
    assert set(counts) == set(subsets)
    assert chisquare([counts[s] for s in subsets]).pvalue > 0.01


def test_the_reservoir_test_rejects_an_off_by_one_skip() -> None:
    """The check above can fail: the same statistic on a reservoir that skips one item too few."""

    class OffByOne(Reservoir[int]):
        def _skip(self, draws: Draws) -> None:
            super()._skip(draws)
            self._next -= 1

    counts: Counter[tuple[int, ...]] = Counter()
    rng = np.random.default_rng(20231)
    for _ in range(24_000):
        reservoir = OffByOne(3, rng, [])
        for item in range(10):
            reservoir.offer(item)
        counts[tuple(sorted(item for _, item in reservoir.items))] += 1
    subsets = list(itertools.combinations(range(10), 3))
    assert chisquare([counts[s] for s in subsets]).pvalue < 1e-6


def test_a_reservoir_keeps_everything_of_a_short_stream_and_nothing_for_size_0() -> None:
    reservoir: Reservoir[str] = Reservoir.of(5, np.random.default_rng(0))
    for item in "abc":
        reservoir.offer(item)
    assert reservoir.items == [(0, "a"), (1, "b"), (2, "c")]
    empty: Reservoir[str] = Reservoir.of(0, np.random.default_rng(0))
    for item in "abc":
        empty.offer(item)
    assert empty.items == [] and empty.seen == 3


def _walk(frequencies: list[int], bands: tuple[tuple[str, float], ...]) -> list[str]:
    """The band rule as the sampler first applied it, one query at a time: the reference for
    `band_spans`, which finds the same boundaries per frequency level."""
    total = sum(frequencies)
    bounds: list[float] = []
    for _, share in bands:
        bounds.append((bounds[-1] if bounds else 0.0) + share * total)
    result, before, band = [], 0, 0
    for frequency in frequencies:
        while band < len(bounds) and before >= bounds[band] - 1e-9 * total:
            band += 1
        result.append(band_names(bands)[band])
        before += frequency
    return result


BAND_SETS = ["head=0.33,torso=0.33", "head=0.5", "a=0.1,b=0.2,c=0.3", "h=0.25,t=0.25,x=0.25", "h=0.001"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(1, 50) | st.integers(1, 3), min_size=1, max_size=80),
    st.sampled_from(BAND_SETS),
)
def test_band_spans_are_the_walk_one_query_at_a_time(frequencies: list[int], bands: str) -> None:
    # Many queries of one frequency (1 to 3 searches) put a boundary inside a level: the spans split it.
    frequencies.sort(reverse=True)
    declared = parse_bands(bands)
    assert frequency_bands(frequencies, declared) == _walk(frequencies, declared)
    levels = [(f, len(list(run))) for f, run in itertools.groupby(frequencies)]
    spans = band_spans(levels, declared)
    assert [sum(end - first for _, first, end in level) for level in spans] == [n for _, n in levels]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.lists(st.integers(0, 3000), min_size=1, max_size=4), st.integers(0, 2**32))
def test_offering_counted_positions_draws_as_offering_one_at_a_time(
    size: int, counts: list[int], seed: int
) -> None:
    one_by_one: Reservoir[int] = Reservoir.of(size, np.random.default_rng(seed))
    counted: Reservoir[int] = Reservoir.of(size, np.random.default_rng(seed))
    for count in counts:
        for _ in range(count):
            one_by_one.offer(one_by_one.seen)
        counted.offer_positions(count)
    assert counted.items == one_by_one.items and counted.seen == one_by_one.seen
    assert counted.rng.random() == one_by_one.rng.random()  # the generators are in the same state


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(max_codepoint=0x7F), max_size=12) | st.text(max_size=8))
def test_strings_in_normal_ascii_form_are_their_own_normal_form(text: str) -> None:
    """A reader sends only the strings that do not match `NORMAL_ASCII` through `normalise_query`: the rest
    must be their own normal form (and the JSON form of the pattern, a JSON string of such a text)."""
    if re.fullmatch(NORMAL_ASCII, text):
        assert normalise_query(text) == text
    literal = json.dumps(text, ensure_ascii=False)
    if re.fullmatch(JSON_NORMAL_ASCII, literal):
        assert json.loads(literal) == literal[1:-1] and normalise_query(literal[1:-1]) == literal[1:-1]
    assert bool(re.fullmatch(NORMAL_ASCII, text)) == bool(re.fullmatch(JSON_NORMAL_ASCII, literal)) or (
        '"' in text or "\\" in text
    )


def test_normal_ascii_matches_what_it_should() -> None:
    assert re.fullmatch(NORMAL_ASCII, "track my parcel #2 (fast)")
    for text in ("Track my parcel", "track  my parcel", " track", "track ", "tr\tack", "café", ""):
        assert not re.fullmatch(NORMAL_ASCII, text)
