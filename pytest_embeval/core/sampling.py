"""Drawing a golden set from production: query normalisation, frequency bands, the apportionment of a sample
across strata and bands, and a reservoir for one pass over a corpus of any size.

Plain functions of counts and a `numpy.random.Generator`; reading logs and corpora is for
`golden/query_log.py` and `golden/corpus_draw.py`.

The apportionment (`apportion`) is the largest-remainder method with bounds: part i's quota is
``clamp(λ·weight_i, floor_i, cap_i)`` for the one λ at which the quotas add up to the total (a part that
proportion would give less than its floor gets its floor, one it would give more than its cap gets its cap,
and the others share the rest in proportion), each part gets its quota's integer part, and the seats left
over go one each to the largest fractional parts (ties: the earlier part). `golden/query_log.py` applies it
to strata (weights: traffic; floor: the smaller of ``--floor`` and the stratum's distinct queries; cap: its
distinct queries) and then to the bands of each stratum (weights: the band's traffic, the head's multiplied
by ``--head-boost``; cap: the band's distinct queries).
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from pytest_embeval.core.draws_ahead import Draws, ScalarDraws, draws_for

__all__ = [
    "NORMAL_ASCII",
    "TAIL",
    "Reservoir",
    "apportion",
    "band_names",
    "band_spans",
    "frequency_bands",
    "normalise_query",
    "parse_bands",
]

#: The band of the traffic left after the declared ones.
TAIL = "tail"

T = TypeVar("T")

#: A regular expression (the same in Python's ``re`` and in RE2, DuckDB's) that only strings already in
#: `normalise_query`'s form match: printable ASCII other than the capitals A-Z, in words one space apart.
#: Such a string is its own normal form (ASCII is NFKC already, it has no capitals to fold and no whitespace
#: to collapse), so a reader over millions of distinct strings sends only the others through the function.
NORMAL_ASCII = r"[!-@\[-~]+( [!-@\[-~]+)*"


def normalise_query(text: str) -> str:
    """The form two spellings of one query share: Unicode NFKC with case folding (NFKC, ``casefold``, NFKC
    again, as Unicode's NFKC_Casefold), every run of whitespace one space, none at either end: ``"Track
    my\\tParcel "``, ``"track  my parcel"`` and the same in full-width letters are one query."""
    if text.isascii():  # NFKC leaves ASCII as it is, and casefold is lower (a log is mostly ASCII)
        return " ".join(text.lower().split())
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def parse_bands(text: str) -> tuple[tuple[str, float], ...]:
    """``head=0.33,torso=0.33`` -> ``(("head", 0.33), ("torso", 0.33))``: the leading bands and the share of
    traffic each covers, in order; the rest of the traffic is the `TAIL` band. `ValueError` naming the
    problem for an empty list, a part without ``=``, a name repeated or called ``tail``, a share that is not
    a number above 0, or shares adding up to 1 or more (no traffic left for the tail)."""
    bands: list[tuple[str, float]] = []
    for part in text.split(","):
        name, equals, share_text = part.strip().partition("=")
        name = name.strip()
        if not equals or not name:
            raise ValueError(f"expected NAME=SHARE[,NAME=SHARE...], e.g. head=0.33,torso=0.33, got {text!r}")
        if name == TAIL:
            raise ValueError(f"{TAIL!r} is the traffic left after the declared bands; do not declare it")
        if any(name == seen for seen, _ in bands):
            raise ValueError(f"band {name!r} declared twice")
        try:
            share = float(share_text)
        except ValueError:
            share = math.nan
        if not 0 < share < 1:
            raise ValueError(
                f"band {name!r}: expected a share of traffic above 0 and below 1, got {share_text!r}"
            )
        bands.append((name, share))
    total = sum(share for _, share in bands)
    if total >= 1 - 1e-9:
        raise ValueError(
            f"the bands' shares add up to {total:g}: they must leave traffic for the {TAIL!r} band"
        )
    return tuple(bands)


def band_names(bands: Sequence[tuple[str, float]]) -> tuple[str, ...]:
    """The declared bands' names and `TAIL`, in order."""
    return (*(name for name, _ in bands), TAIL)


def frequency_bands(frequencies: Sequence[int], bands: Sequence[tuple[str, float]]) -> list[str]:
    """The band of each distinct query, ``frequencies`` given most frequent first: a query belongs to the
    first band whose cumulative share of traffic the queries before it have not yet reached, so the query
    that crosses a boundary belongs to the band it completes (with ``head=0.33``, the head is the fewest
    most frequent queries that together make at least a third of the traffic)."""
    if any(later > earlier for earlier, later in itertools.pairwise(frequencies)):
        raise ValueError("frequencies must be given most frequent first")
    levels = [(frequency, len(list(run))) for frequency, run in itertools.groupby(frequencies)]
    names = band_names(bands)
    return [
        names[band]
        for spans in band_spans(levels, bands)
        for band, start, end in spans
        for _ in range(start, end)
    ]


def band_spans(
    levels: Sequence[tuple[int, int]], bands: Sequence[tuple[str, float]]
) -> list[list[tuple[int, int, int]]]:
    """`frequency_bands` for distinct queries counted by frequency: ``levels`` is (frequency, queries) for
    each frequency, most frequent first, and each level's queries are given as spans of the one order
    within it, (band index into `band_names`, first, end): all one band but where a boundary falls inside the
    level. A log of millions of distinct queries has a few thousand levels, and at most one span more than
    levels per declared band. The comparisons are `frequency_bands`' own: the traffic before a query (an
    exact integer) against each bound less a relative 1e-9."""
    total = sum(frequency * queries for frequency, queries in levels)
    bounds: list[float] = []
    for _, share in bands:
        bounds.append((bounds[-1] if bounds else 0.0) + share * total)
    reached = [bound - 1e-9 * total for bound in bounds]
    result: list[list[tuple[int, int, int]]] = []
    before = 0
    for frequency, queries in levels:
        spans: list[tuple[int, int, int]] = []
        first = 0
        while first < queries:
            band = sum(before + first * frequency >= bound for bound in reached)
            end = queries
            if band < len(reached):
                # The first query at or past the next bound: from the division, then exactly.
                end = min(queries, max(first + 1, math.ceil((reached[band] - before) / frequency)))
                while end > first + 1 and before + (end - 1) * frequency >= reached[band]:
                    end -= 1
                while end < queries and before + end * frequency < reached[band]:
                    end += 1
            spans.append((band, first, end))
            first = end
        result.append(spans)
        before += frequency * queries
    return result


def apportion(
    total: int, weights: Sequence[float], caps: Sequence[int], floors: Sequence[int] | None = None
) -> list[int]:
    """``total`` seats split among parts in proportion to ``weights``, each part between its floor and its
    cap (see the module): part i's quota is ``clamp(λ·weights[i], floors[i], caps[i])``, with the one λ at
    which the quotas add up to ``total``; each part gets its quota's integer part, and the seats left over
    go one each to the largest fractional parts (ties: the earlier part). `ValueError` when the bounds
    cannot be met (the floors add up to more than ``total``, or the caps of the parts with weight to less)
    or a weight is negative."""
    n = len(weights)
    lows = [0] * n if floors is None else list(floors)
    if len(caps) != n or len(lows) != n:
        raise ValueError(f"{n} weights but {len(caps)} caps and {len(lows)} floors")
    if any(not (w >= 0 and math.isfinite(w)) for w in weights):
        raise ValueError(f"weights must be finite and >= 0, got {list(weights)}")
    if any(not 0 <= low <= cap for low, cap in zip(lows, caps, strict=True)):
        raise ValueError(f"each floor must be between 0 and its cap, got floors {lows} and caps {list(caps)}")
    if sum(lows) > total:
        raise ValueError(f"the floors add up to {sum(lows)}, more than the {total} to give")
    most = sum(cap if w > 0 else low for w, low, cap in zip(weights, lows, caps, strict=True))
    if most < total:
        raise ValueError(f"the caps add up to {most}, fewer than the {total} to give")
    scale = _water_level(total, weights, lows, caps)
    quotas = [min(max(scale * w, low), cap) for w, low, cap in zip(weights, lows, caps, strict=True)]
    seats = [math.floor(q) for q in quotas]
    by_remainder = sorted(range(n), key=lambda i: (-(quotas[i] - seats[i]), i))
    while sum(seats) < total:  # more than one round only through rounding error in the quotas
        for i in by_remainder:
            if sum(seats) < total and seats[i] < caps[i]:
                seats[i] += 1
    return seats


def _water_level(total: int, weights: Sequence[float], lows: Sequence[int], caps: Sequence[int]) -> float:
    """The λ of `apportion`: ``sum(clamp(λ·w, low, cap)) == total``. The sum grows piecewise linearly in λ,
    bending where a part leaves its floor (λ = low/w) or reaches its cap (λ = cap/w); λ is found on the
    segment between the two bends whose sums enclose ``total``."""

    def placed(scale: float) -> float:
        return sum(min(max(scale * w, low), cap) for w, low, cap in zip(weights, lows, caps, strict=True))

    bends = sorted(
        {0.0, *(b / w for w, low, cap in zip(weights, lows, caps, strict=True) if w > 0 for b in (low, cap))}
    )
    below = 0.0
    for bend in bends:
        if placed(bend) >= total:
            break
        below = bend
    else:
        return bends[-1]
    # Linear between ``below`` and ``bend``: the parts that are free there have a fixed total weight.
    middle = (below + bend) / 2
    free = [i for i, w in enumerate(weights) if w > 0 and lows[i] < middle * w < caps[i]]
    fixed = placed(middle) - sum(middle * weights[i] for i in free)
    weight = sum(weights[i] for i in free)
    return bend if weight == 0 else (total - fixed) / weight


def _uniform(draws: Draws) -> float:
    """A uniform number in (0, 1): its logarithm is finite, and so is that of 1 minus it."""
    value = 0.0
    while value == 0.0:
        value = draws.random()
    return value


@dataclass(slots=True)
class Reservoir(Generic[T]):
    """A uniform sample without replacement of ``size`` items from a stream of unknown length, in one pass
    and ``size`` items of memory: Li's Algorithm L (1994), which draws how many items to skip rather than one
    random number per item, so a pass over nine million items draws a few thousand numbers.

    ``offer`` each item in turn; ``items`` is the sample (every subset of ``size`` of the items offered is
    equally likely), in no particular order, with the position each item was offered at.
    """

    size: int
    rng: np.random.Generator
    items: list[tuple[int, T]]
    seen: int = 0
    _weight: float = 0.0
    _next: int = 0
    #: ``rng``'s draws one call each, for items offered one at a time
    _scalar: ScalarDraws = field(init=False, repr=False, compare=False)

    @classmethod
    def of(cls, size: int, rng: np.random.Generator) -> Reservoir[T]:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        return cls(size, rng, [])

    def __post_init__(self) -> None:
        self._scalar = ScalarDraws(self.rng)

    def _skip(self, draws: Draws) -> None:
        self._next += math.floor(math.log(_uniform(draws)) / math.log1p(-self._weight)) + 1

    def _replace(self, position: int, item: T, draws: Draws) -> None:
        """``item`` takes a place drawn uniformly, the weight shrinks, and the next replacement is drawn."""
        self.items[draws.integers(self.size)] = (position, item)
        self._weight *= math.exp(math.log(_uniform(draws)) / self.size)
        self._skip(draws)

    def offer(self, item: T) -> None:
        position = self.seen
        self.seen += 1
        if self.size == 0:
            return
        if position < self.size:
            self.items.append((position, item))
            if position == self.size - 1:
                self._weight = math.exp(math.log(_uniform(self._scalar)) / self.size)
                self._next = position
                self._skip(self._scalar)
            return
        if position == self._next:
            self._replace(position, item, self._scalar)

    def offer_positions(self: Reservoir[int], count: int) -> None:
        """Offer the next ``count`` items, each item its own position, with the same draws as offering them
        one at a time: the stream is then only counted, and the reservoir jumps from one replacement to the
        next (a reader that knows how many items a file holds, and reads the kept ones afterwards)."""
        end = self.seen + count
        while self.seen < min(end, self.size):
            self.offer(self.seen)
        if self.size and self.seen >= self.size:  # full: from here on, only replacements draw
            # The same numbers as one numpy call each, drawn ahead (`draws_ahead`): a few times faster.
            draws = draws_for(self.rng, self.size)
            try:
                while self._next < end:
                    self._replace(self._next, self._next, draws)
            finally:
                draws.close()
        self.seen = end
