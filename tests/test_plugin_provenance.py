"""The JSON report says where the judgments a run used came from: people, a model (and what let its grades
in), or nobody on record; a sidecar that does not match the qrels is a collection error."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from suite_helpers import golden_files
from test_plugin import XDIST, Golden, run

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judging.provenance import (
    Source,
    golden_judgments,
    judgments_record,
    provenance_line,
    provenance_path,
)

JUDGE = "openai:judge-model?base_url=http://127.0.0.1:1/v1 prompt:0123456789ab"
CALIBRATION = {"file": "calibration.json", "sha256": "ab" * 32, "verdict": "usable", "weighted_kappa": 0.8}
PERSON = Source("ana", "person")
MODEL = Source(JUDGE, "model", calibration=CALIBRATION)
UNCALIBRATED = Source("openai:other prompt:0123456789ab", "model", accepted_uncalibrated=True)
TODAY = date(2026, 6, 30)
#: the age of judgments none of which carries a date
UNDATED = {
    "dated": 0,
    "oldest": None,
    "median": None,
    "newest": None,
    "median_age_days": None,
    "shelf_life": "12 months",
    "expires": None,
    "stale": None,
}


def write_sidecar(golden: Path, sources: dict[int, Source]) -> Path:
    """Provenance of q<i>/d<i> (grade 1 in the conftest's golden set) for each query number given."""
    sidecar = provenance_path(golden.parent / golden.stem / "qrels.tsv")
    lines = [provenance_line(f"q{i:02d}", f"d{i:02d}", 1, source) for i, source in sources.items()]
    sidecar.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return sidecar


def test_judgments_are_counted_by_who_made_them() -> None:
    qrels = {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1, "d3": 1, "d4": 0}}
    sources = {("q1", "d1"): PERSON, ("q1", "d2"): MODEL, ("q2", "d3"): MODEL, ("q2", "d4"): UNCALIBRATED}
    assert judgments_record(sources, qrels, today=TODAY) == {
        "total": 5,
        "by_person": 1,
        "by_model": 3,
        "unrecorded": 1,
        "model_fraction": 0.6,
        "models": {
            JUDGE: {"judgments": 2, "calibration": CALIBRATION, "accepted_uncalibrated": False},
            UNCALIBRATED.judge: {"judgments": 1, "calibration": None, "accepted_uncalibrated": True},
        },
        "by_seed": 0,
        "age": {"today": "2026-06-30", **UNDATED, "undated": 5},
    }


def test_no_judgments_have_no_fraction() -> None:
    assert judgments_record({}, {"q1": {}}, today=TODAY)["model_fraction"] is None


def test_inline_judgments_are_unrecorded(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "one"}\n{"_id": "d2", "text": "two"}\n')
    path = tmp_path / "inline.yaml"
    path.write_text(
        "corpus: corpus.jsonl\nmetric: hit@1\n"
        "queries:\n  - {id: q1, text: first, relevant: {d1: 2, d2: 0}}\n",
        encoding="utf-8",
    )
    record = golden_judgments(load_golden(path), today=TODAY)
    assert (record["total"], record["unrecorded"], record["model_fraction"]) == (2, 2, 0.0)


def test_a_sidecar_line_the_qrels_do_not_hold_is_a_golden_error(tmp_path: Path) -> None:
    path = golden_files(tmp_path)
    sidecar = write_sidecar(path, {0: PERSON})
    sidecar.write_text(sidecar.read_text().replace('"d00", "grade": 1', '"d00", "grade": 2'))
    with pytest.raises(GoldenError) as raised:
        golden_judgments(load_golden(path), today=TODAY)
    assert str(raised.value) == (
        f"{sidecar}:1: grade: records grade 2 by 'ana', the qrels hold 1 (revised by hand?); "
        "revise this line too"
    )


@pytest.mark.parametrize("xdist", XDIST)
def test_the_json_report_says_what_fraction_of_its_judgments_a_model_made(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    path = golden()
    write_sidecar(path, {**dict.fromkeys(range(0, 20), PERSON), **dict.fromkeys(range(20, 32), MODEL)})
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:good",
        "--embeval-json=r.json",
        *xdist,
    )
    assert result.ret == pytest.ExitCode.OK
    (golden_set,) = json.loads((pytester.path / "r.json").read_text())["golden_sets"]
    assert golden_set["judgments"] == {
        "total": 48,
        "by_person": 20,
        "by_model": 12,
        "unrecorded": 16,
        "model_fraction": 0.25,
        "models": {JUDGE: {"judgments": 12, "calibration": CALIBRATION, "accepted_uncalibrated": False}},
        "by_seed": 0,
        "age": {**golden_set["judgments"]["age"], **UNDATED, "undated": 48},
    }
    assert "past its shelf_life" not in result.stdout.str()  # no date, no warning: the age is unknown


def test_a_sidecar_that_does_not_match_the_qrels_is_a_collection_error(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    path = golden()
    sidecar = write_sidecar(path, {0: PERSON})
    sidecar.write_text(sidecar.read_text().replace('"d00"', '"d01"'))
    result = run(pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting support.yaml*",
            "support/qrels.provenance.jsonl:1: doc_id: query 'q00' and document 'd01' are not judged in the "
            "qrels; delete this line or restore the judgment",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("xdist", XDIST)
def test_a_run_warns_once_when_the_median_judgment_is_past_its_shelf_life(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    path = golden()
    old = Source("ana", "person", judged_on="2020-01-15")
    write_sidecar(path, {**dict.fromkeys(range(0, 30), old), **dict.fromkeys(range(30, 48), PERSON)})
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:good",
        "--embeval-json=r.json",
        *xdist,
    )
    assert result.ret == pytest.ExitCode.OK
    # 18 judgments undated: the median is unknown, so no warning.
    assert "past its shelf_life" not in result.stdout.str()
    (golden_set,) = json.loads((pytester.path / "r.json").read_text())["golden_sets"]
    assert golden_set["judgments"]["age"]["undated"] == 18 and golden_set["judgments"]["age"]["stale"] is None

    write_sidecar(
        path,
        {
            **dict.fromkeys(range(0, 30), old),
            **dict.fromkeys(range(30, 48), replace(old, judged_on="2026-01-01")),
        },
    )
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:good",
        "--embeval-json=r.json",
        *xdist,
    )
    warning = (
        "embeval: WARNING: support (support.yaml): its median judgment was made on 2020-01-15, past its "
        "shelf_life of 12 months (expired 2021-01-15): relevance drifts, re-judge a share: embeval refresh "
        "support.yaml --fraction 0.1 --out SHEET.csv, grade the sheet, then embeval merge support.yaml "
        "SHEET.csv --refresh"
    )
    assert result.stdout.str().count("past its shelf_life") == 1
    result.stdout.fnmatch_lines([warning])
    (golden_set,) = json.loads((pytester.path / "r.json").read_text())["golden_sets"]
    age = golden_set["judgments"]["age"]
    assert (age["dated"], age["undated"], age["oldest"], age["median"], age["newest"]) == (
        48, 0, "2020-01-15", "2020-01-15", "2026-01-01",
    )  # fmt: skip
    assert (age["shelf_life"], age["expires"], age["stale"]) == ("12 months", "2021-01-15", True)
    assert age["median_age_days"] == (date.fromisoformat(age["today"]) - date(2020, 1, 15)).days

    path.write_text(path.read_text(encoding="utf-8") + "shelf_life: 10 years\n", encoding="utf-8")
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good", *xdist
    )
    assert result.ret == pytest.ExitCode.OK and "past its shelf_life" not in result.stdout.str()
