"""The traffic-weighted comparison under the design the sample was drawn with (`sample_design`,
`design_variance`, `compare_paired(weights=..., design=...)`), as a specification: a case worked by hand,
samplics' Taylor linearisation as an oracle, the rescaling bootstrap enumerated, the input errors."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from pytest_embeval.core.design_variance import design_resamples, linearise
from pytest_embeval.core.sample_design import DesignCells, SampleDesign, cell_layout
from pytest_embeval.core.stats import INTERVALS, DegenerateComparisonWarning, compare_paired, z_sum
from pytest_embeval.core.verdict import TieReason, classify_metric


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# Two cells. A is drawn whole: both of its 2 distinct queries, frequency 4 each, inclusion 1, weight 4.
# B has 6 distinct queries, 3 drawn (inclusion 1/2), frequency 1 each, weight 1 / (1/2) = 2.
CELLS = ("A", "A", "B", "B", "B")
POPULATION = {"A": 2, "B": 6}
D = np.array([1.0, 0.0, 0.5, 0.0, -0.5])
W = np.array([4.0, 4.0, 2.0, 2.0, 2.0])


def test_hand_derived_two_cells_one_drawn_whole() -> None:
    """Δ_w = Σ w d / Σ w = (4·1 + 2·0.5 - 2·0.5) / 14 = 4/14 = 2/7.

    Linearised values u = w (d - Δ_w): in B, 2·(0.5 - 2/7) = 3/7, 2·(0 - 2/7) = -4/7, 2·(-0.5 - 2/7) = -11/7,
    mean -4/7, deviations 1, 0, -1, Σ (u - ū)² = 2. B's sampling fraction is 3/6, so
    V_B = (1 - 1/2) · 3/(3 - 1) · 2 = 1.5; A is drawn whole: V_A = 0 whatever its differences.
    V(Δ_w) = (V_A + V_B) / (Σ w)² = 1.5 / 196 = 3/392, se = sqrt(3/392) = 0.08748.

    Without the design (the with-replacement linearisation, `weighted_stats`): n/(n - 1) Σ w² e² / (Σ w)² =
    5/4 · (16 (25 + 4)/49 + 4 (9 + 16 + 121)/196) / 196 = 5/4 · (464/49 + 146/49) / 196 = 0.07943, 10.4 times
    the design's: the head cell's heavy weights are resampled as if they could be missed.
    """
    layout = cell_layout(SampleDesign(CELLS, POPULATION), np.ones(5, dtype=bool))
    found = linearise(D, W, layout)
    assert found.delta == pytest.approx(2 / 7, rel=1e-15)
    assert found.variance == pytest.approx(3 / 392, rel=1e-14)
    assert list(found.cell_variances) == pytest.approx([0.0, 3 / 392], rel=1e-14)
    a = np.full(5, 0.5)
    # B draws two of its three queries per replicate, both the same one a third of the time: no spread, so
    # the studentized interval is unbounded and the percentile one of the same replicates is given.
    with pytest.warns(DegenerateComparisonWarning, match="unbounded"):
        c = compare_paired(
            a, a + D, rng=rng(1), n_resamples=2000, weights=W, design=SampleDesign(CELLS, POPULATION)
        )
    assert c.interval == "percentile"
    se = math.sqrt(3 / 392)
    assert c.delta == pytest.approx(2 / 7, rel=1e-15)
    assert c.sd == pytest.approx(se * math.sqrt(5), rel=1e-14)  # so that sd / sqrt(n) is the design's se
    assert c.mde == pytest.approx(z_sum(0.05, 0.8) * se, rel=1e-14)
    assert c.design == DesignCells((2, 3), (2, 3), (2, 6), (0.0, 3 / 392 * 3 / 0.5))
    plain = compare_paired(a, a + D, rng=rng(1), n_resamples=2000, weights=W)
    assert (plain.sd / math.sqrt(5)) ** 2 == pytest.approx(5 / 4 * (464 / 49 + 146 / 49) / 196, rel=1e-12)
    # A's differences do not move the variance: it is the population.
    moved = linearise(np.array([-1.0, 1.0, 0.5, 0.0, -0.5]), W, layout)
    assert moved.cell_variances[0] == 0.0


def test_the_rescaling_bootstrap_of_the_hand_derived_case_by_enumeration() -> None:
    """B draws m = 2 of its 3 queries with replacement (9 equally likely ordered draws), λ = sqrt(1 - 1/2);
    query i's weight is multiplied by 1 - λ + λ (3/2) r_i. A keeps its weights. The replicates' Δ* are
    exactly the 9 enumerated values, each about 1/9 of the time, and their variance over the 9 is V(Δ_w)
    up to the ratio's curvature."""
    layout = cell_layout(SampleDesign(CELLS, POPULATION), np.ones(5, dtype=bool))
    lam = math.sqrt(0.5)
    enumerated = []
    for draws in itertools.product(range(3), repeat=2):
        r = np.bincount(draws, minlength=3)
        w = W.copy()
        w[2:] *= 1 - lam + lam * 1.5 * r
        enumerated.append(float(np.dot(w, D) / w.sum()))
    replicates = design_resamples(D, W, layout, 18_000, rng(7))
    values, counts = np.unique(np.round(replicates.means, 12), return_counts=True)
    expected, multiplicity = np.unique(np.round(enumerated, 12), return_counts=True)
    assert list(values) == list(expected)
    assert counts / counts.sum() == pytest.approx(multiplicity / 9, abs=0.02)
    assert np.var(enumerated) == pytest.approx(3 / 392, rel=0.1)


