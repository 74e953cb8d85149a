"""What a person reads off a shortlist (the report's ``shortlist`` records, `shortlist.shortlist_record`): its
caption, the table of a row per candidate and a column per stratum with each candidate's outcome and bill,
the line naming the cheapest candidate that passes, the coverage warnings of every arm, and the forest
plot's rows, one per candidate per stratum.

Pure functions of one shortlist record; `reports/terminal.py`, `reports/markdown.py` and
`reports/html_page.py` render them, each escaping the text for its own format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_embeval.judging.coverage import CoverageRow, coverage_warnings
from pytest_embeval.reports.contents import (
    Table,
    counted,
    fmt_bytes,
    fmt_interval,
    fmt_number,
)
from pytest_embeval.reports.stratum_notes import Note

__all__ = ["reading_order", "shortlist_caption", "shortlist_forest", "shortlist_notes", "shortlist_table"]


def reading_order(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The report's golden-set entries (``("golden", entry)``) in order, each golden file's shortlist
    (``("shortlist", record)``) after its candidates' entries."""
    shortlists = {shortlist["path"]: shortlist for shortlist in report.get("shortlist", ())}
    entries = report["golden_sets"]
    ordered: list[tuple[str, Mapping[str, Any]]] = []
    for i, golden in enumerate(entries):
        ordered.append(("golden", golden))
        last = i + 1 == len(entries) or entries[i + 1]["path"] != golden["path"]
        if last and golden["path"] in shortlists:
            ordered.append(("shortlist", shortlists.pop(golden["path"])))
    # A golden file none of whose candidates ran has a shortlist (of errors) and no entries.
    return ordered + [("shortlist", shortlist) for shortlist in shortlists.values()]


def _cell(cell: Mapping[str, Any] | None) -> str:
    """``WORSE -0.071 [-0.130, +0.012]``; ``*`` when the sign test disagrees; — for a stratum not tested."""
    if cell is None:
        return "—"
    star = "*" if cell.get("sign_disagrees") else ""
    return f"{cell['verdict']}{star} {fmt_number(cell['delta'], True)} {fmt_interval(cell['ci'])}"


def _outcome(row: Mapping[str, Any]) -> str:
    if not row["ran"]:
        return "not run"
    if row["decision"] is not None:
        return str(row["decision"])
    return "passes" if row["passes"] else "fails"


def shortlist_table(shortlist: Mapping[str, Any]) -> Table:
    """A row per candidate (passing first, cheapest first): its outcome on every stratum, whether it passes
    (its declared decision, or without one whether no stratum is WORSE), and its bill: dimensions, bytes per
    vector, the index's memory here and, with ``production``, at the production size."""
    rows = shortlist["candidates"]
    decided = any(row["decision"] is not None for row in rows)
    bills = [row["bill"] for row in rows if row["bill"] is not None]
    production = next((bill["production"] for bill in bills if bill["production"] is not None), None)
    header = [
        "candidate",
        *shortlist["strata"],
        "decision" if decided else "gate",
        "dims",
        "B/vector",
        "index",
    ]
    kinds = ["id", *("text",) * len(shortlist["strata"]), "text", "number", "number", "number"]
    if production is not None:
        header += [f"index at {production['documents']:,}", "memory/month", "embedding cost"]
        kinds += ["number"] * 3
    cells = []
    for row in rows:
        bill = row["bill"]
        cell = [
            row["name"],
            *(_cell(row["strata"].get(stratum)) for stratum in shortlist["strata"]),
            _outcome(row),
            *(("—",) * 3 if bill is None else (str(bill["dimension"]), f"{bill['bytes_per_vector']:,}")),
        ]
        if bill is not None:
            cell.append(fmt_bytes(bill["index_bytes"]))
        if production is not None:
            there = None if bill is None else bill["production"]
            cell += ["—"] * 3 if there is None else [_money_or_dash(there, key) for key in _PRODUCTION]
        cells.append(tuple(cell))
    return Table(header=tuple(header), kinds=tuple(kinds), rows=tuple(cells))


#: The production figures of a bill, as shown.
_PRODUCTION = ("index_bytes", "memory_cost_per_month", "embedding_cost")


def _money_or_dash(production: Mapping[str, Any], key: str) -> str:
    value = production[key]
    if value is None:
        return "—"
    return f"{value / 1e9:,.2f} GB" if key == "index_bytes" else f"{value:,.2f}"


def shortlist_caption(shortlist: Mapping[str, Any]) -> str:
    """``shortlist of support-search (golden/support.yaml): recall@5 against the incumbent X (384
    dimensions, 1,536 B per vector); holm over 12 comparisons, 2 candidates' strata, family-wise 5%:``."""
    incumbent = shortlist["incumbent"]
    against = ""
    if incumbent is not None:
        bill = incumbent["bill"]
        held = (
            ""
            if bill is None
            else f" ({bill['dimension']} dimensions, {bill['bytes_per_vector']:,} B per vector)"
        )
        against = f" against the incumbent {incumbent['spec']}{held}"
    metric = "" if shortlist["metric"] is None else f" {shortlist['metric']}"
    where = f"shortlist of {shortlist['name']} ({shortlist['path']})"
    return f"{where}:{metric}{against}; {_family_words(shortlist)}:"


def _family_words(shortlist: Mapping[str, Any]) -> str:
    family = shortlist["family"]
    if not family["candidates"]:
        return "no candidate ran"
    if family["scope"] == "candidate":
        return f"each candidate's strata a family of their own ({family['method']}), family: candidate"
    level = f"{1 - shortlist['confidence']:.0%}"
    return (
        f"one family of {family['size']} comparisons, the strata of "
        f"{counted(len(family['candidates']), 'candidate')}, {family['method']}, family-wise level {level}"
    )


def shortlist_notes(shortlist: Mapping[str, Any], report_path: str | None = None) -> list[Note]:
    """The line naming the cheapest candidate that passes, the candidates that could not be run (the family
    is those that ran), and a warning for each arm whose top k was judged much less than another's (it was
    not pooled: `coverage.coverage_warnings`)."""
    notes = [Note(str(shortlist["line"]))]
    not_run = shortlist["family"]["not_run"]
    if not_run:
        notes.append(
            Note(
                f"not run: {', '.join(not_run)} (the error is reported with its items); the family holds "
                f"the {counted(len(shortlist['family']['candidates']), 'candidate')} that ran",
                warning=True,
            )
        )
    rows = [CoverageRow(**row) for row in shortlist.get("coverage", [])]
    found = coverage_warnings(rows, golden_path=shortlist["path"], report_path=report_path)
    return [*notes, *(Note(warning, warning=True) for warning in found)]


def shortlist_forest(shortlist: Mapping[str, Any]) -> dict[str, Any]:
    """The forest plot's input (what `charts.forest_svg` draws from a golden set) for a shortlist: a row per
    stratum and candidate (``overall · small``), the candidates of each stratum in the table's order."""
    rows = [
        {
            "stratum": f"{stratum} · {row['name']}",
            "n": cell["n"],
            "delta": cell["delta"],
            "ci": cell["ci"],
            "verdict": cell["verdict"],
            "sign_disagrees": cell.get("sign_disagrees", False),
        }
        for stratum in shortlist["strata"]
        for row in shortlist["candidates"]
        if (cell := row["strata"].get(stratum)) is not None
    ]
    return {
        "name": f"shortlist of {shortlist['name']}",
        "metric": shortlist["metric"],
        "tie_margin": shortlist["tie_margin"],
        "confidence": shortlist["confidence"],
        "multiple_comparisons": shortlist["family"]["method"],
        "strata": rows,
    }
