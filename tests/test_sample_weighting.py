"""The traffic weight of a drawn sample (`Query.traffic_weight`: frequency / inclusion) against the
frequency alone, by simulation with the real sampler (`query_draw.draw_queries`): over many seeded draws
from a known population the frequency / inclusion estimate (Hájek's ratio of Horvitz-Thompson sums) centres
on the population's traffic-weighted mean, the frequency-only one does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_embeval.core.weighted_stats import weighted_mean
from pytest_embeval.golden.data_files import Query
from pytest_embeval.golden.query_draw import draw_queries
from pytest_embeval.golden.query_log import DistinctQuery, QueriesInMemory, QueryLog

DRAWS = 400
BANDS = (("head", 0.33), ("torso", 0.33))


def population() -> tuple[QueryLog, list[DistinctQuery], dict[str, float]]:
    """Three strata with different traffic per distinct query: en 40 queries on a Zipf curve (3,000 / rank:
    the whole head band and most of the traffic), fr 120 queries of 6 to 10 searches, de 400 of 1 to 3.
    Each query's paired difference depends on its stratum (en +0.15, fr 0, de -0.25), +0.2 more for en's
    three most frequent queries, plus noise (sd 0.1)."""
    rng = np.random.default_rng(7)
    strata = {
        "en": (40, lambda i: 3000 // (i + 1), 0.15),
        "fr": (120, lambda i: 6 + i % 5, 0.0),
        "de": (400, lambda i: 1 + i % 3, -0.25),
    }
    queries: list[DistinctQuery] = []
    differences: dict[str, float] = {}
    for language, (count, frequency, shift) in strata.items():
        for i in range(count):
            text = f"{language} {i}"
            queries.append(DistinctQuery(text, text, (language,), frequency(i)))
            differences[text] = shift + (0.2 if i < 3 else 0.0) + float(rng.normal(0.0, 0.1))
    rows = sum(q.frequency for q in queries)
    distinct = QueriesInMemory.of(queries)
    log = QueryLog(Path("log.jsonl"), "jsonl", ("language",), rows, 0, "0" * 64, distinct, ())
    return log, queries, differences


def test_frequency_over_inclusion_estimates_the_traffic_weighted_mean_and_frequency_alone_does_not() -> None:
    log, distinct, differences = population()
    frequencies = np.array([q.frequency for q in distinct], dtype=np.float64)
    truth = weighted_mean(np.array([differences[q.key] for q in distinct]), frequencies)
    en_share = sum(q.frequency for q in distinct if q.values == ("en",)) / log.rows
    by_inclusion, by_frequency, en_shares = [], [], []
    for seed in range(DRAWS):
        draw = draw_queries(log, ("language",), size=60, floor=15, bands=BANDS, head_boost=3.0, seed=seed)
        # As the golden loader reads the queries file written from the draw.
        queries = [
            Query(
                r["_id"],
                r["text"],
                {"language": r["language"]},
                frequency=r["frequency"],
                inclusion=r["inclusion"],
            )
            for r in (q.record() for q in draw.queries)
        ]
        values = np.array([differences[q.text] for q in queries])
        traffic = np.array([q.traffic_weight for q in queries], dtype=np.float64)
        by_inclusion.append(weighted_mean(values, traffic))
        by_frequency.append(weighted_mean(values, np.array([q.frequency for q in queries], dtype=np.float64)))
        en_shares.append(
            sum(w for q, w in zip(queries, traffic, strict=True) if q.fields["language"] == "en")
            / traffic.sum()
        )
    for estimates in (by_inclusion, by_frequency, en_shares):
        assert len(set(estimates)) > DRAWS // 2  # the draws differ: the test sees the sampling variance
    inclusion_se = np.std(by_inclusion, ddof=1) / np.sqrt(DRAWS)
    frequency_se = np.std(by_frequency, ddof=1) / np.sqrt(DRAWS)
    share_se = np.std(en_shares, ddof=1) / np.sqrt(DRAWS)
    # Hájek's ratio is consistent (its bias is of order 1/n, well inside 4 standard errors of 400 draws).
    assert abs(np.mean(by_inclusion) - truth) < 4 * inclusion_se
    assert abs(np.mean(en_shares) - en_share) < 4 * share_se
    # Frequency alone weighs en (few distinct queries, much traffic each: all drawn) by its traffic but the
    # strata of many light queries by far less (each drawn query carries its own count, not its cell's
    # undrawn ones): the estimate leans to en's +0.15, here by more than 0.03 and 50 standard errors.
    bias = np.mean(by_frequency) - truth
    assert bias > 50 * frequency_se and bias > 0.03


@pytest.mark.parametrize("by", [(), ("band",), ("language", "shape")])
def test_a_draw_by_other_fields_than_the_log_was_read_by_is_refused(by: tuple[str, ...]) -> None:
    """The strata are the fields the log was read by (``embeval sample --by`` reads it by them): a draw by
    fewer or other fields would merge or split them, and is refused rather than drawn by the log's."""
    log, _, _ = population()
    with pytest.raises(ValueError) as refused:
        draw_queries(log, by, size=60, floor=15, bands=BANDS, head_boost=1.0, seed=0)
    assert str(refused.value) == f"--by {','.join(by)} is not what the log was read by (language)"
