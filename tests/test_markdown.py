"""The Markdown report: byte for byte against a checked-in file, parsed by a GFM renderer, and escaping."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pytest_embeval.reports.contents import headline
from pytest_embeval.reports.markdown import (
    COMMENT_LIMIT,
    STEP_SUMMARY_LIMIT,
    md_code,
    md_text,
    report_markdown,
    size_warning,
)

DATA = Path(__file__).with_name("data")
#: A real two-golden-set report of the fake models (tests/data/README.md says how it was made), with
#: hostile text put into query text, ids, a stratum value, a golden-set name and a model spec.
REPORT = DATA / "report.json"
HOSTILE = (
    'say <script>alert("x")</script> & &amp; | pipe | `tick` ``two`` *bold* _em_ @someone #12 '
    "[link](http://evil.example) ~strike~ a\\|b \\ end"
)


def load(path: Path = REPORT) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


def gfm() -> MarkdownIt:
    return MarkdownIt("gfm-like")


#: A real report of branch capacity's code (tests/data/README.md): production, corpus_sample, recall_target.
CAPACITY = DATA / "report-capacity.json"


#: A real report of the stats code: holm, ties that change verdicts, consensus failures (see tests/data).
STATS = DATA / "report-stats.json"


@pytest.mark.parametrize("name", ["report", "report-capacity", "report-stats"])
def test_markdown_matches_the_checked_in_file_byte_for_byte(name: str) -> None:
    expected = (DATA / f"{name}.md").read_bytes()
    assert report_markdown(load(DATA / f"{name}.json")).encode("utf-8") == expected


class Tables(HTMLParser):
    """Each rendered table as rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def rendered_tables(markdown: str) -> list[list[list[str]]]:
    parser = Tables()
    parser.feed(gfm().render(markdown))
    return parser.tables


def test_every_table_renders_as_a_table_with_its_rows_and_columns() -> None:
    report = load()
    tables = rendered_tables(report_markdown(report))
    # Per golden set: strata, guards (the first set only), queries moved, settings, fingerprints.
    assert len(tables) == 5 + 4
    strata = [tables[0], tables[5]]
    for table, golden in zip(strata, report["golden_sets"], strict=True):
        assert table[0] == [
            "stratum",
            "n",
            "incumbent",
            "candidate",
            "Δ",
            "95% CI",
            "W/L sign",
            "verdict",
            "reason",
        ]
        assert all(len(row) == 9 for row in table)
        # Failing strata first; the stratum names render exactly, hostile characters included.
        names = [row[0] for row in table[1:]]
        order = {"WORSE": 0, "BETTER": 1, "TIE": 2}
        expected = sorted(golden["strata"], key=lambda s: order[s["verdict"]])
        assert names == [s["stratum"] for s in expected]
        assert [row[7] for row in table[1:]] == [s["verdict"] for s in expected]
        assert [row[8] for row in table[1:]] == [s["reason"] for s in expected]
    assert "shape=odd|<em>x</em>" in [row[0] for row in tables[0]]


def test_query_text_and_ids_render_exactly_whatever_they_contain() -> None:
    moved = rendered_tables(report_markdown(load()))[2]
    assert moved[0] == ["query", "strata", "incumbent", "candidate", "Δ", "text"]
    by_id = {row[0]: row for row in moved[1:]}
    assert by_id["q01"][5] == HOSTILE + " second line"  # the line break is a space: one table row
    assert by_id["q05"][5] == "<img src=x onerror=alert(1)> 'single' \"double\""
    assert by_id["q|03<i>&"][1] == "language=en, shape=even"


def test_no_html_but_details_and_summary() -> None:
    tokens = gfm().parse(report_markdown(load()))
    raw = [t.content for t in tokens if t.type == "html_block"]
    raw += [c.content for t in tokens if t.children for c in t.children if c.type == "html_inline"]
    assert raw, "the <details> blocks are there"
    for html in raw:
        assert re.fullmatch(r"(\s*</?(details|summary)>[^<>]*)+\s*", html), html


