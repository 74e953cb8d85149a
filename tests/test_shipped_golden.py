"""The shipped golden sets stay usable: they load, every query has an answer, every stratum can decide."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FILES = sorted(GOLDEN.glob("*.yaml"))


@pytest.fixture(params=FILES, ids=[path.name for path in FILES])
def golden(request: pytest.FixtureRequest) -> GoldenSet:
    # Loading validates the files: a qrels line naming an unknown document or query is a GoldenError.
    return load_golden(request.param)


def test_both_shipped_files_are_found() -> None:
    assert [path.name for path in FILES] == ["support-hnsw.yaml", "support.yaml"]


def test_every_query_has_a_judged_relevant_document(golden: GoldenSet) -> None:
    unanswered = [
        query.id
        for query in golden.queries
        if not any(grade >= golden.relevance_level for grade in golden.qrels[query.id].values())
    ]
    assert unanswered == []


def test_every_stratum_is_at_or_above_its_floor(golden: GoldenSet) -> None:
    sizes = {stratum.name: len(stratum.query_ids) for stratum in golden.strata()}
    assert {name: n for name, n in sizes.items() if n < golden.min_queries} == {}
    assert len(sizes) > 2


def test_every_shape_and_language_cell_has_thirty_traffic_queries() -> None:
    golden = load_golden(GOLDEN / "support.yaml")
    traffic = [query for query in golden.queries if query.fields["source"] == "traffic"]
    cells: dict[tuple[str, str], int] = {}
    for query in traffic:
        cell = (query.fields["shape"], query.fields["language"])
        cells[cell] = cells.get(cell, 0) + 1
    assert len(cells) == 4 and min(cells.values()) >= 30, cells
    assert sum(1 for query in golden.queries if query.fields["source"] == "wish") >= 20
    assert len(golden.documents) >= 400
