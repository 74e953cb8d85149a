"""The variance of a traffic-weighted mean under the design its queries were drawn with, and its resamples.

The statistic is the ratio ``Δ_w = Σ w d / Σ w`` over the comparison's queries (a domain of a stratified
sample, :mod:`pytest_embeval.core.sample_design`), with ``w`` a query's traffic over its inclusion
probability, so that Δ_w is Hájek's estimator of the population's traffic-weighted mean.

**Linearisation** (Taylor; Särndal, Swensson & Wretman 1992 §5.7 and §10.3, Cochran 1977 §6.11; what
samplics' ``TaylorEstimator`` and R's ``svyratio`` compute): with ``u_i = w_i (d_i - Δ_w)`` for the domain's
queries and 0 for the other queries drawn in their cells, cell h contributes

    V_h = (1 - f_h) · n_h / (n_h - 1) · Σ_{i in h} (u_i - ū_h)²,   V(Δ_w) = Σ_h V_h / (Σ w)²,

``n_h`` its queries drawn, ``f_h = n_h / N_h`` its sampling fraction: a cell drawn whole (f_h = 1) adds 0. A
cell with one query drawn of several (a *lonely* one, whose spread the sample cannot show) adds
``(1 - f_h) u_i²``, its value's square about the mean of the linearised values, 0: R ``survey``'s
``lonely.psu = "adjust"``, which errs wide.

**Resamples** (the rescaling bootstrap of Rao & Wu 1988 with m_h = n_h - 1, Rao, Wu & Yue 1992; R's
``subbootweights`` with the finite-population correction, as ``svrep``'s Rao-Wu-Yue-Beaumont bootstrap
has it): in each replicate every cell of two or more queries, not drawn whole, draws ``m_h = n_h - 1`` of
its queries with replacement (``r_i`` times query i), and each query's weight is multiplied by
``1 - λ_h + λ_h (n_h / m_h) r_i``, ``λ_h = sqrt(m_h (1 - f_h) / (n_h - 1))``, which is ``sqrt(1 - f_h)``:
never negative, and the variance of a replicate's weighted total over the replicates is V_h exactly. A cell
drawn whole keeps its weights (λ = 0); a lonely cell's one query is multiplied by ``1 ± λ_h``, each with
chance 1/2 (the adjustment above, as a resample). The replicate recomputes the ratio, numerator and
denominator, ``Δ*``, and its own standard error for the studentized statistic ``t* = (Δ* - Δ_w) / se*``: the
linearised values of the m_h draws of each cell about the replicate's ratio, their sample variance s*²
times ``λ_h² n_h² / m_h`` (whose expectation over the replicates is V_h), over the replicate's total weight
squared. A cell of two queries draws one, which has no spread of its own: it adds its V_h as measured, and
so does a lonely cell.

Nothing here validates input: ``stats`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pytest_embeval.core.sample_design import CellLayout, DesignCells
from pytest_embeval.core.weighted_stats import weighted_mean

__all__ = ["DesignResamples", "Linearised", "design_cells", "design_resamples", "linearise"]

FloatArray = NDArray[np.float64]

#: As `bootstrap_intervals._FLAT`: a replicate whose spread is below this share of its sum of squares has
#: none (every value equal, up to rounding).
_FLAT = 1e-12
#: Draws per block of replicates: a block's draws and its counts of every query stay in cache.
_BLOCK_ELEMENTS = 1 << 16


@dataclass(frozen=True, slots=True)
class Linearised:
    """The linearisation variance of Δ_w under the design, and what it is made of."""

    delta: float
    variance: float
    #: each laid-out cell's V_h / (Σ w)², in layout order
    cell_variances: FloatArray
    #: Satterthwaite's degrees of freedom of the variance, ``(Σ V_h)² / Σ_h V_h² / (n_h - 1)`` (a lonely
    #: cell counts one); infinite when the variance is 0
    degrees_of_freedom: float

    @property
    def se(self) -> float:
        return math.sqrt(self.variance)


@dataclass(frozen=True, slots=True)
class DesignResamples:
    """The replicates of the rescaling bootstrap, in draw order."""

    #: each replicate's ratio Δ*
    means: FloatArray
    #: each replicate's ``(Δ* - Δ_w) / se*``: infinite for a replicate without spread (0 if Δ* is Δ_w)
    t: FloatArray


def _scaled(d: FloatArray, weights: FloatArray) -> tuple[float, float, FloatArray, FloatArray]:
    """``(Δ_w, scale, w, e)``: the weights scaled to at most 1, the deviations from Δ_w to at most 1 (no
    statistic here depends on either scale; it keeps squares clear of underflow)."""
    delta = weighted_mean(d, weights)
    e = d - delta
    scale = float(np.abs(e).max()) or 1.0
    return delta, scale, weights / weights.max(), e / scale


def linearise(d: FloatArray, weights: FloatArray, layout: CellLayout) -> Linearised:
    """The linearisation variance (module docstring) of the weighted mean of ``d`` (the comparison's
    differences, laid out by ``layout``)."""
    rows = layout.rows
    delta, scale, w, e = _scaled(d[rows], weights[rows])
    u = w * e
    sums = np.add.reduceat(u, layout.starts[:-1])
    squares = np.add.reduceat(u * u, layout.starts[:-1])
    n = layout.sampled.astype(np.float64)
    correction = 1.0 - layout.fraction
    lonely = layout.sampled == 1
    spread = squares - sums * sums / n  # Σ (u - ū)² over the n_h queries drawn, those outside the domain 0
    with np.errstate(divide="ignore", invalid="ignore"):
        within = np.where(lonely, squares, n / (n - 1.0) * np.maximum(spread, 0.0))
    cells = correction * within * (scale / float(w.sum())) ** 2
    cells[layout.whole] = 0.0
    variance = float(cells.sum())
    unsure = float(np.sum(cells * cells / np.maximum(n - 1.0, 1.0)))  # Satterthwaite's denominator
    return Linearised(delta, variance, cells, variance * variance / unsure if unsure > 0 else math.inf)


def design_cells(layout: CellLayout, linearised: Linearised) -> DesignCells:
    """The comparison's cells as plain numbers, each with its unit variance ``V_h n_h / (1 - f_h)`` (0 for a
    cell drawn whole), for the report and the queries needed."""
    n = layout.sampled.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = np.where(layout.whole, 0.0, linearised.cell_variances * n / (1.0 - layout.fraction))
    return DesignCells(
        present=tuple(int(k) for k in layout.present),
        sampled=tuple(int(k) for k in layout.sampled),
        population=tuple(int(k) for k in layout.population),
        unit_variance=tuple(float(g) for g in unit),
    )


def design_resamples(
    d: FloatArray,
    weights: FloatArray,
    layout: CellLayout,
    n_resamples: int,
    rng: np.random.Generator,
    fewer: int = 1,
) -> DesignResamples:
    """``n_resamples`` replicates of the rescaling bootstrap (module docstring) of the weighted mean of ``d``
    (laid out by ``layout``): a fixed function of the data and the generator's state, which advances. Each
    cell draws ``n_h - fewer`` of its queries: 1 is Rao, Wu & Yue's choice (the interval's); 0, Rao & Wu's
    n_h draws (whose weights can go below 0), is what ``benchmarks/design_intervals.py`` compared it with."""
    rows = layout.rows
    delta, scale, w, e = _scaled(d[rows], weights[rows])
    starts, present, n = layout.starts, layout.present, layout.sampled
    fraction = layout.fraction
    draws_of = np.maximum(n - fewer, 1)
    lam = np.sqrt(draws_of * (1.0 - fraction) / np.maximum(n - 1, 1))
    # Each cell's totals Σ w and Σ w e, and its linearisation numerator V_h (Σ w)² at Δ_w.
    totals_w = np.add.reduceat(w, starts[:-1])
    totals_we = np.add.reduceat(w * e, starts[:-1])
    fixed = linearise(d, weights, layout).cell_variances * float(w.sum()) ** 2 / scale**2
    whole = layout.whole
    lonely = (n == 1) & ~whole
    drawn = (n >= 2) & ~whole
    restudied = (draws_of >= 2) & drawn  # cells whose own spread a replicate measures again
    # The draws: m_h = n_h - 1 columns per drawn cell, each picking one of its n_h queries; those past the
    # domain's rows of the cell are the zero row at the end of the table.
    cells_drawn = np.flatnonzero(drawn)
    m = draws_of[cells_drawn]
    column_cell = np.repeat(np.arange(cells_drawn.size), m)
    column_high = n[cells_drawn][column_cell]
    column_present = present[cells_drawn][column_cell]
    column_start = starts[cells_drawn][column_cell]
    spans = [(int(starts[h]), int(starts[h] + present[h])) for h in cells_drawn]
    w2 = w * w
    table = np.zeros((w.size + 1, 5))
    table[:-1] = np.column_stack([w, w * e, w2, w2 * e, w2 * e * e])
    zero_row = w.size
    # The replicate totals of the cells that are not drawn from: whole cells as they are; lonely cells with
    # their weight times 1 ± λ.
    base_w = float(totals_w[whole].sum())
    base_we = float(totals_we[whole].sum())
    lonely_cells = np.flatnonzero(lonely)
    fixed_spread = float(fixed[lonely].sum() + fixed[drawn & ~restudied].sum())
    lam_drawn, n_drawn = lam[cells_drawn], n[cells_drawn].astype(np.float64)
    rescale = lam_drawn * n_drawn / m  # λ (n / m): the weight of one draw
    keep = 1.0 - lam_drawn  # the weight every query of the cell keeps
    again = restudied[cells_drawn]
    spread_factor = np.where(again, lam_drawn**2 * n_drawn**2 / m, 0.0)
    means = np.empty(n_resamples)
    t = np.empty(n_resamples)
    width = max(int(column_cell.size), 1)
    block = max(1, min(n_resamples, _BLOCK_ELEMENTS // width))
    for start in range(0, n_resamples, block):
        count = min(block, n_resamples - start)
        a = np.full(count, base_w)
        b = np.full(count, base_we)
        if lonely_cells.size:
            signs = rng.integers(0, 2, size=(count, lonely_cells.size)) * 2.0 - 1.0
            factor = 1.0 + signs * lam[lonely_cells]
            a += factor @ totals_w[lonely_cells]
            b += factor @ totals_we[lonely_cells]
        sums = np.zeros((count, 0, 5))
        if column_cell.size:
            local = rng.integers(0, column_high, size=(count, column_cell.size))
            index = np.where(local < column_present, column_start + local, zero_row)
            # Each replicate's count of every query (one bincount), then each cell's five sums as one
            # product of its queries' counts and columns: cheaper than gathering the columns per draw.
            slots = (index + np.arange(count)[:, None] * (zero_row + 1)).ravel()
            counts = np.bincount(slots, minlength=count * (zero_row + 1)).reshape(count, zero_row + 1)
            counts = counts.astype(np.float64)
            sums = np.empty((count, cells_drawn.size, 5))
            for k, (low, high) in enumerate(spans):
                np.matmul(counts[:, low:high], table[low:high], out=sums[:, k])
            a += (keep * totals_w[cells_drawn]).sum() + sums[:, :, 0] @ rescale
            b += (keep * totals_we[cells_drawn]).sum() + sums[:, :, 1] @ rescale
        shift = b / a  # Δ* - Δ_w, in units of the scale
        spread = np.full(count, fixed_spread)
        squares = np.full(count, fixed_spread)
        if column_cell.size and again.any():
            ratio = shift[:, None]
            first = sums[:, :, 1] - ratio * sums[:, :, 0]  # Σ r w (e - δ*)
            second = sums[:, :, 4] - 2.0 * ratio * sums[:, :, 3] + ratio * ratio * sums[:, :, 2]
            mm = m.astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                variance = np.where(again, (second - first * first / mm) / (mm - 1.0), 0.0)
            spread += np.maximum(variance, 0.0) @ spread_factor
            squares += np.where(again, second / np.maximum(mm - 1.0, 1.0), 0.0) @ spread_factor
        flat = spread <= _FLAT * squares
        with np.errstate(divide="ignore", invalid="ignore"):
            block_t = shift * a / np.sqrt(spread)
        block_t[flat] = np.where(shift[flat] == 0.0, 0.0, np.copysign(math.inf, shift[flat]))
        means[start : start + count] = delta + scale * shift
        t[start : start + count] = block_t
    return DesignResamples(means, t)
