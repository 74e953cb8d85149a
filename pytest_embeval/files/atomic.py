"""Files written atomically (a temporary file renamed into place), and text appended to a file."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterable
from pathlib import Path


def write_atomic(path: Path, data: str | bytes | Iterable[bytes]) -> os.stat_result:
    """Write ``data`` (text is UTF-8, written as is: no newline translation) to ``path`` through a uniquely
    named temporary sibling and ``os.replace``, so no reader, worker or crash ever sees half a file; return
    the status of the file written (taken before it replaced the old one: a process that replaces it in
    turn cannot be mistaken for this one).

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
        written = os.stat(temporary)
        os.replace(temporary, path)
        return written
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
