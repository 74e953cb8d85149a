"""The two ways the tool shows and keeps things: plain-text tables, and files written atomically."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, names: int = 1, text_last: bool = False
) -> list[str]:
    """Columns padded to width: the first ``names`` left-aligned (ids), the others right-aligned (numbers),
    and with ``text_last`` a free-text last column left-aligned too. Trailing spaces are dropped."""
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header))]
    left = set(range(names)) | ({len(header) - 1} if text_last else set())

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    return [line(header), line(["-" * width for width in widths]), *(line(row) for row in rows)]


def write_atomic(path: Path, data: str | bytes | Iterable[bytes]) -> None:
    """Write ``data`` (text is UTF-8, written as is: no newline translation) to ``path`` through a uniquely
    named temporary sibling and ``os.replace``, so no reader, worker or crash ever sees half a file.

    The file keeps the mode of the file it replaces, or gets the umask's default: reports, sheets, qrels and
    cached embeddings are shared with other people, which a bare ``mkstemp`` (mode 0600) would prevent.
    The folder must exist.
    """
    parts = [data.encode("utf-8")] if isinstance(data, str) else [data] if isinstance(data, bytes) else data
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        with os.fdopen(fd, "wb") as handle:
            for part in parts:
                handle.write(part)
        if path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path`` in one ``write`` on an ``O_APPEND`` descriptor, so text that other
    processes append meanwhile (every step of a GitHub Actions job appends to its step summary) is never
    interleaved with it. The file is created if missing; the folder must exist."""
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o666)
    try:
        written = os.write(fd, data)
        while written < len(data):  # a short write (a full disk, a signal): finish what was started
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)
