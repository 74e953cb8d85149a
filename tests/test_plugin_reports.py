"""The reports people read, written by the plugin: --embeval-md (a file, the GitHub step summary),
--embeval-html, --embeval-plot and pytest-html's report; each is made from the run's JSON report."""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_htmlpage import parse
from test_plugin import run as run_embeval

from pytest_embeval.reports.html_page import report_html
from pytest_embeval.reports.markdown import report_markdown

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]
MODELS = ["--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad_english"]

Golden = Callable[..., Path]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return run_embeval(pytester, *MODELS, *args)


def usage_error(result: pytest.RunResult) -> str:
    """The one line a usage error prints (exit 4, nothing else on stderr but blank lines)."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def report(pytester: pytest.Pytester) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    return loaded


@pytest.mark.parametrize("xdist", XDIST)
def test_markdown_html_and_plot_are_made_from_the_json_report(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    # In a subprocess: matplotlib's extension modules cannot load twice in one process, and an in-process
    # pytester run unloads every module it imported.
    result = pytester.runpytest_subprocess(
        "--embeval",
        "-p",
        "no:cacheprovider",
        *MODELS,
        "--embeval-json=report.json",
        "--embeval-md=out/report.md",
        "--embeval-html=out/report.html",
        "--embeval-plot=out/forest.png",
        *xdist,
    )
    assert result.parseoutcomes() == {"failed": 2, "tie": 1}
    result.stdout.fnmatch_lines(
        [
            "embeval: Markdown report written to out*report.md",
            "embeval: HTML report written to out*report.html",
            "embeval: forest plot written to out*forest.png",
        ]
    )
    out = pytester.path / "out"
    assert (out / "report.md").read_text(encoding="utf-8") == report_markdown(report(pytester))
    assert (out / "report.html").read_text(encoding="utf-8") == report_html(report(pytester))
    assert (out / "forest.png").read_bytes().startswith(b"\x89PNG")
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "### support: 2 WORSE, 1 TIE — candidate loses overall and on `language=en`" in markdown


def test_markdown_dash_appends_to_the_step_summary(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    summary = pytester.path / "step_summary.md"
    summary.write_text("an earlier step's summary\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run(pytester, "--embeval-json=report.json", "--embeval-md=-")
    result.stdout.fnmatch_lines(["embeval: Markdown report appended to the step summary *step_summary.md"])
    expected = "an earlier step's summary\n" + report_markdown(report(pytester))
    assert summary.read_text(encoding="utf-8") == expected


def test_markdown_dash_without_a_step_summary_is_a_usage_error(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = run(pytester, "--embeval-md=-")
    assert (
        usage_error(result)
        == "ERROR: --embeval-md -: $GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it)"
    )


@pytest.mark.parametrize("how", ["option", "ini"])
def test_step_summary_opt_in_appends_when_github_sets_one_and_is_quiet_otherwise(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    golden()
    args = ["--embeval-step-summary"] if how == "option" else []
    if how == "ini":
        pytester.makeini("[pytest]\nembeval_step_summary = true\n")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = run(pytester, "--embeval-json=report.json", "--embeval-md=report.md", *args)
    assert result.parseoutcomes() == {"failed": 2, "tie": 1}
    assert "step summary" not in result.stdout.str()
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run(pytester, "--embeval-json=report.json", "--embeval-md=report.md", *args)
    markdown = report_markdown(report(pytester))
    assert summary.read_text(encoding="utf-8") == markdown
    assert (pytester.path / "report.md").read_text(encoding="utf-8") == markdown


def test_the_plot_must_be_a_png(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    result = run(pytester, "--embeval-plot=forest.jpg")
    assert usage_error(result) == "ERROR: --embeval-plot forest.jpg: the picture is a PNG; name it PATH.png"


def test_the_plot_without_matplotlib_is_a_usage_error_naming_the_extra(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # importlib.util.find_spec finds nothing
    result = run(pytester, "--embeval-plot=forest.png")
    assert usage_error(result) == "ERROR: --embeval-plot needs matplotlib: pip install 'pytest-embeval[plot]'"
    assert not (pytester.path / "forest.png").exists()


@pytest.mark.parametrize("xdist", XDIST)
def test_pytest_html_report_shows_the_forest_plot_and_the_strata(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    pytest.importorskip("pytest_html")
    golden()
    result = run(pytester, "--embeval-json=report.json", "--html=html/report.html", *xdist)
    assert result.parseoutcomes() == {"failed": 2, "tie": 1}
    page = (pytester.path / "html" / "report.html").read_text(encoding="utf-8")
    parsed = parse(page)
    strata = report(pytester)["golden_sets"][0]["strata"]  # type: ignore[index]
    assert parsed.rows == [[s["verdict"] for s in strata]]  # the forest plot, one row per stratum
    assert "support: 2 WORSE, 1 TIE — candidate loses overall and on language=en" in page
    for s in strata:  # the strata table, with each verdict's reason
        assert html.escape(s["reason"]) in page


def test_the_pytest_html_section_is_registered_only_with_a_pytest_html_report(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("pytest_html")
    plain = pytester.parseconfigure("--embeval")
    assert plain.pluginmanager.get_plugin("embeval-pytest-html") is None
    with_html = pytester.parseconfigure("--embeval", "--html=report.html")
    assert with_html.pluginmanager.get_plugin("embeval-pytest-html") is not None
