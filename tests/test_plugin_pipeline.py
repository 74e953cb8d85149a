"""The pipeline capabilities through `pytest --embeval`: filters, a reranker, a hybrid arm; the same JSON
report serially and with -n 2; the after-rerank run files; a filter on an unknown field as a collection
error."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_plugin_capacity import without_timings

Golden = Callable[..., Path]

RERANKERS = """
class ByNumber:
    '''Scores "doc i" 1.0 for the query "<language> i": it knows every answer.'''

    name = "by-number"

    def score(self, query, documents):
        number = query.split()[-1]
        return [1.0 if document.split()[-1] == number else 0.0 for document in documents]


BY_NUMBER = ByNumber()


class Short:
    name = "short"

    def score(self, query, documents):
        return [0.0]


SHORT = Short()
"""


def with_languages(path: Path) -> None:
    """Documents 0-23 are English, the others Spanish; each query filters on its own language."""
    data = path.parent / path.stem
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in corpus:
        record["language"] = "en" if int(record["_id"][1:]) < 24 else "es"
    (data / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in queries:
        record["filters"] = {"language": record["language"]}
    (data / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--embeval", "-p", "no:cacheprovider", *args)


def test_filters_a_reranker_and_a_hybrid_arm_in_one_run_serially_and_with_xdist(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    pytest.importorskip("bm25s")
    with_languages(golden(rerank={"model": "rerankers:BY_NUMBER", "depth": 60}))
    pytester.makepyfile(rerankers=RERANKERS)
    arms = ("--embeval-incumbent=fake_models:bad", "--embeval-candidate=rrf:fake_models:good,bm25")
    runs = pytester.path / "runs"
    serial = run(pytester, *arms, f"--embeval-json={pytester.path / 'serial.json'}", f"--embeval-runs={runs}")
    serial.stdout.fnmatch_lines(
        [
            "filters: 48 of 48 queries search only the documents their filters allow (2 distinct filters)",
            "reranked by rerankers:BY_NUMBER (top 60, all queries, hit@1); "
            "the verdict rests on the first stage:",
            "stratum*n*first stage Δ*CI*verdict*after rerank Δ*CI*verdict*",
            "overall*48*BETTER*+0.000*TIE*the first-stage gain vanishes after reranking",
            "reranker: * pairs scored, 0 from the cache",
        ]
    )
    parallel = run(pytester, *arms, f"--embeval-json={pytester.path / 'parallel.json'}", "-n", "2")
    assert parallel.ret == serial.ret == 0
    first = json.loads((pytester.path / "serial.json").read_text(encoding="utf-8"))
    second = json.loads((pytester.path / "parallel.json").read_text(encoding="utf-8"))
    assert without_timings(first) == without_timings(second)
    # The second run found every reranker score in the cache.
    assert second["golden_sets"][0]["rerank"]["timings"]["pairs_from_cache"] > 0
    assert second["golden_sets"][0]["rerank"]["timings"]["pairs_scored"] == 0
    (record,) = first["golden_sets"]
    assert record["candidate"]["kind"] == "rrf"
    assert [part["kind"] for part in record["candidate"]["components"]] == ["dense", "bm25"]
    assert {"filters", "rerank"} <= set(record["control"]["components"])
    language = {f"d{i:02d}": "en" if i < 24 else "es" for i in range(60)}
    for query in record["queries"]:
        for role in ("incumbent", "candidate"):
            assert {language[doc] for doc in query["ranked"][role]} <= set(query["filters"]["language"])
    overall = record["strata"][0]
    assert overall["decided_by"] == "first_stage" and overall["rerank"]["absorbed"] == "gain"
    assert sorted(path.name for path in runs.iterdir()) == [
        "support.candidate.rerank.run",
        "support.candidate.run",
        "support.incumbent.rerank.run",
        "support.incumbent.run",
    ]


def test_a_filter_on_a_field_no_document_has_is_a_collection_error(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    path = golden()
    queries = path.parent / "support" / "queries.jsonl"
    lines = queries.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    record["filters"] = {"tenant": "acme"}
    lines[2] = json.dumps(record)
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run(pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad")
    assert result.ret == 2
    result.stdout.fnmatch_lines(
        [
            "*support/queries.jsonl:3: filters.tenant: query 'q02': no document has a field 'tenant' "
            "to filter on (document fields: none)"
        ]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_a_filter_matching_no_document_is_a_warning_naming_its_query(
    pytester: pytest.Pytester, golden: Golden, workers: tuple[str, ...]
) -> None:
    path = golden()
    with_languages(path)
    queries = path.parent / path.stem / "queries.jsonl"
    lines = queries.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    record["filters"] = {"language": "fr"}
    lines[2] = json.dumps(record)
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad", *workers
    )
    assert result.ret == 1  # the bad model is WORSE: the warning fails nothing
    assert (
        'EmptyFilterWarning: the filter {"language":["fr"]} of query \'q02\' matches no document: it '
        "scores NaN, excluded from both arms"
    ) in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "filters: 48 of 48 queries search only the documents their filters allow (3 distinct filters); "
            "1 match no document: q02"
        ]
    )


def test_a_bm25_arm_without_its_extra_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    # None in sys.modules makes `import bm25s` raise ImportError, as on a machine without it.
    monkeypatch.setitem(sys.modules, "bm25s", None)
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=rrf:fake_models:bad,bm25"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: --embeval-candidate: model spec 'bm25' needs bm25s, which is not installed: "
        "install the extra: pip install 'pytest-embeval[bm25]'"
    ) in result.errlines
    assert not (pytester.path / ".embeval_cache").exists()


def test_a_failing_reranker_is_an_error_of_the_golden_set_reported_once(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(rerank={"model": "rerankers:SHORT", "depth": 5})
    pytester.makepyfile(rerankers=RERANKERS)
    report_path = pytester.path / "report.json"
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:bad",
        f"--embeval-json={report_path}",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=3)  # an error of the golden set's items, never a failure
    line = "support: reranker 'rerankers:SHORT' returned 1 scores for 5 documents"
    assert line in result.stdout.lines
    assert "support: not run; the error is reported under support.yaml::overall" in result.stdout.lines
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["golden_sets"] == []
    assert [error["message"] for error in report["errors"]] == [line.removeprefix("support: ")]
    assert "Traceback" not in result.stdout.str()
