"""Specification of the golden-set file: what loads, what it loads into, and the exact one-line error for each
malformed input (``<path>[:<line>]: <key>: <problem>``)."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from suite_helpers import shared_collection

import pytest_embeval.golden.data_sections as golden_module
from pytest_embeval.core.canonical import KeyedTexts
from pytest_embeval.core.metrics import MetricSpec, parse_metric
from pytest_embeval.golden.data_files import Document, GoldenError, Query
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet, IndexSpec, Stratum

REPO = Path(__file__).resolve().parents[1]
UNSUPPORTED_QRELS = (
    "unsupported format: expected BEIR TSV (a header such as 'query-id<TAB>corpus-id<TAB>score') or TREC "
    "qrels ('qid iter docid rel', whitespace-separated), got GOT"
)

CORPUS = (
    '{"_id": "d1", "text": "alpha text"}\n'
    '{"_id": "d2", "title": "Beta", "text": "beta text"}\n'
    '{"_id": "d3", "text": "gamma text", "lang": "en"}\n'
    '{"_id": "d4", "text": "delta text"}\n'
)
QUERIES = (
    '{"_id": "q1", "text": "first query", "shape": "keyword", "language": "en"}\n'
    '{"_id": "q2", "text": "second query", "shape": "question", "language": "es"}\n'
    '{"_id": "q3", "text": "third query", "shape": "keyword", "language": "es"}\n'
    '{"_id": "q4", "text": "fourth query", "shape": "question", "language": "en"}\n'
)
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td3\t1\nq3\td4\t1\n"
BASE = (
    "name: demo\n"
    "corpus: corpus.jsonl\n"
    "queries: queries.jsonl\n"
    "qrels: qrels.tsv\n"
    "strata: [shape, language]\n"
    "metric: recall@5\n"
)
INLINE = (
    "corpus: corpus.jsonl\n"
    "strata: [shape, language]\n"
    "metric: recall@5\n"
    "queries:\n"
    "  - {id: q1, text: first query, shape: keyword, language: en, relevant: {d1: 2, d2: 0}}\n"
    "  - {id: q2, text: second query, shape: question, language: es, relevant: {d3: 1}}\n"
    "  - {id: q3, text: third query, shape: keyword, language: es, relevant: {d4: 1}}\n"
    "  - {id: q4, text: fourth query, shape: question, language: en}\n"
)
DEFAULT_FILES: dict[str, str] = {"corpus.jsonl": CORPUS, "queries.jsonl": QUERIES, "qrels.tsv": QRELS}


def write_set(
    root: Path, yaml_text: str | bytes = BASE, files: Mapping[str, str | bytes | None] | None = None
) -> Path:
    """Write the default data files (``files`` overrides them; None deletes one) and golden.yaml."""
    contents: dict[str, str | bytes | None] = {**DEFAULT_FILES, **(files or {})}
    for name, content in contents.items():
        if content is None:
            continue
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8", newline="")
    golden = root / "golden.yaml"
    if isinstance(yaml_text, bytes):
        golden.write_bytes(yaml_text)
    else:
        golden.write_text(yaml_text, encoding="utf-8", newline="")
    return golden


def load(
    root: Path, yaml_text: str | bytes = BASE, files: Mapping[str, str | bytes | None] | None = None
) -> GoldenSet:
    return load_golden(write_set(root, yaml_text, files))


# --- what a valid file loads into ---------------------------------------------------------------------------


def test_files_form_loads_documents_queries_qrels_and_defaults(tmp_path: Path) -> None:
    golden = load(tmp_path)
    assert golden.path == tmp_path / "golden.yaml"
    assert golden.name == "demo"
    assert golden.documents == (
        Document("d1", "alpha text"),
        Document("d2", "beta text", "Beta"),
        # The extra field is kept, for filters and folding, but embedded by no one.
        Document("d3", "gamma text", fields={"lang": ("en",)}),
        Document("d4", "delta text"),
    )
    assert [doc.embed_text for doc in golden.documents] == [
        "alpha text",
        "Beta\nbeta text",
        "gamma text",
        "delta text",
    ]
    assert golden.queries[1] == Query("q2", "second query", {"shape": "question", "language": "es"})
    assert [query.id for query in golden.queries] == ["q1", "q2", "q3", "q4"]
    # Every query has an entry, in query order; q4 has no judgment and is kept (it will score NaN).
    assert golden.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}, "q3": {"d4": 1}, "q4": {}}
    assert list(golden.qrels) == ["q1", "q2", "q3", "q4"]
    assert golden.strata_fields == ("shape", "language")
    assert golden.metric == MetricSpec("recall", 5)
    assert golden.guards == {}
    assert golden.report_metrics == ()
    assert golden.tie_margin == 0.02
    assert golden.confidence == 0.95
    assert golden.min_queries == 20
    assert golden.bootstrap == 10_000
    assert golden.seed == 0
    assert golden.index == IndexSpec("exact")
    assert golden.relevance_level == 1
    assert golden.separate == {}
    assert (golden.interval, golden.ties, golden.multiple_comparisons) == ("studentized", "docid", "none")


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    write_set(tmp_path, BASE.replace("name: demo\n", ""))
    (tmp_path / "golden.yaml").rename(tmp_path / "support-search.yaml")
    assert load_golden(tmp_path / "support-search.yaml").name == "support-search"


def test_every_setting_is_read(tmp_path: Path) -> None:
    text = BASE + (
        "schema_version: 1\n"
        "guards: {recall@50: 0.02, ndcg@10: 0}\n"
        "report: [ndcg@10, mrr@10, recall@5]\n"
        "tie_margin: 0.03\n"
        "confidence: 0.9\n"
        "min_queries: 2\n"
        "bootstrap: 500\n"
        "seed: 7\n"
        "index: {hnsw: {M: 8, ef_construction: 100, ef_search: 64}}\n"
        "relevance_level: 2\n"
        "interval: percentile\n"
        "ties: expected\n"
        "multiple_comparisons: holm\n"
    )
    golden = load(tmp_path, text)
    assert (golden.interval, golden.ties, golden.multiple_comparisons) == ("percentile", "expected", "holm")
    assert golden.guards == {"recall@50": 0.02, "ndcg@10": 0.0}
    assert all(isinstance(margin, float) for margin in golden.guards.values())
    assert golden.report_metrics == (MetricSpec("ndcg", 10), MetricSpec("mrr", 10), MetricSpec("recall", 5))
    assert (golden.tie_margin, golden.confidence, golden.min_queries) == (0.03, 0.9, 2)
    assert (golden.bootstrap, golden.seed, golden.relevance_level) == (500, 7, 2)
    assert golden.index == IndexSpec("hnsw", M=8, ef_construction=100, ef_search=64)
    # Primary, guards, report: each metric once, in that order.
    assert [str(spec) for spec in golden.all_metrics()] == ["recall@5", "recall@50", "ndcg@10", "mrr@10"]
    assert golden.max_k() == 50


def test_integer_margins_become_floats(tmp_path: Path) -> None:
    golden = load(tmp_path, BASE + "tie_margin: 0\n")
    assert golden.tie_margin == 0.0
    assert isinstance(golden.tie_margin, float)


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        ("exact", IndexSpec("exact")),
        ("hnsw", IndexSpec("hnsw", M=16, ef_construction=200, ef_search=128)),
        ("{hnsw: }", IndexSpec("hnsw")),
        ("{hnsw: {}}", IndexSpec("hnsw")),
        ("{hnsw: {ef_search: 400}}", IndexSpec("hnsw", ef_search=400)),
    ],
)
def test_index_forms(tmp_path: Path, index: str, expected: IndexSpec) -> None:
    assert load(tmp_path, BASE + f"index: {index}\n").index == expected


def test_inline_queries_carry_their_judgments(tmp_path: Path) -> None:
    golden = load(tmp_path, INLINE, {"queries.jsonl": None, "qrels.tsv": None})
    assert [query.id for query in golden.queries] == ["q1", "q2", "q3", "q4"]
    assert golden.queries[0] == Query("q1", "first query", {"shape": "keyword", "language": "en"})
    assert golden.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}, "q3": {"d4": 1}, "q4": {}}
    assert golden.name == "golden"


def test_inline_ids_and_stratum_values_are_taken_as_written(tmp_path: Path) -> None:
    # YAML 1.1 would read 007 as the integer 7 and `no` as false: ids and stratum values are text.
    text = (
        "corpus: corpus.jsonl\nstrata: [language, year]\nmetric: ndcg@10\n"
        "queries:\n  - {id: 007, text: bonjour, language: no, year: 2024, relevant: {d1: 1}}\n"
    )
    golden = load(tmp_path, text, {"corpus.jsonl": '{"_id": "d1", "text": "x"}\n'})
    assert golden.queries == (Query("007", "bonjour", {"language": "no", "year": "2024"}),)
    assert golden.qrels == {"007": {"d1": 1}}


def test_inline_queries_may_take_judgments_from_a_qrels_file(tmp_path: Path) -> None:
    text = INLINE.replace(", relevant: {d1: 2, d2: 0}", "").replace(", relevant: {d3: 1}", "")
    text = text.replace(", relevant: {d4: 1}", "") + "qrels: qrels.tsv\n"
    golden = load(tmp_path, text, {"queries.jsonl": None})
    assert golden.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}, "q3": {"d4": 1}, "q4": {}}


def test_same_content_inline_or_in_files_has_the_same_fingerprint(tmp_path: Path) -> None:
    files = load(tmp_path / "files", BASE.replace("name: demo\n", ""))
    inline = load(tmp_path / "inline", INLINE, {"queries.jsonl": None, "qrels.tsv": None})
    assert files.fingerprint() == inline.fingerprint()


def test_jsonl_details_bom_crlf_blank_lines_integer_ids_and_typed_fields(tmp_path: Path) -> None:
    corpus = (
        '\ufeff{"_id": 1, "text": "one", "title": null}\r\n\r\n{"_id": "2", "text": "", "title": "two"}\r\n'
    )
    queries = (
        '{"_id": 10, "text": "q", "shape": 3, "language": true, "metadata": {"x": 1}}\n'
        "   \n"
        '{"_id": "11", "text": "r", "shape": 2.5, "language": "en"}'  # no final newline
    )
    qrels = "query-id\tcorpus-id\tscore\r\n10\t1\t1\r\n\r\n11\t2\t3\r\n"
    golden = load(tmp_path, BASE, {"corpus.jsonl": corpus, "queries.jsonl": queries, "qrels.tsv": qrels})
    assert golden.documents == (Document("1", "one"), Document("2", "", "two"))
    assert golden.queries == (
        Query("10", "q", {"shape": "3", "language": "true"}),
        Query("11", "r", {"shape": "2.5", "language": "en"}),
    )
    assert golden.qrels == {"10": {"1": 1}, "11": {"2": 3}}


def test_paths_are_relative_to_the_yaml_file_or_absolute(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_set(data)
    golden_dir = tmp_path / "golden"
    golden_dir.mkdir()
    text = BASE.replace("corpus: corpus.jsonl", "corpus: ../data/corpus.jsonl")
    text = text.replace("queries: queries.jsonl", f"queries: {data / 'queries.jsonl'}")
    text = text.replace("qrels: qrels.tsv", "qrels: ../data/qrels.tsv")
    (golden_dir / "set.yaml").write_text(text, encoding="utf-8")
    assert len(load_golden(golden_dir / "set.yaml").documents) == 4


# --- BEIR folders -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["qrels/test.tsv", "qrels.tsv"])
def test_beir_folder(tmp_path: Path, layout: str) -> None:
    beir = {"beir/corpus.jsonl": CORPUS, "beir/queries.jsonl": QUERIES, f"beir/{layout}": QRELS}
    golden = load(tmp_path, "beir: beir\nmetric: ndcg@10\nstrata: [language]\n", {**beir})
    assert len(golden.documents) == 4
    assert [stratum.name for stratum in golden.strata()] == ["overall", "language=en", "language=es"]
    assert golden.qrels["q1"] == {"d1": 2, "d2": 0}


def test_beir_folder_prefers_qrels_test_tsv(tmp_path: Path) -> None:
    beir = {
        "beir/corpus.jsonl": CORPUS,
        "beir/queries.jsonl": QUERIES,
        "beir/qrels/test.tsv": QRELS,
        "beir/qrels.tsv": "query-id\tcorpus-id\tscore\nq4\td4\t1\n",
    }
    golden = load(tmp_path, "beir: beir\nmetric: ndcg@10\n", beir)
    assert golden.qrels["q4"] == {}


def _source_counts(folder: Path) -> dict[str, int]:
    text = (folder / "SOURCE.txt").read_text(encoding="utf-8")
    return {key: int(value) for key, value in re.findall(r"^  (docs|queries|qrels_rows): (\d+)$", text, re.M)}


@pytest.mark.parametrize("collection", ["adi", "medline", "nfcorpus-preprocessed", "vaswani"])
def test_shared_collections_load(tmp_path: Path, collection: str) -> None:
    folder = shared_collection(collection)
    golden = load_golden(write_set(tmp_path, f"beir: {folder}\nmetric: ndcg@10\n", {}))
    counts = _source_counts(folder)
    assert len(golden.documents) == counts["docs"]
    assert len(golden.queries) == counts["queries"]
    assert sum(len(judged) for judged in golden.qrels.values()) == counts["qrels_rows"]
    assert golden.strata() == (Stratum("overall", tuple(query.id for query in golden.queries)),)
    assert golden.fingerprint().startswith("sha256:")


# --- strata -------------------------------------------------------------------------------------------------


def test_strata_overall_first_then_fields_in_order_values_sorted_ids_in_file_order(tmp_path: Path) -> None:
    golden = load(tmp_path)
    assert golden.strata() == (
        Stratum("overall", ("q1", "q2", "q3", "q4")),
        Stratum("shape=keyword", ("q1", "q3")),
        Stratum("shape=question", ("q2", "q4")),
        Stratum("language=en", ("q1", "q4")),
        Stratum("language=es", ("q2", "q3")),
    )


def test_no_strata_means_overall_only(tmp_path: Path) -> None:
    golden = load(tmp_path, BASE.replace("strata: [shape, language]\n", ""))
    assert golden.strata_fields == ()
    assert golden.strata() == (Stratum("overall", ("q1", "q2", "q3", "q4")),)
    assert golden.queries[0].fields == {}


def test_header_only_qrels_is_a_set_awaiting_its_first_judgments(tmp_path: Path) -> None:
    golden = load(tmp_path, BASE, {"qrels.tsv": "query-id\tcorpus-id\tscore\n"})
    assert all(judged == {} for judged in golden.qrels.values())
    assert len(golden.qrels) == len(golden.queries)


def test_separate_queries_form_only_their_own_stratum(tmp_path: Path) -> None:
    golden = load(tmp_path, BASE + "separate: {shape: [question]}\n")
    assert golden.separate == {"shape": ("question",)}
    assert golden.strata() == (
        Stratum("overall", ("q1", "q3")),
        Stratum("shape=question", ("q2", "q4")),
        Stratum("language=en", ("q1",)),
        Stratum("language=es", ("q3",)),
    )


def test_separate_any_matching_field(tmp_path: Path) -> None:
    golden = load(tmp_path, BASE + "separate:\n  shape: [question]\n  language: [es]\n")
    assert golden.strata()[0] == Stratum("overall", ("q1",))


# --- fingerprints -------------------------------------------------------------------------------------------

PLAN = BASE + (
    "guards: {recall@50: 0.02}\n"
    "report: [ndcg@10]\n"
    "tie_margin: 0.03\n"
    "confidence: 0.95\n"
    "min_queries: 20\n"
    "bootstrap: 10000\n"
    "seed: 0\n"
    "index: {hnsw: {M: 16, ef_construction: 200, ef_search: 128}}\n"
    "relevance_level: 1\n"
    "interval: studentized\n"
    "ties: docid\n"
    "multiple_comparisons: none\n"
)


def test_fingerprints_are_stable_and_well_formed(tmp_path: Path) -> None:
    first, second = load(tmp_path / "a", PLAN), load(tmp_path / "b", PLAN)
    assert first.fingerprint() == second.fingerprint()
    assert first.plan_fingerprint() == second.plan_fingerprint()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", first.fingerprint())
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", first.plan_fingerprint())
    assert first.fingerprint() != first.plan_fingerprint()


def test_fingerprints_are_stable_across_processes_and_golden_never_imports_pytest(tmp_path: Path) -> None:
    golden = load(tmp_path, PLAN)
    script = (
        "import sys\n"
        "from pytest_embeval.golden.loader import load_golden\n"
        "golden = load_golden(sys.argv[1])\n"
        "print(golden.fingerprint(), golden.plan_fingerprint(), 'pytest' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(golden.path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    )
    assert result.stdout.split() == [golden.fingerprint(), golden.plan_fingerprint(), "False"]


def test_defaults_and_the_same_values_written_out_fingerprint_alike(tmp_path: Path) -> None:
    explicit = BASE + (
        "tie_margin: 0.02\nconfidence: 0.95\nmin_queries: 20\nbootstrap: 10000\nseed: 0\n"
        "index: exact\nrelevance_level: 1\nschema_version: 1\n"
        "interval: studentized\nties: docid\nmultiple_comparisons: none\n"
    )
    assert load(tmp_path / "a").plan_fingerprint() == load(tmp_path / "b", explicit).plan_fingerprint()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("metric: recall@5", "metric: recall@10"),
        ("guards: {recall@50: 0.02}", "guards: {recall@50: 0.03}"),
        ("guards: {recall@50: 0.02}", "guards: {recall@40: 0.02}"),
        ("guards: {recall@50: 0.02}", "guards: {}"),
        ("report: [ndcg@10]", "report: [ndcg@10, mrr@10]"),
        ("tie_margin: 0.03", "tie_margin: 0.031"),
        ("confidence: 0.95", "confidence: 0.9"),
        ("min_queries: 20", "min_queries: 21"),
        ("bootstrap: 10000", "bootstrap: 10001"),
        ("seed: 0", "seed: 1"),
        ("index: {hnsw: {M: 16, ef_construction: 200, ef_search: 128}}", "index: exact"),
        ("M: 16", "M: 32"),
        ("ef_construction: 200", "ef_construction: 100"),
        ("ef_search: 128", "ef_search: 129"),
        ("relevance_level: 1", "relevance_level: 2"),
        ("strata: [shape, language]", "strata: [language, shape]"),
        ("strata: [shape, language]", "strata: [shape]"),
        ("relevance_level: 1", "relevance_level: 1\nseparate: {shape: [question]}"),
        ("interval: studentized", "interval: percentile"),
        ("ties: docid", "ties: expected"),
        ("multiple_comparisons: none", "multiple_comparisons: holm"),
        ("multiple_comparisons: none", "multiple_comparisons: bonferroni"),
    ],
)
def test_fingerprints_change_with_every_declared_field(tmp_path: Path, old: str, new: str) -> None:
    assert PLAN.count(old) == 1
    before, after = load(tmp_path / "a", PLAN), load(tmp_path / "b", PLAN.replace(old, new))
    assert before.plan_fingerprint() != after.plan_fingerprint()
    assert before.fingerprint() != after.fingerprint()


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("corpus.jsonl", "alpha text", "alpha texT"),
        ("corpus.jsonl", '"title": "Beta"', '"title": "Beta!"'),
        ("corpus.jsonl", 'delta text"}\n', 'delta text"}\n{"_id": "d5", "text": "epsilon"}\n'),
        ("queries.jsonl", "third query", "third query?"),
        ("queries.jsonl", '"_id": "q4"', '"_id": "q5"'),
        ("queries.jsonl", '"language": "en"}\n', '"language": "fr"}\n'),
        ("qrels.tsv", "q3\td4\t1", "q3\td4\t2"),
        ("qrels.tsv", "q3\td4\t1\n", "q3\td4\t1\nq4\td1\t0\n"),
    ],
)
def test_fingerprint_changes_with_the_data_and_the_plan_fingerprint_does_not(
    tmp_path: Path, name: str, old: str, new: str
) -> None:
    assert DEFAULT_FILES[name].count(old) >= 1
    changed = DEFAULT_FILES[name].replace(old, new)
    before, after = load(tmp_path / "a", PLAN), load(tmp_path / "b", PLAN, {name: changed})
    assert before.fingerprint() != after.fingerprint()
    assert before.plan_fingerprint() == after.plan_fingerprint()


def test_fingerprint_ignores_the_name_and_the_order_of_qrels_rows(tmp_path: Path) -> None:
    shuffled = "query-id\tcorpus-id\tscore\nq3\td4\t1\nq1\td2\t0\nq2\td3\t1\nq1\td1\t2\n"
    before = load(tmp_path / "a", PLAN)
    after = load(tmp_path / "b", PLAN.replace("name: demo", "name: other"), {"qrels.tsv": shuffled})
    assert before.fingerprint() == after.fingerprint()


# --- errors -------------------------------------------------------------------------------------------------


def test_golden_error_is_one_line_with_its_parts_and_survives_pickling() -> None:
    error = GoldenError(Path("g.yaml"), "metric", 3, "bad\nvalue")
    assert str(error) == "g.yaml:3: metric: bad value"
    assert (error.path, error.key, error.line, error.problem) == (Path("g.yaml"), "metric", 3, "bad value")
    assert str(GoldenError(Path("g.yaml"), None, None, "empty")) == "g.yaml: empty"
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.key, copy.line) == (str(error), "metric", 3)


def _bad_metric(text: str) -> str:
    with pytest.raises(ValueError) as info:
        parse_metric(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("extra", "line", "key", "text"),
    [
        ("", 6, "metric", "recal@5"),
        ("guards: {recal@50: 0.1}\n", 7, "guards.recal@50", "recal@50"),
        ("report: [ndcg@10, ndgc@10]\n", 7, "report[1]", "ndgc@10"),
    ],
)
def test_bad_metric_names_wrap_parse_metric(
    tmp_path: Path, extra: str, line: int, key: str, text: str
) -> None:
    yaml_text = BASE.replace("metric: recall@5", "metric: recal@5" if key == "metric" else "metric: recall@5")
    with pytest.raises(GoldenError) as info:
        load(tmp_path, yaml_text + extra)
    assert str(info.value) == f"{tmp_path}/golden.yaml:{line}: {key}: {_bad_metric(text)}"


def _with_line(name: str, number: int, line: str) -> dict[str, str | bytes | None]:
    """The default data files with line ``number`` of ``name`` replaced."""
    lines = DEFAULT_FILES[name].splitlines(keepends=True)
    lines[number - 1] = line + "\n"
    return {name: "".join(lines)}


INLINE_HEAD = "corpus: corpus.jsonl\nstrata: [shape]\nmetric: recall@5\nqueries:\n"
NO_DATA: dict[str, str | bytes | None] = {"queries.jsonl": None, "qrels.tsv": None}
KNOWN = (
    "schema_version, name, corpus, queries, qrels, beir, split, strata, separate, metric, guards, report, "
    "tie_margin, confidence, min_queries, bootstrap, seed, index, relevance_level, interval, ties, "
    "multiple_comparisons, family, production, corpus_sample, fold, rerank, guidelines, shelf_life, "
    "decision, weights"
)
# Braces doubled: expected messages go through str.format for the {d} and {abs} placeholders.
ACCEPTED_INDEX = "must be 'exact' or {{hnsw: {{M: 16, ef_construction: 200, ef_search: 128}}}}"
G = "{d}/golden.yaml"
#: A JSONL query with a frequency, up to its inclusion's value.
INCLUDED = '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "frequency": 3, "inclusion": '

ERROR_CASES = [
    # --- the YAML file itself
    pytest.param(
        b"name: caf\xe9\n", None, f"{G}:1: not valid UTF-8 (byte 0xe9 at offset 9)", id="yaml-not-utf8"
    ),
    pytest.param(
        BASE + "seed: [1\n",
        None,
        f"{G}:8: invalid YAML: expected ',' or ']', but got '<stream end>' (column 1)",
        id="yaml-syntax",
    ),
    pytest.param(
        "name: a\x00\n",
        None,
        f"{G}:1: invalid YAML: special characters are not allowed (character #x0000)",
        id="yaml-control-character",
    ),
    pytest.param("", None, f"{G}: expected a mapping of settings, the file is empty", id="yaml-empty"),
    pytest.param("- a\n- b\n", None, f"{G}:1: expected a mapping of settings, got a list", id="yaml-list"),
    pytest.param("hello\n", None, f"{G}:1: expected a mapping of settings, got hello", id="yaml-scalar"),
    pytest.param(
        BASE + "---\nname: again\n",
        None,
        f"{G}:7: invalid YAML: expected a single document in the stream "
        "but found another document (column 1)",
        id="yaml-two-documents",
    ),
    pytest.param(
        BASE + "seed: !!python/object:os.system x\n",
        None,
        f"{G}:7: seed: invalid YAML value: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object:os.system'",
        id="yaml-unsafe-tag",
    ),
    pytest.param(
        BASE + "? [a]\n: 1\n", None, f"{G}:7: keys must be plain names, got a list", id="yaml-complex-key"
    ),
    pytest.param(
        BASE + "tie_margn: 0.1\n",
        None,
        f"{G}:7: tie_margn: unknown key, did you mean 'tie_margin'?",
        id="unknown-key-suggestion",
    ),
    pytest.param(
        BASE + "colour: red\n",
        None,
        f"{G}:7: colour: unknown key (expected one of: {KNOWN})",
        id="unknown-key",
    ),
    pytest.param(
        BASE + "metric: ndcg@10\n", None, f"{G}:7: metric: duplicate key (first on line 6)", id="dup-key"
    ),
    pytest.param(
        BASE + "shelf_life: soon\n",
        None,
        f"{G}:7: shelf_life: must be a positive duration such as '12 months', '1 year', '26 weeks' or "
        "'365d', got 'soon'",
        id="shelf-life-word",
    ),
    pytest.param(
        BASE + "shelf_life: 0 months\n",
        None,
        f"{G}:7: shelf_life: must be a positive duration such as '12 months', '1 year', '26 weeks' or "
        "'365d', got '0 months'",
        id="shelf-life-zero",
    ),
    pytest.param(
        BASE + "shelf_life: 12\n",
        None,
        f"{G}:7: shelf_life: must be a positive duration such as '12 months', '1 year', '26 weeks' or "
        "'365d', got '12'",
        id="shelf-life-no-unit",
    ),
    pytest.param(
        BASE + "shelf_life: [12, months]\n",
        None,
        f"{G}:7: shelf_life: must be a duration such as '12 months', got a list",
        id="shelf-life-list",
    ),
    pytest.param(
        BASE + "schema_version: 2\n",
        None,
        f"{G}:7: schema_version: unsupported version 2 (this release reads 1)",
        id="schema-version-2",
    ),
    pytest.param(
        BASE + "schema_version: true\n",
        None,
        f"{G}:7: schema_version: unsupported version true (this release reads 1)",
        id="schema-version-bool",
    ),
    pytest.param(
        BASE.replace("metric: recall@5\n", ""),
        None,
        f"{G}: metric: missing required key (the primary metric, e.g. ndcg@10)",
        id="missing-metric",
    ),
    pytest.param(
        BASE.replace("corpus: corpus.jsonl\n", ""),
        None,
        f"{G}: corpus: missing required key (or give 'beir: <folder>')",
        id="missing-corpus",
    ),
    pytest.param(
        BASE.replace("queries: queries.jsonl\n", ""),
        None,
        f"{G}: queries: missing required key (or give 'beir: <folder>')",
        id="missing-queries",
    ),
    pytest.param(
        BASE.replace("qrels: qrels.tsv\n", ""),
        None,
        f"{G}: qrels: missing required key (queries from a file need a qrels file)",
        id="missing-qrels",
    ),
    pytest.param(
        BASE + "beir: data\n",
        None,
        f"{G}:2: corpus: cannot be combined with 'beir' (the folder supplies corpus, queries and qrels)",
        id="beir-and-corpus",
    ),
    pytest.param(
        BASE.replace("corpus.jsonl", "missing.jsonl"),
        None,
        f"{G}:2: corpus: file not found: {{abs}}/missing.jsonl",
        id="missing-corpus-file",
    ),
    pytest.param(
        BASE.replace("qrels.tsv", "sub/../nope.tsv"),
        None,
        f"{G}:4: qrels: file not found: {{abs}}/nope.tsv",
        id="missing-qrels-file-resolved",
    ),
    pytest.param(
        BASE.replace("corpus: corpus.jsonl", "corpus: ."),
        None,
        f"{G}:2: corpus: not a file: {{abs}}",
        id="corpus-is-a-folder",
    ),
    pytest.param(
        BASE.replace("corpus: corpus.jsonl", 'corpus: "a\\0b"'),
        None,
        f"{G}:2: corpus: unusable path '{{d}}/a\\x00b': embedded null byte",
        id="corpus-path-nul",
    ),
    pytest.param(
        BASE.replace("corpus: corpus.jsonl", "corpus: [a]"),
        None,
        f"{G}:2: corpus: must be a non-empty string, got a list",
        id="corpus-not-a-path",
    ),
    pytest.param(
        BASE.replace("queries: queries.jsonl", "queries: {a: 1}"),
        None,
        f"{G}:3: queries.a: unknown key (expected one of: path, format)",
        id="queries-mapping",
    ),
    pytest.param(
        "beir: nowhere\nmetric: ndcg@10\n",
        None,
        f"{G}:1: beir: folder not found: {{abs}}/nowhere",
        id="beir-missing-folder",
    ),
    pytest.param(
        "beir: corpus.jsonl\nmetric: ndcg@10\n",
        None,
        f"{G}:1: beir: not a folder: {{abs}}/corpus.jsonl",
        id="beir-not-a-folder",
    ),
    pytest.param(
        "beir: b\nmetric: ndcg@10\n",
        {"b/queries.jsonl": QUERIES, "b/qrels.tsv": QRELS},
        f"{G}:1: beir: file not found: {{abs}}/b/corpus.jsonl",
        id="beir-missing-corpus",
    ),
    pytest.param(
        "beir: b\nmetric: ndcg@10\n",
        {"b/corpus.jsonl": CORPUS, "b/queries.jsonl": QUERIES},
        f"{G}:1: beir: no qrels file in {{abs}}/b (looked for qrels/test.tsv and qrels.tsv)",
        id="beir-missing-qrels",
    ),
    pytest.param(
        "beir: b\nmetric: ndcg@10\n",
        {"b/corpus.jsonl": CORPUS, "b/queries.jsonl": QUERIES, "b/qrels.tsv": "x\n"},
        "{d}/b/qrels.tsv:1: format: " + UNSUPPORTED_QRELS.replace("GOT", "'x'"),
        id="beir-bad-qrels",
    ),
    pytest.param(
        BASE.replace("name: demo", "name: ''"),
        None,
        f"{G}:1: name: must be a non-empty name, got an empty value",
        id="name-empty",
    ),
    # --- settings
    pytest.param(
        BASE.replace("metric: recall@5", "metric: [a]"),
        None,
        f"{G}:6: metric: must be a metric name such as ndcg@10, got a list",
        id="metric-not-a-string",
    ),
    pytest.param(
        BASE + "guards: {recall@50: -0.02}\n",
        None,
        f"{G}:7: guards.recall@50: must be a number >= 0, got -0.02",
        id="guard-negative-margin",
    ),
    pytest.param(
        BASE + "guards:\n  recall@50: yes\n",
        None,
        f"{G}:8: guards.recall@50: must be a number >= 0, got yes",
        id="guard-bool-margin",
    ),
    pytest.param(
        BASE + "guards:\n  recall@50: 0.1\n  recall@50: 0.2\n",
        None,
        f"{G}:9: guards.recall@50: duplicate key (first on line 8)",
        id="guard-duplicate",
    ),
    pytest.param(
        BASE + "guards: [recall@50]\n",
        None,
        f"{G}:7: guards: must be a mapping, got a list",
        id="guards-list",
    ),
    pytest.param(
        BASE + "report: ndcg@10\n",
        None,
        f"{G}:7: report: must be a list of metric names, got ndcg@10",
        id="report-not-a-list",
    ),
    pytest.param(
        BASE + "report: [ndcg@10, ndcg@10]\n",
        None,
        f"{G}:7: report[1]: duplicate metric 'ndcg@10'",
        id="report-duplicate",
    ),
    pytest.param(
        BASE + "tie_margin: -0.1\n",
        None,
        f"{G}:7: tie_margin: must be a number >= 0, got -0.1",
        id="tie-margin-negative",
    ),
    pytest.param(
        BASE + "tie_margin: true\n",
        None,
        f"{G}:7: tie_margin: must be a number >= 0, got true",
        id="tie-margin-bool",
    ),
    pytest.param(
        BASE + "tie_margin: .nan\n",
        None,
        f"{G}:7: tie_margin: must be a number >= 0, got .nan",
        id="tie-margin-nan",
    ),
    pytest.param(
        BASE + "tie_margin: '0.1'\n",
        None,
        f"{G}:7: tie_margin: must be a number >= 0, got 0.1",
        id="tie-margin-string",
    ),
    pytest.param(
        BASE + "confidence: 1\n",
        None,
        f"{G}:7: confidence: must be a number strictly between 0 and 1, got 1",
        id="confidence-one",
    ),
    pytest.param(
        BASE + "confidence: 0\n",
        None,
        f"{G}:7: confidence: must be a number strictly between 0 and 1, got 0",
        id="confidence-zero",
    ),
    pytest.param(
        BASE + "confidence: 95\n",
        None,
        f"{G}:7: confidence: must be a number strictly between 0 and 1, got 95",
        id="confidence-percent",
    ),
    pytest.param(
        BASE + "min_queries: 0\n",
        None,
        f"{G}:7: min_queries: must be an integer >= 1, got 0",
        id="min-queries-zero",
    ),
    pytest.param(
        BASE + "min_queries: 2.5\n",
        None,
        f"{G}:7: min_queries: must be an integer >= 1, got 2.5",
        id="min-queries-float",
    ),
    pytest.param(
        BASE + "bootstrap: 10\n",
        None,
        f"{G}:7: bootstrap: must be an integer from 100 to 1,000,000, got 10",
        id="bootstrap-small",
    ),
    pytest.param(
        BASE + "bootstrap: true\n",
        None,
        f"{G}:7: bootstrap: must be an integer from 100 to 1,000,000, got true",
        id="bootstrap-bool",
    ),
    pytest.param(
        BASE + "seed: -1\n", None, f"{G}:7: seed: must be an integer >= 0, got -1", id="seed-negative"
    ),
    pytest.param(
        BASE + "relevance_level: 0\n",
        None,
        f"{G}:7: relevance_level: must be an integer >= 1, got 0",
        id="relevance-level-zero",
    ),
    pytest.param(
        BASE + "index: flat\n", None, f"{G}:7: index: {ACCEPTED_INDEX}, got flat", id="index-unknown"
    ),
    pytest.param(
        BASE + "interval: bca\n",
        None,
        f"{G}:7: interval: must be 'studentized' or 'percentile', got bca",
        id="interval-unknown",
    ),
    pytest.param(
        BASE + "interval: [percentile]\n",
        None,
        f"{G}:7: interval: must be 'studentized' or 'percentile', got a list",
        id="interval-list",
    ),
    pytest.param(
        BASE + "ties: random\n",
        None,
        f"{G}:7: ties: must be 'docid' or 'expected', got random",
        id="ties-unknown",
    ),
    pytest.param(
        BASE + "ties:\n",
        None,
        f"{G}:7: ties: must be 'docid' or 'expected', got an empty value",
        id="ties-empty",
    ),
    pytest.param(
        BASE + "multiple_comparisons: sidak\n",
        None,
        f"{G}:7: multiple_comparisons: must be 'none', 'holm' or 'bonferroni', got sidak",
        id="multiple-comparisons-unknown",
    ),
    pytest.param(
        BASE + "multiple_comparison: holm\n",
        None,
        f"{G}:7: multiple_comparison: unknown key, did you mean 'multiple_comparisons'?",
        id="multiple-comparisons-typo",
    ),
    pytest.param(
        BASE + "index: {}\n", None, f"{G}:7: index: {ACCEPTED_INDEX}, got an empty mapping", id="index-empty"
    ),
    pytest.param(
        BASE + "index: {hnws: {}}\n",
        None,
        f"{G}:7: index.hnws: unknown key, did you mean 'hnsw'?",
        id="index-typo",
    ),
    pytest.param(
        BASE + "index:\n  hnsw:\n    ef_serch: 10\n",
        None,
        f"{G}:9: index.hnsw.ef_serch: unknown key, did you mean 'ef_search'?",
        id="index-hnsw-unknown-key",
    ),
    pytest.param(
        BASE + "index: {hnsw: {M: 1}}\n",
        None,
        f"{G}:7: index.hnsw.M: must be an integer >= 2, got 1",
        id="index-hnsw-one",
    ),
    pytest.param(
        BASE + "index: {hnsw: [16]}\n",
        None,
        f"{G}:7: index.hnsw: must be a mapping, got a list",
        id="index-hnsw-list",
    ),
    pytest.param(
        BASE.replace("strata: [shape, language]", "strata: shape"),
        None,
        f"{G}:5: strata: must be a list of query field names, got shape",
        id="strata-not-a-list",
    ),
    pytest.param(
        BASE.replace("strata: [shape, language]", "strata: [shape, shape]"),
        None,
        f"{G}:5: strata[1]: duplicate stratum field 'shape' (first on line 5)",
        id="strata-duplicate",
    ),
    pytest.param(
        BASE.replace("strata: [shape, language]", "strata: [text]"),
        None,
        f"{G}:5: strata[0]: 'text' is reserved for the query itself, not a stratum field",
        id="strata-reserved",
    ),
    pytest.param(
        BASE + "separate: {source: [wish]}\n",
        None,
        f"{G}:7: separate.source: 'source' is not a stratum field (strata: shape, language)",
        id="excludes-unknown-field",
    ),
    pytest.param(
        BASE + "separate: {shape: [wish]}\n",
        None,
        f"{G}:7: separate.shape[0]: no query has shape=wish (values: keyword, question)",
        id="excludes-unknown-value",
    ),
    pytest.param(
        BASE + "separate: {shape: question}\n",
        None,
        f"{G}:7: separate.shape: must be a list of values, got question",
        id="excludes-not-a-list",
    ),
    pytest.param(
        BASE + "separate: {shape: [question, question]}\n",
        None,
        f"{G}:7: separate.shape[1]: duplicate value 'question'",
        id="excludes-duplicate",
    ),
    pytest.param(
        BASE + "separate: {shape: [question, keyword]}\n",
        None,
        f"{G}:7: separate: leaves no query in the overall stratum",
        id="excludes-everything",
    ),
    # --- corpus.jsonl
    pytest.param(
        BASE,
        {"corpus.jsonl": CORPUS.encode().replace(b"beta", b"b\xffta")},
        "{d}/corpus.jsonl:2: not valid UTF-8 (byte 0xff at offset 77)",
        id="corpus-not-utf8",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": "d2" "text": "x"}'),
        "{d}/corpus.jsonl:2: invalid JSON: Expecting ',' delimiter (column 14)",
        id="corpus-invalid-json",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 3, '["d3", "text"]'),
        "{d}/corpus.jsonl:3: expected a JSON object, got a list",
        id="corpus-not-an-object",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"id": "d2", "text": "x"}'),
        "{d}/corpus.jsonl:2: _id: missing required key",
        id="corpus-missing-id",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": "d2", "body": "x"}'),
        "{d}/corpus.jsonl:2: text: missing required key",
        id="corpus-missing-text",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": "d2", "text": 42}'),
        "{d}/corpus.jsonl:2: text: must be a string, got 42",
        id="corpus-text-not-a-string",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": "d2", "text": "x", "title": ["a"]}'),
        "{d}/corpus.jsonl:2: title: must be a string, got a list",
        id="corpus-title-not-a-string",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": true, "text": "x"}'),
        "{d}/corpus.jsonl:2: _id: must be a string, got true",
        id="corpus-id-bool",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": "", "text": "x"}'),
        "{d}/corpus.jsonl:2: _id: must not be empty",
        id="corpus-id-empty",
    ),
    pytest.param(
        BASE,
        _with_line("corpus.jsonl", 2, '{"_id": "d 2", "text": "x"}'),
        "{d}/corpus.jsonl:2: _id: 'd 2' contains whitespace "
        "(ids must be single tokens, as in TREC run files)",
        id="corpus-id-whitespace",
    ),
    pytest.param(
        BASE,
        {"corpus.jsonl": CORPUS + '{"_id": "d2", "text": "again"}\n'},
        "{d}/corpus.jsonl:5: _id: duplicate document id 'd2' (first on line 2)",
        id="corpus-duplicate-id",
    ),
    pytest.param(BASE, {"corpus.jsonl": "\n"}, f"{G}:2: corpus: no documents in the file", id="corpus-empty"),
    # --- queries.jsonl
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 4, "{"),
        "{d}/queries.jsonl:4: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        id="queries-invalid-json",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 2, '{"text": "x", "shape": "a", "language": "b"}'),
        "{d}/queries.jsonl:2: _id: missing required key",
        id="queries-missing-id",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 2, '{"_id": "q2", "shape": "a", "language": "b"}'),
        "{d}/queries.jsonl:2: text: missing required key",
        id="queries-missing-text",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 2, '{"_id": "q2", "text": null, "shape": "a", "language": "b"}'),
        "{d}/queries.jsonl:2: text: must be a string, got null",
        id="queries-text-null",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 2, '{"_id": "q2", "text": "  ", "shape": "a", "language": "b"}'),
        "{d}/queries.jsonl:2: text: query 'q2' has an empty text",
        id="queries-text-empty",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": QUERIES + '{"_id": "q1", "text": "x", "shape": "a", "language": "b"}\n'},
        "{d}/queries.jsonl:5: _id: duplicate query id 'q1' (first on line 1)",
        id="queries-duplicate-id",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 3, '{"_id": "q3", "text": "x", "shape": "keyword"}'),
        "{d}/queries.jsonl:3: language: query 'q3' has no stratum field 'language'",
        id="queries-missing-stratum",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 3, '{"_id": "q3", "text": "x", "shape": "", "language": "b"}'),
        "{d}/queries.jsonl:3: shape: query 'q3' has an empty value for stratum field 'shape'",
        id="queries-empty-stratum",
    ),
    pytest.param(
        BASE,
        _with_line("queries.jsonl", 3, '{"_id": "q3", "text": "x", "shape": null, "language": "b"}'),
        "{d}/queries.jsonl:3: shape: query 'q3': stratum field 'shape' must be a string or number, got null",
        id="queries-null-stratum",
    ),
    pytest.param(BASE, {"queries.jsonl": ""}, f"{G}:3: queries: no queries in the file", id="queries-empty"),
    # --- qrels.tsv
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("query-id\tcorpus-id\tscore", "query\tdoc\tlabel")},
        "{d}/qrels.tsv:1: header: expected 'query-id\\tcorpus-id\\tscore' or another spelling of its "
        "columns, got 'query\\tdoc\\tlabel'; name them under 'qrels:' with {{path: FILE, columns: "
        "{{query: query, document: doc, grade: label}}}}",
        id="qrels-bad-header",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("q2\td3\t1", "q2 d3 1")},
        "{d}/qrels.tsv:4: expected 3 tab-separated columns (query-id, corpus-id, score), got 1",
        id="qrels-spaces-not-tabs",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("q2\td3\t1", "q2\t0\td3\t1")},
        "{d}/qrels.tsv:4: expected 3 tab-separated columns (query-id, corpus-id, score), got 4",
        id="qrels-trec-four-columns",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("q2\td3\t1", "q2\td3\t1.5")},
        "{d}/qrels.tsv:4: score: '1.5' is not an integer grade",
        id="qrels-float-grade",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("q2\td3\t1", "q2\td3\t")},
        "{d}/qrels.tsv:4: score: '' is not an integer grade",
        id="qrels-empty-grade",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("q2\td3", "q2\td9")},
        "{d}/qrels.tsv:4: corpus-id: unknown document 'd9' (not in the corpus)",
        id="qrels-unknown-document",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.replace("q2\td3", "q9\td3")},
        "{d}/qrels.tsv:4: query-id: unknown query 'q9' (not in the queries)",
        id="qrels-unknown-query",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS + "q1\td1\t1\n"},
        "{d}/qrels.tsv:6: corpus-id: duplicate judgment of query 'q1' and document 'd1' (first on line 2)",
        id="qrels-duplicate-different-grade",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS + "q1\td1\t2\n"},
        "{d}/qrels.tsv:6: corpus-id: duplicate judgment of query 'q1' and document 'd1' (first on line 2)",
        id="qrels-duplicate-same-grade",
    ),
    pytest.param(
        BASE,
        {"qrels.tsv": QRELS.encode().replace(b"q3", b"q\x803")},
        "{d}/qrels.tsv:5: not valid UTF-8 (byte 0x80 at offset 50)",
        id="qrels-not-utf8",
    ),
    # --- inline queries
    pytest.param(
        INLINE_HEAD + "  []\n", NO_DATA, f"{G}:5: queries: no queries in the list", id="inline-empty"
    ),
    pytest.param(
        INLINE_HEAD + "  - q1\n",
        NO_DATA,
        f"{G}:5: queries[0]: must be a mapping, got q1",
        id="inline-not-a-mapping",
    ),
    pytest.param(
        INLINE_HEAD + "  - {text: a, shape: s, relevant: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].id: missing required key",
        id="inline-missing-id",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, shape: s, relevant: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].text: missing required key",
        id="inline-missing-text",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: 42, shape: s, relevant: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].text: must be a non-empty string, got 42",
        id="inline-text-not-a-string",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevnt: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].relevnt: unknown key, did you mean 'relevant'?",
        id="inline-unknown-key",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1}}\n  - {id: q1, text: b, shape: s}\n",
        NO_DATA,
        f"{G}:6: queries[1].id: duplicate query id 'q1' (first on line 5)",
        id="inline-duplicate-id",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, relevant: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].shape: query 'q1' has no stratum field 'shape'",
        id="inline-missing-stratum",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: '', relevant: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].shape: query 'q1' has an empty value for stratum field 'shape'",
        id="inline-empty-stratum",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: [x], relevant: {d1: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].shape: query 'q1': stratum field 'shape' must be a string or number, got a list",
        id="inline-list-stratum",
    ),
    pytest.param(
        INLINE_HEAD + "  - id: q1\n    text: a\n    shape: s\n    relevant:\n      d1: 1\n      d9: 2\n",
        NO_DATA,
        f"{G}:10: queries[0].relevant.d9: unknown document 'd9' (not in the corpus)",
        id="inline-unknown-document",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: high}}\n",
        NO_DATA,
        f"{G}:5: queries[0].relevant.d1: must be an integer >= 0, got high",
        id="inline-bad-grade",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1, d1: 2}}\n",
        NO_DATA,
        f"{G}:5: queries[0].relevant.d1: duplicate key (first on line 5)",
        id="inline-duplicate-judgment",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: [d1]}\n",
        NO_DATA,
        f"{G}:5: queries[0].relevant: must be a mapping, got a list",
        id="inline-relevant-list",
    ),
    pytest.param(
        "qrels: qrels.tsv\n" + INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1}}\n",
        {"queries.jsonl": None},
        f"{G}:6: queries[0].relevant: cannot be combined with the 'qrels' file (line 1); "
        "keep all judgments in one place",
        id="inline-and-qrels-file",
    ),
    # --- a query's frequency: a number above 0, for every query or none
    pytest.param(
        BASE,
        {"queries.jsonl": '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "frequency": 0}\n'},
        "{d}/queries.jsonl:1: frequency: query 'q1': frequency must be a number above 0, got 0",
        id="frequency-zero",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "frequency": true}\n'},
        "{d}/queries.jsonl:1: frequency: query 'q1': frequency must be a number above 0, got true",
        id="frequency-boolean",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "frequency": "x"}\n'},
        "{d}/queries.jsonl:1: frequency: query 'q1': frequency must be a number above 0, got 'x'",
        id="frequency-word",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "frequency": NaN}\n'},
        "{d}/queries.jsonl:1: frequency: query 'q1': frequency must be a number above 0, got NaN",
        id="frequency-nan",
    ),
    pytest.param(
        BASE,
        {
            "queries.jsonl": '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "frequency": 3}\n'
            '{"_id": "q2", "text": "b", "shape": "s", "language": "en"}\n'
        },
        "{d}/queries.jsonl:2: frequency: query 'q2' has no frequency while 'q1' (line 1) has one; "
        "give every query a frequency or none",
        id="frequency-for-some-queries",
    ),
    pytest.param(
        BASE.replace("queries.jsonl", "queries.tsv"),
        {"queries.tsv": "id\ttext\tshape\tlanguage\tfrequency\nq1\ta\ts\ten\t-2\n"},
        "{d}/queries.tsv:2: frequency: query 'q1': frequency must be a number above 0, got '-2'",
        id="frequency-tsv-negative",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1}, frequency: [1]}\n",
        NO_DATA,
        f"{G}:5: queries[0].frequency: query 'q1': frequency must be a number above 0, got a list",
        id="frequency-inline-list",
    ),
    pytest.param(
        BASE.replace("strata: [shape, language]", "strata: [frequency]"),
        None,
        f"{G}:5: strata[0]: 'frequency' is reserved for the query itself, not a stratum field",
        id="strata-frequency-reserved",
    ),
    # --- a query's inclusion: a probability in (0, 1], for every query or none, beside a frequency
    pytest.param(
        BASE,
        {"queries.jsonl": INCLUDED + "0}\n"},
        "{d}/queries.jsonl:1: inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got 0",
        id="inclusion-zero",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": INCLUDED + "1.5}\n"},
        "{d}/queries.jsonl:1: inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got 1.5",
        id="inclusion-above-one",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": INCLUDED + "NaN}\n"},
        "{d}/queries.jsonl:1: inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got NaN",
        id="inclusion-nan",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": INCLUDED + "false}\n"},
        "{d}/queries.jsonl:1: inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got false",
        id="inclusion-boolean",
    ),
    pytest.param(
        BASE,
        {
            "queries.jsonl": INCLUDED + "0.5}\n"
            '{"_id": "q2", "text": "b", "shape": "s", "language": "en", "frequency": 1}\n'
        },
        "{d}/queries.jsonl:2: inclusion: query 'q2' has no inclusion while 'q1' (line 1) has one; "
        "give every query an inclusion or none",
        id="inclusion-for-some-queries",
    ),
    pytest.param(
        BASE,
        {"queries.jsonl": '{"_id": "q1", "text": "a", "shape": "s", "language": "en", "inclusion": 0.5}\n'},
        "{d}/queries.jsonl:1: inclusion: query 'q1' has an inclusion but no frequency: an inclusion "
        "probability corrects the frequency weights of a drawn sample (frequency / inclusion); give every "
        "query its frequency",
        id="inclusion-without-frequency",
    ),
    pytest.param(
        BASE.replace("queries.jsonl", "queries.tsv"),
        {"queries.tsv": "id\ttext\tshape\tlanguage\tfrequency\tinclusion\nq1\ta\ts\ten\t2\thalf\n"},
        "{d}/queries.tsv:2: inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got 'half'",
        id="inclusion-tsv-word",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1}, frequency: 2, inclusion: -0.1}\n",
        NO_DATA,
        f"{G}:5: queries[0].inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got '-0.1'",
        id="inclusion-inline-negative",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1}, frequency: 2, inclusion: {p: 1}}\n",
        NO_DATA,
        f"{G}:5: queries[0].inclusion: query 'q1': inclusion must be a probability above 0 and at most 1, "
        "got a mapping",
        id="inclusion-inline-mapping",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s, relevant: {d1: 1}, inclusion: 1}\n",
        NO_DATA,
        f"{G}:5: queries: query 'q1' has an inclusion but no frequency: an inclusion probability corrects "
        "the frequency weights of a drawn sample (frequency / inclusion); give every query its frequency",
        id="inclusion-inline-without-frequency",
    ),
    pytest.param(
        BASE.replace("strata: [shape, language]", "strata: [inclusion]"),
        None,
        f"{G}:5: strata[0]: 'inclusion' is reserved for the query itself, not a stratum field",
        id="strata-inclusion-reserved",
    ),
    pytest.param(
        BASE + "weights: frequency\n",
        None,
        f"{G}:7: weights: 'frequency' weighs each query by its frequency in the traffic, but the queries "
        "have none (give every query a frequency: a JSONL key, a TSV column or an inline key)",
        id="weights-without-frequencies",
    ),
    pytest.param(
        BASE + "weights: traffic\n",
        None,
        f"{G}:7: weights: must be 'frequency', got traffic",
        id="weights-unknown",
    ),
    pytest.param(
        INLINE_HEAD + "  - {id: q1, text: a, shape: s}\n",
        NO_DATA,
        f"{G}: qrels: missing required key (no inline query carries 'relevant' judgments)",
        id="inline-without-any-judgment",
    ),
]


@pytest.mark.parametrize(("yaml_text", "files", "expected"), ERROR_CASES)
def test_malformed_input_is_one_golden_error_naming_file_line_and_key(
    tmp_path: Path, yaml_text: str | bytes, files: Mapping[str, str | bytes | None] | None, expected: str
) -> None:
    with pytest.raises(GoldenError) as info:
        load(tmp_path, yaml_text, files)
    message = str(info.value)
    assert message == expected.format(d=tmp_path, abs=tmp_path.resolve())
    assert "\n" not in message
    assert info.value.problem in message


def test_missing_golden_file(tmp_path: Path) -> None:
    with pytest.raises(GoldenError) as info:
        load_golden(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path}/nope.yaml: file not found: {tmp_path.resolve()}/nope.yaml"


def test_frequencies_are_read_from_jsonl_tsv_and_inline_queries(tmp_path: Path) -> None:
    jsonl = "".join(
        f'{{"_id": "q{i}", "text": "query {i}", "shape": "s", "language": "en", "frequency": {f}}}\n'
        for i, f in ((1, "12"), (2, "0.5"), (3, "1e3"), (4, "7"))
    )
    golden = load(tmp_path / "jsonl", BASE, {"queries.jsonl": jsonl})
    assert [query.frequency for query in golden.queries] == [12.0, 0.5, 1000.0, 7.0]
    tsv = "id\ttext\tshape\tlanguage\tfrequency\n" + "".join(
        f"q{i}\tquery {i}\ts\ten\t{f}\n" for i, f in ((1, "12"), (2, "0.5"), (3, "1e3"), (4, " 7 "))
    )
    from_tsv = load(tmp_path / "tsv", BASE.replace("queries.jsonl", "queries.tsv"), {"queries.tsv": tsv})
    assert [query.frequency for query in from_tsv.queries] == [12.0, 0.5, 1000.0, 7.0]
    inline = INLINE.replace("language: en, relevant: {d1: 2", "language: en, frequency: 4, relevant: {d1: 2")
    inline = inline.replace("language: es, relevant", "language: es, frequency: 1, relevant")
    inline = inline.replace("language: en}", "language: en, frequency: 2.5}")
    assert [query.frequency for query in load(tmp_path / "inline", inline).queries] == [4.0, 1.0, 1.0, 2.5]
    assert all(query.frequency is None for query in load(tmp_path / "none").queries)


def test_frequencies_are_part_of_the_fingerprint_only_when_given(tmp_path: Path) -> None:
    without = load(tmp_path / "without")
    with_one = QUERIES.replace('"language": "en"}', '"language": "en", "frequency": 1}')
    with_one = with_one.replace('"language": "es"}', '"language": "es", "frequency": 1}')
    with_two = with_one.replace('"frequency": 1}', '"frequency": 2}', 1)
    first = load(tmp_path / "one", BASE, {"queries.jsonl": with_one})
    second = load(tmp_path / "two", BASE, {"queries.jsonl": with_two})
    assert len({without.fingerprint(), first.fingerprint(), second.fingerprint()}) == 3
    assert without.plan_fingerprint() == first.plan_fingerprint() == second.plan_fingerprint()


def test_inclusions_are_read_and_part_of_the_fingerprint_only_when_given(tmp_path: Path) -> None:
    frequencies = QUERIES.replace('"language": "en"}', '"language": "en", "frequency": 3}')
    frequencies = frequencies.replace('"language": "es"}', '"language": "es", "frequency": 0.5}')
    drawn = frequencies.replace('"frequency": 3}', '"frequency": 3, "inclusion": 0.25}')
    drawn = drawn.replace('"frequency": 0.5}', '"frequency": 0.5, "inclusion": 1}')
    plain = load(tmp_path / "plain", BASE, {"queries.jsonl": frequencies})
    golden = load(tmp_path / "drawn", BASE, {"queries.jsonl": drawn})
    assert [q.inclusion for q in golden.queries] == [0.25, 1.0, 1.0, 0.25]
    assert all(q.inclusion is None for q in plain.queries)
    assert plain.fingerprint() != golden.fingerprint()
    again = load(
        tmp_path / "again", BASE, {"queries.jsonl": drawn.replace('"inclusion": 0.25', '"inclusion": 0.5', 1)}
    )
    assert again.fingerprint() != golden.fingerprint()
    assert (
        plain.fingerprint()
        == load(tmp_path / "plain-again", BASE, {"queries.jsonl": frequencies}).fingerprint()
    )
    tsv = "id\ttext\tshape\tlanguage\tfrequency\tinclusion\n" + "".join(
        f"q{i}\tquery {i}\ts\ten\t{f}\t{p}\n"
        for i, f, p in ((1, "12", "0.5"), (2, "3", " 1 "), (3, "1", "1"), (4, "2", "1e-2"))
    )
    from_tsv = load(tmp_path / "tsv", BASE.replace("queries.jsonl", "queries.tsv"), {"queries.tsv": tsv})
    assert [q.inclusion for q in from_tsv.queries] == [0.5, 1.0, 1.0, 0.01]
    inline = INLINE.replace(
        "language: en, relevant: {d1: 2", "language: en, frequency: 4, inclusion: 0.5, relevant: {d1: 2"
    )
    inline = inline.replace("language: es, relevant", "language: es, frequency: 1, inclusion: 1, relevant")
    inline = inline.replace("language: en}", "language: en, frequency: 2.5, inclusion: 0.1}")
    assert [q.inclusion for q in load(tmp_path / "inline", inline).queries] == [0.5, 1.0, 1.0, 0.1]


def test_a_query_weighs_its_frequency_over_its_inclusion(tmp_path: Path) -> None:
    # By hand: q1 (en) 3 / 0.25 = 12, q2 and q3 (es) 0.5 / 1 = 0.5, q4 (en) 3 / 0.25 = 12.
    drawn = QUERIES.replace('"language": "en"}', '"language": "en", "frequency": 3, "inclusion": 0.25}')
    drawn = drawn.replace('"language": "es"}', '"language": "es", "frequency": 0.5, "inclusion": 1}')
    golden = load(tmp_path / "drawn", BASE + "weights: frequency\n", {"queries.jsonl": drawn})
    assert golden.query_weights() == (12.0, 0.5, 0.5, 12.0)
    assert golden.traffic_weighting == "frequency / inclusion"
    frequencies = QUERIES.replace('"language": "en"}', '"language": "en", "frequency": 3}')
    frequencies = frequencies.replace('"language": "es"}', '"language": "es", "frequency": 0.5}')
    plain = load(tmp_path / "plain", BASE + "weights: frequency\n", {"queries.jsonl": frequencies})
    assert plain.traffic_weighting == "frequency" and load(tmp_path / "none").traffic_weighting is None


def test_weights_are_read_and_part_of_the_plan_only_when_given(tmp_path: Path) -> None:
    frequencies = QUERIES.replace('"language": "en"}', '"language": "en", "frequency": 3}')
    frequencies = frequencies.replace('"language": "es"}', '"language": "es", "frequency": 0.5}')
    plain = load(tmp_path / "plain", BASE, {"queries.jsonl": frequencies})
    weighted = load(tmp_path / "weighted", BASE + "weights: frequency\n", {"queries.jsonl": frequencies})
    assert plain.weights is None and plain.query_weights() is None and "weights" not in plain.plan()
    assert weighted.weights == "frequency" and weighted.plan()["weights"] == "frequency"
    assert weighted.query_weights() == (3.0, 0.5, 0.5, 3.0)
    # Declared before the run: the key changes the plan fingerprint, and a file without it keeps its own.
    assert plain.plan_fingerprint() != weighted.plan_fingerprint()
    assert plain.plan_fingerprint() == load(tmp_path / "none").plan_fingerprint()


def test_unjudged_queries_are_kept(tmp_path: Path) -> None:
    # Allowed, unlike an empty qrels file: a query may lack judgments (it scores NaN and is reported).
    golden = load(tmp_path, BASE, {"qrels.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n"})
    assert golden.qrels == {"q1": {"d1": 1}, "q2": {}, "q3": {}, "q4": {}}


def _canonical_line(prefix: str, value: object) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return f"{prefix} {text}\n".encode()


def reference_fingerprint(golden: GoldenSet) -> str:
    """The golden set's fingerprint as its definition reads: one canonical JSON line per part."""
    digest = hashlib.sha256(b"pytest-embeval golden set v1\n")
    digest.update(_canonical_line("plan", golden.plan()))
    for doc in golden.documents:
        row: list[object] = [doc.id, hashlib.sha256(doc.embed_text.encode()).hexdigest()]
        if golden.uses_document_fields():
            row.append({name: list(values) for name, values in doc.fields.items()})
        digest.update(_canonical_line("document", row))
    if golden.textless:
        digest.update(_canonical_line("textless", list(golden.textless)))
    for query in golden.queries:
        query_row: list[object] = [query.id, query.text, dict(query.fields)]
        if query.filters:
            query_row.append({name: list(values) for name, values in query.filters.items()})
        digest.update(_canonical_line("query", query_row))
    for qid, did, grade in sorted((q, d, g) for q, docs in golden.qrels.items() for d, g in docs.items()):
        digest.update(_canonical_line("qrel", [qid, did, grade]))
    return "sha256:" + digest.hexdigest()


