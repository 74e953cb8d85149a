"""Variant arms through pytest: ``--embeval-candidate 'SPEC?precision=binary'`` embeds nothing beyond its
model (and a rerun nothing at all), its report carries its shape and the frontier, serially and under xdist,
and a bad variant is a usage error before anything runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_plugin_cache
from test_plugin_cache import Log, cache_line, run

from pytest_embeval.reports.json_report import without_timings

Golden = Callable[..., Path]
#: the texts the counting fakes encoded (`test_plugin_cache.log`)
log = test_plugin_cache.log
MODEL = "fake_models:counted_good"
ARMS = (f"--embeval-incumbent={MODEL}", f"--embeval-candidate={MODEL}?precision=binary")
#: The conftest golden set's texts: 60 documents and 48 queries.
TEXTS = 60 + 48


def reported(pytester: pytest.Pytester, name: str, *args: str) -> Any:
    path = pytester.path / name
    run(pytester, *ARMS, f"--embeval-json={path}", *args)
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_variant_embeds_nothing_beyond_its_model_and_a_rerun_nothing(
    pytester: pytest.Pytester, golden: Golden, log: Log
) -> None:
    golden()
    first = reported(pytester, "first.json")
    encoded = log.take()
    assert len(encoded) == TEXTS  # both arms' vectors: the model's, each text once
    assert {name for name, _, _ in encoded} == {"counted-good"}
    result = run(pytester, *ARMS, f"--embeval-json={pytester.path / 'second.json'}")
    assert log.take() == []
    result.stdout.fnmatch_lines([cache_line(read=TEXTS, embedded=0)])
    second = json.loads((pytester.path / "second.json").read_text(encoding="utf-8"))
    assert without_timings(second) == without_timings(first)


def test_the_report_holds_the_variant_s_shape_and_the_frontier(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(production={"documents": 1_000_000, "memory_price_per_gb_month": 4.0})
    report = reported(pytester, "report.json")
    golden_set = report["golden_sets"][0]
    candidate = golden_set["candidate"]
    assert candidate["spec"] == f"{MODEL}?precision=binary"
    assert candidate["variant"] == {
        "model": MODEL,
        "model_fingerprint": golden_set["incumbent"]["fingerprint"],
        "dims": None,
        "precision": "binary",
        "rescore": None,
    }
    assert candidate["index"]["vectors"] == {
        "dims": 128,
        "precision": "binary",
        "bytes_per_vector": 16,
        "rescore": None,
    }
    assert candidate["capacity"]["measured"]["bytes_per_vector"] == 16
    frontier = golden_set["frontier"]
    assert [(arm["name"], arm["vectors"], arm["bill_bytes"]) for arm in frontier["arms"]] == [
        ("incumbent", "128 x float32", 512_000_000),
        ("candidate", "128 bits", 16_000_000),
    ]
    # The fake model's bits rank every query's document first, as its floats do: Δ 0, for an eighth of the
    # bill (and of its monthly cost), so the candidate alone is on the frontier.
    assert [arm["on_frontier"] for arm in frontier["arms"]] == [False, True]
    assert frontier["cheapest_without_worse"] == "candidate"
    assert "incumbent" not in golden_set["incumbent"].get("variant", {})


def test_the_terminal_shows_the_frontier_and_the_cheapest_arm(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    result = run(pytester, *ARMS)
    result.stdout.fnmatch_lines(
        [
            "frontier of Δ hit@1 against the incumbent and the bill, memory for the 60 documents searched *",
            "incumbent fake_models:counted_good * 128 x float32 * exact * 30.7 kB *",
            "candidate fake_models:counted_good?precision=binary * 128 bits * exact * 960 B *yes",
            "cheapest arm without a WORSE stratum: candidate fake_models:counted_good?precision=binary "
            "(960 B, Δ hit@1 +0.000 [+0.000, +0.000])",
        ]
    )


def test_under_xdist_the_report_is_the_serial_one(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    serial = reported(pytester, "serial.json", "--embeval-no-cache")
    assert without_timings(
        reported(pytester, "xdist.json", "--embeval-no-cache", "-n", "2")
    ) == without_timings(serial)


@pytest.mark.parametrize(
    ("candidate", "line"),
    [
        (
            f"{MODEL}?precision=int4",
            f"ERROR: --embeval-candidate: model spec '{MODEL}?precision=int4': precision must be one of "
            "float16, int8, uint8, binary, ubinary, got 'int4'",
        ),
        (
            f"{MODEL}?dims=256",
            f"ERROR: --embeval-candidate: model spec '{MODEL}?dims=256': dims=256 but the model's vectors "
            "have 128 dimensions",
        ),
        (
            f"{MODEL}?rescore=4",
            f"ERROR: --embeval-candidate: model spec '{MODEL}?rescore=4': rescore=4 needs a quantised "
            "precision (int8, uint8, binary, ubinary): it rescores what the codes retrieved with the float "
            "query, and float32 vectors are searched at full precision",
        ),
    ],
)
def test_a_bad_variant_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, golden: Golden, log: Log, candidate: str, line: str
) -> None:
    golden()
    result = run(pytester, f"--embeval-incumbent={MODEL}", f"--embeval-candidate={candidate}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [text for text in result.errlines if text] == [line]
    assert log.take() == []
    assert not (pytester.path / ".embeval_cache").exists()


def test_markdown_and_html_show_the_frontier(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    markdown, page = pytester.path / "report.md", pytester.path / "report.html"
    run(pytester, *ARMS, f"--embeval-md={markdown}", f"--embeval-html={page}")
    text = markdown.read_text(encoding="utf-8")
    assert "frontier of Δ hit@1 against the incumbent and the bill" in text
    assert f"**cheapest arm without a WORSE stratum: candidate {MODEL}?precision=binary" in text
    html = page.read_text(encoding="utf-8")
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="frontier"') == 1
    assert html.count('<g class="arm" data-frontier="yes">') == 1
