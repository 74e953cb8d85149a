"""The forest plot of a golden set: per stratum, Δ of the primary metric with its confidence interval,
against zero and the ±margin band, coloured by verdict.

`forest_rows` and `forest_axis` are what the picture shows, shared by the inline SVG drawn here (for the
HTML page and pytest-html's report) and the matplotlib picture of `plot.py`. The SVG is our own few lines:
no plotting library, no script, no font or style from outside; its height grows with the strata.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Mapping
from typing import Any

from pytest_embeval.readout import fmt_interval, fmt_number

#: Verdict colours, told apart by people with red-green colour blindness too (blue, orange, grey), and
#: never used elsewhere on the page (tests find the plot's rows by them).
VERDICT_COLOURS = {"WORSE": "#d55e00", "BETTER": "#0072b2", "TIE": "#6e6e6e"}
MARGIN_COLOUR = "#e8e8e8"

ROW_HEIGHT = 22
PLOT_WIDTH = 440
LABEL_CHARS = 36  # longer stratum names are cut, the whole name kept as the row's tooltip
CHAR_WIDTH = 7.2  # px per character at 12px, generous for proportional fonts
TOP = 38
BOTTOM = 40
NUMBERS_WIDTH = 250


@dataclasses.dataclass(frozen=True, slots=True)
class ForestRow:
    stratum: str
    n: int
    delta: float | None
    low: float | None
    high: float | None
    verdict: str
    #: the sign test disagrees with a BETTER/WORSE verdict
    sign_disagrees: bool

    def interval(self) -> tuple[float, float, float] | None:
        """``(low, delta, high)`` when all three are finite, else None: nothing to draw."""
        low, delta, high = self.low, self.delta, self.high
        if low is None or delta is None or high is None or not all(map(math.isfinite, (low, delta, high))):
            return None
        return low, delta, high


def forest_rows(golden: Mapping[str, Any]) -> list[ForestRow]:
    """One row per stratum, in the golden file's order (``overall`` first)."""
    return [
        ForestRow(
            stratum=str(s["stratum"]),
            n=int(s["n"]),
            delta=s["delta"],
            low=s["ci"][0],
            high=s["ci"][1],
            verdict=str(s["verdict"]),
            sign_disagrees=bool(s.get("sign_disagrees")),
        )
        for s in golden["strata"]
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class Axis:
    low: float
    high: float
    ticks: tuple[float, ...]


def forest_axis(rows: list[ForestRow], margin: float) -> Axis:
    """An x range holding every interval, zero and ±margin with a little room, and round ticks inside it."""
    values = [0.0, -margin, margin]
    for row in rows:
        values += row.interval() or ()
    low, high = min(values), max(values)
    if high - low < 1e-9:
        low, high = -0.05, 0.05
    room = 0.06 * (high - low)
    low, high = low - room, high + room
    raw = (high - low) / 6
    power = 10 ** math.floor(math.log10(raw))
    step = next(f * power for f in (1, 2, 2.5, 5, 10) if f * power >= raw)
    first = math.ceil(low / step)
    ticks = tuple(round(i * step, 10) for i in range(first, math.floor(high / step) + 1))
    return Axis(low=low, high=high, ticks=ticks)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _label(row: ForestRow) -> str:
    name = row.stratum if len(row.stratum) <= LABEL_CHARS else row.stratum[: LABEL_CHARS - 1] + "…"
    return f"{name}  n={row.n}"


def forest_svg(golden: Mapping[str, Any]) -> str:
    """The golden set's forest plot as an inline ``<svg>`` element (one ``<g class="row">`` per stratum)."""
    rows = forest_rows(golden)
    margin = float(golden["tie_margin"])
    axis = forest_axis(rows, margin)
    label_width = CHAR_WIDTH * max([len(_label(r)) for r in rows] + [12]) + 12
    left, right = label_width, label_width + PLOT_WIDTH
    width = right + NUMBERS_WIDTH
    height = TOP + ROW_HEIGHT * len(rows) + BOTTOM
    bottom = TOP + ROW_HEIGHT * len(rows)

    def x(value: float) -> str:
        return f"{left + (value - axis.low) / (axis.high - axis.low) * PLOT_WIDTH:.1f}"

    metric = _e(golden["metric"])
    title = (
        f"{_e(golden['name'])}: Δ {metric} (candidate - incumbent) per stratum, {golden['confidence']:.0%} CI"
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="forest" role="img" width="{width:.0f}" '
        f'height="{height}" viewBox="0 0 {width:.0f} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{title}</title>",
        f'<rect x="{x(-margin)}" y="{TOP}" width="{float(x(margin)) - float(x(-margin)):.1f}" '
        f'height="{bottom - TOP}" fill="{MARGIN_COLOUR}"/>',
    ]
    for tick in axis.ticks:
        colour = "#333" if tick == 0 else "#ccc"
        parts.append(f'<line x1="{x(tick)}" x2="{x(tick)}" y1="{TOP}" y2="{bottom}" stroke="{colour}"/>')
        parts.append(
            f'<text x="{x(tick)}" y="{bottom + 15}" text-anchor="middle" fill="#333">{tick:g}</text>'
        )
    if 0.0 not in axis.ticks:
        parts.append(f'<line x1="{x(0)}" x2="{x(0)}" y1="{TOP}" y2="{bottom}" stroke="#333"/>')
    parts.append(
        f'<text x="{(left + right) / 2:.1f}" y="{bottom + 32}" text-anchor="middle" fill="#333">'
        f"Δ {metric}; shaded: ±{margin:g} tie margin</text>"
    )
    parts.append(
        f'<text x="{left}" y="{TOP - 14}" fill="#333">{_e(golden["name"])}: {metric}, '
        f"candidate - incumbent, {golden['confidence']:.0%} CI</text>"
    )
    for i, row in enumerate(rows):
        y = TOP + ROW_HEIGHT * i + ROW_HEIGHT / 2
        colour = VERDICT_COLOURS.get(row.verdict, "#000")
        numbers = f"{fmt_number(row.delta, True)} {fmt_interval((row.low, row.high))} {row.verdict}" + (
            "*" if row.sign_disagrees else ""
        )
        parts.append(f'<g class="row" data-verdict="{_e(row.verdict)}">')
        parts.append(f"<title>{_e(row.stratum)}: {_e(numbers)} (n={row.n})</title>")
        parts.append(f'<text x="{left - 8:.1f}" y="{y + 4:.1f}" text-anchor="end">{_e(_label(row))}</text>')
        interval = row.interval()
        if interval is not None:
            low, delta, high = interval
            parts.append(
                f'<line x1="{x(low)}" x2="{x(high)}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="2.5"/>'
            )
            parts.append(f'<circle cx="{x(delta)}" cy="{y:.1f}" r="5" fill="{colour}"/>')
        parts.append(
            f'<text x="{right + 10:.1f}" y="{y + 4:.1f}" fill="{colour}" font-weight="bold">'
            f"{_e(numbers if interval is not None else 'no estimate: ' + row.verdict)}</text>"
        )
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)