def test_headings_are_the_headlines() -> None:
    markdown = report_markdown(load())
    headings = [line for line in markdown.splitlines() if line.startswith("###")]
    assert headings == [
        "### support: 4 WORSE, 1 TIE — candidate loses overall and on `language=en`, `shape=even` and "
        "`shape=odd|<em>x</em>`",
        "### wins & \\<b\\>\"bold\"\\</b\\> \\| 'q': 1 BETTER, 2 TIE — candidate wins overall",
    ]
    html = gfm().render(markdown)
    assert "<code>shape=odd|&lt;em&gt;x&lt;/em&gt;</code>" in html
    assert "wins &amp; &lt;b&gt;&quot;bold&quot;&lt;/b&gt; | 'q'" in html


def stratum(name: str, verdict: str, reason: str = "x: y") -> dict[str, Any]:
    return {"stratum": name, "verdict": verdict, "reason": reason}


@pytest.mark.parametrize(
    ("strata", "expected"),
    [
        (
            [stratum("overall", "WORSE"), stratum("language=en", "WORSE"), stratum("language=es", "TIE")],
            "s: 2 WORSE, 1 TIE — candidate loses overall and on language=en",
        ),
        (
            [
                stratum("overall", "TIE"),
                stratum("a=1", "WORSE"),
                stratum("a=2", "BETTER"),
                stratum("a=3", "WORSE"),
            ],
            "s: 2 WORSE, 1 BETTER, 1 TIE — candidate loses on a=1 and a=3; wins on a=2",
        ),
        ([stratum("overall", "BETTER")], "s: 1 BETTER — candidate wins overall"),
        (
            [
                stratum("overall", "TIE", "within margin: |Δ| 0.001 < 0.03"),
                stratum("a=1", "TIE", "unresolved: CI covers 0"),
                stratum("a=2", "TIE", "below floor: n=3 < min_queries=20"),
                stratum("a=3", "TIE", "unresolved: CI covers 0"),
            ],
            "s: 4 TIE — no difference resolved (1 within margin, 2 unresolved, 1 below floor)",
        ),
    ],
)
def test_headline(strata: list[dict[str, Any]], expected: str) -> None:
    assert headline({"name": "s", "strata": strata}).text() == expected


def cell(markdown: str) -> str:
    """What a one-cell table renders its cell as (text only)."""
    tables = rendered_tables(f"| h |\n| :-- |\n| {markdown} |\n")
    assert len(tables) == 1 and len(tables[0]) == 2 and len(tables[0][1]) == 1, markdown
    return tables[0][1][0]


# Printable text and the characters that matter to Markdown and HTML, without the control characters
# (shown as spaces) and without surrounding spaces (a table cell trims them).
TEXT = (
    st.lists(st.sampled_from([*"ab _*`|\\<>&#;[]()!~@:/.x=-'\"éΔ", "&amp;", "&#1;", "&#x41;"]), max_size=20)
    .map("".join)
    .map(str.strip)
)


@given(TEXT)
def test_md_text_renders_as_itself_in_a_table_cell(text: str) -> None:
    assert cell(md_text(text)) == text


@given(TEXT.filter(bool))
def test_md_code_renders_as_itself_in_a_table_cell(text: str) -> None:
    assert cell(md_code(text)) == text


def test_md_code_keeps_mentions_and_links_inert() -> None:
    html = gfm().render(f"| h |\n| :-- |\n| {md_code('@team see www.example.com <b>x</b>')} |\n")
    assert "<code>@team see www.example.com &lt;b&gt;x&lt;/b&gt;</code>" in html
    assert "<a " not in html


def test_a_report_without_guards_or_moved_queries_has_neither_block() -> None:
    report = load()
    golden = copy.deepcopy(report["golden_sets"][1])
    for query in golden["queries"]:
        query["scores"]["candidate"] = query["scores"]["incumbent"]
    markdown = report_markdown({"schema_version": 1, "golden_sets": [golden]})
    assert "Guards:" not in markdown and "moved most" not in markdown
    assert markdown.count("<details>") == 1  # settings and fingerprints


