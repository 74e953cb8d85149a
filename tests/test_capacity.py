"""capacity: the hnswlib memory model against hnswlib itself, and projections with hand-derived figures."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from pytest_embeval.core.capacity import (
    ArmCapacity,
    HnswLayout,
    Latency,
    Production,
    Throughput,
    TokenCount,
    flat_index_bytes,
    project,
)
from pytest_embeval.search.hnsw import HnswIndex


def built(n: int, dim: int, M: int, seed: int = 0) -> object:
    import hnswlib

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    index = hnswlib.Index(space="ip", dim=dim)
    index.init_index(max_elements=n, M=M, ef_construction=64, random_seed=seed)
    index.add_items(vectors, np.arange(n), num_threads=1)
    return index


def test_hnsw_layout_by_hand() -> None:
    """384 dimensions, M = 16, from hnswalg.h: level 0 is 2·16 links of 4 bytes and their 4-byte count (132),
    the float32 vector (1536) and an 8-byte label: 1676; then a 4-byte length of the upper lists, and upper
    lists of 16 links and a count (68 bytes) each, 1/15 of one expected per element."""
    layout = HnswLayout(dimension=384, M=16)
    assert layout.vector_bytes == 1536
    assert layout.level0_bytes == 1676
    assert layout.upper_level_bytes == 68
    assert layout.expected_upper_levels == pytest.approx(1 / 15)
    assert layout.element_bytes == pytest.approx(1680 + 68 / 15)
    assert layout.graph_bytes_per_element == pytest.approx(144 + 68 / 15)
    assert layout.index_bytes(10_000_000) == pytest.approx(96 + 10_000_000 * (1680 + 68 / 15))
    assert layout.index_bytes(0) == 96


@pytest.mark.parametrize(("n", "dim", "M"), [(1, 32, 16), (300, 24, 2), (700, 48, 8)])
def test_hnsw_layout_is_exactly_what_hnswlib_counts_given_the_levels_it_drew(
    n: int, dim: int, M: int
) -> None:
    index = built(n, dim, M)
    levels = index.__getstate__()[0]["element_levels"][:n]  # type: ignore[attr-defined]
    assert HnswLayout(dim, M).exact_index_bytes(list(levels)) == index.index_file_size()  # type: ignore[attr-defined]


def test_projected_hnsw_memory_matches_hnswlib_extrapolated_from_two_sizes() -> None:
    """Two indexes built by hnswlib give its bytes per document (the slope) and its fixed part; extrapolated
    to ten million documents, they agree with the projection within the randomness of the levels drawn."""
    dim, M = 64, 8
    small, large = 1000, 4000
    sizes = [built(n, dim, M).index_file_size() for n in (small, large)]  # type: ignore[attr-defined]
    slope = (sizes[1] - sizes[0]) / (large - small)
    layout = HnswLayout(dim, M)
    # Everything but the upper levels is exact per element; those are 1/(M-1) per element on average.
    fixed_part = layout.level0_bytes + 4
    assert (slope - fixed_part) / layout.upper_level_bytes == pytest.approx(1 / (M - 1), abs=0.02)
    target = 10_000_000
    extrapolated = sizes[0] + slope * (target - small)
    assert layout.index_bytes(target) == pytest.approx(extrapolated, rel=0.003)
    # The vectors alone, dimension x 4 bytes x documents, are most of it; the graph is the rest.
    assert layout.index_bytes(target) == pytest.approx(
        dim * 4 * target + layout.graph_bytes_per_element * target + 96
    )


def test_hnsw_index_memory_is_hnswlibs_count() -> None:
    rng = np.random.default_rng(3)
    documents = rng.standard_normal((500, 16)).astype(np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    index = HnswIndex(documents, doc_ids=[f"d{i}" for i in range(500)], M=16, ef_construction=50)
    assert index.memory_bytes() == pytest.approx(HnswLayout(16, 16).index_bytes(500), rel=0.01)


def test_hnsw_layout_refuses_what_hnswlib_cannot_build() -> None:
    with pytest.raises(ValueError, match=re.escape("M must be an integer >= 2, got 1")):
        HnswLayout(8, 1)
    with pytest.raises(ValueError, match=re.escape("dimension must be an integer >= 1, got 0")):
        HnswLayout(0, 16)


def test_flat_index_is_the_vectors() -> None:
    assert flat_index_bytes(10_000_000, 768, 4) == 30_720_000_000
    assert flat_index_bytes(3, 2, 1) == 6
    with pytest.raises(ValueError, match="documents must be an integer >= 0"):
        flat_index_bytes(-1, 2, 4)


def test_production_validates_its_values() -> None:
    assert Production(10).as_dict() == {"documents": 10}
    assert Production(10, 5, 4.0).as_dict() == {
        "documents": 10,
        "queries_per_month": 5,
        "memory_price_per_gb_month": 4.0,
    }
    with pytest.raises(ValueError, match=re.escape("documents must be an integer >= 1, got 0")):
        Production(0)
    with pytest.raises(
        ValueError, match="memory_price_per_gb_month must be a number from 0 to 1,000,000,000"
    ):
        Production(1, memory_price_per_gb_month=math.inf)


def measured(**changes: object) -> ArmCapacity:
    """An exact-search arm of 384 dimensions measured on 3 documents of 100, 200 and 300 tokens and 2
    queries of 8 and 12 tokens, priced at 0.02 per million tokens."""
    capacity = ArmCapacity(
        documents=3,
        dimension=384,
        dtype="float32",
        bytes_per_vector=1536,
        index_bytes=3 * 1536,
        index_kind="exact",
        M=None,
        document_tokens=TokenCount(texts=3, tokens=600, truncated=1, max_length=256, method="a tokenizer"),
        query_tokens=TokenCount(texts=2, tokens=20, truncated=0, max_length=256, method="a tokenizer"),
        throughput=Throughput(texts=3, seconds=0.5, tokens=600),
        latency=Latency(p50_ms=0.5, p95_ms=0.9),
        latency_ef=None,
        price_per_million_tokens=0.02,
    )
    return dataclasses.replace(capacity, **changes)


def test_projection_by_hand() -> None:
    """Ten million documents: 10^7 x 1536 B = 15.36 GB, at 4 per GB-month 61.44; a mean of 200 tokens per
    document is 2·10^9 tokens, at 0.02 per million 40; thirty million queries of 10 tokens are 3·10^8
    tokens (6 a month) and, at 0.5 ms each, 15,000 s = 4.1667 core-hours."""
    projection = project(measured(), Production(10_000_000, 30_000_000, 4.0))
    assert projection.documents == 10_000_000
    assert projection.index_bytes.value == 15_360_000_000
    assert projection.memory_cost_per_month.value == pytest.approx(61.44)
    assert projection.embedding_tokens.value == pytest.approx(2e9)
    assert projection.embedding_cost.value == pytest.approx(40.0)
    assert projection.query_tokens_per_month is not None and projection.query_cost_per_month is not None
    assert projection.query_tokens_per_month.value == pytest.approx(3e8)
    assert projection.query_cost_per_month.value == pytest.approx(6.0)
    assert projection.search_core_hours_per_month is not None
    assert projection.search_core_hours_per_month.value == pytest.approx(15_000 / 3600)


def test_every_projected_figure_says_what_it_assumes() -> None:
    projection = project(measured(), Production(10_000_000, 30_000_000, 4.0))
    assert projection.index_bytes.assumes == (
        "flat index: 1536 B per vector (384 x float32), nothing else; one replica"
    )
    assert projection.embedding_tokens.assumes == (
        "10,000,000 documents with this run's mean of 200.0 tokens (a tokenizer; 3 texts counted, 1 of them "
        "cut at 256)"
    )
    assert projection.embedding_cost.assumes == "embedding every document once at 0.02 per million tokens"
    assert projection.memory_cost_per_month.assumes == (
        "the projected index memory at 4 per GB-month (GB = 10^9 bytes), one replica"
    )
    assert projection.search_core_hours_per_month is not None
    assert projection.search_core_hours_per_month.assumes == (
        "30,000,000 queries a month at the single-threaded p50 latency measured here (0.5 ms on 3 "
        "documents; not scaled to 10,000,000), one core each"
    )


def test_hnsw_projection_adds_the_graph() -> None:
    capacity = measured(index_kind="hnsw", M=16, latency_ef=100)
    projection = project(capacity, Production(10_000_000))
    assert projection.index_bytes.value == pytest.approx(96 + 10_000_000 * (1536 + 144 + 68 / 15))
    assert projection.index_bytes.assumes.startswith(
        "hnswlib's layout: 1536 B float32 vector + 148.53 B graph per document (M=16: 32 level-0 links"
    )


def test_what_cannot_be_projected_says_why() -> None:
    capacity = measured(price_per_million_tokens=None, document_tokens=None, query_tokens=None)
    projection = project(capacity, Production(1000))
    assert projection.embedding_tokens.value is None
    assert "could not be counted" in projection.embedding_tokens.assumes
    assert projection.embedding_cost.value is None
    assert projection.embedding_cost.assumes == "no price_per_million_tokens for this model"
    assert projection.memory_cost_per_month.value is None
    assert projection.memory_cost_per_month.assumes == "no production.memory_price_per_gb_month declared"
    assert projection.query_tokens_per_month is None  # no queries_per_month declared
    # Priced, but the tokens are unknown: the cost says that, not that the price is missing.
    priced = project(measured(document_tokens=None), Production(1000))
    assert priced.embedding_cost.value is None
    assert "could not be counted" in priced.embedding_cost.assumes


def test_throughput_rates() -> None:
    assert Throughput(texts=100, seconds=2.0, tokens=5000).texts_per_second == 50
    assert Throughput(texts=100, seconds=2.0, tokens=5000).tokens_per_second == 2500
    assert Throughput(texts=100, seconds=2.0, tokens=None).tokens_per_second is None
