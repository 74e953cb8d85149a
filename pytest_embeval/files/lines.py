"""A file's lines in one streaming pass, with the sha256 of every byte read: a log or a corpus of any size
is read in blocks, never whole."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

__all__ = ["BLOCK_BYTES", "HashedLines"]

#: Bytes read at a time.
BLOCK_BYTES = 1 << 20


class HashedLines:
    """Iterate once over ``path``'s lines (bytes, without the ``\\n``; a final line without one too), and
    afterwards know the file's ``sha256`` (hex) and its ``lines``. Opening the file raises `OSError`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0
        self._digest = hashlib.sha256()
        self._handle = path.open("rb")

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def __iter__(self) -> Iterator[bytes]:
        with self._handle as handle:
            rest = b""
            while block := handle.read(BLOCK_BYTES):
                self._digest.update(block)
                parts = block.split(b"\n")
                parts[0] = rest + parts[0]
                rest = parts.pop()
                self.lines += len(parts)
                yield from parts
            if rest:
                self.lines += 1
                yield rest
