"""Canonical JSON lines and text keys, against json.dumps and hashlib themselves."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_embeval.core.canonical import KeyedTexts, json_line, row_lines, text_key

_CELLS = st.text(max_size=6) | st.integers(min_value=-(2**70), max_value=2**70)
_ROWS = st.lists(st.lists(_CELLS, min_size=1, max_size=4), max_size=6)
_PAIRS = st.lists(st.tuples(st.text(max_size=6), st.text(max_size=6)), max_size=6)
_JUDGMENTS = st.lists(st.tuples(st.text(max_size=6), st.text(max_size=6), st.integers(-3, 3)), max_size=6)


@settings(max_examples=400, deadline=None)
@given(rows=_ROWS | _PAIRS | _JUDGMENTS, prefix=st.sampled_from(["", "qrel ", "{document} "]))
def test_row_lines_are_the_canonical_json_line_of_each_row(rows: list, prefix: str) -> None:
    """Whatever the rows' shapes (ragged, mixed columns, the digests' two shapes) and characters (quotes,
    backslashes, control characters take json.dumps's path), the bytes json.dumps would write."""
    assert row_lines(rows, prefix) == "".join(prefix + json_line(list(row)) for row in rows)


def test_keyed_texts_hold_each_texts_sha256() -> None:
    texts = KeyedTexts(["café", "", "lone \udc80 surrogate", "café"])
    assert list(texts) == ["café", "", "lone \udc80 surrogate", "café"] and len(texts) == 4
    assert texts[0] == "café" and list(texts[1:3]) == ["", "lone \udc80 surrogate"]
    assert texts.keys[0] == hashlib.sha256("café".encode()).digest() == texts.keys[3]
    assert texts.keys[2] == text_key("lone \udc80 surrogate")