def test_a_sample_drawn_whole_has_no_sampling_error() -> None:
    design = SampleDesign(("A", "A", "A"), {"A": 3})
    c = compare_paired([0.2, 0.4, 0.5], [0.5, 0.4, 0.6], rng=rng(1), weights=[1.0, 2.0, 3.0], design=design)
    assert c.delta == pytest.approx((0.3 + 0.3) / 6)
    assert (c.ci_low, c.ci_high) == (c.delta, c.delta)
    assert (c.sd, c.mde, c.p_value) == (0.0, 0.0, 0.0)
    assert c.design is not None and c.design.record() == {"kind": "stratified", "cells": 1, "drawn_whole": 1}


def _samplics_variance(
    d: np.ndarray, w: np.ndarray, cells: list[str], population: dict[str, int], domain: np.ndarray
) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # samplics announces that it is archived
        from samplics.estimation import TaylorEstimator
        from samplics.utils.types import PopParam

    fpc = {cell: 1.0 - cells.count(cell) / size for cell, size in sorted(population.items())}
    estimator = TaylorEstimator(PopParam.ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # samplics announces that it is archived
        estimator.estimate(
            y=w * d,
            x=w,
            samp_weight=np.ones(d.size),
            stratum=np.array(cells),
            psu=np.arange(d.size),
            fpc=fpc,
            domain=np.where(domain, "in", "out"),
        )
    return float(estimator.variance["in"])


@pytest.mark.parametrize("seed", range(6))
def test_the_linearisation_variance_is_samplics_taylor_variance_of_a_domain_ratio(seed: int) -> None:
    """samplics' TaylorEstimator (ratio of Σ w d to Σ w, stratified, one query per PSU, fpc 1 - n_h/N_h per
    cell, the comparison's queries a domain) is the oracle; the queries outside the domain are NaN pairs,
    which `compare_paired` drops but counts as drawn in their cells."""
    g = rng(seed)
    sizes = g.integers(2, 9, size=5)
    cells = [f"c{h}" for h, k in enumerate(sizes) for _ in range(k)]
    population = {f"c{h}": int(k + g.integers(0, 3) * g.integers(0, 40)) for h, k in enumerate(sizes)}
    n = len(cells)
    d = g.choice([-1.0, -0.3, 0.0, 0.0, 0.2, 0.5, 1.0], size=n) + g.normal(0.0, 0.05, n)
    w = g.pareto(1.2, n) + 1.0
    domain = g.uniform(size=n) < 0.8
    domain[[0, -1]] = True
    expected = _samplics_variance(d, w, cells, population, domain)
    incumbent = np.where(domain, 0.5, np.nan)
    c = compare_paired(
        incumbent,
        incumbent + d,
        rng=rng(1),
        n_resamples=200,
        weights=w,
        design=SampleDesign(tuple(cells), population),
    )
    assert c.n == int(domain.sum()) and c.excluded == int((~domain).sum())
    assert (c.sd / math.sqrt(c.n)) ** 2 == pytest.approx(expected, rel=1e-10)


def test_a_stratum_of_the_sample_is_a_domain_whatever_rows_it_takes() -> None:
    """`SampleDesign.rows` keeps every cell's draw: the stratum's comparison equals the whole sample's with
    the other queries NaN."""
    g = rng(3)
    cells = tuple(f"c{i % 4}" for i in range(40))
    population = {f"c{h}": 50 + 10 * h for h in range(4)}
    d, w = g.normal(0.0, 0.3, 40), g.uniform(1.0, 30.0, 40)
    rows = np.flatnonzero(g.uniform(size=40) < 0.5)
    a = np.full(40, 0.5)
    part = compare_paired(
        a[rows],
        a[rows] + d[rows],
        rng=rng(1),
        weights=w[rows],
        design=SampleDesign(cells, population).rows(rows),
    )
    masked = np.full(40, np.nan)
    masked[rows] = 0.5
    whole = compare_paired(masked, masked + d, rng=rng(1), weights=w, design=SampleDesign(cells, population))
    assert part.sd / math.sqrt(part.n) == pytest.approx(whole.sd / math.sqrt(whole.n), rel=1e-12)
    assert (part.ci_low, part.ci_high) == pytest.approx((whole.ci_low, whole.ci_high), rel=1e-12)


def test_a_lonely_cell_adds_its_square_about_zero() -> None:
    """One query drawn of 10 in cell B (R survey's lonely.psu = "adjust"): u = w (d - Δ_w) centred at the
    linearised values' mean, 0, times 1 - f = 0.9. d = (0.2, 0.4 | 1.0), w = (1, 1 | 2), A drawn whole:
    Δ_w = 2.6 / 4 = 0.65, u_B = 2 · 0.35 = 0.7, V = 0.9 · 0.49 / 16."""
    layout = cell_layout(SampleDesign(("A", "A", "B"), {"A": 2, "B": 10}), np.ones(3, dtype=bool))
    found = linearise(np.array([0.2, 0.4, 1.0]), np.array([1.0, 1.0, 2.0]), layout)
    assert found.variance == pytest.approx(0.9 * 0.49 / 16, rel=1e-14)
    replicates = design_resamples(np.array([0.2, 0.4, 1.0]), np.array([1.0, 1.0, 2.0]), layout, 4000, rng(2))
    # Its weight is 2 (1 ± sqrt(0.9)), each half of the time: exactly two replicate means.
    assert np.unique(np.round(replicates.means, 12)).size == 2


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_design_interval_is_seeded_shift_equivariant_and_scale_free(interval: str) -> None:
    """Shifting every difference by c shifts the interval by c (the design-based null: the population moved
    so that its weighted mean is 0, the same draw, gives the same interval moved), and scaling the weights
    changes nothing."""
    g = rng(5)
    cells = tuple(g.choice(["h", "t1", "t2"], size=50).tolist())
    population = {"h": cells.count("h"), "t1": 400, "t2": 90}
    design = SampleDesign(cells, population)
    d, w = g.normal(0.04, 0.25, 50), g.pareto(1.5, 50) + 1.0
    a = np.full(50, 0.5)
    one = compare_paired(a, a + d, rng=rng(9), weights=w, design=design, interval=interval, n_resamples=3000)
    again = compare_paired(
        a, a + d, rng=rng(9), weights=w, design=design, interval=interval, n_resamples=3000
    )
    moved = compare_paired(
        a, a + d - 0.1, rng=rng(9), weights=w, design=design, interval=interval, n_resamples=3000
    )
    scaled = compare_paired(
        a, a + d, rng=rng(9), weights=w * 1e3, design=design, interval=interval, n_resamples=3000
    )
    assert one == again
    assert (moved.ci_low + 0.1, moved.ci_high + 0.1) == pytest.approx((one.ci_low, one.ci_high), abs=1e-12)
    assert (scaled.ci_low, scaled.ci_high) == pytest.approx((one.ci_low, one.ci_high), rel=1e-12)


def test_the_queries_needed_count_the_finite_population() -> None:
    """One cell of N = 100, unit variance g: V(n) = g (1 - n/N) / n. With g = 1 and z = 2.8, a margin of
    0.2 needs V <= (0.2/2.8)² = 1/196: (1 - n/100)/n <= 1/196 -> n >= 196·100/296 = 66.2, so 67 queries,
    where the with-replacement count (z/m)² g = 196 exceeds the population."""
    cells = DesignCells(present=(20,), sampled=(20,), population=(100,), unit_variance=(1.0,))
    assert cells.variance_at(20) == pytest.approx(0.8 / 20)
    assert cells.queries_needed(0.2, 2.8) == 67
    assert cells.queries_needed(10.0, 2.8) is None  # the present draw reaches it
    # A stratum holding half of each cell's draw needs half of the queries drawn.
    half = DesignCells(present=(10,), sampled=(20,), population=(100,), unit_variance=(1.0,))
    assert half.queries_needed(0.2, 2.8) == 34


def test_a_tie_names_the_queries_the_design_needs() -> None:
    g = rng(11)
    cells = tuple(["head"] * 10 + ["tail"] * 30)
    design = SampleDesign(cells, {"head": 10, "tail": 200})
    d = np.concatenate([np.zeros(10), g.normal(0.0, 0.3, 30)])
    a = np.full(40, 0.5)
    c = compare_paired(
        a, a + d, rng=rng(1), weights=np.concatenate([np.full(10, 50.0), np.full(30, 6.0)]), design=design
    )
    decision = classify_metric(c, tie_margin=0.03, min_queries=5)
    assert decision.tie_reason is TieReason.UNRESOLVED or decision.tie_reason is TieReason.WITHIN_MARGIN
    assert c.design is not None
    expected = c.design.queries_needed(0.03, z_sum(0.05, 0.8))
    assert expected is not None and 40 < expected <= 210
    assert decision.queries_needed == expected
    assert f"~{expected} queries needed" in decision.detail


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"weights": None}, ValueError, "a design needs weights: each query's traffic over its inclusion*"),
        ({"design": "x"}, TypeError, "design must be a SampleDesign, got str"),
        (
            {"design": SampleDesign(("A",) * 3, {"A": 3})},
            ValueError,
            "design.cells must name one cell per pair (4), got 3",
        ),
        (
            {"design": SampleDesign(("A",) * 4, {"B": 3})},
            ValueError,
            "design.population has no entry for cell 'A'",
        ),
        (
            {"design": SampleDesign(("A",) * 4, {"A": 0})},
            ValueError,
            "design.population['A'] must be an integer >= 1, got 0",
        ),
        (
            {"design": SampleDesign(("A",) * 4, {"A": 3})},
            ValueError,
            "design.sampled['A'] must be an integer between the 4 pairs of the cell and its population (3), "
            "got 4",
        ),
        (
            {"design": SampleDesign(("A",) * 4, {"A": 9}, {"A": 2})},
            ValueError,
            "design.sampled['A'] must be an integer between the 4 pairs of the cell and its population (9), "
            "got 2",
        ),
    ],
)
def test_a_bad_design_is_refused_naming_it(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments: dict[str, object] = {
        "weights": [1.0, 2.0, 3.0, 4.0],
        "design": SampleDesign(("A",) * 4, {"A": 9}),
    }
    arguments.update(kwargs)
    with pytest.raises(error) as raised:
        compare_paired([0.1, 0.2, 0.3, 0.4], [0.2, 0.2, 0.5, 0.1], rng=rng(0), **arguments)  # type: ignore[arg-type]
    found = str(raised.value)
    assert found.startswith(message[:-1]) if message.endswith("*") else found == message


@pytest.mark.slow
def test_the_design_interval_keeps_its_coverage_on_draws_of_embeval_sample() -> None:
    """Coverage by simulation, each golden set drawn by ``embeval sample``'s own code (`draw_queries`, seed
    s for simulation s): 3,000 distinct queries with synthetic nDCG@10 differences (`metric_population`),
    two strata, Zipfian traffic, 150 queries drawn with the head boosted x2 (its cell drawn whole), each
    weighing frequency / inclusion. The design's interval covers the traffic-weighted mean Σ f d / Σ f
    within Monte-Carlo error of 95 % (300 draws: ±2.5 points at two standard errors, the band a little
    wider), misses on neither side more than 5 %, and is far narrower than the with-replacement one, which
    covers nearly always (`benchmarks/design_intervals.py` has the table on real differences)."""
    from pathlib import Path

    from pytest_embeval.core.interval_simulation import metric_population, zipf_frequencies
    from pytest_embeval.core.sampling import frequency_bands
    from pytest_embeval.golden.query_draw import draw_queries
    from pytest_embeval.golden.query_log import DistinctQuery, QueriesInMemory, QueryLog

    d = metric_population("better")
    frequencies = np.maximum(1, np.round(3000 * zipf_frequencies(d.size, 1.0, seed="design"))).astype(int)
    strata = np.where(np.arange(d.size) % 3 == 0, "a", "b")
    order = np.lexsort((np.arange(d.size), -frequencies))
    # The key zero-padded: the log's order (most frequent first, then by the key) is the rows'.
    distinct = [
        DistinctQuery(f"{i:05d}", str(i), (str(strata[i]),), int(frequencies[i])) for i in order.tolist()
    ]
    memory = QueriesInMemory.of(distinct)
    log = QueryLog(
        Path("log.jsonl"), "jsonl", ("stratum",), int(frequencies.sum()), 0, "sha256:-", memory, ()
    )
    truth = float(np.dot(frequencies, d) / frequencies.sum())
    bands = (("head", 0.33), ("torso", 0.33))
    population: dict[str, int] = {}
    band_of = frequency_bands([q.frequency for q in distinct], bands)
    for query, band in zip(distinct, band_of, strict=True):
        cell = f"{query.values[0]}/{band}"
        population[cell] = population.get(cell, 0) + 1
    rows = []
    for s in range(300):
        draw = draw_queries(log, ["stratum"], size=150, floor=20, bands=bands, head_boost=2.0, seed=s)
        picked = np.array([int(q.text) for q in draw.queries])
        cells = tuple(f"{q.fields['stratum']}/{q.fields['band']}" for q in draw.queries)
        weights = np.array([q.frequency / q.inclusion for q in draw.queries])
        a = np.full(picked.size, 0.5)
        common = {"weights": weights, "n_resamples": 1000}
        designed = compare_paired(
            a, a + d[picked], rng=rng(s), design=SampleDesign(cells, population), **common
        )
        alone = compare_paired(a, a + d[picked], rng=rng(s), **common)
        rows.append((designed.delta, designed.ci_low, designed.ci_high, alone.ci_high - alone.ci_low))
    delta, low, high, alone_width = np.array(rows).T
    assert 0.915 <= np.mean((low <= truth) & (truth <= high)) <= 0.985
    assert np.mean(high < truth) <= 0.05 and np.mean(low > truth) <= 0.05
    width = np.mean(high - low) / (2 * 1.959964 * np.std(delta, ddof=1))
    assert 0.85 <= width <= 1.3
    assert np.mean(high - low) < 0.7 * np.mean(alone_width)


def test_the_interval_is_never_narrower_than_students_t_on_satterthwaites_freedom() -> None:
    """A cell drawn whole and one of 5 queries drawn of 10, which carries all the variance: Satterthwaite's
    degrees of freedom are n_B - 1 = 4, t_4 at 97.5 % is 2.7764 (scipy.stats.t.ppf), so the half-width is
    at least 2.7764 se whatever the replicates say, and the p-value is at least Student's; it inverts the
    interval at every confidence."""
    from scipy.stats import t as student

    cells = ("A", "A", "B", "B", "B", "B", "B")
    design = SampleDesign(cells, {"A": 2, "B": 10})
    d = np.array([1.0, 0.0, 0.5, 0.0, -0.5, 0.2, 0.1])
    w = np.array([4.0, 4.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    a = np.full(7, 0.5)
    c = compare_paired(a, a + d, rng=rng(4), n_resamples=4000, weights=w, design=design)
    se = c.sd / math.sqrt(7)
    assert c.interval == "studentized" and c.note is None
    assert c.ci_high - c.delta >= student.ppf(0.975, 4) * se - 1e-12
    assert c.delta - c.ci_low == pytest.approx(c.ci_high - c.delta, rel=1e-12)
    assert c.p_value >= 2 * student.sf(abs(c.delta) / se, 4) - 1e-12
    for confidence in (0.5, 0.7, 0.8, 0.9, 0.95):
        at = compare_paired(
            a, a + d, rng=rng(4), n_resamples=4000, weights=w, design=design, confidence=confidence
        )
        assert (at.ci_low > 0 or at.ci_high < 0) == (c.p_value < 1 - confidence), confidence