@pytest.mark.parametrize("escaped", [False, True], ids=["plain", "ids-json-escapes"])
def test_the_fingerprint_is_one_canonical_json_line_per_part(tmp_path: Path, escaped: bool) -> None:
    golden = load(tmp_path, PLAN)
    if escaped:  # ids holding characters JSON escapes take the json.dumps path of the row writer
        rename = {"d1": 'd"1', "d2": "d\\2", "d3": "d3\u00e9", "d4": "d\t4"}
        golden = dataclasses.replace(
            golden,
            documents=tuple(dataclasses.replace(doc, id=rename[doc.id]) for doc in golden.documents),
            qrels={q: {rename[d]: g for d, g in docs.items()} for q, docs in golden.qrels.items()},
        )
    assert golden.fingerprint() == reference_fingerprint(golden)
    # With the texts hashed already (as the pipeline hashes them once for the cache and the digests).
    texts = KeyedTexts(doc.embed_text for doc in golden.documents)
    assert golden.fingerprint(texts) == reference_fingerprint(golden)


def test_texts_hashed_already_must_be_the_documents(tmp_path: Path) -> None:
    golden = load(tmp_path, PLAN)
    with pytest.raises(ValueError, match=f"^{len(golden.documents)} documents but 1 texts$"):
        golden.fingerprint(KeyedTexts(["one text"]))


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    """The collector is paused while a golden set is read, and left as it was, after an error too."""
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        paused = []
        real = golden_module.read_documents

        def spying(*args: object, **kwargs: object) -> object:
            paused.append(not gc.isenabled())
            return real(*args, **kwargs)  # type: ignore[arg-type]

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("pytest_embeval.golden.data_sections.read_documents", spying)
            load(tmp_path / "good", PLAN)
            assert paused == [True] and gc.isenabled() is enabled
            with pytest.raises(GoldenError):
                load(tmp_path / "bad", PLAN + "tie_margin: -1\n")
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
