"""Data as users already have it, through pytest: documents without text, a BEIR folder's split, TREC qrels
and TSV queries, each scored as the same data in the conftest layout is, and named where it matters."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import LANGUAGES

Golden = Callable[..., Path]
XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    result = pytester.runpytest(
        "--embeval", "-p", "no:cacheprovider", "--embeval-no-cache", f"--embeval-json={path}", *args
    )
    return result, json.loads(path.read_text(encoding="utf-8"))


def strata(report: dict[str, Any]) -> list[dict[str, Any]]:
    (golden_set,) = report["golden_sets"]
    return golden_set["strata"]


def test_documents_without_text_are_never_embedded_and_their_judgments_count(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    corpus = pytester.path / "support" / "corpus.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = '{"_id": "d05", "text": "", "title": "  "}\n'  # judged relevant for q05 ("en 5")
    corpus.write_text("".join(lines), encoding="utf-8")
    log = pytester.path / "encoded.log"
    monkeypatch.setenv("EMBEVAL_FAKE_LOG", str(log))
    args = [
        "--embeval-incumbent=fake_models:counted_good",
        "--embeval-candidate=fake_models:counted_bad_english",
    ]
    result, report = run(pytester, *args)
    (golden_set,) = report["golden_sets"]
    assert golden_set["documents_without_text"] == ["d05"]
    documents = [line for line in log.read_text(encoding="utf-8").splitlines() if "\tdocument\t" in line]
    assert len(documents) == 2 * 59 and not [line for line in documents if line.endswith("\t")]
    # q05's only relevant document is unretrievable: both arms miss it, and it still counts (n stays 48).
    (q05,) = [query for query in golden_set["queries"] if query["id"] == "q05"]
    assert "d05" not in q05["ranked"]["incumbent"] and "d05" not in q05["ranked"]["candidate"]
    assert [stratum["n"] for stratum in golden_set["strata"]] == [48, 24, 24]
    result.stdout.fnmatch_lines(
        [
            "embeval: WARNING: support (support.yaml): 1 document has no text (d05): never embedded nor "
            "retrieved by either arm; judgments naming them still count"
        ]
    )
    # The control digest holds which documents have no text: another such document is another corpus.
    lines[7] = '{"_id": "d07", "text": ""}\n'
    corpus.write_text("".join(lines), encoding="utf-8")
    _, again = run(pytester, *args)
    (changed,) = again["golden_sets"]
    assert changed["control"]["components"]["corpus"] != golden_set["control"]["components"]["corpus"]
    assert changed["documents_without_text"] == ["d05", "d07"]


@pytest.mark.parametrize("xdist", XDIST)
def test_a_beir_folder_with_several_splits_names_the_split_it_read(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden(beir="support")
    path = pytester.path / "support.yaml"
    path.write_text(
        "".join(
            line
            for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
            if line.split(":", 1)[0] not in ("corpus", "queries", "qrels")
        ),
        encoding="utf-8",
    )
    data = pytester.path / "support"
    qrels = (data / "qrels.tsv").read_text(encoding="utf-8")
    (data / "qrels").mkdir()
    (data / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    # The train split judges the Spanish queries only: were it read, n would be 24.
    train = [
        line for line in qrels.splitlines() if not line.startswith(("q0", "q1", "q20", "q21", "q22", "q23"))
    ]
    (data / "qrels" / "train.tsv").write_text("\n".join(train) + "\n", encoding="utf-8")
    (data / "qrels.tsv").unlink()
    result, report = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good", *xdist
    )
    assert result.ret == pytest.ExitCode.OK
    assert report["golden_sets"][0]["split"] == "test"
    assert strata(report)[0]["n"] == 48
    result.stdout.fnmatch_lines(["support (support.yaml, split test): hit@1, margin 0.05, *"])


def test_trec_qrels_and_tsv_data_are_scored_as_the_beir_jsonl_layout_is(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    args = ["--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad_english"]
    _, expected = run(pytester, *args)
    data = pytester.path / "support"
    (data / "qrels.trec").write_text("".join(f"q{i:02d} 0 d{i:02d} 1\n" for i in range(48)), encoding="utf-8")
    (data / "corpus.tsv").write_text("".join(f"d{i:02d}\tdoc {i}\n" for i in range(60)), encoding="utf-8")
    (data / "queries.tsv").write_text(
        "id\ttext\tlanguage\n"
        + "".join(
            f"q{i:02d}\t{language} {i}\t{language}\n"
            for language, numbers in LANGUAGES.items()
            for i in numbers
        ),
        encoding="utf-8",
    )
    golden(corpus="support/corpus.tsv", queries="support/queries.tsv", qrels="support/qrels.trec")
    result, report = run(pytester, *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    shown = ("stratum", "n", "incumbent", "candidate", "delta", "ci", "verdict")
    assert [[s[key] for key in shown] for s in strata(report)] == [
        [s[key] for key in shown] for s in strata(expected)
    ]
    assert strata(report)[1]["verdict"] == "WORSE"  # language=en: the data reached the verdict
