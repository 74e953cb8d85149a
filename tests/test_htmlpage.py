"""The HTML page: self-contained, escaped, one forest-plot row per stratum, usable when large, and what
headless Chromium shows of it."""

from __future__ import annotations

import copy
import itertools
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from chromium import CHROMIUM, screenshot
from test_markdown import CAPACITY, DATA, HOSTILE, STATS, load

from pytest_embeval.reports.charts import VERDICT_COLOURS, forest_axis, forest_rows, forest_svg
from pytest_embeval.reports.html_page import MOVED_SHOWN, ROWS_SHOWN, report_html

#: Elements that fetch or run something; none may appear on the page.
FETCHING = {"script", "link", "img", "iframe", "object", "embed", "video", "audio", "source", "base", "image"}
#: Attributes that name a URL.
URL_ATTRIBUTES = {
    "src",
    "href",
    "xlink:href",
    "action",
    "formaction",
    "srcset",
    "poster",
    "data",
    "background",
}


class Page(HTMLParser):
    """Every element, every URL-valued attribute, the forest-plot rows, the text and the style sheets."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: Counter[str] = Counter()
        self.urls: list[str] = []
        self.attribute_values: list[str] = []
        self.handlers: list[str] = []
        self.rows: list[list[str]] = []  # per <svg class="forest">, each row's verdict
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        values = dict(attrs)
        for name, value in attrs:
            self.attribute_values.append(value or "")
            if name in URL_ATTRIBUTES:
                self.urls.append(value or "")
            if name.startswith("on"):
                self.handlers.append(name)
            if name == "style":
                self.styles.append(value or "")
        if tag == "svg" and values.get("class") == "forest":
            self.rows.append([])
        if tag == "g" and values.get("class") == "row":
            self.rows[-1].append(values.get("data-verdict") or "")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)
        else:
            self.text.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


@pytest.mark.parametrize("name", ["report", "report-capacity", "report-stats"])
def test_the_page_refers_to_nothing_outside_it(name: str) -> None:
    page = parse(report_html(load(DATA / f"{name}.json")))
    assert not FETCHING & set(page.tags)
    assert not page.handlers
    # The only links go to the page's own sections.
    assert page.urls and all(re.fullmatch(r"#[\w-]+", url) for url in page.urls), page.urls
    for css in page.styles:
        assert "@import" not in css and "url(" not in css
    # No attribute names a URL scheme (the SVG namespace is a name, not a fetch); query text may, as text.
    schemes = [v for v in page.attribute_values if re.search(r"\b(https?|file|ftp|data|javascript):", v)]
    assert schemes == ["http://www.w3.org/2000/svg"] * page.tags["svg"]


def test_hostile_text_is_shown_as_text_never_as_markup() -> None:
    html = report_html(load())
    page = parse(html)
    text = "".join(page.text)
    assert HOSTILE + "\nsecond line" in text
    assert "<img src=x onerror=alert(1)> 'single' \"double\"" in text
    assert "q|03<i>&" in text and "shape=odd|<em>x</em>" in text
    assert "wins & <b>\"bold\"</b> | 'q'" in text
    # The markup the golden set tried to inject is not on the page as elements.
    assert not {"em", "b", "i", "script", "img"} & set(page.tags)


def test_one_forest_row_per_stratum_in_golden_file_order() -> None:
    report = load()
    page = parse(report_html(report))
    assert page.rows == [[s["verdict"] for s in golden["strata"]] for golden in report["golden_sets"]]


def test_the_axis_holds_every_interval_zero_and_the_margin() -> None:
    golden = load()["golden_sets"][0]
    rows = forest_rows(golden)
    axis = forest_axis(rows, golden["tie_margin"])
    for row in rows:
        interval = row.interval()
        assert interval is not None
        assert axis.low <= min(interval) and max(interval) <= axis.high
    assert axis.low < -golden["tie_margin"] and golden["tie_margin"] < axis.high
    assert 0.0 in axis.ticks and all(axis.low <= t <= axis.high for t in axis.ticks)


def test_a_stratum_without_an_estimate_is_a_row_without_a_point() -> None:
    golden = copy.deepcopy(load()["golden_sets"][0])
    golden["strata"][1].update(delta=None, ci=[None, None])
    svg = forest_svg(golden)
    assert svg.count('<g class="row"') == len(golden["strata"])
    assert svg.count("<circle") == len(golden["strata"]) - 1
    assert "no estimate: WORSE" in svg


def test_delta_against_corpus_size_has_one_line_per_stratum_and_the_capacity_tables() -> None:
    report = load(CAPACITY)
    golden = report["golden_sets"][0]
    page = report_html(report)
    lines = re.findall(r'<g class="slice-line" data-verdict="(\w+)">', page)
    assert lines == [s["verdict"] for s in golden["strata"]]
    assert page.count("<polyline") == len(golden["strata"])
    # every point of every line, and the sizes on the x axis
    assert page.count('r="3.5"') == sum(len(s["slices"]) for s in golden["strata"])
    assert "documents searched (log scale)" in page
    assert "<h3>Capacity</h3>" in page and "0.34 GB" in page
    assert "gap still moving: the models cannot be ranked at this size yet" in page
    assert "recall target 0.95: both arms reach it at ef 100" in page


def test_what_the_verdicts_rest_on_is_under_the_strata_table() -> None:
    report = load(STATS)
    page = report_html(report)
    changed = sum(s["tied"]["could_change"] for s in report["golden_sets"][0]["strata"])
    assert page.count('<p class="warning">Warning: ') == changed + 1  # and the coverage warning
    assert "<p>multiple comparisons: holm over 5 strata" in page and "<th>CI (holm)</th>" in page


def big_report(strata: int, queries: int) -> dict[str, Any]:
    """One golden set of ``strata`` strata and ``queries`` queries, every query moved."""
    golden = copy.deepcopy(load()["golden_sets"][0])
    template = golden["strata"][0]
    golden["strata"] = [
        {**template, "stratum": f"topic=t{i:03d}", "verdict": ("WORSE", "TIE", "BETTER")[i % 3]}
        for i in range(strata)
    ]
    query = golden["queries"][0]
    golden["queries"] = [
        {
            **query,
            "id": f"q{i:05d}",
            "scores": {"incumbent": {"hit@1": 1.0}, "candidate": {"hit@1": (i % 7) / 6}},
        }
        for i in range(queries)
    ]
    return {"schema_version": 1, "golden_sets": [golden]}


def test_hundreds_of_strata_and_thousands_of_queries_stay_readable() -> None:
    page = report_html(big_report(500, 5000))
    parsed = parse(page)
    assert [len(rows) for rows in parsed.rows] == [500]  # the plot grows: every stratum is a row
    height = int(re.search(r'<svg [^>]*class="forest"[^>]*height="(\d+)"', page).group(1))  # type: ignore[union-attr]
    assert height > 500 * 20
    # Long tables show their first rows and fold the rest away, with no script.
    assert f"{500 - ROWS_SHOWN:,} more rows" in page
    moved = sum(i % 7 != 6 for i in range(5000))  # the others score 1.0 under both arms
    assert f"{moved - MOVED_SHOWN:,} more rows" in page
    assert parsed.tags["details"] >= 3 and "script" not in parsed.tags


def screenshot_of(page: str, folder: Path, width: int, height: int) -> Path:
    html, png = folder / "page.html", folder / "page.png"
    html.write_text(page, encoding="utf-8")
    screenshot(html, png, width, height)
    return png


def marker_bands(png: Path) -> list[tuple[int, int]]:
    """The horizontal bands of the picture holding a verdict colour (a plot row's point, interval and
    numbers): (first, last) pixel row of each. A band is at least as tall as half a point: a lone line of
    pixels is anti-aliased text that happens to hit the grey of TIE."""
    from PIL import Image

    colours = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in VERDICT_COLOURS.values()}
    image = Image.open(png).convert("RGB")
    width, height = image.size
    pixels = image.load()
    assert pixels is not None
    rows = [sum(pixels[x, y] in colours for x in range(width)) >= 8 for y in range(height)]
    bands, start = [], None
    for y, coloured in enumerate([*rows, False]):
        if coloured and start is None:
            start = y
        elif not coloured and start is not None:
            if y - start >= 5:
                bands.append((start, y - 1))
            start = None
    return bands


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (apt-get install chromium)")
def test_chromium_shows_one_forest_row_per_stratum(tmp_path: Path) -> None:
    report = load()
    golden = report["golden_sets"][0]
    # Twelve strata of all three verdicts; the verdict colours appear nowhere else on the page.
    golden["strata"] = [
        {**golden["strata"][i % 5], "stratum": f"s={i}", "verdict": ("WORSE", "TIE", "BETTER")[i % 3]}
        for i in range(12)
    ]
    report["golden_sets"] = [golden]
    bands = marker_bands(screenshot_of(report_html(report), tmp_path, 1100, 1600))
    assert len(bands) == 12, bands
    centres = [(first + last) / 2 for first, last in bands]
    gaps = {round(b - a) for a, b in itertools.pairwise(centres)}
    assert len(gaps) == 1, gaps  # evenly spaced: one row per stratum
