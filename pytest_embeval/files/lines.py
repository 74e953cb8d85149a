"""A UTF-8 file's lines in one streaming pass, with the sha256 of every byte read: a log or a corpus of any
size is read in blocks, never whole (decompressed as it is read, when asked: `compressed.open_stream`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from pytest_embeval.files.compressed import open_stream
from pytest_embeval.files.output_paths import read_problem

__all__ = ["BLOCK_BYTES", "HashedLines", "NotUtf8"]

#: Bytes read at a time.
BLOCK_BYTES = 1 << 20


class NotUtf8(ValueError):
    """A line that is not UTF-8: its number (from 1), and the offending byte and its column (from 1)."""

    def __init__(self, line: int, byte: int, column: int) -> None:
        self.line, self.byte, self.column = line, byte, column
        super().__init__(f"line {line}: not valid UTF-8 (byte 0x{byte:02x} at column {column})")


class HashedLines:
    """Iterate once over ``path``'s lines (text without the ``\\n``; a final line without one too), and
    afterwards know the file's ``sha256`` (hex) and its ``lines``; with ``decompressed``, of the file as its
    compression's suffix says to decompress it. Opening the file raises `OSError`; a line that is not UTF-8,
    `NotUtf8`."""

    def __init__(self, path: Path, *, decompressed: bool = False) -> None:
        refused = read_problem(path)  # /dev/zero: a line that never ends
        if refused is not None:
            raise refused
        self.path = path
        self.lines = 0
        self._digest = hashlib.sha256()
        self._handle = open_stream(path) if decompressed else path.open("rb")

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def __iter__(self) -> Iterator[str]:
        with self._handle as handle:
            rest = b""
            while block := handle.read(BLOCK_BYTES):
                self._digest.update(block)
                cut = block.rfind(b"\n")
                if cut == -1:
                    rest += block
                    continue
                lines = self._decoded(rest + block[:cut]).split("\n")
                rest = block[cut + 1 :]
                self.lines += len(lines)
                yield from lines
            if rest:
                (line,) = self._decoded(rest).split("\n")
                self.lines += 1
                yield line

    def _decoded(self, data: bytes) -> str:
        """Whole lines decoded at once (a block at a time: no character is cut, since ``\\n`` is never
        part of one); on an error, the line and column of the byte."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = data.rfind(b"\n", 0, exc.start) + 1
            line = self.lines + data.count(b"\n", 0, exc.start) + 1
            raise NotUtf8(line, data[exc.start], exc.start - start + 1) from None
