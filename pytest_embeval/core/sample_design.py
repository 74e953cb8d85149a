"""How a sample of queries was drawn: a stratified design, each *cell*'s queries drawn uniformly without
replacement (`embeval sample` draws each (stratum, band) cell so), and what a comparison needs of it.

A `SampleDesign` names each query's cell and each cell's *population*, its number of distinct queries;
``sampled`` is each cell's number of queries drawn, when the queries compared are only some of them (a
stratum of the golden set, or the queries left after those without judgments are dropped): the others
count in their cell as queries outside the comparison (a *domain*, in survey terms), which is how a domain's
variance is estimated from a stratified sample (Särndal, Swensson & Wretman 1992, *Model Assisted Survey
Sampling*, §10.3; samplics and R's ``survey`` do the same). A cell drawn whole (sampled = population) is
the population itself and carries no sampling error.

`CellLayout` is the design laid out for one comparison: the domain's rows grouped by cell, each cell's
sample and population sizes. `design_variance` and `design_resamples`
(:mod:`pytest_embeval.core.design_variance`) work on it. Input is checked by ``stats``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from pytest_embeval.core.sampling import apportion

__all__ = [
    "NO_DESIGN",
    "STRATIFIED",
    "CellLayout",
    "DesignCells",
    "SampleDesign",
    "cell_layout",
    "design_words",
]

#: A report's record of the design: stratified, or none (weights alone: the with-replacement interval).
STRATIFIED = "stratified"
NO_DESIGN: dict[str, str | int] = {"kind": "none"}


def design_words(design: Mapping[str, object]) -> str:
    """Which variance a weighted interval uses: ``design: stratified, 7 cells, 2 drawn whole``, or
    ``design: none`` (weights alone: the queries resampled with replacement)."""
    if design["kind"] == "none":
        return "design: none"
    cells = f"{design['cells']} {'cell' if design['cells'] == 1 else 'cells'}"
    return f"design: {design['kind']}, {cells}, {design['drawn_whole']} drawn whole"


FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class DesignCells:
    """The cells one comparison's queries fall in, as plain numbers (they cross processes with xdist): per
    cell, the comparison's queries in it (``present``), the queries drawn (``sampled``) of its distinct
    queries (``population``), and its *unit variance* g_h, such that the cell adds
    ``g_h (1 - n_h / N_h) / n_h`` to the variance of Δ_w when n_h of its N_h queries are drawn.

    Drawing more queries (`variance_at`) grows every cell in proportion to its draw, capped at its
    population (`sampling.apportion`, the rule ``embeval sample`` applies), so a cell drawn whole stays whole
    and adds nothing, and the variance reaches 0 when every cell is drawn whole: the queries needed
    (`queries_needed`) count that finite population, which the with-replacement ``paired_n`` cannot."""

    present: tuple[int, ...]
    sampled: tuple[int, ...]
    population: tuple[int, ...]
    unit_variance: tuple[float, ...]

    @property
    def cells(self) -> int:
        return len(self.present)

    @property
    def drawn_whole(self) -> int:
        return sum(n == big for n, big in zip(self.sampled, self.population, strict=True))

    def record(self) -> dict[str, str | int]:
        """As a report records a design: ``{"kind": "stratified", "cells": 7, "drawn_whole": 2}``."""
        return {"kind": STRATIFIED, "cells": self.cells, "drawn_whole": self.drawn_whole}

    def variance_at(self, drawn: int) -> float:
        """The variance of Δ_w with ``drawn`` queries drawn from these cells (at least those drawn now,
        at most their population), each cell's draw grown in proportion."""
        grown = apportion(drawn, [float(n) for n in self.sampled], self.population, self.sampled)
        return sum(
            g * (1.0 - k / big) / k
            for g, k, big in zip(self.unit_variance, grown, self.population, strict=True)
            if k < big
        )

    def queries_needed(self, margin: float, z: float) -> int | None:
        """The comparison's queries needed for ``z · se`` to reach ``margin`` (z: the normal quantiles of
        the minimum detectable effect), drawing more from these cells; None when the present draw does."""
        drawn, everything = sum(self.sampled), sum(self.population)
        target = (margin / z) ** 2
        if self.variance_at(drawn) <= target:
            return None
        low, high = drawn, everything  # the variance is 0 with every cell drawn whole
        while high - low > 1:
            middle = (low + high) // 2
            if self.variance_at(middle) <= target:
                high = middle
            else:
                low = middle
        # In the comparison's own queries: each cell's share of them times its grown draw.
        grown = apportion(high, [float(n) for n in self.sampled], self.population, self.sampled)
        return math.ceil(
            sum(p * k / n for p, k, n in zip(self.present, grown, self.sampled, strict=True)) - 1e-9
        )


