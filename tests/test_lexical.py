"""The BM25 arm: hand-computed scores and ranks on a tiny corpus, spec parameters and their one-line errors,
the fingerprint, filters, the missing extra, and parity with bm25s itself on a public collection."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from suite_helpers import shared_collection
from test_pipeline import make_golden

from pytest_embeval.arms.bm25 import bm25_arm
from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.data_files import Document, Query
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.contents import settings_table
from pytest_embeval.reports.json_report import golden_record
from pytest_embeval.run.pipeline import golden_control, run_arm, run_golden

TINY = {
    "d1": "apple banana",
    "d2": "apple apple cherry",
    "d3": "cherry date",
    "d4": "banana banana banana banana",
}


def tiny_golden(queries: dict[str, str], **changes: Any) -> GoldenSet:
    documents = tuple(Document(doc_id, text) for doc_id, text in TINY.items())
    return make_golden(
        documents=documents,
        queries=tuple(Query(qid, text, {"language": "en"}) for qid, text in queries.items()),
        qrels={qid: {"d1": 1} for qid in queries},
        metric=parse_metric("recall@2"),
        **changes,
    )


def lucene(
    tf: int, length: int, df: int, *, n: int = 4, average: float = 11 / 4, k1: float = 1.5, b: float = 0.75
):
    """One term's BM25 score, Lucene variant, written out: idf = ln(1 + (N - df + 0.5) / (df + 0.5))."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * length / average))


def test_bm25_ranks_by_the_hand_computed_scores_and_leaves_out_documents_sharing_no_term() -> None:
    golden = tiny_golden({"q1": "apple", "q2": "banana cherry", "q3": "zebra"})
    result = run_arm(golden, "bm25?stopwords=none", "incumbent")
    # apple: d2 has it twice in 3 words, d1 once in 2 (the average length is 11/4 words).
    apple = {"d2": lucene(2, 3, 2), "d1": lucene(1, 2, 2)}
    assert result.ranked[0] == ("d2", "d1")
    assert result.similarities[0] == pytest.approx([apple["d2"], apple["d1"]], rel=1e-6)
    # banana cherry: each term in two documents; d4's four bananas, d1, d2 and d3 with one of either.
    scores = {
        "d1": lucene(1, 2, 2),
        "d2": lucene(1, 3, 2),
        "d3": lucene(1, 2, 2),
        "d4": lucene(4, 4, 2),
    }
    # d1 and d3 tie (one matching word in two): the larger id first, as trec_eval orders.
    expected = sorted(scores, key=lambda d: (-round(scores[d], 6), [-ord(c) for c in d]))
    assert result.ranked[1] == tuple(expected) == ("d4", "d3", "d1", "d2")
    assert result.similarities[1] == pytest.approx([scores[d] for d in expected], rel=1e-6)
    assert result.ranked[2] == ()
    assert result.index is None


def test_k1_and_b_reach_the_scores() -> None:
    golden = tiny_golden({"q1": "apple"})
    result = run_arm(golden, "bm25?k1=0.9&b=0.4&stopwords=none", "incumbent")
    assert result.similarities[0] == pytest.approx(
        [lucene(2, 3, 2, k1=0.9, b=0.4), lucene(1, 2, 2, k1=0.9, b=0.4)], rel=1e-6
    )


def test_stopwords_and_stemming_follow_the_spec() -> None:
    golden = tiny_golden({"q1": "the apples"})
    plain = run_arm(golden, "bm25?stopwords=none", "incumbent")
    assert plain.ranked[0] == ()  # "apples" is not "apple", and no document has "the"
    pytest.importorskip("Stemmer")
    stemmed = run_arm(golden, "bm25?stemmer=english", "incumbent")
    assert stemmed.ranked[0] == ("d2", "d1")


def test_filters_restrict_a_bm25_arm_exactly() -> None:
    golden = tiny_golden({"q1": "banana cherry"})
    documents = tuple(
        Document(doc.id, doc.text, fields={"part": ("odd" if int(doc.id[1]) % 2 else "even",)})
        for doc in golden.documents
    )
    queries = (Query("q1", "banana cherry", {"language": "en"}, {"part": ("even",)}),)
    filtered = run_arm(
        make_golden(documents=documents, queries=queries, qrels={"q1": {"d2": 1}}),
        "bm25?stopwords=none",
        "incumbent",
    )
    assert filtered.ranked == (("d4", "d2"),)


