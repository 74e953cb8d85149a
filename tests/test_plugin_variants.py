"""Variant arms through pytest: ``--embeval-candidate 'SPEC?precision=binary'`` embeds nothing beyond its
model (and a rerun nothing at all), its report carries its shape and the frontier, serially and under xdist,
and a bad variant is a usage error before anything runs; an arm with an index of its own
(``SPEC?faiss=IVF4,PQ16x4&nprobe=2``) beside exact arms in one shortlist, its commas kept from the command
line, the ini file, the candidates hook and a fixture."""

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


#: A shortlist of the model's own variants: several candidates of one run (`--embeval-candidate NAME=SPEC`).
SHORTLIST = (
    f"--embeval-incumbent={MODEL}",
    f"--embeval-candidate=d64={MODEL}?dims=64",
    f"--embeval-candidate=i8={MODEL}?precision=int8",
    f"--embeval-candidate=bin={MODEL}?precision=binary",
    f"--embeval-candidate=bin64r={MODEL}?dims=64&precision=binary&rescore=2",
)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_shortlist_of_variants_embeds_the_model_once_and_draws_one_frontier_of_every_arm(
    pytester: pytest.Pytester, golden: Golden, log: Log, workers: tuple[str, ...]
) -> None:
    golden()
    path, markdown, page = (pytester.path / name for name in ("shortlist.json", "report.md", "report.html"))
    outputs = (f"--embeval-json={path}", f"--embeval-md={markdown}", f"--embeval-html={page}")
    result = run(pytester, *SHORTLIST, *outputs, *workers)
    # Five arms of one model: each text encoded once, in whichever process embedded it first.
    encoded = log.take()
    assert len(encoded) == TEXTS
    assert {name for name, _, _ in encoded} == {"counted-good"}
    report = json.loads(path.read_text(encoding="utf-8"))
    assert all("frontier" not in golden_set for golden_set in report["golden_sets"])
    shortlist = report["shortlist"][0]
    frontier = shortlist["frontier"]
    # Memory for the 60 documents searched: 128 x 4 B, 64 x 4 B, 128 x 1 B, 128 / 8 B and 64 / 8 B each.
    assert [(arm["name"], arm["vectors"], arm["bill_bytes"]) for arm in frontier["arms"]] == [
        ("incumbent", "128 x float32", 30_720),
        ("d64", "64 x float32", 15_360),
        ("i8", "128 x int8", 7_680),
        ("bin", "128 bits", 960),
        ("bin64r", "64 bits, rescore 2", 480),
    ]
    # The fake model ranks every query's document first in every shape: Δ 0 everywhere, so the cheapest arm
    # alone is on the frontier, and it is the cheapest without a WORSE stratum and the cheapest that passes.
    assert [arm["on_frontier"] for arm in frontier["arms"]] == [False, False, False, False, True]
    assert [arm["strata"] is None for arm in frontier["arms"]] == [True, False, False, False, False]
    assert frontier["cheapest_without_worse"] == "bin64r"
    assert shortlist["cheapest_passing"] == "bin64r"
    assert shortlist["line"] == "cheapest passing candidate: bin64r (64 dimensions, 8 B per vector)"
    result.stdout.fnmatch_lines(
        [
            "cheapest passing candidate: bin64r (64 dimensions, 8 B per vector)",
            "frontier of Δ hit@1 against the incumbent and the bill, memory for the 60 documents searched *",
            "incumbent fake_models:counted_good * 128 x float32 * exact * 30.7 kB *",
            f"bin64r {MODEL}?dims=64&precision=binary&rescore=2 * 64 bits, rescore 2 * 480 B *yes",
            f"cheapest arm without a WORSE stratum: bin64r {MODEL}?dims=64&precision=binary&rescore=2 "
            "(480 B, Δ hit@1 +0.000 [+0.000, +0.000])",
        ]
    )
    # Markdown and the HTML page show the same frontier once, under the shortlist, the chart inline.
    text = markdown.read_text(encoding="utf-8")
    assert text.count("frontier of Δ hit@1 against the incumbent and the bill") == 1
    assert "**cheapest arm without a WORSE stratum: bin64r" in text
    html = page.read_text(encoding="utf-8")
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="frontier"') == 1
    assert html.count('<g class="arm" data-frontier="yes">') == 1
    assert html.count('<g class="arm" data-frontier="no">') == 4
    # A rerun reads every arm's vectors from the cache.
    rerun = run(pytester, *SHORTLIST, *workers)
    assert log.take() == []
    rerun.stdout.fnmatch_lines(["embeval: embedding cache .embeval_cache/: * texts read, 0 embedded"])


