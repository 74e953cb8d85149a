"""What a hostile-input test holds constant: every input, byte for byte, and every special file as it is.

`snapshot(paths)` records each regular file at or under ``paths`` by the sha256 of its bytes, each symlink by
its target, each folder as a folder and each special file by its kind and device numbers; a test takes one
before a command and asserts the one after is equal: an input rewritten, truncated, appended to, or replaced
by a file of another kind (a FIFO or a device renamed over) changes its entry.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def snapshot(*paths: Path) -> dict[str, str]:
    """Path -> what it holds (see the module), for every path at or under ``paths`` (symlinks not
    followed)."""
    held: dict[str, str] = {}
    for path in paths:
        for found in [path, *(sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else [])]:
            held[str(found)] = _state(found)
    return held


def _state(path: Path) -> str:
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    mode = status.st_mode
    if stat.S_ISLNK(mode):
        return f"symlink -> {os.readlink(path)}"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    kind = stat.S_IFMT(mode)
    return f"special {kind:o} {os.major(status.st_rdev)},{os.minor(status.st_rdev)}"
