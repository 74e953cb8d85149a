"""Data files as users already have them: TSV documents and queries, TREC qrels, BEIR splits, documents
without text, negative grades, symlinked golden files. (Malformed input: test_golden.py, test_faults.py.)"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_helpers import write_file

from pytest_embeval.golden import data_files as datafiles
from pytest_embeval.golden.data_files import Document, GoldenError, read_documents
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.qrels_files import detect_qrels_format
from pytest_embeval.golden.query_files import read_queries
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.merging import qrels_file
from pytest_embeval.run.pipeline import golden_control

CORPUS_JSONL = "".join(
    json.dumps({"_id": f"d{i}", "text": f"doc {i}", "title": f"t{i}"}) + "\n" for i in range(4)
)
QUERIES_JSONL = "".join(
    json.dumps({"_id": f"q{i}", "text": f"query {i}", "lang": "en" if i < 2 else "es"}) + "\n"
    for i in range(4)
)
QRELS_BEIR = "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4))
GOLDEN = "corpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\nmetric: ndcg@10\n"


def golden_set(tmp_path: Path, yaml_text: str = GOLDEN, **files: str | bytes) -> GoldenSet:
    contents: dict[str, str | bytes] = {
        "corpus.jsonl": CORPUS_JSONL,
        "queries.jsonl": QUERIES_JSONL,
        "qrels.tsv": QRELS_BEIR,
        **files,
    }
    for name, text in contents.items():
        write_file(tmp_path / name, text)
    (tmp_path / "golden.yaml").write_text(yaml_text, encoding="utf-8")
    return load_golden(tmp_path / "golden.yaml")


def judgments(golden: GoldenSet) -> dict[str, dict[str, int]]:
    return {qid: dict(docs) for qid, docs in golden.qrels.items()}


# ---------------------------------------------------------------------------------------------- TSV


def test_a_tsv_corpus_and_tsv_queries_read_like_jsonl(tmp_path: Path) -> None:
    reference = golden_set(tmp_path / "jsonl")
    tsv = golden_set(
        tmp_path / "tsv",
        GOLDEN.replace("corpus.jsonl", "corpus.tsv").replace("queries.jsonl", "queries.tsv"),
        **{
            "corpus.tsv": "".join(f"d{i}\tdoc {i}\tt{i}\n" for i in range(4)),
            "queries.tsv": "".join(f"q{i}\tquery {i}\n" for i in range(4)),
        },
    )
    assert tsv.documents == reference.documents
    assert [(q.id, q.text) for q in tsv.queries] == [(q.id, q.text) for q in reference.queries]
    assert tsv.fingerprint() == reference.fingerprint()


def test_msmarco_style_tsv_without_titles(tmp_path: Path) -> None:
    path = tmp_path / "collection.tsv"
    path.write_text("0\tThe presence of communication\r\n1\tThe Manhattan Project\r\n", encoding="utf-8")
    assert read_documents(path) == [
        Document("0", "The presence of communication"),
        Document("1", "The Manhattan Project"),
    ]


def test_a_tsv_header_names_the_columns_in_any_order_and_the_stratum_fields(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("_id\ttitle\ttext\nd1\tT\tbody\n", encoding="utf-8")
    assert read_documents(corpus) == [Document("d1", "body", "T")]
    queries = tmp_path / "queries.tsv"
    queries.write_text("qid\ttext\tlanguage\nq1\thola\tes\n", encoding="utf-8")
    [query] = read_queries(queries, ["language"])
    assert (query.id, query.text, dict(query.fields)) == ("q1", "hola", {"language": "es"})


def test_a_declared_format_is_not_guessed(tmp_path: Path) -> None:
    # A TSV document whose text starts with "{" would be taken for JSONL by the first line.
    golden = golden_set(
        tmp_path,
        GOLDEN.replace("corpus: corpus.jsonl", "corpus: {path: corpus.txt, format: tsv}"),
        **{"corpus.txt": "".join(f"d{i}\t{{doc {i}}}\n" for i in range(4))},
    )
    assert [doc.text for doc in golden.documents] == ["{doc 0}", "{doc 1}", "{doc 2}", "{doc 3}"]


# --------------------------------------------------------------------------------------- TREC qrels


@pytest.mark.parametrize(
    "qrels",
    [
        pytest.param("".join(f"q{i} 0 d{i} 1\n" for i in range(4)), id="no-header"),
        pytest.param("qid iter docid rel\n" + "".join(f"q{i}\tQ0\td{i}\t1\n" for i in range(4)), id="header"),
        pytest.param("\n" + "".join(f"q{i}  0   d{i} 1\r\n" for i in range(4)), id="spaces-crlf"),
    ],
)
def test_trec_qrels_read_like_beir_qrels(tmp_path: Path, qrels: str) -> None:
    reference = golden_set(tmp_path / "beir")
    trec = golden_set(tmp_path / "trec", GOLDEN.replace("qrels.tsv", "qrels.txt"), **{"qrels.txt": qrels})
    assert judgments(trec) == judgments(reference)
    assert (trec.qrels_format, reference.qrels_format) == ("trec", "beir")
    assert qrels_file(trec) == tmp_path / "trec" / "qrels.txt"


def test_a_declared_trec_file_needs_no_detection(tmp_path: Path) -> None:
    trec = golden_set(
        tmp_path,
        GOLDEN.replace("qrels: qrels.tsv", "qrels: {path: qrels.tsv, format: trec}"),
        **{"qrels.tsv": "q1 0 d1 2\n"},
    )
    assert judgments(trec)["q1"] == {"d1": 2}


def test_detection_reads_the_first_non_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "q"
    assert detect_qrels_format(path, "") == "beir"
    assert detect_qrels_format(path, "query-id\tcorpus-id\tscore\n") == "beir"
    assert detect_qrels_format(path, "\n\nq1 0 d1 1\n") == "trec"
    with pytest.raises(GoldenError, match="unsupported format"):
        detect_qrels_format(path, "q1,d1,1\n")


@pytest.mark.parametrize(
    "header",
    ["qid\tdocid\trel", "query_id\tdoc_id\trelevance", "QID\tDocId\tScore", "rel\tqid\tdocid"],
)
def test_common_spellings_of_the_qrels_header_need_no_mapping(tmp_path: Path, header: str) -> None:
    names = header.lower().split("\t")
    order = [names.index(n) for n in names if n in ("qid", "query_id")] + [
        names.index(n) for n in names if n in ("docid", "doc_id")
    ]
    grade = next(i for i, n in enumerate(names) if n in ("rel", "relevance", "score"))
    rows = []
    for i in range(4):
        cells = ["", "", ""]
        cells[order[0]], cells[order[1]], cells[grade] = f"q{i}", f"d{i}", "1"
        rows.append("\t".join(cells) + "\n")
    golden = golden_set(tmp_path, **{"qrels.tsv": header + "\n" + "".join(rows)})
    assert golden.fingerprint() == golden_set(tmp_path / "beir").fingerprint()


def test_a_columns_mapping_reads_a_header_of_other_names(tmp_path: Path) -> None:
    qrels = "doc\tquery\tlabel\tnote\n" + "".join(f"d{i}\tq{i}\t1\tok\n" for i in range(4))
    yaml_text = GOLDEN.replace(
        "qrels: qrels.tsv", "qrels: {path: qrels.tsv, columns: {query: query, document: doc, grade: label}}"
    )
    golden = golden_set(tmp_path, yaml_text, **{"qrels.tsv": qrels})
    assert golden.fingerprint() == golden_set(tmp_path / "beir").fingerprint()
    with pytest.raises(GoldenError) as info:
        golden_set(tmp_path, yaml_text.replace("grade: label", "grade: grade"), **{"qrels.tsv": qrels})
    assert str(info.value).endswith(
        "qrels.tsv:1: header: no column 'grade' (the file's columns: doc, query, label, note); see 'columns:'"
    )
    with pytest.raises(GoldenError) as info:
        golden_set(tmp_path, yaml_text.replace("grade: label", "grade: query"), **{"qrels.tsv": qrels})
    assert str(info.value).endswith("golden.yaml:3: qrels.columns.grade: same column as query: 'query'")


def test_the_header_error_suggests_a_mapping_that_works(tmp_path: Path) -> None:
    """The suggested fix, followed as written, reads the file."""
    qrels = "topic\tpassage\tjudgement\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4))
    with pytest.raises(GoldenError) as info:
        golden_set(tmp_path, **{"qrels.tsv": qrels})
    suggested = str(info.value).split("name them under 'qrels:' with ")[1]
    assert suggested == "{path: FILE, columns: {query: topic, document: passage, grade: judgement}}"
    fixed = GOLDEN.replace("qrels: qrels.tsv", "qrels: " + suggested.replace("FILE", "qrels.tsv"))
    assert golden_set(tmp_path, fixed, **{"qrels.tsv": qrels}).fingerprint() == (
        golden_set(tmp_path / "beir").fingerprint()
    )


def test_a_headerless_three_column_file_is_told_to_add_the_header(tmp_path: Path) -> None:
    with pytest.raises(GoldenError) as info:
        golden_set(tmp_path, **{"qrels.tsv": "q0\td0\t1\n"})
    assert str(info.value).endswith(
        "qrels.tsv:1: header: expected a header line naming the columns, such as "
        "'query-id\\tcorpus-id\\tscore', got 'q0\\td0\\t1'"
    )


def test_a_negative_grade_is_judged_not_relevant_as_trec_eval_reads_it(tmp_path: Path) -> None:
    golden = golden_set(tmp_path, **{"qrels.tsv": QRELS_BEIR + "q0\td2\t-1\n"})
    assert judgments(golden)["q0"] == {"d0": 1, "d2": 0}


@pytest.mark.parametrize(
    ("grade", "read"), [("2", 2), ("+2", 2), ("-0", 0), ("007", 7), ("1_0", None), ("²", None), ("2 ", None)]
)
def test_a_grade_is_an_optional_sign_and_ascii_digits(tmp_path: Path, grade: str, read: int | None) -> None:
    """Nothing else int() would take: underscores, other scripts' digits, spaces in the TSV's cell."""
    qrels = f"query-id\tcorpus-id\tscore\nq0\td0\t{grade}\n"
    if read is None:
        with pytest.raises(GoldenError, match=re.escape(f"score: {grade!r} is not an integer grade")):
            golden_set(tmp_path, **{"qrels.tsv": qrels})
    else:
        assert judgments(golden_set(tmp_path, **{"qrels.tsv": qrels}))["q0"] == {"d0": read}


@pytest.mark.parametrize(
    ("qrels", "line", "first"),
    [
        ("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\n\nq0\td0\t2\n", 5, 2),
        ("qid iter docid rel\nq1 0 d1 1\nq0 0 d0 1\nq0 Q0 d0 0\n", 4, 3),
        ("q0 0 d0 1\nq0 0 d1 1\nq0 1 d0 1\n", 3, 1),
    ],
    ids=["beir", "trec-with-header", "trec"],
)
def test_a_duplicate_judgment_names_the_line_of_the_first(
    tmp_path: Path, qrels: str, line: int, first: int
) -> None:
    with pytest.raises(GoldenError) as error:
        golden_set(tmp_path, **{"qrels.tsv": qrels})
    assert error.value.line == line
    assert f"duplicate judgment of query 'q0' and document 'd0' (first on line {first})" in str(error.value)


# ----------------------------------------------------------------------------------------- BEIR splits


def beir(tmp_path: Path, splits: Mapping[str, str], yaml_text: str) -> GoldenSet:
    folder = tmp_path / "data"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(CORPUS_JSONL, encoding="utf-8")
    (folder / "queries.jsonl").write_text(QUERIES_JSONL, encoding="utf-8")
    for split, qrels in splits.items():
        (folder / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
    (tmp_path / "golden.yaml").write_text(yaml_text, encoding="utf-8")
    return load_golden(tmp_path / "golden.yaml")


HEADER = "query-id\tcorpus-id\tscore\n"
SPLITS = {"train": HEADER + "q0\td0\t1\nq1\td1\t1\n", "test": HEADER + "q2\td2\t1\nq3\td3\t1\n"}


def test_a_beir_folder_reads_its_test_split_and_only_that_split_s_queries(tmp_path: Path) -> None:
    golden = beir(tmp_path, SPLITS, "beir: data\nmetric: ndcg@10\n")
    assert golden.split == "test"
    assert [query.id for query in golden.queries] == ["q2", "q3"]
    assert judgments(golden) == {"q2": {"d2": 1}, "q3": {"d3": 1}}
    assert qrels_file(golden) == tmp_path / "data" / "qrels" / "test.tsv"


def test_split_names_another_split(tmp_path: Path) -> None:
    golden = beir(tmp_path, SPLITS, "beir: data\nsplit: train\nmetric: ndcg@10\n")
    assert golden.split == "train"
    assert [query.id for query in golden.queries] == ["q0", "q1"]


def test_a_single_split_keeps_unjudged_queries_to_report_them_excluded(tmp_path: Path) -> None:
    golden = beir(tmp_path, {"test": SPLITS["test"]}, "beir: data\nmetric: ndcg@10\n")
    assert [query.id for query in golden.queries] == ["q0", "q1", "q2", "q3"]
    assert golden.split == "test"


def test_a_folder_with_only_qrels_tsv_has_no_split(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for name, text in (
        ("corpus.jsonl", CORPUS_JSONL),
        ("queries.jsonl", QUERIES_JSONL),
        ("qrels.tsv", QRELS_BEIR),
    ):
        (tmp_path / "data" / name).write_text(text, encoding="utf-8")
    (tmp_path / "golden.yaml").write_text("beir: data\nmetric: ndcg@10\n", encoding="utf-8")
    assert load_golden(tmp_path / "golden.yaml").split is None


# ------------------------------------------------------------------------------- documents without text


def test_documents_without_text_are_known_but_not_indexed(tmp_path: Path) -> None:
    corpus = CORPUS_JSONL.replace('"text": "doc 1", "title": "t1"', '"text": " ", "title": ""')
    corpus = corpus.replace('"text": "doc 3", "title": "t3"', '"text": "\\n"')
    golden = golden_set(tmp_path, **{"corpus.jsonl": corpus})
    assert [doc.id for doc in golden.documents] == ["d0", "d2"]
    assert golden.textless == ("d1", "d3")
    # Still judged: the qrels may name them, and they count in recall's and nDCG's denominators.
    assert judgments(golden)["q1"] == {"d1": 1}


def test_documents_without_text_change_the_fingerprints(tmp_path: Path) -> None:
    full = golden_set(tmp_path / "full")
    corpus = CORPUS_JSONL.replace('"text": "doc 3", "title": "t3"', '"text": ""')
    emptied = golden_set(tmp_path / "emptied", **{"corpus.jsonl": corpus})
    dropped = golden_set(
        tmp_path / "dropped",
        **{
            "corpus.jsonl": "".join(CORPUS_JSONL.splitlines(keepends=True)[:3]),
            "qrels.tsv": QRELS_BEIR.replace("q3\td3\t1\n", ""),
        },
    )
    # The same documents are embedded, but one golden set knows of a fourth the others do not.
    assert emptied.documents == dropped.documents
    assert emptied.fingerprint() != dropped.fingerprint() != full.fingerprint()
    assert golden_control(emptied).corpus != golden_control(dropped).corpus


# --------------------------------------------------------------------------------------------- symlinks


def test_a_symlinked_golden_file_reads_the_data_beside_its_target(tmp_path: Path) -> None:
    target = golden_set(tmp_path / "real")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "corpus.jsonl").write_text('{"_id": "x", "text": "other data"}\n', encoding="utf-8")
    (elsewhere / "link.yaml").symlink_to(tmp_path / "real" / "golden.yaml")
    linked = load_golden(elsewhere / "link.yaml")
    assert linked.documents == target.documents
    assert linked.fingerprint() == target.fingerprint()


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    record=st.dictionaries(st.text(max_size=8), _JSON_VALUES, max_size=4),
    ensure_ascii=st.booleans(),
    spaced=st.booleans(),
    around=st.sampled_from(["", " ", "\t", "\r", " \r"]),
)
def test_a_record_line_is_read_as_json_loads_reads_it(
    record: dict[str, object], ensure_ascii: bool, spaced: bool, around: str
) -> None:
    """The corpus reader calls json's scanner directly; whatever the line's spacing, escapes or whitespace
    around the object, it must give what json.loads gives."""
    separators = (", ", ": ") if spaced else (",", ":")
    line = around + json.dumps(record, ensure_ascii=ensure_ascii, separators=separators) + around
    read = datafiles._json_record(Path("corpus.jsonl"), 1, line)
    assert json.dumps(read, sort_keys=True) == json.dumps(json.loads(line), sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(["a", "é", "\n", "\r", " ", "\u2028", "\x85"]), max_size=12))
def test_a_text_s_lines_are_what_splitting_it_at_each_newline_gives(text: str) -> None:
    """The readers take a corpus's lines one at a time (`text_lines`); a line is still what ends at "\\n",
    whatever other line breaks (a CR, U+2028, NEL) it holds, and a final "\\n" ends in an empty line."""
    assert list(datafiles.text_lines(text)) == text.split("\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"_id": "d1"} x', "invalid JSON: Extra data (column 15)"),
        ('{"_id": "d1"', "invalid JSON: Expecting ',' delimiter (column 13)"),
        ("[1, 2]", "expected a JSON object, got a list"),
        ('"text"', 'expected a JSON object, got "text"'),
        ("\ufeff{}", "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)"),
    ],
)
def test_a_line_that_is_not_a_record_says_what_json_loads_says(line: str, message: str) -> None:
    with pytest.raises(GoldenError, match=f"^corpus.jsonl:7: {re.escape(message)}$"):
        datafiles._json_record(Path("corpus.jsonl"), 7, line)


def test_merging_into_compressed_judgments_is_refused(tmp_path: Path) -> None:
    import gzip

    golden = golden_set(
        tmp_path,
        GOLDEN.replace("qrels: qrels.tsv", "qrels: qrels.tsv.gz"),
        **{"qrels.tsv.gz": gzip.compress(QRELS_BEIR.encode("utf-8"))},
    )
    assert judgments(golden) == judgments(golden_set(tmp_path / "plain"))
    with pytest.raises(ValueError, match=r"qrels.tsv.gz: the judgments are compressed \(.gz\)"):
        qrels_file(golden)
