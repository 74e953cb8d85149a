"""The control digests written without json.dumps per row are the digests json.dumps gives."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_embeval.core.canonical import KeyedTexts
from pytest_embeval.run import control


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.text(max_size=30)),
        max_size=12,
    )
)
def test_the_corpus_digest_is_one_json_line_per_document(documents: list[tuple[str, str]]) -> None:
    """Written without json.dumps where an id needs no escaping, it must be the digest json.dumps gives:
    ids with quotes, backslashes and control characters included."""
    ids = [doc_id for doc_id, _ in documents]
    texts = [text.encode("utf-8", "replace").decode("utf-8") for _, text in documents]
    reference = control._digest(
        "corpus",
        (
            [doc_id, hashlib.sha256(text.encode()).hexdigest()]
            for doc_id, text in zip(ids, texts, strict=True)
        ),
    )
    assert control._corpus_digest(ids, KeyedTexts(texts).keys) == reference


def test_the_corpus_digest_spans_its_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control, "_DIGEST_BLOCK", 3)
    ids = ["a", 'b"', "c", "d\\", "e", "f", "g"]  # plain and escaped blocks alike
    texts = [f"text {i}" for i in range(7)]
    reference = control._digest(
        "corpus", ([i, hashlib.sha256(t.encode()).hexdigest()] for i, t in zip(ids, texts, strict=True))
    )
    assert control._corpus_digest(ids, KeyedTexts(texts).keys) == reference
    rows = [[i, hashlib.sha256(t.encode()).hexdigest()] for i, t in zip(ids, texts, strict=True)]
    with_textless = control._digest("corpus", [*rows, ["textless", ["x", 'y"']]])
    assert control._corpus_digest(ids, KeyedTexts(texts).keys, ["x", 'y"']) == with_textless != reference
    with pytest.raises(ValueError, match="7 document ids but 6 texts"):
        control._corpus_digest(ids, KeyedTexts(texts[:6]).keys)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.dictionaries(st.text(min_size=1, max_size=8), st.integers(-3, 1_000_000), min_size=1, max_size=4),
        max_size=8,
    )
)
def test_the_qrels_digest_is_one_json_line_per_judgment(qrels: dict[str, dict[str, int]]) -> None:
    reference = control._digest(
        "qrels", sorted([qid, did, grade] for qid, docs in qrels.items() for did, grade in docs.items())
    )
    assert control._qrels_digest(qrels) == reference
