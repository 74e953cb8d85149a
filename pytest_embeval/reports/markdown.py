"""The Markdown report for a pull-request comment or a GitHub step summary, as a pure function of the merged
JSON report: per golden set its headline, the strata (failing first), the guards, the queries that moved most
and the settings and fingerprints, the last two collapsed in ``<details>`` blocks.

It is GitHub-flavoured Markdown that also reads as plain text: pipe tables with a header separator, no HTML
but ``<details>``/``<summary>``. Text from the golden set (names, ids, query text) is escaped: ids and query
text go in code spans (no emphasis, link, mention or HTML can start inside one), other text is
backslash-escaped, and a ``|`` never ends a table cell early.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from pytest_embeval.reports.capacity_contents import (
    capacity_assumptions,
    capacity_blocks,
    recall_target_note,
    slices_block,
    usage_lines,
)
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
    shortlist_notes,
    shortlist_table,
)
from pytest_embeval.reports.stratum_notes import coverage_notes, strata_notes

#: Characters that start inline Markdown (emphasis, code, HTML, strikethrough, headings, entities) or end
#: a table cell; each shows as itself when backslash-escaped. Left alone where they cannot start anything,
#: for plain-text readers: an underscore inside a word (``q_en_01``), and brackets not followed by a link
#: target (``CI [-0.1, +0.2]``; no link definition can be written where the report puts text).
_SPECIAL = re.compile(r"[\\`*<>|~#]|\](?=[(\[])|&(?=#?\w+;)|(?<![^\W_])_|_(?![^\W_])")
#: Line breaks and other control characters would end a table row or a heading: shown as a space.
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def md_text(text: object) -> str:
    """``text`` as Markdown that renders as exactly ``text`` on one line, inside a table cell too."""
    return _SPECIAL.sub(lambda m: "\\" + m.group(), _CONTROL.sub(" ", str(text)))


def md_code(text: object, *, table: bool = True) -> str:
    """``text`` as a code span: nothing inside it is Markdown, HTML, a link or a mention. With ``table`` (it
    goes in a table cell) its ``|`` is escaped the way GFM tables unescape it; elsewhere it must not be."""
    value = _CONTROL.sub(" ", str(text))
    if not value.strip():
        return md_text(value) or "—"
    if table and re.search(r"\\+\|", value):
        # Renderers split table cells differently after backslashes; escaped text renders the same on all.
        return md_text(value)
    fence = "`" * (max(map(len, re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value[0] in "` " or value[-1] in "` " else ""
    if table:
        value = value.replace("|", "\\|")
    return f"{fence}{pad}{value}{pad}{fence}"


def _cell(kind: str, text: str) -> str:
    if kind in ("id", "quote"):
        return md_code(text)
    if kind == "verdict":
        verdict, star = text.rstrip("*"), text.endswith("*")
        return f"**{verdict}**" + ("\\*" if star else "")
    if kind == "number":  # ours, digits and signs: nothing in it is Markdown
        return text.replace("|", "\\|")
    return md_text(text)


def md_table(table: Table) -> list[str]:
    """A pipe table: numbers right-aligned, the rest left-aligned."""
    separator = ["--:" if kind == "number" else ":--" for kind in table.kinds]
    rows = [[_cell(kind, text) for kind, text in zip(table.kinds, row, strict=True)] for row in table.rows]
    header = [md_text(h) for h in table.header]
    return [f"| {' | '.join(cells)} |" for cells in (header, separator, *rows)]


def _details(summary: str, body: list[str]) -> list[str]:
    """A collapsed block; ``summary`` is HTML. The blank lines make GitHub render the body as Markdown
    rather than as part of the HTML block."""
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def _capacity(golden: Mapping[str, Any]) -> list[str]:
    """The recall target, the corpus slices and the capacity figures, when the golden set has them."""
    lines = []
    note = recall_target_note(golden)
    for line in [*([note] if note is not None else []), *usage_lines(golden)]:
        lines += [md_text(line), ""]
    slices = slices_block(golden, golden["strata"])
    if slices is not None:
        lines += [line for n in slices.notes for line in (md_text(n), "")]
        lines += _details("Δ by corpus size", [md_text(slices.caption), "", *md_table(slices.table)])
    blocks = capacity_blocks(golden)
    for block in blocks:
        lines += [md_text(block.caption), "", *md_table(block.table), ""]
        lines += [line for n in block.notes for line in (md_text(n), "")]
    if blocks:
        assumed = [f"- {md_text(line)}" for line in capacity_assumptions(golden)]
        lines += _details("What the capacity figures assume", assumed)
    return lines


def _frontier(holder: Mapping[str, Any]) -> list[str]:
    """Every arm's quality against its bill, when an arm of the golden set's comparison or of the shortlist
    ``holder`` is a variant or the index a FAISS index."""
    if "frontier" not in holder:
        return []
    block = frontier_block(holder["frontier"])
    return [
        md_text(block.caption),
        "",
        *md_table(block.table),
        "",
        *(f"**{md_text(n)}**" for n in block.notes),
        "",
    ]


def _pipeline(golden: Mapping[str, Any]) -> list[str]:
    """The filters, the folding and the first-stage and after-rerank comparisons, when declared."""
    lines = [line for note in pipeline_notes(golden) for line in (md_text(note), "")]
    for block in (index_split_block(golden, golden["strata"]), rerank_block(golden, golden["strata"])):
        if block is not None:
            lines += [md_text(block.caption), "", *md_table(block.table), ""]
            lines += [line for n in block.notes for line in (md_text(n), "")]
    return lines


def _decision(golden: Mapping[str, Any]) -> list[str]:
    """The declared decision's line, and the routed system it measured."""
    decision = golden.get("decision")
    if decision is None:
        return []
    lines = [f"**{md_text(decision['line'])}**", ""]
    caption = routed_caption(decision)
    if caption is not None:
        lines += [
            f"{md_text(caption[0].upper() + caption[1:])}:",
            "",
            *md_table(strata_table(golden, decision["routed_system"])),
            "",
        ]
    return lines