@dataclass(frozen=True, slots=True)
class SampleDesign:
    """A stratified draw without replacement: each query's cell (in query order), and per cell the distinct
    queries of the population (``population``) and, where the queries given are not all the draw took from
    it, the queries drawn (``sampled``; default: how many of ``cells`` name it)."""

    cells: tuple[Hashable, ...]
    population: Mapping[Hashable, int]
    sampled: Mapping[Hashable, int] | None = field(default=None)

    def record(self) -> dict[str, str | int]:
        """As a report records a design (`DesignCells.record`), over every cell drawn from."""
        drawn = self.drawn()
        whole = sum(drawn[cell] == size for cell, size in self.population.items() if drawn.get(cell))
        return {"kind": STRATIFIED, "cells": sum(1 for k in drawn.values() if k), "drawn_whole": whole}

    def drawn(self) -> dict[Hashable, int]:
        """Each cell's queries drawn: ``sampled``, or counted from ``cells``."""
        return dict(Counter(self.cells)) if self.sampled is None else dict(self.sampled)

    def rows(self, rows: Sequence[int] | NDArray[np.intp]) -> SampleDesign:
        """The design of the queries at ``rows`` (a stratum's): their cells, with every cell's draw kept, so
        that the other queries drawn in a cell count as outside the comparison."""
        return SampleDesign(tuple(self.cells[int(i)] for i in rows), self.population, self.drawn())


@dataclass(frozen=True, slots=True)
class CellLayout:
    """A design laid out for one comparison: the positions of its queries (those of the domain, with a
    finite difference, numbered in order among themselves) grouped by cell; cell ``h`` holds
    ``rows[starts[h]:starts[h + 1]]``, ``present[h]`` of them, among ``sampled[h]`` queries drawn from its
    ``population[h]``. Only cells that hold a query of the comparison are laid out: the others add nothing
    to its variance."""

    rows: IntArray
    starts: IntArray
    present: IntArray
    sampled: IntArray
    population: IntArray

    @property
    def fraction(self) -> FloatArray:
        """Each cell's sampling fraction, sampled / population."""
        fraction: FloatArray = self.sampled / self.population
        return fraction

    @property
    def whole(self) -> NDArray[np.bool_]:
        """The cells drawn whole."""
        whole: NDArray[np.bool_] = self.sampled == self.population
        return whole


def cell_layout(design: SampleDesign, keep: NDArray[np.bool_]) -> CellLayout:
    """The layout of the queries ``keep`` marks (the domain) among ``design.cells``, the design already
    checked (``stats``)."""
    drawn = design.drawn()
    names: dict[Hashable, int] = {}
    index = np.empty(len(design.cells), dtype=np.intp)
    for i, cell in enumerate(design.cells):
        index[i] = names.setdefault(cell, len(names))
    kept = index[keep]
    # Stable: within a cell the queries keep their order, so the layout (and the resamples) depend on it only.
    rows = np.argsort(kept, kind="stable").astype(np.intp)
    cells, present = np.unique(kept, return_counts=True)
    by_index = list(names)
    return CellLayout(
        rows=rows,
        starts=np.concatenate([[0], np.cumsum(present)]).astype(np.intp),
        present=present.astype(np.intp),
        sampled=np.array([drawn[by_index[h]] for h in cells], dtype=np.intp),
        population=np.array([design.population[by_index[h]] for h in cells], dtype=np.intp),
    )
