"""Per-query filters: the schema and its one-line errors, the masks, the masked searches (exact and hnsw),
what the metrics count, and the control digest; on a collection with a language field."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_golden import BASE, CORPUS, INLINE, QUERIES, write_set
from test_pipeline import DIMENSIONS, hash_arm, make_golden

from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.data_files import Document, GoldenError, Query
from pytest_embeval.golden.filters import (
    Allowed,
    EmptyFilterWarning,
    FieldReader,
    allowed_qrels,
    filter_value,
    matches,
    plan_filters,
)
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet, IndexSpec
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import golden_control, prepare, run_arm
from pytest_embeval.search.exact import exact_search
from pytest_embeval.search.hnsw import HnswIndex, ann_recall

# Every fifth query of the language collection filters its relevant document out: NaN, as intended.
pytestmark = pytest.mark.filterwarnings("ignore::pytest_embeval.core.metrics.NoRelevantDocumentsWarning")

# --------------------------------------------------------------------------------------------- the values


def test_filter_values_are_json_text_and_strings_as_they_are() -> None:
    assert [filter_value(v) for v in ("en", 2020, 1.5, True, False)] == ["en", "2020", "1.5", "true", "false"]
    assert [filter_value(v) for v in (None, {"a": 1}, ["en"])] == [None, None, None]


def test_record_fields_keep_scalars_and_lists_of_them_and_share_equal_mappings() -> None:
    reader = FieldReader()
    first = reader.read({"_id": "d1", "text": "t", "title": "x", "language": "en", "year": 2020, "meta": {}})
    second = reader.read({"_id": "d2", "text": "u", "language": "en", "year": 2020})
    tags = reader.read({"_id": "d3", "text": "v", "tags": ["a", "b", "a"], "none": None, "mixed": ["a", {}]})
    assert first == {"language": ("en",), "year": ("2020",)}
    assert first is second
    assert tags == {"tags": ("a", "b")}
    assert reader.read({"_id": "d4", "text": "w"}) == {}


def test_a_record_matches_when_every_field_holds_one_of_the_values() -> None:
    fields = {"language": ("en",), "tags": ("billing", "refund")}
    assert matches(fields, {"language": ("en", "de")})
    assert matches(fields, {"language": ("en",), "tags": ("refund",)})
    assert not matches(fields, {"language": ("en",), "tags": ("tracking",)})
    assert not matches(fields, {"tenant": ("acme",)})


def test_the_plan_has_one_mask_per_distinct_filter_and_unfiltered_queries_share_an_all_true_row() -> None:
    records = [{"language": ("en",)}, {"language": ("de",)}, {"language": ("en",)}, {}]
    plan = plan_filters(
        records,
        [{"language": ("en",)}, {}, {"language": ("en",)}, {"language": ("de", "en")}],
        ["q1", "q2", "q3", "q4"],
    )
    assert plan is not None
    assert plan.rows.tolist() == [0, 1, 0, 2]
    assert plan.masks.tolist() == [
        [True, False, True, False],
        [True, True, True, True],
        [True, True, True, False],
    ]
    assert plan.allowed_counts().tolist() == [2, 4, 2, 3]
    assert plan_filters(records, [{}, {}], ["q1", "q2"]) is None


def test_a_filter_matching_nothing_is_a_warning_naming_its_queries() -> None:
    records = [{"language": ("en",)}]
    with pytest.warns(EmptyFilterWarning) as caught:
        plan_filters(records, [{"language": ("fr",)}, {"language": ("fr",)}, {}], ["q1", "q2", "q3"])
    assert [str(w.message) for w in caught] == [
        "the filter {\"language\":[\"fr\"]} of 2 queries ('q1', 'q2') matches no document: "
        "they score NaN, excluded from both arms"
    ]
    with pytest.warns(EmptyFilterWarning, match=r"^the filter \{\"language\":\[\"xx\"\]\} of query 'q9' "):
        plan_filters(records, [{"language": ("xx",)}], ["q9"])


def test_judgments_count_only_what_the_filter_allows() -> None:
    plan = plan_filters(
        [{"language": ("en",)}, {"language": ("de",)}], [{"language": ("en",)}, {}], ["q1", "q2"]
    )
    qrels = {"q1": {"d1": 1, "d2": 2}, "q2": {"d2": 1}}
    records_of = {"d1": np.array([0]), "d2": np.array([1])}
    assert allowed_qrels(qrels, ["q1", "q2"], plan, records_of) == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert allowed_qrels(qrels, ["q1", "q2"], None, records_of) == qrels


# ---------------------------------------------------------------------------------------------- the schema

LANGUAGE_CORPUS = (
    '{"_id": "d1", "text": "alpha text", "language": "en", "year": 2020}\n'
    '{"_id": "d2", "text": "beta text", "language": "de", "year": 2021}\n'
    '{"_id": "d3", "text": "gamma text", "language": "en", "tags": ["a", "b"]}\n'
    '{"_id": "d4", "text": "delta text", "language": "de"}\n'
)


def _queries(*filters: object) -> str:
    lines = []
    for i, line in enumerate(QUERIES.splitlines()):
        record = json.loads(line)
        if i < len(filters) and filters[i] is not None:
            record["filters"] = filters[i]
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


def test_jsonl_queries_carry_filters_of_values_and_lists(tmp_path: Path) -> None:
    queries = _queries({"language": "en"}, {"language": ["en", "de"], "year": 2021}, None, {"tags": "b"})
    golden = load_golden(
        write_set(tmp_path, BASE, {"corpus.jsonl": LANGUAGE_CORPUS, "queries.jsonl": queries})
    )
    assert [dict(query.filters) for query in golden.queries] == [
        {"language": ("en",)},
        {"language": ("en", "de"), "year": ("2021",)},
        {},
        {"tags": ("b",)},
    ]


def test_a_tsv_corpus_with_a_header_filters_on_its_other_columns(tmp_path: Path) -> None:
    corpus = (
        "id\ttext\tlanguage\nd1\talpha text\ten\nd2\tbeta text\tde\nd3\tgamma text\ten\nd4\tdelta text\tde\n"
    )
    yaml_text = BASE.replace("corpus: corpus.jsonl", "corpus: corpus.tsv")
    golden = load_golden(
        write_set(tmp_path, yaml_text, {"corpus.tsv": corpus, "queries.jsonl": _queries({"language": "de"})})
    )
    assert [dict(doc.fields) for doc in golden.documents] == [
        {"language": (lang,)} for lang in ["en", "de", "en", "de"]
    ]
    assert prepare(golden).qrels["q1"] == {"d2": 0}  # d1 is English: the filter drops its judgment
    unknown = _queries({"tenant": "acme"})
    with pytest.raises(GoldenError) as raised:
        load_golden(write_set(tmp_path, yaml_text, {"corpus.tsv": corpus, "queries.jsonl": unknown}))
    assert str(raised.value).endswith(
        "queries.jsonl:1: filters.tenant: query 'q1': no document has a field 'tenant' to filter on "
        "(document fields: language)"
    )


def test_a_judged_document_without_text_counts_under_a_filter_as_it_does_without(tmp_path: Path) -> None:
    # d1 has no text: never embedded nor searched, so no filter is matched against it; its judgment stays.
    corpus = LANGUAGE_CORPUS.replace('"text": "alpha text"', '"text": ""')
    golden = load_golden(
        write_set(tmp_path, BASE, {"corpus.jsonl": corpus, "queries.jsonl": _queries({"language": "de"})})
    )
    assert golden.textless == ("d1",) and [doc.id for doc in golden.documents] == ["d2", "d3", "d4"]
    assert prepare(golden).qrels["q1"] == {"d1": 2, "d2": 0}


def test_inline_queries_carry_filters_taken_as_written(tmp_path: Path) -> None:
    text = INLINE.replace(
        "language: en, relevant: {d1: 2, d2: 0}}",
        "language: en, relevant: {d1: 2, d2: 0}, filters: {language: [en, de], year: 2020}}",
    )
    golden = load_golden(write_set(tmp_path, text, {"corpus.jsonl": LANGUAGE_CORPUS}))
    assert dict(golden.queries[0].filters) == {"language": ("en", "de"), "year": ("2020",)}
    assert all(not query.filters for query in golden.queries[1:])


def _error(tmp_path: Path, yaml_text: str, files: dict[str, str]) -> str:
    with pytest.raises(GoldenError) as raised:
        load_golden(write_set(tmp_path, yaml_text, files))
    message = str(raised.value)
    assert "\n" not in message
    return message.replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (
            {"tenant": "acme"},
            "queries.jsonl:2: filters.tenant: query 'q2': no document has a field 'tenant' to filter on "
            "(document fields: language, tags, year)",
        ),
        ({}, "queries.jsonl:2: filters: must be a non-empty object {field: value}, got an object"),
        ("en", 'queries.jsonl:2: filters: must be a non-empty object {field: value}, got "en"'),
        (
            {"language": None},
            "queries.jsonl:2: filters.language: must be a string, number or boolean, or a non-empty list of "
            "them, got null",
        ),
        (
            {"language": []},
            "queries.jsonl:2: filters.language: must be a string, number or boolean, or a non-empty list of "
            "them, got a list",
        ),
    ],
)
def test_a_bad_jsonl_filter_is_one_line_naming_file_line_and_key(
    tmp_path: Path, filters: object, expected: str
) -> None:
    queries = _queries(None, filters)
    assert _error(tmp_path, BASE, {"corpus.jsonl": LANGUAGE_CORPUS, "queries.jsonl": queries}) == expected


def test_a_filter_on_a_corpus_without_fields_names_none(tmp_path: Path) -> None:
    queries = _queries({"language": "en"})
    plain = "".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "lang"}) + "\n"
        for line in CORPUS.splitlines()
    )
    assert _error(tmp_path, BASE, {"corpus.jsonl": plain, "queries.jsonl": queries}) == (
        "queries.jsonl:1: filters.language: query 'q1': no document has a field 'language' to filter on "
        "(document fields: none)"
    )


def test_a_bad_inline_filter_names_the_golden_file_line_and_key(tmp_path: Path) -> None:
    text = INLINE.replace(
        "language: es, relevant: {d3: 1}}", "language: es, relevant: {d3: 1}, filters: {lang: x}}"
    )
    assert _error(tmp_path, text, {"corpus.jsonl": LANGUAGE_CORPUS}) == (
        "golden.yaml:6: queries[1].filters.lang: query 'q2': no document has a field 'lang' to filter on "
        "(document fields: language, tags, year)"
    )
    text = INLINE.replace("language: es, relevant: {d3: 1}}", "language: es, relevant: {d3: 1}, filters: {}}")
    assert _error(tmp_path, text, {"corpus.jsonl": LANGUAGE_CORPUS}) == (
        "golden.yaml:6: queries[1].filters: must be a non-empty mapping {field: value}, got an empty mapping"
    )


def test_filters_change_the_golden_fingerprint_and_sets_without_them_keep_theirs(tmp_path: Path) -> None:
    plain = load_golden(write_set(tmp_path / "a", BASE, {"corpus.jsonl": LANGUAGE_CORPUS}))
    filtered = load_golden(
        write_set(
            tmp_path / "b",
            BASE,
            {"corpus.jsonl": LANGUAGE_CORPUS, "queries.jsonl": _queries({"language": "en"})},
        )
    )
    assert plain.fingerprint() != filtered.fingerprint()
    # Document fields count only where something reads them: the default corpus's "lang" changes nothing.
    unused = load_golden(write_set(tmp_path / "c"))
    no_field = load_golden(
        write_set(tmp_path / "d", BASE, {"corpus.jsonl": CORPUS.replace(', "lang": "en"', "")})
    )
    assert unused.fingerprint() == no_field.fingerprint()


# ------------------------------------------------------------------------------------------ masked searches


def _unit(rng: np.random.Generator, n: int, d: int = 16) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_masked_exact_search_is_the_exact_search_of_the_allowed_documents_for_any_block_size() -> None:
    rng = np.random.default_rng(1)
    documents, queries = _unit(rng, 300), _unit(rng, 25)
    doc_ids = [f"d{i:03d}" for i in range(300)]
    masks = np.stack([rng.random(300) < 0.3, rng.random(300) < 0.02, np.zeros(300, bool)])
    rows = rng.integers(0, 3, size=25)
    allowed = Allowed(masks=masks, rows=rows)
    positions, scores = exact_search(queries, documents, 20, doc_ids=doc_ids, allowed=allowed)
    for block in (7, 64, 300):
        again = exact_search(queries, documents, 20, doc_ids=doc_ids, allowed=allowed, block_size=block)
        assert np.array_equal(again[0], positions)
    for i in range(25):
        keep = np.flatnonzero(masks[rows[i]])
        sub_positions, sub_scores = exact_search(
            queries[i : i + 1], documents[keep], 20, doc_ids=[doc_ids[j] for j in keep]
        )
        n = min(20, keep.size)
        assert positions[i, :n].tolist() == keep[sub_positions[0]].tolist()
        assert np.array_equal(scores[i, :n], sub_scores[0])
        assert (positions[i, n:] == -1).all() and np.isnan(scores[i, n:]).all()


def test_hnsw_with_filters_returns_only_allowed_documents_and_as_many_as_it_reaches() -> None:
    rng = np.random.default_rng(2)
    documents, queries = _unit(rng, 400), _unit(rng, 30)
    doc_ids = [f"d{i:03d}" for i in range(400)]
    masks = np.stack([rng.random(400) < 0.5, rng.random(400) < 0.01, np.ones(400, bool)])
    rows = np.arange(30) % 3
    allowed = Allowed(masks=masks, rows=rows)
    index = HnswIndex(documents, doc_ids=doc_ids, M=8, ef_construction=50, seed=0)
    positions, scores = index.search(queries, 30, ef_search=40, allowed=allowed)
    exact, _ = exact_search(queries, documents, 30, doc_ids=doc_ids, allowed=allowed)
    for i in range(30):
        found = positions[i][positions[i] >= 0]
        assert masks[rows[i]][found].all()
        assert found.size <= min(30, int(masks[rows[i]].sum()))
        if rows[i] != 1:  # half or all of the corpus allowed: the graph reaches 30 of them
            assert found.size == 30
        # Found documents come first, then the padding; scores descending among them.
        assert (positions[i, found.size :] == -1).all()
        assert (np.diff(scores[i, : found.size]) <= 0).all()
    assert 0.8 <= ann_recall(positions, exact) <= 1.0


def test_ann_recall_divides_by_what_exact_search_found_and_skips_queries_it_found_nothing_for() -> None:
    approximate = np.array([[1, 2, -1], [5, -1, -1], [-1, -1, -1]])
    exact = np.array([[1, 3, -1], [5, -1, -1], [-1, -1, -1]])
    assert ann_recall(approximate, exact) == pytest.approx((0.5 + 1.0) / 2)
    assert math.isnan(ann_recall(np.full((1, 2), -1), np.full((1, 2), -1)))


# ---------------------------------------------------------------------------- a collection with languages


def language_golden(**changes: Any) -> GoldenSet:
    """make_golden's 120 documents and 40 queries, documents alternating en/de; query i filters on the
    language of its relevant document i, except every fifth query, which filters on the other language (its
    relevant document is out of its reach)."""
    base = make_golden()
    documents = tuple(
        dataclasses.replace(doc, fields={"language": ("en" if i % 2 else "de",)})
        for i, doc in enumerate(base.documents)
    )
    queries = []
    for i, query in enumerate(base.queries):
        own = "en" if i % 2 else "de"
        other = "de" if own == "en" else "en"
        queries.append(dataclasses.replace(query, filters={"language": (other if i % 5 == 0 else own,)}))
    return dataclasses.replace(base, documents=documents, queries=tuple(queries), **changes)


@pytest.mark.parametrize(
    "index", [IndexSpec("exact"), IndexSpec("hnsw", M=8, ef_construction=60, ef_search=40)]
)
def test_every_ranked_document_of_a_filtered_query_satisfies_its_filter(index: IndexSpec) -> None:
    golden = language_golden(index=index)
    language = {doc.id: doc.fields["language"][0] for doc in golden.documents}
    run = run_golden(golden, hash_arm("a"), hash_arm("b"))
    for arm in (run.incumbent, run.candidate):
        for query, ranked in zip(golden.queries, arm.ranked, strict=True):
            assert ranked, query.id
            assert {language[doc_id] for doc_id in ranked} == set(query.filters["language"])
            assert len(ranked) == 60  # each language has 60 documents, fewer than the depth of 100


def test_filtered_hnsw_recall_is_measured_against_filtered_exact_search_and_reported() -> None:
    golden = language_golden(index=IndexSpec("hnsw", M=4, ef_construction=8, ef_search=8))
    result = run_arm(golden, hash_arm(), "incumbent")
    assert result.index is not None and result.index.hnsw is not None
    stats = result.index.hnsw
    assert stats.filtered and stats.sample == 40
    # The same measurement by hand: hnsw against exact search, each with the queries' own masks.
    plan = prepare(golden).filters
    assert plan is not None
    arm = hash_arm()
    documents = np.stack([arm.encoder.encode_document([doc.embed_text])[0] for doc in golden.documents])
    queries = np.stack([arm.encoder.encode_query([query.text])[0] for query in golden.queries])
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    doc_ids = [doc.id for doc in golden.documents]
    exact, _ = exact_search(queries, documents, 60, doc_ids=doc_ids, allowed=plan.allowed)
    graph = HnswIndex(documents, doc_ids=doc_ids, M=4, ef_construction=8, seed=0)
    approximate, _ = graph.search(queries, 60, ef_search=8, allowed=plan.allowed)
    assert stats.ann_recall == pytest.approx(ann_recall(approximate, exact))
    from pytest_embeval.reports.arm_records import index_record

    assert index_record(result.index)["filtered"] is True


def test_metrics_count_only_allowed_judgments_by_hand() -> None:
    """Four documents, two languages; q1 may see English only and is judged d1 (grade 1, English) and d2
    (grade 2, German); the arm ranks d3 then d1 among the English documents."""

    class Axes:
        name = "axes"

        def encode_document(self, texts: list[str]) -> np.ndarray:
            return np.eye(DIMENSIONS, dtype=np.float32)[[int(t[-1]) for t in texts]]

        def encode_query(self, texts: list[str]) -> np.ndarray:
            vector = np.zeros(DIMENSIONS, dtype=np.float32)
            vector[3], vector[1], vector[2] = 0.8, 0.6, 0.1
            return np.stack([vector for _ in texts])

    languages = {1: "en", 2: "de", 3: "en", 4: "de"}
    golden = make_golden(
        documents=tuple(
            Document(f"d{i}", f"doc {i}", fields={"language": (languages[i],)}) for i in range(1, 5)
        ),
        queries=(
            Query("q1", "q1", {"language": "en"}, {"language": ("en",)}),
            Query("q2", "q2", {"language": "en"}, {"language": ("de",)}),
        ),
        qrels={"q1": {"d1": 1, "d2": 2}, "q2": {"d1": 1}},
        metric=parse_metric("recall@2"),
        report_metrics=(parse_metric("ndcg@2"),),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_arm(golden, Axes(), "incumbent")
    assert result.ranked == (("d3", "d1"), ("d2", "d4"))
    # q1: the one relevant document it may see is found: recall 1/1, not 1/2; nDCG's ideal ranking is [d1].
    assert result.per_query["recall@2"][0] == 1.0
    assert result.per_query["ndcg@2"][0] == pytest.approx((1 / math.log2(3)) / 1.0)
    # q2 may see only German documents, and none is relevant: undefined, excluded from both arms.
    assert math.isnan(result.per_query["recall@2"][1])


def test_filters_are_a_control_component_only_when_declared() -> None:
    plain, filtered = golden_control(make_golden()), golden_control(language_golden())
    assert "filters" not in plain.components()
    assert "filters" in filtered.components()
    widened = language_golden()
    queries = list(widened.queries)
    queries[3] = dataclasses.replace(queries[3], filters={"language": ("en", "de")})
    other = golden_control(dataclasses.replace(widened, queries=tuple(queries)))
    changed = {k for k, v in filtered.components().items() if other.components()[k] != v}
    assert changed == {"filters"}
    run = run_golden(language_golden(), hash_arm("a"), hash_arm("b"))
    assert run.incumbent.control == run.candidate.control == filtered


def test_an_arm_given_other_filters_is_refused_naming_the_filters() -> None:
    from pytest_embeval.run.control import ControlMismatch, check_control

    golden = language_golden()
    other = dataclasses.replace(
        golden, queries=tuple(dataclasses.replace(q, filters={}) for q in golden.queries)
    )
    incumbent = run_arm(golden, hash_arm(), "incumbent").control
    candidate = run_arm(other, hash_arm(), "candidate").control
    with pytest.raises(
        ControlMismatch, match=r"held constant: filters \(incumbent sha256:\w{12}…, candidate absent;"
    ):
        check_control(golden_control(golden), incumbent, candidate)
