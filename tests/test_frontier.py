"""The frontier: Pareto arithmetic on hand-placed arms, the cheapest arm without a WORSE stratum, and how the
terminal, Markdown, HTML and JSON show it for a list of arms."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_embeval.core.frontier import FrontierArm, cheapest_without_worse, dominated, on_frontier
from pytest_embeval.reports.charts import frontier_svg
from pytest_embeval.reports.frontier import frontier_block
from pytest_embeval.reports.frontier_records import (
    ArmRow,
    frontier_record,
    recorded_arms,
    shown_bill,
    shows_frontier,
    vectors_text,
)
from pytest_embeval.reports.shortlist import shortlist_frontier


def point(name: str, delta: float | None, bill: float | None, worse: tuple[str, ...] = ()) -> FrontierArm:
    return FrontierArm(name, name, delta, (None, None), bill, None, worse)


#      Δ
#  +.02 |            d
#     0 | a     b
#  -.01 |   c        e (WORSE)
#  -.05 | f
#       +-----------------> bill
#         10 20 30  40
ARMS = [
    point("a", 0.0, 10.0),
    point("b", 0.0, 30.0),
    point("c", -0.01, 20.0),
    point("d", 0.02, 40.0),
    point("e", -0.01, 40.0, ("language=de",)),
    point("f", -0.05, 10.0),
    point("bm25", 0.01, None),
]


def test_an_arm_is_dominated_by_one_at_least_as_good_for_at_most_its_bill() -> None:
    a, b, c, d, e, f, bm25 = ARMS
    assert dominated(b, a)  # same Δ, more memory
    assert dominated(c, a) and dominated(f, a) and dominated(e, d)
    assert not dominated(a, b) and not dominated(d, a) and not dominated(a, a)
    # Without a bill an arm neither is dominated nor dominates.
    assert not dominated(bm25, a) and not dominated(f, bm25)


def test_the_frontier_is_the_arms_no_other_dominates() -> None:
    assert [arm.name for arm, mark in zip(ARMS, on_frontier(ARMS), strict=True) if mark] == ["a", "d"]
    # Two equal points are both on it: neither is better in anything.
    twins = [point("x", 0.0, 5.0), point("y", 0.0, 5.0)]
    assert on_frontier(twins) == (True, True)


def test_the_cheapest_arm_without_a_worse_stratum() -> None:
    cheapest = cheapest_without_worse(ARMS)
    assert cheapest is not None and cheapest.name == "a"  # a and f cost 10; a's Δ is higher
    assert cheapest_without_worse([point("e", 0.1, 1.0, ("x",)), point("g", -0.2, 2.0)]) == point(
        "g", -0.2, 2.0
    )
    assert cheapest_without_worse([point("e", 0.1, 1.0, ("x",)), point("bm25", 0.0, None)]) is None


def arm_record(spec: str, memory: int, vectors: dict[str, Any] | None = None) -> dict[str, Any]:
    index: dict[str, Any] = {"kind": "exact", "dimension": 384, "memory_bytes": memory}
    if vectors is not None:
        index["vectors"] = vectors
    return {"spec": spec, "index": index, **({"variant": {}} if vectors is not None else {})}


def stratum(name: str, delta: float, ci: tuple[float, float], verdict: str) -> dict[str, Any]:
    return {"stratum": name, "delta": delta, "ci": list(ci), "verdict": verdict}


GOLDEN = {"name": "support", "metric": "recall@5", "documents": 1000, "index": "exact"}
INCUMBENT = arm_record("minilm", 1_536_000)
BINARY = arm_record("minilm?precision=binary", 48_000, {"dims": 384, "precision": "binary", "rescore": None})
RESCORED = arm_record(
    "minilm?precision=binary&rescore=4", 48_000, {"dims": 384, "precision": "binary", "rescore": 4}
)
ROWS = [
    ArmRow("incumbent", INCUMBENT, None),
    ArmRow(
        "binary",
        BINARY,
        [
            stratum("overall", -0.08, (-0.11, -0.04), "WORSE"),
            stratum("lang=en", -0.06, (-0.1, -0.02), "WORSE"),
        ],
    ),
    ArmRow(
        "rescored",
        RESCORED,
        [stratum("overall", -0.01, (-0.03, 0.01), "TIE"), stratum("lang=en", 0.0, (-0.02, 0.02), "TIE")],
    ),
]


def test_the_record_of_a_list_of_arms() -> None:
    record = frontier_record(GOLDEN, ROWS)
    assert record["bill"] == "memory for the 1,000 documents searched here"
    assert [
        (arm["name"], arm["vectors"], arm["bill_bytes"], arm["on_frontier"]) for arm in record["arms"]
    ] == [
        ("incumbent", "384 x float32", 1_536_000.0, True),
        ("binary", "384 bits", 48_000.0, False),
        ("rescored", "384 bits, rescore 4", 48_000.0, True),
    ]
    assert record["arms"][1]["worse"] == ["overall", "lang=en"]
    assert record["cheapest_without_worse"] == "rescored"
    assert record["arms"][0]["strata"] is None
    assert record["arms"][2]["strata"] == [
        {"stratum": "overall", "delta": -0.01, "ci": [-0.03, 0.01], "verdict": "TIE"},
        {"stratum": "lang=en", "delta": 0.0, "ci": [-0.02, 0.02], "verdict": "TIE"},
    ]
    # What the renderers read back is what the record was made of.
    assert [arm.name for arm in recorded_arms(record)] == ["incumbent", "binary", "rescored"]
    assert recorded_arms(record)[1].ci == (-0.11, -0.04) and recorded_arms(record)[1].worse == (
        "overall",
        "lang=en",
    )


def test_a_faiss_arm_stores_its_codes_not_float32_vectors() -> None:
    """An index of FAISS codes: what a vector adds to it (its serialised bytes past the trained, empty
    index, per document), not the float32 vector it encodes; a variant's shape and a plain index as they
    are."""
    faiss = {
        "kind": "faiss",
        "factory": "IVF8,PQ48",
        "dimension": 384,
        "memory_bytes": 90_000,
        "fixed_bytes": 34_000,
    }
    assert vectors_text({"index": faiss}, 1000) == "384 dims, 56 B each in the index"
    assert vectors_text({"index": faiss}, 0) == "384 dims, codes in the index"
    assert vectors_text({"index": {"kind": "exact", "dimension": 384}}, 1000) == "384 x float32"
    assert vectors_text(BINARY, 1000) == "384 bits"
    assert vectors_text({"index": None}, 1000) == "—"


def entry(name: str, candidate: dict[str, Any], strata: list[dict[str, Any]]) -> dict[str, Any]:
    """A shortlist candidate's golden-set entry of the report."""
    return {
        **GOLDEN,
        "incumbent": INCUMBENT,
        "candidate": candidate,
        "strata": strata,
        "candidate_name": name,
    }


