"""The forest plot as a PNG picture, for places that take images only (optional extra ``[plot]``).

The same rows, axis range and colours as the HTML page's plot (`charts.forest_rows`, `forest_axis`,
`VERDICT_COLOURS`), drawn by matplotlib: one panel per golden set, stacked, each as tall as its strata (up
to `PICTURE_ROWS`).
matplotlib is imported when a picture is drawn, and only then.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from pytest_embeval.reports.charts import MARGIN_COLOUR, VERDICT_COLOURS, ForestRow, forest_axis, forest_rows
from pytest_embeval.reports.contents import ci_heading, fmt_interval, fmt_number, golden_title

ROW_INCHES = 0.28
PANEL_INCHES = 1.1  # title and axis of each golden set's panel
#: Strata one golden set's panel shows at most: a picture taller than a screen or two is not read where
#: only pictures go (and matplotlib takes 20 s for 500 rows); the HTML page shows every stratum.
PICTURE_ROWS = 60


def picture_rows(golden: Mapping[str, Any]) -> tuple[list[ForestRow], int]:
    """The strata a panel shows, in the golden file's order, and how many it leaves out: all of them when
    they fit, else ``overall`` and the strata that resolved (WORSE first, then BETTER), then ties."""
    rows = forest_rows(golden)
    if len(rows) <= PICTURE_ROWS:
        return rows, 0
    rank = {"WORSE": 1, "BETTER": 2}
    chosen = sorted(
        range(len(rows)), key=lambda i: 0 if rows[i].stratum == "overall" else rank.get(rows[i].verdict, 3)
    )
    keep = set(chosen[:PICTURE_ROWS])
    return [row for i, row in enumerate(rows) if i in keep], len(rows) - PICTURE_ROWS


def forest_png(report: Mapping[str, Any]) -> bytes:
    """Every golden set's forest plot in one PNG image."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display, and no GUI toolkit imported
        from matplotlib.figure import Figure
    except ImportError:
        raise RuntimeError(PLOT_MISSING) from None
    golden_sets = report["golden_sets"]
    heights = [max(min(len(g["strata"]), PICTURE_ROWS), 1) * ROW_INCHES + PANEL_INCHES for g in golden_sets]
    figure = Figure(figsize=(10, sum(heights)), layout="constrained")
    axes = figure.subplots(len(golden_sets), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, golden in zip(axes, golden_sets, strict=True):
        _panel(ax, golden)
    buffer = io.BytesIO()
    # Fixed metadata: the same report draws the same bytes.
    figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def _panel(ax: Any, golden: Mapping[str, Any]) -> None:
    rows, left_out = picture_rows(golden)
    margin = float(golden["tie_margin"])
    axis = forest_axis(rows, margin)
    ax.axvspan(-margin, margin, color=MARGIN_COLOUR, zorder=0)
    ax.axvline(0.0, color="#333333", linewidth=1, zorder=1)
    for y, row in enumerate(rows):
        colour = VERDICT_COLOURS.get(row.verdict, "#000000")
        interval = row.interval()
        if interval is not None:
            low, delta, high = interval
            ax.plot([low, high], [y, y], color=colour, linewidth=2.5, solid_capstyle="butt", zorder=2)
            ax.plot([delta], [y], "o", color=colour, markersize=7, zorder=3)
            said = f"{fmt_number(delta, True)} {fmt_interval((low, high))} {row.verdict}"
        else:
            said = f"no estimate: {row.verdict}"
        ax.annotate(
            said + ("*" if row.sign_disagrees else ""),
            xy=(1.01, y),
            xycoords=("axes fraction", "data"),
            va="center",
            color=colour,
            fontweight="bold",
            fontsize=9,
            parse_math=False,
        )
    # parse_math=False: a "$" in a stratum or golden-set name is a dollar, not TeX.
    ax.set_yticks(range(len(rows)), [f"{row.stratum}  n={row.n}" for row in rows], fontsize=9)
    for label in ax.get_yticklabels():
        label.set_parse_math(False)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the golden file's first stratum on top
    ax.set_xlim(axis.low, axis.high)
    ax.set_xticks(axis.ticks)
    ax.grid(axis="x", color="#cccccc", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.set_xlabel(f"Δ {golden['metric']}; shaded: ±{margin:g} tie margin", fontsize=9, parse_math=False)
    shown = ""
    if left_out:
        shown = (
            f"\n{len(rows)} of {len(rows) + left_out} strata: overall and the resolved ones first "
            "(the HTML report has every one)"
        )
    ax.set_title(
        f"{golden_title(golden)}: {golden['metric']}, candidate - incumbent, {ci_heading(golden)}{shown}",
        loc="left",
        fontsize=10,
        parse_math=False,
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


PLOT_MISSING = "--embeval-plot needs matplotlib: pip install 'pytest-embeval[plot]'"
