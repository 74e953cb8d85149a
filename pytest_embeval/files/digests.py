"""sha256 of files, remembered across runs for files that have not changed.

A local model's fingerprint hashes its files: 90 MB of weights for all-MiniLM-L6-v2, 0.1 s of every run,
when nothing else of a cached run costs as much. `file_sha256` remembers each digest in a small file under
a folder the session names (`remember_in`: the embedding cache's ``digests/``), keyed by what the file
system says about the file: its resolved path, device and inode, size, and modification and change times in
nanoseconds. Writing a file's content changes its change time (which no program can set back), and so its
key; replacing it (a copy, an extraction, a checkout) gives it a new change time or inode. A remembered
digest therefore serves only the very file it was computed from.

One case is left: a file written again within the file system's clock tick after it was hashed keeps its
times. A digest is remembered only if the file's change time is at least `SETTLED_SECONDS` before the
hashing began, as git treats a "racily clean" index entry: such a file is hashed again by the next run, and
remembered once it has settled.

Without a folder (`remember_in(None)`, the default), and wherever the folder cannot be read or written,
every digest is computed: remembering is only ever a saving.

`sha256_ahead` computes files' digests on a thread of its own, from when it is called: a command that reads
large files with the columnar engine starts it before the engine is imported (0.12 s for a 120 MB file, on
the core the import leaves idle), so that the hashing and the engine's own threads take fewer turns on the
cores.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

from pytest_embeval.files.atomic import write_atomic

__all__ = ["SETTLED_SECONDS", "file_sha256", "remember_in", "sha256_ahead"]

#: How long before hashing a file must have last changed for its digest to be remembered.
SETTLED_SECONDS = 2.0

_folder: Path | None = None


def remember_in(folder: Path | None) -> None:
    """Remember digests under ``folder`` from now on in this process (None: remember none)."""
    global _folder
    _folder = folder


def file_sha256(path: Path) -> str:
    """The hex sha256 of the file's bytes, remembered (see the module) when a folder is set."""
    if _folder is None:
        return _hash(path)
    resolved = path.resolve()
    status = os.stat(resolved)
    when = (status.st_mtime_ns, status.st_ctime_ns)
    key = "\0".join(map(str, (resolved, status.st_dev, status.st_ino, status.st_size, *when)))
    note = _folder / (hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest() + ".sha256")
    try:
        remembered = note.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        remembered = ""
    if len(remembered) == 64 and all(c in "0123456789abcdef" for c in remembered):
        return remembered
    started = time.time_ns()
    digest = _hash(resolved)
    if status.st_ctime_ns <= started - SETTLED_SECONDS * 1e9:
        try:
            note.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(note, digest)
        except OSError:  # a read-only or full cache folder: the digest is computed again next time
            pass
    return digest


def sha256_ahead(paths: Sequence[Path]) -> Future[list[str]]:
    """`file_sha256` of each of ``paths``, in order, computed on a thread of its own from now on; the
    future's result raises what hashing raised (a file that vanished, say)."""
    digests: Future[list[str]] = Future()

    def run() -> None:
        digests.set_running_or_notify_cancel()
        try:
            digests.set_result([file_sha256(path) for path in paths])
        except BaseException as error:  # handed to whoever asks for the result
            digests.set_exception(error)

    # A daemon: a command that fails before it asks for the digests does not wait for them to exit.
    threading.Thread(target=run, name="embeval-sha256", daemon=True).start()
    return digests


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    # One buffer read into again and again: a new bytes object per read costs as much again as hashing
    # it (0.16 s against 0.12 s for 120 MB).
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as handle:
        while read := handle.readinto(buffer):
            digest.update(view[:read])
    return digest.hexdigest()
