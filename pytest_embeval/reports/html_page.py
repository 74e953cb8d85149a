"""The HTML report: one self-contained page, a pure function of the merged JSON report.

Per golden set: its headline, the forest plot (inline SVG, `reports/charts.py`), the strata (failing first),
the guards, the queries that moved most with their text, and the settings and fingerprints. Nothing on the
page is fetched: no script, font, style sheet or image from anywhere, not even from beside the file; the only
links are to the page's own sections. Long tables show their first rows and fold the rest into a ``<details>``
element, which browsers open without a script. Every string from the golden set, the models or the report is
escaped.

`golden_fragment` is one golden set's section without the page around it, for pytest-html's report.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from pytest_embeval.reports.capacity_contents import (
    capacity_assumptions,
    capacity_blocks,
    recall_target_note,
    slices_block,
    usage_lines,
)
from pytest_embeval.reports.charts import forest_svg, frontier_svg, slices_svg
from pytest_embeval.reports.contents import (
    Table,
    fingerprints_table,
    guards_table,
    headline,
    interval_words,
    moved_most,
    moved_table,
    routed_caption,
    settings_table,
    strata_table,
)
from pytest_embeval.reports.frontier import frontier_block
from pytest_embeval.reports.pipeline_contents import index_split_block, pipeline_notes, rerank_block
from pytest_embeval.reports.shortlist_contents import (
    reading_order,
    shortlist_caption,
    shortlist_forest,
    shortlist_notes,
    shortlist_table,
)
from pytest_embeval.reports.stratum_notes import coverage_notes, strata_notes

#: Rows of a table shown before the rest is folded away.
ROWS_SHOWN = 50
#: Queries shown under "moved most" before the folded list of every query that moved.
MOVED_SHOWN = 20

#: Scoped to ``.embeval`` so that inside pytest-html's report it styles nothing of pytest-html's. The
#: verdict tints differ from the plot's verdict colours (`charts.VERDICT_COLOURS`) on purpose.
STYLE = """
.embeval { font-family: sans-serif; color: #1a1a1a; line-height: 1.4; }
.embeval h1 { font-size: 1.5em; }
.embeval h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
.embeval h3 { font-size: 1.05em; margin-bottom: 0.3em; }
.embeval .scroll { overflow-x: auto; max-width: 100%; }
.embeval table { border-collapse: collapse; font-size: 13px; margin: 0.3em 0 0.8em; }
.embeval th, .embeval td { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; }
.embeval th { background: #f4f4f4; text-align: left; }
.embeval td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.embeval td.id { white-space: nowrap; }
.embeval td.text, .embeval td.quote { min-width: 16em; }
.embeval code { font-size: 12px; overflow-wrap: anywhere; }
.embeval .v-WORSE { background: #fde0d0; font-weight: bold; }
.embeval .v-BETTER { background: #d6e8f7; font-weight: bold; }
.embeval .v-TIE { background: #ededed; }
.embeval .warning { background: #fff6d6; border-left: 4px solid #e0b000; padding: 4px 8px; }
.embeval details > summary { cursor: pointer; margin: 0.3em 0; }
.embeval figure { margin: 0.5em 0; }
.embeval figcaption { font-size: 12px; color: #444; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _cell(kind: str, text: str) -> str:
    if kind == "id":
        return f'<td class="id"><code>{_e(text)}</code></td>'
    if kind == "verdict":
        return f'<td class="v-{_e(text.rstrip("*"))}">{_e(text)}</td>'
    return f'<td class="{kind}">{_e(text)}</td>'


def html_table(table: Table, *, shown: int = ROWS_SHOWN) -> str:
    """The table; past ``shown`` rows the rest are folded into a ``<details>`` element."""
    head = "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in table.header) + "</tr>"
    rows = [
        "<tr>" + "".join(_cell(kind, text) for kind, text in zip(table.kinds, row, strict=True)) + "</tr>"
        for row in table.rows
    ]

    def part(rows: list[str]) -> str:
        body = "\n".join(rows)
        return f'<div class="scroll"><table>\n<thead>{head}</thead>\n<tbody>\n{body}\n</tbody></table></div>'

    if len(rows) <= shown:
        return part(rows)
    return (
        f"{part(rows[:shown])}\n<details><summary>{len(rows) - shown:,} more rows</summary>\n"
        f"{part(rows[shown:])}\n</details>"
    )


def _capacity(golden: Mapping[str, Any]) -> list[str]:
    """The recall target, Δ against corpus size and the capacity figures, when the golden set has them."""
    parts = []
    note = recall_target_note(golden)
    said = [*([note] if note is not None else []), *usage_lines(golden)]
    parts += [f"<p>{_e(line)}</p>" for line in said]
    slices = slices_block(golden, golden["strata"])
    chart = slices_svg(golden)
    if slices is not None and chart is not None:
        parts += [
            "<h3>Δ by corpus size</h3>",
            f'<figure class="scroll">{chart}<figcaption>{_e(slices.caption)}</figcaption></figure>',
            html_table(slices.table),
            *(f'<p class="warning">{_e(n)}</p>' for n in slices.notes),
        ]
    blocks = capacity_blocks(golden)
    if blocks:
        parts.append("<h3>Capacity</h3>")
    for block in blocks:
        parts += [
            f"<p>{_e(block.caption)}</p>",
            html_table(block.table),
            *(f"<p>{_e(n)}</p>" for n in block.notes),
        ]
    if blocks:
        assumed = "".join(f"<li>{_e(line)}</li>" for line in capacity_assumptions(golden))
        parts.append(
            f"<details><summary>What the capacity figures assume</summary><ul>{assumed}</ul></details>"
        )
    return parts


def _frontier(holder: Mapping[str, Any]) -> list[str]:
    """Every arm's quality against its bill, drawn and tabled, when an arm of the golden set's comparison
    or of the shortlist ``holder`` is a variant or the index a FAISS index."""
    if "frontier" not in holder:
        return []
    block, chart = frontier_block(holder["frontier"]), frontier_svg(holder["frontier"])
    figure = (
        []
        if chart is None
        else [f'<figure class="scroll">{chart}<figcaption>{_e(block.caption)}</figcaption></figure>']
    )
    return [
        "<h3>Frontier</h3>",
        *figure,
        f"<p>{_e(block.caption)}</p>",
        html_table(block.table),
        *(f'<p class="decision"><strong>{_e(n)}</strong></p>' for n in block.notes),
    ]


def _pipeline(golden: Mapping[str, Any]) -> list[str]:
    """The filters, the folding and the first-stage and after-rerank comparisons, when declared."""
    parts = [f"<p>{_e(note)}</p>" for note in pipeline_notes(golden)]
    blocks = (
        ("The model's part and the engine's", index_split_block(golden, golden["strata"])),
        ("After the reranker", rerank_block(golden, golden["strata"])),
    )
    for title, block in blocks:
        if block is not None:
            parts += [
                f"<h3>{_e(title)}</h3>",
                f"<p>{_e(block.caption)}</p>",
                html_table(block.table),
                *(f"<p>{_e(n)}</p>" for n in block.notes),
            ]
    return parts


def _decision(golden: Mapping[str, Any]) -> list[str]:
    """The declared decision's line, and the routed system it measured."""
    decision = golden.get("decision")
    if decision is None:
        return []
    parts = ["<h3>Decision</h3>", f'<p class="decision"><strong>{_e(decision["line"])}</strong></p>']
    caption = routed_caption(decision)
    if caption is not None:
        parts += [
            f"<p>{_e(caption[0].upper() + caption[1:])}:</p>",
            html_table(strata_table(golden, decision["routed_system"])),
        ]
    return parts


def golden_fragment(golden: Mapping[str, Any], anchor: str) -> str:
    """One golden set's section (element id ``anchor``), styled by `STYLE` under an ``.embeval`` element."""
    arms = (
        f"incumbent <code>{_e(golden['incumbent']['spec'])}</code> vs candidate "
        f"<code>{_e(golden['candidate']['spec'])}</code>"
    )
    caption = (
        f"Dot: Δ of {_e(golden['metric'])} (candidate - incumbent); line: its interval "
        f"({_e(interval_words(golden))}); shaded: the ±{golden['tie_margin']:g} tie margin. Colour by "
        "verdict: orange WORSE, blue BETTER, grey TIE."
    )
    parts = [
        f'<section id="{_e(anchor)}">',
        f"<h2>{_e(headline(golden).text())}</h2>",
        f"<p><code>{_e(golden['path'])}</code>: {_e(golden['metric'])}, margin {golden['tie_margin']:g}, "
        f"{_e(interval_words(golden))}; {arms}</p>",
        f'<figure class="scroll">{forest_svg(golden)}<figcaption>{caption}</figcaption></figure>',
        "<h3>Strata</h3>",
        html_table(strata_table(golden)),
    ]
    for note in [*strata_notes(golden, golden["strata"]), *coverage_notes(golden)]:
        parts.append(
            f'<p class="warning">Warning: {_e(note.text)}</p>' if note.warning else f"<p>{_e(note.text)}</p>"
        )
    parts += _decision(golden)
    guards = guards_table(golden)
    if guards is not None:
        parts += ["<h3>Guards</h3>", html_table(guards)]
    parts += _pipeline(golden)
    parts += _capacity(golden)
    parts += _frontier(golden)
    moved, total = moved_most(golden, limit=None)
    if moved:
        parts += [
            f"<h3>Queries that moved most on {_e(golden['metric'])} ({total:,} moved)</h3>",
            html_table(moved_table(moved), shown=MOVED_SHOWN),
        ]
    parts += [
        "<details><summary>Settings and fingerprints</summary>",
        html_table(settings_table(golden), shown=10**9),
        html_table(fingerprints_table(golden), shown=10**9),
        "</details>",
        "</section>",
    ]
    return "\n".join(part for part in parts if part)


def shortlist_fragment(shortlist: Mapping[str, Any], anchor: str) -> str:
    """A shortlist's section (element id ``anchor``): the forest plot with a row per stratum and candidate,
    the table of the candidates, the line naming the cheapest that passes, its warnings, and its frontier
    (with a variant or a FAISS index among the arms)."""
    forest = shortlist_forest(shortlist)
    parts = [
        f'<section id="{_e(anchor)}">',
        f"<h2>{_e(shortlist_title(shortlist))}</h2>",
        f"<p>{_e(shortlist_caption(shortlist))}</p>",
    ]
    if forest["strata"]:
        caption = (
            f"Dot: Δ of {_e(forest['metric'])} (candidate - incumbent) per stratum and candidate; line: its "
            f"interval; shaded: the ±{forest['tie_margin']:g} tie margin. Colour by verdict: orange WORSE, "
            "blue BETTER, grey TIE."
        )
        parts.append(
            f'<figure class="scroll">{forest_svg(forest)}<figcaption>{caption}</figcaption></figure>'
        )
    parts.append(html_table(shortlist_table(shortlist)))
    for note in shortlist_notes(shortlist):
        parts.append(
            f'<p class="warning">Warning: {_e(note.text)}</p>' if note.warning else f"<p>{_e(note.text)}</p>"
        )
    parts += _frontier(shortlist)
    parts.append("</section>")
    return "\n".join(parts)


def shortlist_title(shortlist: Mapping[str, Any]) -> str:
    """``Shortlist of support-search: cheapest passing candidate: small (…)``."""
    return f"Shortlist of {shortlist['name']}: {shortlist['line']}"


def report_sections(report: Mapping[str, Any], prefix: str) -> list[tuple[str, str, str]]:
    """Each section of the page in reading order: its anchor (``prefix`` and a number), its title for the
    contents, and its HTML."""
    sections = []
    for number, (kind, record) in enumerate(reading_order(report), start=1):
        anchor = f"{prefix}{number}"
        if kind == "golden":
            sections.append((anchor, headline(record).text(), golden_fragment(record, anchor)))
        else:
            sections.append((anchor, shortlist_title(record), shortlist_fragment(record, anchor)))
    return sections


def report_html(report: Mapping[str, Any]) -> str:
    """The whole page."""
    sections = report_sections(report, "golden-")
    contents = "\n".join(f'<li><a href="#{anchor}">{_e(title)}</a></li>' for anchor, title, _ in sections)
    body = "\n".join(section for _, _, section in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>embeval report</title>\n<style>{STYLE}</style>\n</head>\n"
        f'<body class="embeval">\n<h1>embeval</h1>\n<ul>\n{contents}\n</ul>\n{body}\n</body>\n</html>\n'
    )
