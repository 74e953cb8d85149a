"""Data files read through their compression, chosen by the file name's last suffix: ``.gz``, ``.bz2`` and
``.xz`` with the standard library, ``.zst`` with the ``zstandard`` package (the ``[zstd]`` extra).

`read_bytes` returns the decompressed bytes, decompressed as a stream (the compressed file is never held in
memory beside them), so everything downstream (decoding, line numbers, the golden set's digests) sees exactly
what the uncompressed file holds: compressing a data file changes nothing in a run or its report.
`compression_of_bytes` names the compression a file's first bytes show, for the error about a compressed file
whose name does not say so.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, cast

from pytest_embeval.files.output_paths import read_problem

__all__ = [
    "COMPRESSIONS",
    "CompressedFileError",
    "compression_of",
    "compression_of_bytes",
    "open_stream",
    "read_bytes",
]

#: File suffix -> the compression's name, as messages say it.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "Zstandard"}

#: The first bytes of each compression's files (bzip2's "BZh" is followed by a block size digit).
_MAGIC = {
    b"\x1f\x8b": ".gz",
    b"\xfd7zXZ\x00": ".xz",
    b"\x28\xb5\x2f\xfd": ".zst",
    b"BZh": ".bz2",
}

ZSTD_MISSING = (
    "is Zstandard-compressed (.zst): reading it needs the zstandard package "
    "(pip install 'pytest-embeval[zstd]')"
)

#: Decompressed bytes read at a time.
_CHUNK = 1 << 20


class CompressedFileError(Exception):
    """A compressed file that cannot be read: its module is missing, or the data is damaged. One line."""


def compression_of(path: Path) -> str | None:
    """The suffix of the file's compression (``.gz``, ...), or None for a file read as it is."""
    suffix = path.suffix.lower()
    return suffix if suffix in COMPRESSIONS else None


def compression_of_bytes(data: bytes) -> str | None:
    """The suffix of the compression whose magic number ``data`` starts with, or None."""
    for magic, suffix in _MAGIC.items():
        if data.startswith(magic) and (suffix != ".bz2" or data[3:4].isdigit()):
            return suffix
    return None


def read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when its name ends in a compression's suffix. Raises ``OSError`` as
    reading the file does, and `CompressedFileError` for a damaged stream or a missing module."""
    refused = read_problem(path)  # /dev/zero: bytes that never end
    if refused is not None:
        raise refused
    suffix = compression_of(path)
    if suffix is None:
        return path.read_bytes()
    read, damaged = _reader(suffix)
    with path.open("rb") as raw:
        try:
            return read(raw)
        except (EOFError, OSError, *damaged) as error:  # type: ignore[misc]
            if isinstance(error, OSError) and error.errno is not None:
                raise  # the file system's error, not the stream's
            problem = str(error) or type(error).__name__
            raise CompressedFileError(f"is not a valid {COMPRESSIONS[suffix]} file: {problem}") from None


def open_stream(path: Path) -> BinaryIO:
    """The file's decompressed bytes as a stream, read a block at a time (a corpus too large to hold whole).
    Raises ``OSError`` as opening the file does, and `CompressedFileError` for a missing module."""
    suffix = compression_of(path)
    if suffix is None:
        return path.open("rb")
    if suffix == ".gz":
        return cast(BinaryIO, gzip.open(path, "rb"))
    if suffix == ".bz2":
        return cast(BinaryIO, bz2.open(path, "rb"))
    if suffix == ".xz":
        return cast(BinaryIO, lzma.open(path, "rb"))
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        raise CompressedFileError(ZSTD_MISSING) from None
    reader = zstandard.ZstdDecompressor().stream_reader(path.open("rb"), read_across_frames=True)
    return cast(BinaryIO, reader)


def _reader(suffix: str) -> tuple[Callable[[BinaryIO], bytes], tuple[type[Exception], ...]]:
    """How to read the decompressed stream, and the errors its module raises for damaged data (besides
    ``EOFError`` for a truncated file and ``OSError`` without an errno, which the standard library raises)."""
    if suffix == ".gz":
        return lambda raw: _chunks(gzip.GzipFile(fileobj=raw, mode="rb")), ()
    if suffix == ".bz2":
        return lambda raw: _chunks(bz2.BZ2File(raw, mode="rb")), ()
    if suffix == ".xz":
        return lambda raw: _chunks(lzma.LZMAFile(raw, mode="rb")), (lzma.LZMAError,)
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        raise CompressedFileError(ZSTD_MISSING) from None
    return lambda raw: _zstd_frames(raw, zstandard.ZstdDecompressor()), (zstandard.ZstdError,)


def _chunks(stream: gzip.GzipFile | bz2.BZ2File | lzma.LZMAFile) -> bytes:
    with stream:
        return b"".join(iter(lambda: stream.read(_CHUNK), b""))


def _zstd_frames(raw: BinaryIO, decompressor: Any) -> bytes:
    """Every frame of a Zstandard file, refusing one that ends inside a frame (zstandard's stream reader
    returns what it has read of a truncated file without a word)."""
    parts: list[bytes] = []
    frame = None
    for chunk in iter(lambda: raw.read(_CHUNK), b""):
        while chunk:
            frame = frame or decompressor.decompressobj()
            parts.append(frame.decompress(chunk))
            chunk, frame = (frame.unused_data, None) if frame.eof else (b"", frame)
    if frame is not None:
        raise EOFError("Compressed file ended before the end of its last frame")
    return b"".join(parts)
