"""The one write path of every file the package writes: atomically (a temporary file renamed into place),
or through a special file, never over it; and text appended to a file.

A path that exists and is not a regular file is never renamed over: a character device (``/dev/null``,
``/dev/stdout``, ``/dev/full``) or a FIFO (a shell's ``>(command)``) is written through, as a shell's ``>``
would, and anything else (a block device, a socket) is refused (`output_paths.special_file`). A symlink is
followed: the file it points to is replaced, the link stays. Every `OSError` names what to blame: the path
(``/dev/full: No space left on device``), or the folder a temporary file could not be created in (``cannot
write in FOLDER: Permission denied``), never the temporary file's own name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from pytest_embeval.files.output_paths import WRITTEN_THROUGH, special_file

__all__ = ["append_text", "error_line", "write_atomic"]

#: Opening a FIFO for writing waits for a reader; with this flag it fails at once (ENXIO) when there is none.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def write_atomic(path: Path, data: str | bytes | Iterable[bytes]) -> os.stat_result:
    """Write ``data`` (text is UTF-8, written as is: no newline translation) to ``path`` through a uniquely
    named temporary sibling and ``os.replace``, so no reader, worker or crash ever sees half a file; or
    through ``path`` itself when it is a character device or a FIFO (see the module). Return the status of
    the file written (taken before it replaced the old one: a process that replaces it in turn cannot be
    mistaken for this one).

    The file keeps the mode of the file it replaces, or gets the umask's default: reports, sheets, qrels and
    cached embeddings are shared with other people, which a bare ``mkstemp`` (mode 0600) would prevent.
    The folder must exist.
    """
    parts = [data.encode("utf-8")] if isinstance(data, str) else [data] if isinstance(data, bytes) else data
    if _written_through(path):
        _write_through(path, os.O_WRONLY, parts)
        return os.stat(path)
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as error:
        raise _blamed(error, target.parent) from None
    try:
        with _naming(path), os.fdopen(fd, "wb") as handle:
            for part in parts:
                handle.write(part)
        if target.exists():
            shutil.copymode(target, temporary)
        written = os.stat(temporary)
        with _naming(path):
            os.replace(temporary, target)
        return written
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def error_line(error: OSError) -> str:
    """The one line an `OSError` of a write says: ``PATH: No space left on device``, or what it blames."""
    where = f"{error.filename}: " if error.filename else ""
    return f"{where}{error.strerror or error}"


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path`` in one ``write`` on an ``O_APPEND`` descriptor, so text that other
    processes append meanwhile (every step of a GitHub Actions job appends to its step summary) is never
    interleaved with it. The file is created if missing; the folder must exist. A special file is written
    through or refused, as by `write_atomic`."""
    _written_through(path)  # or refused
    _write_through(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, [text.encode("utf-8")])


def _written_through(path: Path) -> bool:
    """Whether ``path`` is a special file to write through; `OSError` naming it for one that is refused."""
    kind = special_file(path)
    if kind is not None and kind not in WRITTEN_THROUGH:
        raise OSError(errno.EINVAL, f"is {kind}, not a regular file; name another path", str(path))
    return kind is not None


def _write_through(path: Path, flags: int, parts: Iterable[bytes]) -> None:
    """Write ``parts`` on one descriptor of ``path``. A FIFO is opened without waiting for a reader (none:
    ENXIO, named), then written to as any file, every byte: a short write (a full disk, a signal) is
    finished."""
    with _naming(path):
        fd = os.open(path, flags | _NONBLOCK | getattr(os, "O_BINARY", 0), 0o666)
        try:
            if _NONBLOCK:
                os.set_blocking(fd, True)
            for part in parts:
                data = memoryview(part)
                while data:
                    data = data[os.write(fd, data) :]
        finally:
            os.close(fd)


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """An `OSError` raised inside names ``path`` (a write's error names no file of its own)."""
    try:
        yield
    except OSError as error:
        if error.errno == errno.ENXIO and special_file(path) == "a FIFO":
            raise OSError(error.errno, "a FIFO no process is reading", str(path)) from None
        if error.filename is None or error.filename != str(path):
            raise OSError(error.errno, error.strerror or str(error), str(path)) from None
        raise


def _blamed(error: OSError, folder: Path) -> OSError:
    return OSError(error.errno, f"cannot write in {folder}: {error.strerror or error}")