def golden_markdown(golden: Mapping[str, Any]) -> list[str]:
    """One golden set's section."""

    def code(text: str) -> str:
        return md_code(text, table=False)

    arms = f"incumbent {code(golden['incumbent']['spec'])} vs candidate {code(golden['candidate']['spec'])}"
    lines = [
        f"### {headline(golden).text(stratum=code, name=md_text)}",
        "",
        f"{code(golden['path'])}: {md_text(golden['metric'])}, margin {golden['tie_margin']:g}, "
        f"{md_text(interval_words(golden))}; {arms}",
        "",
        *md_table(strata_table(golden)),
        "",
    ]
    for note in [*strata_notes(golden, golden["strata"]), *coverage_notes(golden)]:
        lines += [f"> **Warning:** {md_text(note.text)}" if note.warning else md_text(note.text), ""]
    lines += _decision(golden)
    guards = guards_table(golden)
    if guards is not None:
        lines += ["Guards:", "", *md_table(guards), ""]
    lines += _pipeline(golden)
    lines += _capacity(golden)
    lines += _frontier(golden)
    moved, total = moved_most(golden)
    if moved:
        metric = html.escape(str(golden["metric"]))
        summary = f"Queries that moved most on {metric}: {len(moved)} of {total} that moved"
        lines += _details(summary, md_table(moved_table(moved)))
    settings = [*md_table(settings_table(golden)), "", *md_table(fingerprints_table(golden))]
    return [*lines, *_details("Settings and fingerprints", settings)]


def shortlist_markdown(shortlist: Mapping[str, Any]) -> list[str]:
    """A shortlist's section: its table, the line naming the cheapest candidate that passes, its warnings,
    and its frontier (with a variant or a FAISS index among the arms)."""
    lines = [
        f"### Shortlist of {md_text(shortlist['name'])}: {md_text(shortlist['line'])}",
        "",
        md_text(shortlist_caption(shortlist)),
        "",
        *md_table(shortlist_table(shortlist)),
        "",
    ]
    for note in shortlist_notes(shortlist):
        lines += [f"> **Warning:** {md_text(note.text)}" if note.warning else md_text(note.text), ""]
    return lines + _frontier(shortlist)


def report_markdown(report: Mapping[str, Any]) -> str:
    """The whole Markdown report: a heading, then one section per golden set (per candidate's comparison,
    in a shortlist, the shortlist's section after them)."""
    lines = ["## embeval", ""]
    for kind, record in reading_order(report):
        lines += golden_markdown(record) if kind == "golden" else shortlist_markdown(record)
    return "\n".join(lines).rstrip("\n") + "\n"


#: What GitHub takes: a comment's body in characters, a job step's summary in bytes.
COMMENT_LIMIT = 65_536
STEP_SUMMARY_LIMIT = 1024 * 1024


def size_warning(markdown: str, *, step_summary: bool) -> str | None:
    """A warning when the Markdown is too long for where it goes on GitHub, else None."""
    if step_summary and len(markdown.encode("utf-8")) > STEP_SUMMARY_LIMIT:
        size = len(markdown.encode("utf-8")) / 1024
        return f"the Markdown report is {size:,.0f} KiB; GitHub shows a step summary of at most 1,024 KiB"
    if not step_summary and len(markdown) > COMMENT_LIMIT:
        return (
            f"the Markdown report has {len(markdown):,} characters; a GitHub comment holds at most "
            f"{COMMENT_LIMIT:,} (the step summary takes 1 MiB)"
        )
    return None
