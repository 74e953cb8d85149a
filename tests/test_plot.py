"""The forest plot as a PNG picture (extra [plot]): one panel per golden set, as tall as its strata."""

from __future__ import annotations

import io
import sys

import pytest
from test_markdown import load

from pytest_embeval.reports.charts import VERDICT_COLOURS
from pytest_embeval.reports.forest_png import PICTURE_ROWS, PLOT_MISSING, forest_png, picture_rows

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")


def test_the_picture_is_a_png_of_every_golden_set_in_the_verdict_colours() -> None:
    png = forest_png(load())
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = {colour for _, colour in image.getcolors(maxcolors=1 << 20)}
    for verdict in ("WORSE", "BETTER", "TIE"):  # the fixture has all three
        hex_colour = VERDICT_COLOURS[verdict]
        assert tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)) in colours, verdict


def test_the_same_report_draws_the_same_bytes() -> None:
    assert forest_png(load()) == forest_png(load())


def test_the_picture_grows_with_the_strata() -> None:
    report = load()
    small = Image.open(io.BytesIO(forest_png(report))).size
    golden = report["golden_sets"][0]
    golden["strata"] = golden["strata"] * 8
    large = Image.open(io.BytesIO(forest_png(report))).size
    assert large[0] == small[0] and large[1] > small[1] * 2


def test_a_dollar_in_a_name_is_text_not_tex() -> None:
    report = load()
    report["golden_sets"][0]["strata"][0]["stratum"] = "price=$5 $x^{$"
    report["golden_sets"][0]["name"] = "$unbalanced"
    assert forest_png(report).startswith(b"\x89PNG")


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(RuntimeError) as raised:
        forest_png(load())
    assert (
        str(raised.value)
        == PLOT_MISSING
        == ("--embeval-plot needs matplotlib: pip install 'pytest-embeval[plot]'")
    )


def test_a_large_golden_set_shows_overall_and_the_resolved_strata_first() -> None:
    golden = load()["golden_sets"][0]
    template = golden["strata"][0]
    verdicts = ["TIE"] * 100
    for i in range(5, 100, 10):
        verdicts[i] = "WORSE"
    for i in range(7, 100, 10):
        verdicts[i] = "BETTER"
    golden["strata"] = [{**template, "stratum": "overall", "verdict": "TIE"}] + [
        {**template, "stratum": f"s={i}", "verdict": verdict} for i, verdict in enumerate(verdicts)
    ]
    rows, left_out = picture_rows(golden)
    assert len(rows) == PICTURE_ROWS and left_out == 101 - PICTURE_ROWS
    names = [row.stratum for row in rows]
    resolved = [f"s={i}" for i, verdict in enumerate(verdicts) if verdict != "TIE"]
    ties = [f"s={i}" for i, verdict in enumerate(verdicts) if verdict == "TIE"]
    kept = {"overall", *resolved, *ties[: PICTURE_ROWS - 1 - len(resolved)]}
    assert names == [s["stratum"] for s in golden["strata"] if s["stratum"] in kept]  # golden-file order
