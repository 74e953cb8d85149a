"""A data source as a command names it: one file, or a glob pattern matching many
(``logs/2026-11-*.parquet``), resolved to its files in one fixed order, with what a reader must know of
each before reading it.

The files of a pattern are read in the order of their paths (sorted as strings: daily files named by date
come in date order), so that "the first row" of a source means the same thing to every reader. A file is
*Parquet* when its name ends in ``.parquet`` or ``.pq`` or it starts with Parquet's magic bytes; a file
whose name ends in a compression's suffix (`compressed.COMPRESSIONS`) is *compressed*. The digest of a
source of many files is the sha256 of its files' hex digests, one a line, in order: it changes when a
file's content does, when a file comes or goes, and not when the folder moves.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_embeval.files.compressed import compression_of

__all__ = ["PARQUET_SUFFIXES", "Source", "SourceError", "is_parquet", "resolve_source", "source_sha256"]

PARQUET_SUFFIXES = (".parquet", ".pq")
_PARQUET_MAGIC = b"PAR1"
_GLOB_CHARACTERS = frozenset("*?[")


class SourceError(Exception):
    """A pattern that names no file. One line."""


@dataclass(frozen=True, slots=True)
class Source:
    #: the path or pattern as given
    given: str
    #: the files, in the order they are read
    files: tuple[Path, ...]
    #: whether ``given`` is a pattern (a source of many files, or of one file matched by a pattern)
    pattern: bool

    @property
    def bytes(self) -> int:
        """The files' sizes on disk, added up (0 for a file that cannot be read: its reader says why)."""
        total = 0
        for path in self.files:
            with contextlib.suppress(OSError):
                total += path.stat().st_size
        return total

    @property
    def compressed(self) -> Path | None:
        """The first compressed file, if any."""
        return next((path for path in self.files if compression_of(path) is not None), None)


def resolve_source(given: str) -> Source:
    """The files ``given`` names: itself when it has no glob characters (``*``, ``?``, ``[``; a missing file
    is for its reader to report), else every file the pattern matches (``**`` spans folders), sorted;
    `SourceError` when a pattern matches no file."""
    if not _GLOB_CHARACTERS.intersection(given):
        return Source(given, (Path(given),), False)
    files = sorted(path for path in glob.glob(given, recursive=True) if Path(path).is_file())
    if not files:
        raise SourceError(f"{given}: no file matches this pattern")
    return Source(given, tuple(Path(path) for path in files), True)


def is_parquet(path: Path) -> bool:
    """Whether the file is Parquet: by its name, or by its first four bytes (a file that cannot be read is
    not, and its reader says why)."""
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return True
    try:
        with path.open("rb") as handle:
            return handle.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def source_sha256(digests: Sequence[str]) -> str:
    """The digest of a source from its files' hex digests, in order: a single file's own digest, else the
    sha256 of the digests one a line."""
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(digest + "\n" for digest in digests).encode("ascii")).hexdigest()
