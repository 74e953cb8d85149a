"""Chunks folded to documents: the fold by hand, searching deep enough to fill the depth, the schema and its
errors, and the pipeline's document rankings and report counts."""

from __future__ import annotations

import dataclasses
import html
import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_golden import write_set
from test_pipeline import DIMENSIONS, make_golden

from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.data_files import Document, GoldenError, Query
from pytest_embeval.golden.folding import ChunkMap, FoldSpec, chunk_map, fold_hits, search_documents
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.html_page import report_html
from pytest_embeval.reports.json_report import build_report, golden_record
from pytest_embeval.reports.markdown import report_markdown
from pytest_embeval.reports.pipeline_contents import pipeline_notes
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import golden_control, run_arm
from pytest_embeval.search.exact import tie_ranks

OWNERS = {"c1": "A", "c2": "A", "c3": "B", "c4": "C", "c5": "B", "c6": "C"}


def chunks() -> ChunkMap:
    return chunk_map([{"doc": (owner,)} for owner in OWNERS.values()], FoldSpec("doc"))


def test_the_chunk_map_numbers_documents_by_their_first_chunk() -> None:
    mapped = chunks()
    assert mapped.doc_ids == ("A", "B", "C")
    assert mapped.document_of.tolist() == [0, 0, 1, 2, 1, 2]
    assert {k: v.tolist() for k, v in mapped.records_of().items()} == {"A": [0, 1], "B": [2, 4], "C": [3, 5]}


def test_a_document_ranks_by_its_best_chunk_and_equal_scores_by_document_id() -> None:
    rows = {"c1": 0, "c2": 1, "c3": 2, "c4": 3, "c5": 4, "c6": 5}
    positions = np.array(
        [[rows[c] for c in ("c3", "c1", "c5", "c2", "c4")], [rows["c1"], rows["c4"], rows["c3"], -1, -1]]
    )
    scores = np.array([[0.9, 0.8, 0.7, 0.6, 0.5], [0.5, 0.5, 0.4, np.nan, np.nan]])
    documents, best, chunk = fold_hits(positions, scores, chunks(), tie_ranks(["A", "B", "C"]), depth=3)
    names = [["ABC"[d] for d in row if d >= 0] for row in documents.tolist()]
    assert names == [["B", "A", "C"], ["C", "A", "B"]]
    assert best.tolist() == [[0.9, 0.8, 0.5], [0.5, 0.5, 0.4]]
    assert chunk.tolist() == [[rows["c3"], rows["c1"], rows["c4"]], [rows["c4"], rows["c1"], rows["c3"]]]


