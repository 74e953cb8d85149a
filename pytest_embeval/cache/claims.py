"""Which texts another process is embedding right now, so that processes sharing a cache folder (xdist workers
running two golden sets with texts in common, CI jobs on one folder) embed each text once.

A process about to embed texts of one model and kind *claims* them. Under the shelf folder's lock
(``.claims.lock``, held for a moment), it reads the other processes' live claims: if one covers a text it
needs, it lets go of the lock, waits until that process is done (a shared lock on its claim file, granted
when that process has stored its vectors, or has died), and looks the texts up again; otherwise it writes its
own claim (``.<pid>-<random>.claim``: the text keys, 32 bytes each) and holds an exclusive lock on it while
it embeds. No process waits while it holds a claim, so none waits for ever; a lock dies with its process, so
a killed run's claim is seen dead at once and deleted. Where ``fcntl`` is missing (Windows) or a file system
refuses locks, nothing is claimed: two processes may embed a shared text twice, which costs time, never
correctness.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["CLAIM_SUFFIX", "Claim", "claim"]

CLAIM_SUFFIX = ".claim"

_LOCK = ".claims.lock"

_KEY = 32


class Claim:
    """Texts this process embeds now (`claim`); `release` when their vectors are stored, or on failure."""

    __slots__ = ("_handle", "_path")

    def __init__(self, path: Path | None = None, handle: BinaryIO | None = None) -> None:
        self._path = path
        self._handle = handle

    def release(self) -> None:
        if self._path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
        if self._handle is not None:
            self._handle.close()  # the lock goes with it: whoever waits reads the vectors now
        self._path = self._handle = None


def claim(directory: Path, keys: Sequence[bytes]) -> Claim | None:
    """Claim the text ``keys`` in ``directory`` (a shelf's folder) for this process; None, after waiting for
    them, if another process was embedding some of them (look them up again, and claim what is still
    missing)."""
    if fcntl is None:
        return Claim()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with _locked(directory / _LOCK):
            busy = _live_claims_on(directory, set(keys))
            if not busy:
                return _write_claim(directory, keys)
    except OSError:  # a read-only folder or a file system without locks: embed without claiming
        return Claim()
    for handle in busy:
        with contextlib.suppress(OSError), handle:
            fcntl.flock(handle, fcntl.LOCK_SH)  # granted when its process releases its claim, or dies
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    assert fcntl is not None
    with path.open("ab") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def _live_claims_on(directory: Path, wanted: set[bytes]) -> list[BinaryIO]:
    """Open handles on the live claims of other processes that cover some of ``wanted``; dead claims are
    deleted."""
    assert fcntl is not None
    busy: list[BinaryIO] = []
    for name in os.listdir(directory):
        if not name.endswith(CLAIM_SUFFIX):
            continue
        path = directory / name
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # its process holds it: embedding now
            data = handle.read()
            if any(data[i : i + _KEY] in wanted for i in range(0, len(data), _KEY)):
                busy.append(handle)
                continue
        else:  # its process died without releasing it (the lock went with the process)
            with contextlib.suppress(OSError):
                os.unlink(path)
        handle.close()
    return busy


def _write_claim(directory: Path, keys: Sequence[bytes]) -> Claim:
    assert fcntl is not None
    path = directory / f".{os.getpid()}-{secrets.token_hex(4)}{CLAIM_SUFFIX}"
    handle = path.open("xb")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)  # before anyone can read it: they read claims under the lock
        handle.write(b"".join(keys))
        handle.flush()
    except BaseException:
        handle.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return Claim(path, handle)