def test_a_shortlist_s_frontier_holds_the_incumbent_and_every_candidate() -> None:
    entries = [entry(row.name, dict(row.arm), list(row.strata or ())) for row in ROWS[1:]]
    record = shortlist_frontier(entries)
    assert record == frontier_record(GOLDEN, ROWS)
    # Two models, neither a variant, on an exact index: no frontier, as for one comparison.
    plain = [entry("other", arm_record("other", 1), list(ROWS[1].strata or ()))]
    assert shortlist_frontier(plain) is None


def test_the_table_shows_each_arm_per_stratum_and_names_the_cheapest() -> None:
    block = frontier_block(frontier_record(GOLDEN, ROWS))
    assert block.table.header == (
        "arm",
        "vectors",
        "index",
        "memory",
        "cost/month",
        "Δ recall@5 overall",
        "lang=en",
        "frontier",
    )
    assert block.table.rows[1] == (
        "binary minilm?precision=binary",
        "384 bits",
        "exact",
        "48 kB",
        "—",
        "-0.080 [-0.110, -0.040] WORSE",
        "-0.060 WORSE",
        "",
    )
    assert block.table.rows[0][5:] == ("0", "0", "yes")
    assert block.notes == (
        "cheapest arm without a WORSE stratum: rescored minilm?precision=binary&rescore=4 (48 kB, Δ recall@5 "
        "-0.010 [-0.030, +0.010])",
    )


def test_the_chart_draws_every_arm_with_a_bill_and_marks_the_frontier() -> None:
    svg = frontier_svg(frontier_record(GOLDEN, ROWS))
    assert (
        svg is not None
        and svg.startswith("<svg")
        and "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )
    assert svg.count('<g class="arm" data-frontier="yes">') == 2
    assert svg.count('<g class="arm" data-frontier="no">') == 1
    assert "log scale" in svg  # 48 kB to 1.5 MB
    assert frontier_svg(frontier_record(GOLDEN, ROWS[:1])) is None


@pytest.mark.parametrize(
    ("golden", "shown"),
    [
        ({"index": "exact", "incumbent": INCUMBENT, "candidate": arm_record("other", 1)}, False),
        ({"index": "exact", "incumbent": INCUMBENT, "candidate": BINARY}, True),
        (
            {"index": {"faiss": "IVF16,PQ8"}, "incumbent": INCUMBENT, "candidate": arm_record("other", 1)},
            True,
        ),
    ],
)
def test_a_frontier_is_shown_for_variants_and_faiss_indexes(golden: dict[str, Any], shown: bool) -> None:
    assert shows_frontier(golden) is shown


@pytest.mark.parametrize(
    ("value", "text"), [(None, "—"), (960, "960 B"), (48_000, "48 kB"), (1_536_000_000, "1.54 GB")]
)
def test_bills_in_decimal_units(value: float | None, text: str) -> None:
    assert shown_bill(value) == text
