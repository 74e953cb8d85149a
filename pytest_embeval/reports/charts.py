"""The charts of a golden set. The forest plot: per stratum, Δ of the primary metric with its confidence
interval, against zero and the ±margin band, coloured by verdict. With corpus slices, Δ against corpus size.

`forest_rows` and `forest_axis` are what the picture shows, shared by the inline SVG drawn here (for the HTML
page and pytest-html's report) and the matplotlib picture of `reports/forest_png.py`. The SVG is our own few
lines: no plotting library, no script, no font or style from outside; its height grows with the strata.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Mapping
from typing import Any

from pytest_embeval.reports.contents import ci_heading, fmt_interval, fmt_number, golden_title

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
    return nice_axis(values)


def nice_axis(values: list[float]) -> Axis:
    """A range holding ``values`` with a little room, and about six round ticks inside it."""
    low, high = min(values), max(values)
    if high - low < 1e-9:
        low, high = low - 0.05, high + 0.05
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


def _tag(name: str, text: str | None = None, **attributes: object) -> str:
    """An SVG element; ``font_weight="bold"`` is ``font-weight="bold"``, floats get one decimal, and
    ``text`` (escaped here) is its content."""
    shown = " ".join(
        f'{key.replace("_", "-")}="{f"{value:.1f}" if isinstance(value, float) else _e(value)}"'
        for key, value in attributes.items()
    )
    opening = f"{name} {shown}" if shown else name
    return f"<{opening}/>" if text is None else f"<{opening}>{_e(text)}</{name}>"


def _svg(kind: str, width: float, height: float, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{kind}" role="img" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" '
        f'font-size="12">\n<title>{_e(title)}</title>'
    )


def _cut(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def forest_svg(golden: Mapping[str, Any]) -> str:
    """The golden set's forest plot as an inline ``<svg>`` element (one ``<g class="row">`` per stratum)."""
    rows = forest_rows(golden)
    margin = float(golden["tie_margin"])
    axis = forest_axis(rows, margin)
    labels = [f"{_cut(row.stratum)}  n={row.n}" for row in rows]
    left = CHAR_WIDTH * max([len(label) for label in labels] + [12]) + 12
    right = left + PLOT_WIDTH
    bottom = TOP + ROW_HEIGHT * len(rows)

    def x(value: float) -> float:
        return left + (value - axis.low) / (axis.high - axis.low) * PLOT_WIDTH

    metric, confidence = golden["metric"], ci_heading(golden)
    title = f"{golden_title(golden)}: {metric}, candidate - incumbent, {confidence}"
    parts = [
        _svg("forest", right + NUMBERS_WIDTH, bottom + BOTTOM, f"{title}, per stratum"),
        _tag(
            "rect", x=x(-margin), y=TOP, width=x(margin) - x(-margin), height=bottom - TOP, fill=MARGIN_COLOUR
        ),
    ]
    for tick in axis.ticks:
        parts.append(
            _tag("line", x1=x(tick), x2=x(tick), y1=TOP, y2=bottom, stroke="#333" if tick == 0 else "#ccc")
        )
        parts.append(_tag("text", f"{tick:g}", x=x(tick), y=bottom + 15, text_anchor="middle", fill="#333"))
    if 0.0 not in axis.ticks:
        parts.append(_tag("line", x1=x(0), x2=x(0), y1=TOP, y2=bottom, stroke="#333"))
    caption = f"Δ {metric}; shaded: ±{margin:g} tie margin"
    parts.append(
        _tag("text", caption, x=(left + right) / 2, y=bottom + 32, text_anchor="middle", fill="#333")
    )
    parts.append(_tag("text", title, x=left, y=TOP - 14, fill="#333"))
    for i, (row, label) in enumerate(zip(rows, labels, strict=True)):
        y = TOP + ROW_HEIGHT * i + ROW_HEIGHT / 2
        colour = VERDICT_COLOURS.get(row.verdict, "#000")
        numbers = f"{fmt_number(row.delta, True)} {fmt_interval((row.low, row.high))} {row.verdict}"
        numbers += "*" if row.sign_disagrees else ""
        parts.append(f'<g class="row" data-verdict="{_e(row.verdict)}">')
        parts.append(_tag("title", f"{row.stratum}: {numbers} (n={row.n})"))
        parts.append(_tag("text", label, x=left - 8, y=y + 4, text_anchor="end"))
        interval = row.interval()
        if interval is not None:
            low, delta, high = interval
            parts.append(_tag("line", x1=x(low), x2=x(high), y1=y, y2=y, stroke=colour, stroke_width=2.5))
            parts.append(_tag("circle", cx=x(delta), cy=y, r=5, fill=colour))
        said = numbers if interval is not None else f"no estimate: {row.verdict}"
        parts.append(_tag("text", said, x=right + 10, y=y + 4, fill=colour, font_weight="bold"))
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