#: An IVF-PQ arm of the model beside its exact arms: 4 lists (2 probed), 4-bit codes of 16 sub-vectors.
IVF_PQ = f"{MODEL}?faiss=IVF4,PQ16x4&nprobe=2"
MIXED = (
    f"--embeval-incumbent={MODEL}",
    f"--embeval-candidate=bin={MODEL}?precision=binary",
    f"--embeval-candidate=ivfpq={IVF_PQ}",
)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_an_arm_with_its_own_ivf_pq_index_runs_beside_exact_arms_in_one_shortlist(
    pytester: pytest.Pytester, golden: Golden, log: Log, workers: tuple[str, ...]
) -> None:
    golden(production={"documents": 1_000_000})
    path = pytester.path / "shortlist.json"
    result = run(pytester, *MIXED, f"--embeval-json={path}", *workers)
    # The fake model's axis vectors lose their nearest document to 4-bit codes: the index's part alone.
    assert result.parseoutcomes() == {"failed": 3, "tie": 3}
    encoded = log.take()
    assert len(encoded) == TEXTS  # three arms of one model, one of them on its own index: encoded once
    assert {name for name, _, _ in encoded} == {"counted-good"}
    report = json.loads(path.read_text(encoding="utf-8"))
    ivfpq = next(
        golden_set["candidate"]
        for golden_set in report["golden_sets"]
        if golden_set["candidate_name"] == "ivfpq"
    )
    # The golden set's index is exact, held for the incumbent and bin; ivfpq searched its own and says so.
    assert report["golden_sets"][0]["index"] == "exact"
    assert ivfpq["variant"]["index"] == {"faiss": "IVF4,PQ16x4", "nprobe": 2}
    index = ivfpq["index"]
    assert (index["kind"], index["factory"], index["nprobe"], index["seed"]) == ("faiss", "IVF4,PQ16x4", 2, 0)
    assert 0 <= index["ann_recall"] <= 1 and index["sample"] == 48
    # Its bill is FAISS's serialised index projected: the trained, empty index and what each vector adds
    # (8 B of codes and an 8 B id) at a million documents.
    layout = ivfpq["capacity"]["production"]["index_bytes"]
    assert layout["value"] == pytest.approx(
        index["fixed_bytes"] + 1_000_000 * (index["memory_bytes"] - index["fixed_bytes"]) / 60
    )
    assert "FAISS IVF4,PQ16x4:" in layout["assumes"]
    # The shortlist's table orders its candidates by what a vector costs in the index: 16 B of bits, and
    # what each vector adds to the IVF-PQ index.
    rows = {row["name"]: row for row in report["shortlist"][0]["candidates"]}
    added = (index["memory_bytes"] - index["fixed_bytes"]) / 60
    assert [rows[name]["bill"]["bytes_per_vector"] for name in ("bin", "ivfpq")] == [16, round(added)]
    frontier = report["shortlist"][0]["frontier"]
    arms = {arm["name"]: arm for arm in frontier["arms"]}
    assert [(name, arm["index"]) for name, arm in arms.items()] == [
        ("incumbent", "exact"),
        ("bin", "exact"),
        ("ivfpq", "faiss IVF4,PQ16x4 nprobe=2"),
    ]
    assert arms["ivfpq"]["spec"] == IVF_PQ
    assert arms["ivfpq"]["bill_bytes"] == layout["value"]
    # What the IVF-PQ index stores per vector is its codes, not the float32 vector it encodes.
    assert arms["ivfpq"]["vectors"] == f"128 dims, {round(added)} B each in the index"
    assert arms["ivfpq"]["worse"] == ["overall", "language=en", "language=es"]
    assert frontier["cheapest_without_worse"] == "bin"
    result.stdout.fnmatch_lines(
        [f"ivfpq {IVF_PQ} * 128 dims, {round(added)} B each in the index * faiss IVF4,PQ16x4 nprobe=2 *"]
    )
    # A rerun reads every arm's vectors from the cache.
    rerun = run(pytester, *MIXED, *workers)
    assert log.take() == []
    rerun.stdout.fnmatch_lines(["embeval: embedding cache .embeval_cache/: * texts read, 0 embedded"])


