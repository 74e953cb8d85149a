"""A golden set drawn by ``embeval sample`` and weighed by ``weights: frequency``: the loader takes the design
from the draw sidecar (`drawn_design`), the run's intervals, MDE and queries needed use it, every report says
which variance an interval uses, and a sidecar that no longer matches its queries is a one-line collection
error (exit 2), never a silent fallback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from suite_helpers import CliResult, run_good_against_bad_english

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden

Embeval = Callable[..., CliResult]
Golden = Callable[..., Path]


def _draw(root: Path, embeval: Embeval, *, weights: bool = True) -> Path:
    """A log of 48 distinct queries ("en i", "es i", whose one relevant document is doc i) with Zipfian
    searches, sampled by ``embeval sample --by language --size 30 --floor 10``, judged, as a golden set."""
    root.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for i in range(48):
        language = "en" if i < 24 else "es"
        rows += [{"query": f"{language} {i}", "language": language}] * max(1, 400 // (1 + (7 * i) % 48))
    log = root / "log.jsonl"
    log.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    data = root / "support"
    data.mkdir(exist_ok=True)
    status, _, stderr = embeval(
        "sample", log, "--by", "language", "--size", "30", "--floor", "10", "--head-boost", "2",
        "--out", data / "queries.jsonl",
    )  # fmt: skip
    assert (status, stderr) == (0, "")
    drawn = [json.loads(line) for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    qrels = ["query-id\tcorpus-id\tscore"] + [
        f"{q['_id']}\td{int(q['text'].split()[1]):02d}\t1" for q in drawn
    ]
    (data / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i:02d}", "text": f"doc {i}"}) + "\n" for i in range(60)),
        encoding="utf-8",
    )
    plan: dict[str, Any] = {
        "corpus": "support/corpus.jsonl",
        "queries": "support/queries.jsonl",
        "qrels": "support/qrels.tsv",
        "strata": ["language"],
        "metric": "hit@1",
        "tie_margin": 0.05,
        "min_queries": 5,
        "bootstrap": 2000,
        **({"weights": "frequency"} if weights else {}),
    }
    path = root / "support.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def _sidecar_cells(root: Path) -> tuple[dict[str, int], int]:
    """Each cell drawn from (``stratum, band=...``) with its distinct queries, and how many were drawn whole,
    as the sidecar records them."""
    record = json.loads((root / "support" / "queries.draw.json").read_text(encoding="utf-8"))
    cells, whole = {}, 0
    for stratum in record["strata"]:
        for band, sizes in stratum["bands"].items():
            if sizes["sampled"]:
                cells[f"{stratum['stratum']}, band={band}"] = sizes["distinct"]
                whole += sizes["sampled"] == sizes["distinct"]
    return cells, whole


def test_the_loader_takes_the_design_from_the_draw_sidecar(tmp_path: Path, embeval: Embeval) -> None:
    path = _draw(tmp_path, embeval)
    golden = load_golden(path)
    cells, whole = _sidecar_cells(tmp_path)
    assert golden.design is not None
    assert dict(golden.design.population) == cells
    assert set(golden.design.cells) == set(cells)
    assert golden.design.record() == {"kind": "stratified", "cells": len(cells), "drawn_whole": whole}
    # en: head 2 of 2, torso 5 of 5, tail 13 of 17; es (no head): torso 3 of 3, tail 7 of 21
    assert len(cells) == 5 and whole == 3


def test_without_weights_there_is_no_design_and_an_edited_file_still_loads(
    tmp_path: Path, embeval: Embeval
) -> None:
    path = _draw(tmp_path, embeval, weights=False)
    assert load_golden(path).design is None
    _edit(tmp_path, lambda rows: rows[1:])
    assert load_golden(path).design is None


def _edit(root: Path, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    """Rewrite the queries file through ``change``, and the judgments to match (a query removed has none)."""
    queries = root / "support" / "queries.jsonl"
    rows = change([json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()])
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    qrels = ["query-id\tcorpus-id\tscore"] + [
        f"{row['_id']}\td{int(row['text'].split()[1]):02d}\t1" for row in rows
    ]
    (root / "support" / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")


def test_a_sidecar_the_queries_no_longer_match_is_an_error(tmp_path: Path, embeval: Embeval) -> None:
    path = _draw(tmp_path, embeval)
    queries = tmp_path / "support" / "queries.jsonl"
    remedy = (
        "the file no longer matches queries.draw.json; draw the queries again with embeval sample, or remove "
        "the sidecar to weigh them without a design"
    )
    rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines()]
    tail = next(row for row in rows if row["band"] == "tail")
    cell = f"language={tail['language']}, band=tail"
    record = json.loads((tmp_path / "support" / "queries.draw.json").read_text(encoding="utf-8"))
    sizes = next(s for s in record["strata"] if s["stratum"] == f"language={tail['language']}")["bands"][
        "tail"
    ]

    _edit(tmp_path, lambda rows: [row for row in rows if row["_id"] != tail["_id"]])
    with pytest.raises(GoldenError) as raised:
        load_golden(path)
    assert str(raised.value) == (
        f"{queries}: the draw took {sizes['sampled']} queries from {cell}, the file has "
        f"{sizes['sampled'] - 1}: {remedy}"
    )

    _edit(tmp_path, lambda kept: [*kept, tail])
    load_golden(path)  # in another order, the same queries: the design holds
    _edit(
        tmp_path,
        lambda rows: [{**row, "inclusion": 0.5} if row["_id"] == tail["_id"] else row for row in rows],
    )
    with pytest.raises(GoldenError) as raised:
        load_golden(path)
    shown = sizes["sampled"] / sizes["distinct"]
    assert str(raised.value) == (
        f"{queries}: query {tail['_id']!r} has inclusion 0.5, but its cell {cell} was drawn "
        f"{sizes['sampled']} of {sizes['distinct']} ({shown:g}): {remedy}"
    )

    _edit(
        tmp_path, lambda rows: [{**row, "band": "head"} if row["_id"] == tail["_id"] else row for row in rows]
    )
    with pytest.raises(GoldenError, match=r"has inclusion .*, but its cell language=.*, band=head was drawn"):
        load_golden(path)

    _edit(tmp_path, lambda rows: [{k: v for k, v in row.items() if k != "band"} for row in rows])
    with pytest.raises(GoldenError) as raised:
        load_golden(path)
    assert str(raised.value).startswith(f"{queries}:1: band: ")
    advice = remedy.removeprefix("the file no longer matches queries.draw.json; ")
    assert str(raised.value).endswith(f"; queries.draw.json drew the queries by it: {advice}")


_run = run_good_against_bad_english


def test_a_drawn_set_is_decided_on_the_design_and_every_report_says_so(
    pytester: pytest.Pytester, golden: Golden, embeval: Embeval
) -> None:
    _draw(pytester.path, embeval)
    cells, whole = _sidecar_cells(pytester.path)
    words = f"design: stratified, {len(cells)} cells, {whole} drawn whole"
    report_path, markdown, html = (pytester.path / name for name in ("r.json", "r.md", "r.html"))
    result = _run(
        pytester, f"--embeval-json={report_path}", f"--embeval-md={markdown}", f"--embeval-html={html}"
    )
    result.stdout.fnmatch_lines([f"*traffic-weighted by frequency / inclusion, {words}; incumbent*"])
    result.stdout.fnmatch_lines(
        [f"{words}: the weighted intervals, MDE and queries needed use the variance*"]
    )
    (golden_set,) = json.loads(report_path.read_text(encoding="utf-8"))["golden_sets"]
    assert golden_set["design"] == {"kind": "stratified", "cells": len(cells), "drawn_whole": whole}
    by_name = {s["stratum"]: s for s in golden_set["strata"]}
    assert by_name["overall"]["design"] == golden_set["design"]
    english = [cell for cell in cells if cell.startswith("language=en")]
    assert by_name["language=en"]["design"]["cells"] == len(english)
    assert "design" not in by_name["overall"]["unweighted"]  # every query once: no design
    assert words in markdown.read_text(encoding="utf-8")
    assert words in html.read_text(encoding="utf-8")
    # The failure view of the English stratum (the candidate misses three English queries in four).
    assert by_name["language=en"]["verdict"] == "WORSE"
    english_words = f"design: stratified, {len(english)} cells"
    result.stdout.fnmatch_lines([f"traffic-weighted by frequency / inclusion (n=*, Kish *, {english_words}*"])


def test_the_design_is_in_the_fingerprint_only_when_used(tmp_path: Path, embeval: Embeval) -> None:
    path = _draw(tmp_path, embeval)
    weighted = load_golden(path)
    assert weighted.design is not None
    from dataclasses import replace

    assert weighted.fingerprint() != replace(weighted, design=None).fingerprint()


def test_a_collection_error_names_the_mismatch_and_exits_2(
    pytester: pytest.Pytester, golden: Golden, embeval: Embeval
) -> None:
    _draw(pytester.path, embeval)
    _edit(pytester.path, lambda rows: rows[1:])
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*support/queries.jsonl: the draw took * queries from language=*, the file has *"]
    )


def test_plan_on_a_drawn_set_uses_the_design(tmp_path: Path, embeval: Embeval) -> None:
    path = _draw(tmp_path, embeval)
    status, stdout, _ = embeval("plan", path, "--sd", "0.3")
    assert status == 0
    cells, whole = _sidecar_cells(tmp_path)
    assert (
        f"design: stratified, {len(cells)} cells, {whole} drawn whole: the MDE and queries needed" in stdout
    )
    plain_status, plain, _ = embeval("plan", _draw(tmp_path / "plain", embeval, weights=False), "--sd", "0.3")
    assert plain_status == 0 and "design:" not in plain


def test_without_weights_a_draw_sidecar_changes_no_number(
    pytester: pytest.Pytester, golden: Golden, embeval: Embeval
) -> None:
    """The design is read only under ``weights``: an unweighted run of a drawn set reports what the same
    set without its sidecar reports, but for the draw recorded in the control."""
    from pytest_embeval.reports.json_report import without_timings

    _draw(pytester.path, embeval, weights=False)
    _run(pytester, f"--embeval-json={pytester.path / 'drawn.json'}")
    sidecar = pytester.path / "support" / "queries.draw.json"
    sidecar.rename(pytester.path / "kept.json")
    _run(pytester, f"--embeval-json={pytester.path / 'plain.json'}")
    drawn, plain = (
        without_timings(json.loads((pytester.path / name).read_text(encoding="utf-8")))["golden_sets"][0]
        for name in ("drawn.json", "plain.json")
    )
    assert drawn["control"].pop("draws")["queries"]["command"] == "sample"
    assert "draws" not in plain["control"] and "design" not in drawn
    assert drawn == plain


def test_plans_mde_is_the_designs_for_the_sd_given(tmp_path: Path, embeval: Embeval) -> None:
    """``V = sd² Σ_h (1 - n_h/N_h) Σ_{i in h} w_i² / (Σ w)²`` (`planning`), summed here from the queries;
    the queries needed grow every cell in proportion to its draw, so they reach at most the population."""
    import math

    from pytest_embeval.core.stats import z_sum
    from pytest_embeval.judging.planning import plan

    golden = load_golden(_draw(tmp_path, embeval))
    assert golden.design is not None
    drawn, population = golden.design.drawn(), golden.design.population
    squares: dict[object, float] = {}
    for query, cell in zip(golden.queries, golden.design.cells, strict=True):
        squares[cell] = squares.get(cell, 0.0) + (query.traffic_weight or 0.0) ** 2
    total = sum(query.traffic_weight or 0.0 for query in golden.queries)
    variance = 0.09 * sum((1 - drawn[c] / population[c]) * s for c, s in squares.items()) / total**2
    overall = plan(golden, sd=0.3)[0]
    assert overall.n == 30 and overall.mde == pytest.approx(z_sum(0.05, 0.8) * math.sqrt(variance), rel=1e-12)
    assert overall.needed is not None and 30 < overall.needed <= sum(population.values())