def test_the_fingerprint_holds_tokenisation_parameters_and_versions() -> None:
    bm25s = pytest.importorskip("bm25s")
    identity = json.loads(bm25_arm("bm25?k1=0.9&b=0.4").fingerprint)
    assert identity == {
        "retriever": "bm25",
        "library": f"bm25s {bm25s.__version__}",
        "method": "lucene",
        "k1": 0.9,
        "b": 0.4,
        "tokenizer": {
            "lower": True,
            "token_pattern": r"(?u)\b\w\w+\b",
            "stopwords": "en",
            "stopwords_sha256": identity["tokenizer"]["stopwords_sha256"],
            "stemmer": "none",
            "pystemmer": None,
        },
    }
    assert bm25_arm("bm25").fingerprint != bm25_arm("bm25?stopwords=de").fingerprint
    assert "delta" in json.loads(bm25_arm("bm25?method=bm25+&delta=1").fingerprint)
    assert resolve_arm("bm25").kind == "bm25"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "bm25?k=1",
            "model spec 'bm25?k=1': unknown parameter 'k' (accepted: k1 (a number >= 0), "
            "b (a number in [0, 1]), delta (a number >= 0, for bm25l and bm25+), "
            "method (one of lucene, robertson, atire, bm25l, bm25+), "
            "stopwords (a bm25s stopword list name such as en, or none), "
            "stemmer (a PyStemmer algorithm such as english, or none))",
        ),
        ("bm25?b=2", "model spec 'bm25?b=2': b must be a number in [0, 1], got '2'"),
        ("bm25?k1=x", "model spec 'bm25?k1=x': k1 must be a number >= 0, got 'x'"),
        ("bm25?k1=", "model spec 'bm25?k1=': parameter 'k1' needs a value (a number >= 0)"),
        ("bm25?b=0.1&b=0.2", "model spec 'bm25?b=0.1&b=0.2': parameter 'b' given twice"),
        (
            "bm25?method=okapi",
            "model spec 'bm25?method=okapi': method must be one of lucene, robertson, atire, "
            "bm25l, bm25+, got 'okapi'",
        ),
        (
            "bm25?delta=1",
            "model spec 'bm25?delta=1': delta applies to method bm25l or bm25+ only, not lucene",
        ),
        (
            "bm25?stopwords=klingon",
            "model spec 'bm25?stopwords=klingon': stopwords must be a bm25s stopword "
            "list name such as en, or none, got 'klingon'",
        ),
    ],
)
def test_bad_parameters_are_one_line_naming_the_spec(spec: str, message: str) -> None:
    with pytest.raises(EncoderError) as raised:
        bm25_arm(spec)
    assert str(raised.value) == message


def test_a_missing_extra_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import bm25s` raise ImportError, as on a machine without it.
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(EncoderError) as raised:
        resolve_arm("bm25")
    assert str(raised.value) == (
        "model spec 'bm25' needs bm25s, which is not installed: "
        "install the extra: pip install 'pytest-embeval[bm25]'"
    )
    monkeypatch.setitem(sys.modules, "Stemmer", None)
    monkeypatch.delitem(sys.modules, "bm25s")
    with pytest.raises(
        EncoderError, match=r"^model spec 'bm25\?stemmer=english' needs PyStemmer, which is not"
    ):
        resolve_arm("bm25?stemmer=english")


def test_a_bm25_arm_is_held_to_the_same_control_as_an_embedding_arm() -> None:
    from test_pipeline import hash_arm

    golden = make_golden()
    run = run_golden(golden, hash_arm(), "bm25")
    assert run.candidate.control == golden_control(golden) == run.incumbent.control
    assert run.candidate.arm.kind == "bm25" and run.candidate.index is None
    record = json.loads(json.dumps(golden_record(run, "g.yaml")))
    settings = dict(settings_table(record).rows)
    assert settings["candidate index"] == "none: BM25 scores its records itself"
    assert settings["incumbent index"] == f"exact, dimension {run.incumbent.index.dimension}"


# --------------------------------------------------------------------------------------- parity with bm25s


def _mean_ndcg10(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scored = {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in run.items()}
    judged = {qid: docs for qid, docs in qrels.items() if any(grade > 0 for grade in docs.values())}
    results = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate(
        {qid: scored.get(qid, {}) for qid in judged}
    )
    return float(np.mean([results[qid]["ndcg_cut_10"] for qid in judged]))


@pytest.mark.slow
def test_bm25_on_vaswani_is_within_0_01_of_bm25s_itself(tmp_path: Path) -> None:
    vaswani = shared_collection("vaswani")
    bm25s = pytest.importorskip("bm25s")
    from pytest_embeval.golden.loader import load_golden

    yaml_file = tmp_path / "vaswani.yaml"
    yaml_file.write_text(f"beir: {vaswani}\nmetric: ndcg@10\n", encoding="utf-8")
    golden = load_golden(yaml_file)
    result = run_arm(golden, "bm25", "candidate")
    ours = float(np.nanmean(result.per_query["ndcg@10"]))
    # bm25s alone, with its defaults, evaluated by trec_eval's own code.
    index = bm25s.BM25()
    index.index(
        bm25s.tokenize([doc.embed_text for doc in golden.documents], show_progress=False), show_progress=False
    )
    tokens = bm25s.tokenize([query.text for query in golden.queries], show_progress=False)
    found, _ = index.retrieve(tokens, k=10, show_progress=False)
    theirs = _mean_ndcg10(
        {
            q.id: [golden.documents[i].id for i in row]
            for q, row in zip(golden.queries, found.tolist(), strict=True)
        },
        {qid: dict(docs) for qid, docs in golden.qrels.items()},
    )
    assert abs(ours - theirs) <= 0.01, (ours, theirs)