def test_an_own_index_given_in_the_ini_file_keeps_its_commas(
    pytester: pytest.Pytester, golden: Golden, log: Log
) -> None:
    golden()
    pytester.makeini(f"[pytest]\nembeval_incumbent = {MODEL}\nembeval_candidate =\n    ivfpq={IVF_PQ}\n")
    path = pytester.path / "report.json"
    result = run(pytester, f"--embeval-json={path}")
    assert result.parseoutcomes() == {"failed": 3}  # as on the command line (above)
    candidate = json.loads(path.read_text(encoding="utf-8"))["golden_sets"][0]["candidate"]
    assert candidate["spec"] == IVF_PQ
    assert candidate["index"]["factory"] == "IVF4,PQ16x4"


@pytest.mark.parametrize(
    ("candidate", "problem"),
    [
        (f"{MODEL}?nprobe=4", "nprobe=4 needs faiss=FACTORY: it sets the arm's own FAISS index's search"),
        (
            f"{MODEL}?faiss=IVF4,PQ7",
            "FAISS cannot build 'IVF4,PQ7' over 128-dimensional vectors: The dimension of the vector (d) "
            "should be a multiple of the number of subquantizers (M)",
        ),
        (
            f"{MODEL}?faiss=BIVF4",
            "faiss=BIVF4 is a binary index: it holds packed bits, which only precision=binary or "
            "precision=ubinary stores",
        ),
        (
            f"{MODEL}?precision=int8&faiss=IVF4,SQ8",
            "precision=int8 vectors cannot be searched with its own index (faiss 'IVF4,SQ8'): use exact (a "
            "FAISS factory string stores its own precision: 'IVF1024,SQ8', 'HNSW32,SQfp16')",
        ),
    ],
)
def test_a_bad_index_of_its_own_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, golden: Golden, log: Log, candidate: str, problem: str
) -> None:
    golden()
    result = run(pytester, f"--embeval-incumbent={MODEL}", f"--embeval-candidate={candidate}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [text for text in result.errlines if text] == [
        f"ERROR: --embeval-candidate: model spec {candidate!r}: {problem}"
    ]
    assert log.take() == []
    assert not (pytester.path / ".embeval_cache").exists()


def test_under_xdist_an_own_index_s_report_is_the_serial_one(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    reports = []
    for name, workers in (("serial.json", ()), ("xdist.json", ("-n", "2"))):
        path = pytester.path / name
        run(pytester, *MIXED, "--embeval-no-cache", f"--embeval-json={path}", *workers)
        reports.append(without_timings(json.loads(path.read_text(encoding="utf-8"))))
    assert reports[1] == reports[0]


@pytest.mark.parametrize(
    "conftest",
    [
        f"def pytest_embeval_candidates(config):\n    return {{'ivfpq': {IVF_PQ!r}}}\n",
        "import pytest\n\n@pytest.fixture(scope='session')\ndef embeval_candidate():\n"
        f"    return {IVF_PQ!r}\n",
    ],
    ids=["hook", "fixture"],
)
def test_an_own_index_from_the_hook_or_a_fixture_keeps_its_commas(
    pytester: pytest.Pytester, golden: Golden, conftest: str
) -> None:
    golden()
    pytester.makeconftest(conftest)
    path = pytester.path / "report.json"
    result = run(pytester, f"--embeval-incumbent={MODEL}", f"--embeval-json={path}")
    assert result.parseoutcomes() == {"failed": 3}  # as on the command line (above)
    candidate = json.loads(path.read_text(encoding="utf-8"))["golden_sets"][0]["candidate"]
    assert candidate["spec"] == IVF_PQ
    assert candidate["variant"]["index"] == {"faiss": "IVF4,PQ16x4", "nprobe": 2}
