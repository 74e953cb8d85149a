"""The README as a front door: its first screen says what the tool does in words it explains before any
command; its exit-code table says what `docs/reports-and-ci.md`'s does; its table of pages (and the site's
home page's) lists every page in ``docs/``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after ``heading``, without its header and rule rows."""
    section = text[text.index(heading) :]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif rows:
            break
    return rows[2:]


def test_the_first_screen_says_what_the_tool_does_before_any_command() -> None:
    text = README.read_text(encoding="utf-8")
    first_screen = text[: text.index("```")]
    assert len(first_screen.splitlines()) <= 30
    for word in ("**golden set**", "**incumbent**", "**candidate**", "**strata**", "WORSE", "TIE"):
        assert word in first_screen, word


def _exits(rows: list[list[str]]) -> list[tuple[str, str]]:
    """Each row's first `code` word of what pytest says, and its exit status."""
    return [(re.findall(r"`([^`]+)`", says)[0], exit_status) for _, says, exit_status, *_ in rows]


def test_the_readmes_exit_codes_are_those_of_reports_and_ci() -> None:
    readme = table_rows(README.read_text(encoding="utf-8"), "## Exit codes")
    reference = table_rows((DOCS / "reports-and-ci.md").read_text(encoding="utf-8"), "## Exit codes")
    assert len(readme) == len(reference) >= 8
    assert _exits(readme) == _exits(reference)


def test_a_changed_exit_code_is_found() -> None:
    rows = table_rows(README.read_text(encoding="utf-8"), "## Exit codes")
    reference = [row.copy() for row in rows]
    reference[4][2] = "2"  # a broken model said to exit 2
    assert _exits(rows) != _exits(reference)


@pytest.mark.parametrize(
    ("page", "heading", "prefix"), [(README, "| page |", "docs/"), (DOCS / "index.md", "| page |", "")]
)
def test_the_table_of_pages_lists_every_page(page: Path, heading: str, prefix: str) -> None:
    rows = table_rows(page.read_text(encoding="utf-8"), heading)
    linked = [re.fullmatch(r"\[[^]]+\]\(([\w./-]+)\)", row[0]) for row in rows]
    assert all(linked), rows
    pages = {f"{prefix}{path.name}" for path in DOCS.glob("*.md") if path.name != "index.md"}
    assert sorted(match[1] for match in linked if match) == sorted(pages)