SLICES_WIDTH = 560
SLICES_HEIGHT = 300
#: Strata named at the end of their line; past this many the lines are named by their tooltips only.
SLICES_LABELLED = 20


def slices_svg(golden: Mapping[str, Any]) -> str | None:
    """The primary metric's Δ against corpus size (``corpus_sample``), one line per stratum coloured by its
    verdict, each point with its CI, against zero and the ±margin band; None without slices."""
    strata = [s for s in golden["strata"] if s.get("slices")]
    if not strata:
        return None
    margin = float(golden["tie_margin"])
    sizes = [int(one["documents"]) for one in strata[0]["slices"]]
    values = [0.0, -margin, margin]
    for s in strata:
        for one in s["slices"]:
            values += [v for v in (one["delta"], *one["ci"]) if v is not None and math.isfinite(v)]
    axis = nice_axis(values)
    logarithmic = min(sizes) > 0 and max(sizes) / min(sizes) >= 4
    scale: Any = math.log if logarithmic else float
    lowest, span = scale(min(sizes)), scale(max(sizes)) - scale(min(sizes))
    labelled = len(strata) <= SLICES_LABELLED
    left, top, bottom = 60, 30, 30 + SLICES_HEIGHT
    right = left + SLICES_WIDTH
    label_width = CHAR_WIDTH * max(len(_cut(s["stratum"])) for s in strata) + 16 if labelled else 20

    def x(documents: float) -> float:
        return left + (0.5 if span == 0 else (scale(documents) - lowest) / span) * SLICES_WIDTH

    def y(value: float) -> float:
        return top + (axis.high - value) / (axis.high - axis.low) * SLICES_HEIGHT

    metric = golden["metric"]
    parts = [
        _svg("slices", right + label_width, bottom + 50, f"{golden['name']}: Δ {metric} against corpus size"),
        _tag(
            "rect", x=left, y=y(margin), width=SLICES_WIDTH, height=y(-margin) - y(margin), fill=MARGIN_COLOUR
        ),
    ]
    for tick in axis.ticks:
        parts.append(
            _tag("line", x1=left, x2=right, y1=y(tick), y2=y(tick), stroke="#333" if tick == 0 else "#ccc")
        )
        parts.append(_tag("text", f"{tick:g}", x=left - 6, y=y(tick) + 4, text_anchor="end", fill="#333"))
    for size in sizes:
        parts.append(_tag("text", f"{size:,}", x=x(size), y=bottom + 16, text_anchor="middle", fill="#333"))
    caption = (
        f"documents searched ({'log' if logarithmic else 'linear'} scale); Δ {metric}, "
        f"shaded: ±{margin:g} tie margin"
    )
    parts.append(
        _tag("text", caption, x=(left + right) / 2, y=bottom + 36, text_anchor="middle", fill="#333")
    )
    ends: list[tuple[float, float, str, str]] = []  # each labelled line's end: y, x, name, colour
    for s in strata:
        colour = VERDICT_COLOURS.get(str(s["verdict"]), "#000")
        points = [(x(one["documents"]), one) for one in s["slices"] if one["delta"] is not None]
        if labelled and points:
            ends.append((y(points[-1][1]["delta"]), points[-1][0], _cut(s["stratum"]), colour))
        parts.append(f'<g class="slice-line" data-verdict="{_e(s["verdict"])}">')
        parts.append(_tag("title", f"{s['stratum']}: {s['verdict']}"))
        if points:
            line = " ".join(f"{px:.1f},{y(one['delta']):.1f}" for px, one in points)
            parts.append(_tag("polyline", points=line, fill="none", stroke=colour, stroke_width=2))
        for px, one in points:
            low, high = one["ci"]
            if low is not None and high is not None:
                parts.append(
                    _tag(
                        "line",
                        x1=px,
                        x2=px,
                        y1=y(low),
                        y2=y(high),
                        stroke=colour,
                        stroke_opacity=0.45,
                        stroke_width=6,
                    )
                )
            parts.append(_tag("circle", cx=px, cy=y(one["delta"]), r=3.5, fill=colour))
        parts.append("</g>")
    parts += [_tag("text", name, x=px + 8, y=py + 4, fill=colour) for py, px, name, colour in _spread(ends)]
    parts.append("</svg>")
    return "\n".join(parts)


def _spread(
    ends: list[tuple[float, float, str, str]], gap: float = 13
) -> list[tuple[float, float, str, str]]:
    """Labels moved apart vertically (in order) so that none overlaps the next."""
    placed: list[tuple[float, float, str, str]] = []
    for end in sorted(ends):
        y = end[0] if not placed else max(end[0], placed[-1][0] + gap)
        placed.append((y, *end[1:]))
    return placed