def test_chunks_are_searched_deeper_until_the_depth_of_documents_is_filled() -> None:
    # Document A has ten chunks that rank first for every query; B..E one each.
    owners = ["A"] * 10 + ["B", "C", "D", "E"]
    mapped = chunk_map([{"doc": (owner,)} for owner in owners], FoldSpec("doc"))
    asked: list[tuple[int, int]] = []

    def search(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        asked.append((rows.size, depth))
        positions = np.tile(np.arange(depth), (rows.size, 1))
        return positions, np.tile(1.0 - np.arange(depth) / 100, (rows.size, 1))

    documents, _, _, first = search_documents(search, 2, mapped, tie_ranks(mapped.doc_ids), depth=3)
    # 14 chunks of 5 documents: 2.8 per document, so 9 chunks first (all A's), then as deep as there are.
    assert first == math.ceil(3 * 14 / 5) == 9
    assert asked == [(2, 9), (2, 14)]
    assert [[mapped.doc_ids[d] for d in row] for row in documents.tolist()] == [["A", "B", "C"]] * 2


def test_a_query_out_of_chunks_is_not_searched_again() -> None:
    mapped = chunk_map([{"doc": (owner,)} for owner in ["A", "A", "B"]], FoldSpec("doc"))
    asked: list[int] = []

    def search(rows: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        asked.append(depth)
        # The filter allows only A's chunks: fewer hits than asked for.
        return np.array([[0, 1, -1][:depth]]), np.array([[0.9, 0.8, np.nan][:depth]])

    documents, _, _, _ = search_documents(search, 1, mapped, tie_ranks(mapped.doc_ids), depth=2)
    assert asked == [3] and documents.tolist() == [[0, -1]]


# ---------------------------------------------------------------------------------------------- the schema

CHUNKS = (
    '{"_id": "a-1", "text": "alpha one", "doc_id": "A"}\n'
    '{"_id": "a-2", "text": "alpha two", "doc_id": "A"}\n'
    '{"_id": "b-1", "text": "beta one", "doc_id": "B"}\n'
)
FOLD_YAML = (
    "corpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\nmetric: recall@5\n"
    "fold: {field: doc_id}\n"
)
DOC_QRELS = "query-id\tcorpus-id\tscore\nq1\tA\t1\nq2\tB\t1\n"


def test_a_fold_judges_documents_not_chunks(tmp_path: Path) -> None:
    golden = load_golden(write_set(tmp_path, FOLD_YAML, {"corpus.jsonl": CHUNKS, "qrels.tsv": DOC_QRELS}))
    assert golden.fold == FoldSpec("doc_id", "max")
    assert dict(golden.qrels["q1"]) == {"A": 1}
    assert golden.plan()["fold"] == {"field": "doc_id", "score": "max"}


@pytest.mark.parametrize(
    ("yaml_text", "files", "expected"),
    [
        (
            FOLD_YAML,
            {"corpus.jsonl": CHUNKS + '{"_id": "c-1", "text": "gamma"}\n', "qrels.tsv": DOC_QRELS},
            "corpus.jsonl:4: doc_id: document 'c-1' needs one string or number in field 'doc_id' "
            "(fold.field)",
        ),
        (
            FOLD_YAML,
            {"corpus.jsonl": CHUNKS, "qrels.tsv": "query-id\tcorpus-id\tscore\nq1\ta-1\t1\n"},
            "qrels.tsv:2: corpus-id: unknown document 'a-1' (not in the corpus)",
        ),
        (
            FOLD_YAML.replace("{field: doc_id}", "{field: doc_id, score: sum}"),
            {"corpus.jsonl": CHUNKS, "qrels.tsv": DOC_QRELS},
            "golden.yaml:5: fold.score: must be 'max' (a document ranks by its best chunk), got sum",
        ),
        (
            FOLD_YAML.replace("{field: doc_id}", "{score: max}"),
            {"corpus.jsonl": CHUNKS, "qrels.tsv": DOC_QRELS},
            "golden.yaml:5: fold.field: missing required key (the record field naming the document)",
        ),
        (
            FOLD_YAML.replace("{field: doc_id}", "{field: doc_id, by: x}"),
            {"corpus.jsonl": CHUNKS, "qrels.tsv": DOC_QRELS},
            "golden.yaml:5: fold.by: unknown key (expected one of: field, score)",
        ),
    ],
)
def test_a_bad_fold_is_one_line_naming_file_line_and_key(
    tmp_path: Path, yaml_text: str, files: dict[str, str], expected: str
) -> None:
    with pytest.raises(GoldenError) as raised:
        load_golden(write_set(tmp_path, yaml_text, files))
    assert str(raised.value).replace(str(tmp_path) + "/", "") == expected


# -------------------------------------------------------------------------------------------- the pipeline


class ChunkAxes:
    """Chunk "chunk <i>" is axis i; every query is closest to chunks 0, 1, 2, ... in that order."""

    name = "chunk-axes"

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.eye(DIMENSIONS, dtype=np.float32)[[int(t.split()[-1]) for t in texts]]

    def encode_query(self, texts: list[str]) -> np.ndarray:
        vector = 1.0 - np.arange(DIMENSIONS, dtype=np.float32) / (2 * DIMENSIONS)
        return np.stack([vector for _ in texts])


def chunked_golden() -> GoldenSet:
    # 12 chunks of 4 documents: D0 has chunks 0-5, D1 6-7, D2 8-10, D3 11.
    owner = [0] * 6 + [1] * 2 + [2] * 3 + [3]
    documents = tuple(
        Document(f"c{i:02d}", f"chunk {i}", fields={"doc": (f"D{owner[i]}",)}) for i in range(12)
    )
    return make_golden(
        documents=documents,
        queries=(Query("q1", "query", {"language": "en"}),),
        qrels={"q1": {"D2": 1, "D3": 1}},
        metric=parse_metric("recall@3"),
        report_metrics=(parse_metric("ndcg@3"),),
        fold=FoldSpec("doc"),
    )


def test_the_pipeline_ranks_documents_by_their_best_chunk_and_scores_them_per_document() -> None:
    golden = chunked_golden()
    result = run_arm(golden, ChunkAxes(), "incumbent")
    assert result.ranked == (("D0", "D1", "D2", "D3"),)
    # D2 is third: recall@3 = 1/2, nDCG@3 = (1/log2(4)) / (1 + 1/log2(3)).
    assert result.per_query["recall@3"][0] == 0.5
    assert result.per_query["ndcg@3"][0] == pytest.approx((1 / 2) / (1 + 1 / math.log2(3)))
    assert result.control == golden_control(golden)
    assert "fold" in golden_control(golden).components()


def test_the_report_says_how_many_chunks_were_folded_into_how_many_documents() -> None:
    run = run_golden(chunked_golden(), ChunkAxes(), ChunkAxes())
    record = json.loads(json.dumps(golden_record(run, "chunks.yaml")))
    assert record["fold"] == {"field": "doc", "score": "max", "chunks": 12, "documents": 4}
    assert record["depth"] == 4
    assert record["queries"][0]["ranked"]["incumbent"] == ["D0", "D1", "D2", "D3"]
    said = (
        "folded 12 chunks into 4 documents by 'doc' "
        "(a document ranks by its best chunk; 4 documents per query)"
    )
    assert pipeline_notes(record) == [said]
    # The Markdown report and the HTML page say it as the terminal does.
    report = build_report([record], [])
    assert said in report_markdown(report).splitlines()
    assert f"<p>{html.escape(said)}</p>" in report_html(report)


def test_a_judge_reads_a_folded_document_whole() -> None:
    from pytest_embeval.judging.pooling import pool_from_rankings

    golden = chunked_golden()
    documents = golden.judged_documents()
    assert list(documents) == ["D0", "D1", "D2", "D3"]
    assert documents["D1"].text == "chunk 6\n\nchunk 7"
    pool = pool_from_rankings(golden, {"incumbent": {"q1": ["D0", "D1", "D2", "D3"]}}, depth=2)
    assert {(row.doc_id, row.doc_text) for row in pool.rows} == {
        ("D0", "\n\n".join(f"chunk {i}" for i in range(6))),
        ("D1", "chunk 6\n\nchunk 7"),
    }


def test_corpus_slices_keep_every_chunk_of_a_judged_document() -> None:
    from pytest_embeval.golden.schema import CorpusSample
    from pytest_embeval.run.corpus_slices import corpus_slices

    golden = chunked_golden()
    sliced = dataclasses.replace(golden, corpus_sample=CorpusSample(sizes=(0.5, 1.0), seed=0))
    small, whole = corpus_slices(sliced)
    owners = [golden.documents[row].fields["doc"][0] for row in small.rows]
    # D2 (chunks 8-10) and D3 (chunk 11) are judged: all four chunks are in the half-size slice.
    assert {8, 9, 10, 11} <= set(small.rows) and len(small.rows) == 6
    assert owners.count("D2") == 3
    assert whole.rows == tuple(range(12))
    run = run_golden(sliced, ChunkAxes(), ChunkAxes())
    assert [one.documents for one in run.slices] == [6, 12]