def test_size_warning_names_githubs_limit_for_where_the_markdown_goes() -> None:
    assert size_warning("x" * COMMENT_LIMIT, step_summary=False) is None
    assert size_warning("x" * (COMMENT_LIMIT + 1), step_summary=False) == (
        "the Markdown report has 65,537 characters; a GitHub comment holds at most 65,536 (the step summary "
        "takes 1 MiB)"
    )
    assert size_warning("Δ" * (COMMENT_LIMIT + 1), step_summary=True) is None  # 128 KiB
    assert size_warning("Δ" * (STEP_SUMMARY_LIMIT // 2 + 1), step_summary=True) == (
        "the Markdown report is 1,024 KiB; GitHub shows a step summary of at most 1,024 KiB"
    )


def test_capacity_slices_and_recall_target_render_when_the_report_has_them() -> None:
    report = load(CAPACITY)
    golden = report["golden_sets"][0]
    markdown = report_markdown(report)
    tables = rendered_tables(markdown)
    # strata, guards, Δ by corpus size, capacity, per month, moved, settings, fingerprints
    assert len(tables) == 8
    slices, capacity, monthly = tables[2], tables[3], tables[4]
    assert slices[0] == ["stratum", "10% (300 documents)", "30% (900 documents)", "100% (3,000 documents)"]
    assert [row[0] for row in slices[1:]] == [s["stratum"] for s in golden["strata"]]
    overall = golden["strata"][0]["slices"]
    assert slices[1][1:] == [
        f"{one['delta']:+.3f} [{one['ci'][0]:+.3f}, {one['ci'][1]:+.3f}] {one['verdict']}" for one in overall
    ]
    assert [row[0] for row in capacity] == ["arm", "incumbent", "candidate"]
    assert capacity[1][1] == "48 x float32 (192 B)" and capacity[1][7] == "0.08"  # embedding cost
    assert monthly[0] == ["arm", "query tokens", "query embedding cost", "search core-hours"]
    assert "recall target 0.95: both arms reach it at ef 100;" in markdown
    moving = [s["stratum"] for s in golden["strata"] if s["gap_moving"]]
    assert moving and all(
        f"{name}: gap still moving: the models cannot be ranked at this size yet" in markdown
        for name in moving
    )
    assert "<details><summary>What the capacity figures assume</summary>" in markdown
    assert (
        "- embedding cost, candidate: embedding every document once at 0.002 per million tokens" in markdown
    )


def test_a_report_without_capacity_has_no_capacity_block() -> None:
    markdown = report_markdown(load())
    assert "capacity at" not in markdown and "corpus size" not in markdown and "recall target" not in markdown


def test_the_family_ties_and_consensus_failures_render_when_the_report_has_them() -> None:
    report = load(STATS)
    golden = report["golden_sets"][0]
    markdown = report_markdown(report)
    strata = rendered_tables(markdown)[0]
    assert strata[0][2] == "differ" and strata[0][6] == "CI (holm)"
    assert {row[0]: row[2] for row in strata[1:]} == {
        s["stratum"]: str(s["effective_n"]) + ("†" if 0 < s["effective_n"] < 10 else "")
        for s in golden["strata"]
    }
    assert "95% family-wise (holm, studentized interval), ties docid" in markdown
    html = gfm().render(markdown)
    # the footnote, the family, the ties (a warning where the order changes the verdict), the labels
    assert "† fewer than 10 queries differ between the arms" in html
    assert "multiple comparisons: holm over 5 strata, family-wise level 0.05" in html
    changed = [s["stratum"] for s in golden["strata"] if s["tied"]["could_change"]]
    assert changed and html.count("the tie order changes the verdict") == len(changed)
    assert html.count("<blockquote>") == len(changed) + 1  # and the coverage warning
    assert "check the labels: queries where neither arm finds a relevant document in the top 1" in html


def test_a_report_from_before_the_effective_n_has_no_differ_column() -> None:
    assert "differ" not in rendered_tables(report_markdown(load()))[0][0]


def test_an_endpoint_arms_usage_is_said_under_the_guards() -> None:
    report = load()
    golden = report["golden_sets"][0]
    golden["candidate"]["usage"] = {
        **{"tokens": 12_480, "requests": 42, "cached_tokens": 1_200, "price_per_million_tokens": 0.02},
        **{"cost": 0.0002496, "cached_cost": 0.000024},
    }
    golden["incumbent"]["usage"] = None  # an in-process model
    expected = (
        "candidate usage: 12,480 tokens in 42 requests ($0.0002496 at $0.02 per million); 1,200 tokens "
        "($2.4e-05) not spent: served from the embedding cache"
    )
    assert expected in gfm().render(report_markdown(report))
    assert "incumbent usage" not in report_markdown(report)
