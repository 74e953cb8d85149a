"""Canonical JSON lines and text keys: what every digest of the golden set and of the control hashes, and
what the embedding cache stores a text under.

A line is ``json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``
and a newline. Rows of strings and integers (a document id and its text's sha256, a judgment) are written
without calling ``json.dumps`` per row whenever none of their strings holds a character JSON escapes, which
is nearly always: a quarter of the time on 200,000 documents, with the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import itemgetter
from typing import Any, overload

__all__ = ["KeyedTexts", "hash_rows", "json_line", "row_lines", "text_key"]

#: What json.dumps escapes in a string with ensure_ascii=False; a string without any is its own JSON body.
_JSON_ESCAPED = re.compile(r'[\x00-\x1f"\\]')


def json_line(part: object) -> str:
    """``part`` as one canonical JSON line, newline included."""
    return json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"


def row_lines(rows: Sequence[Sequence[str | int]], prefix: str = "") -> str:
    """The canonical JSON line of each row (strings and integers, never booleans), each after ``prefix``."""
    kinds = _column_types(rows)
    if kinds is None:
        strings = "".join(item for row in rows for item in row if isinstance(item, str))
    else:
        strings = "".join("".join(map(itemgetter(i), rows)) for i, kind in enumerate(kinds) if kind is str)
    if _JSON_ESCAPED.search(strings) is not None:
        return "".join(prefix + json_line(list(row)) for row in rows)
    # Each string is its own JSON string body, each integer its own JSON number. The digests' two shapes of
    # row (an id and a text's hex digest, a judgment) get an f-string each: half the time of a loop per cell.
    if kinds == [str, str]:
        return "".join([f'{prefix}["{a}","{b}"]\n' for a, b in rows])
    if kinds == [str, str, int]:
        return "".join([f'{prefix}["{a}","{b}",{c}]\n' for a, b, c in rows])
    cells = (",".join(f'"{item}"' if isinstance(item, str) else str(item) for item in row) for row in rows)
    return "".join([f"{prefix}[{text}]\n" for text in cells])


def _column_types(rows: Sequence[Sequence[str | int]]) -> list[type] | None:
    """Each column's type when the rows have one length and each column holds only ``str`` or only ``int``
    values (never ``bool``); None otherwise, and for no rows."""
    widths = set(map(len, rows))
    if len(widths) != 1:
        return None
    kinds = []
    for i in range(widths.pop()):
        types = set(map(type, map(itemgetter(i), rows)))
        if len(types) != 1 or not types <= {str, int}:
            return None
        kinds.append(types.pop())
    return kinds


def hash_rows(digest: Any, rows: Iterable[Sequence[str | int]], prefix: str = "", block: int = 4096) -> None:
    """Update a hashlib ``digest`` with the `row_lines` of ``rows``, ``block`` rows at a time: the bytes of
    hashing them line by line, without holding them all, as rows or as text, at once (200,000 rows held
    as tuples cost the garbage collector a fifth of a second)."""
    iterator = iter(rows)
    while chunk := list(islice(iterator, block)):
        digest.update(row_lines(chunk, prefix).encode("utf-8"))


def text_key(text: str) -> bytes:
    """sha256 of a text's UTF-8 bytes (lone surrogates kept, never an encoding error): the embedding cache's
    key of the text, and the per-document digest the golden fingerprint and the control's corpus digest
    hash (as hex)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class KeyedTexts(Sequence[str]):
    """Texts and the `text_key` of each, hashed once: a golden set's documents as both arms embed them,
    whose keys the cache looks up and the control digest and golden fingerprint hash (200,000 documents
    are 0.4 s of hashing, three times over without it)."""

    __slots__ = ("keys", "texts")

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts: tuple[str, ...] = tuple(texts)
        self.keys: tuple[bytes, ...] = tuple(map(text_key, self.texts))

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self.texts[index]

    def __len__(self) -> int:
        return len(self.texts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)
