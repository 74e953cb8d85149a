"""The one guard every writer uses: an output is never an input, nor a special file replaced.

`clash` compares each output (a command's ``--out``, the plugin's ``--embeval-json/-runs/-pool/-md/-html/
-plot`` and the step summary) with every input of the run or command: the files it reads (a golden set's
files, `golden.inputs`; a log, a corpus, a sheet, a report) and the folders within which anything is an
input (the embedding cache, a local model's folder). Two paths are the same file when they resolve to the
same path (symlinks and ``..`` followed) or, for files that exist, when they are the same inode on the same
device (a hard link, a bind mount); a path is inside a folder when one of its existing ancestors is that
folder, by the same test. ``--force`` lets a command overwrite an earlier *output*, never one of these.

`special_file` says what a path that exists and is not a regular file or a folder is. An output there is
written through (a character device such as ``/dev/null`` or ``/dev/stdout``, a FIFO: `WRITTEN_THROUGH`),
never renamed over, or refused with one line naming it (a block device, a socket): `files.atomic` does the
writing. `output_problem` checks, before any work, that an output path can be written as what it is. An
input is read from a regular file or a FIFO (a shell's ``<(zcat log.gz)``), never from a device, which
would never end (``/dev/zero``) or is a disk: `read_problem`.

Only the standard library is imported: the plugin's options module, which loads in every pytest run,
imports this one.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = [
    "WRITTEN_THROUGH",
    "clash",
    "file_output_problem",
    "output_problem",
    "read_problem",
    "special_file",
    "special_kind",
]

_SEPARATORS = tuple(sep for sep in (os.sep, os.altsep) if sep)

#: The kinds of special file an output is written through: what a program writes to them goes where the
#: system sends it (discarded, a terminal, a pipe's reader), and nothing is replaced.
WRITTEN_THROUGH = ("a character device", "a FIFO")

_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}

#: What identifies a file: its resolved path, or (device, inode) for one that exists.
_Identity = tuple[int, int] | Path


def special_file(path: Path) -> str | None:
    """What ``path`` is when it exists (symlinks followed) and is neither a regular file nor a folder
    ("a character device", "a FIFO", "a block device", "a socket", or "a symlink loop", which no write
    may replace either); None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return "a symlink loop" if error.errno == errno.ELOOP else None
    except ValueError:  # a NUL byte: writing reports it
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return special_kind(mode)


def read_problem(path: Path) -> OSError | None:
    """The error for reading ``path`` as a data file when it is a device, a socket or a symlink loop (named,
    as opening it would name it), else None."""
    kind = special_file(path)
    if kind is None or kind == "a FIFO":
        return None
    return OSError(errno.EINVAL, f"{kind}, not a file to read", str(path))


def special_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, when it is neither a regular file nor a folder, as messages say."""
    return _KINDS.get(stat.S_IFMT(mode), "a special file")


def clash(
    outputs: Mapping[str, Path],
    files: Mapping[Path, str] | None = None,
    folders: Mapping[Path, str] | None = None,
    reader: str = "this run",
) -> str | None:
    """The one-line error for the first output (how it was given, ``--embeval-json out.json`` -> its path)
    that is one of the ``files`` or inside one of the ``folders`` (path -> what it is), or the same file as
    another output; None when every output is apart. ``reader`` is what reads the inputs, for the message."""
    inputs = {key: what for path, what in (files or {}).items() for key in _keys(path)}
    folder_inputs = {key: (folder, what) for folder, what in (folders or {}).items() for key in _keys(folder)}
    seen: dict[_Identity, str] = {}
    for given, path in outputs.items():
        keys = _keys(path)
        what = next((inputs[key] for key in keys if key in inputs), None)
        if what is not None:
            return f"{given}: is {what}, which {reader} reads; name another path"
        for folder_keys in _ancestors(path):
            inside = next((folder_inputs[key] for key in folder_keys if key in folder_inputs), None)
            if inside is not None:
                folder, kind = inside
                shown = os.path.join(_resolved(folder) or folder, "")
                return f"{given}: is inside {kind} ({shown}), which {reader} reads; name another path"
        other = next((seen[key] for key in keys if key in seen), None)
        if other is not None and special_file(path) is None:
            return f"{given}: is also the path of {other}; give each output its own path"
        seen.update(dict.fromkeys(keys, given))
    return None


def file_output_problem(value: str, example: str) -> str | None:
    """A file output written with a trailing separator names a folder (``out/``): refused as a folder is,
    rather than dropped (``Path('out/')`` is ``out``)."""
    if value.endswith(_SEPARATORS) and value.rstrip("".join(_SEPARATORS)):
        return f"ends in {value[-1]!r}, a folder; name the file, e.g. {value}{example}"
    return None


def output_problem(path: Path, kind: str, *, make_folders: bool) -> str | None:
    """Why ``path`` cannot be written as a ``kind``, or None. ``kind`` is "folder", or for a file the name
    of one that a folder given instead could hold, for the message.

    Checked before any work, so a bad output path costs nothing: an existing path of the other kind, a
    special file that is not written through, a path under a file, a missing folder (``make_folders``:
    created when the output is written, else refused), and a folder this process cannot create files in
    (tried with a temporary file in the deepest folder that exists, which is where the missing ones would
    be created). A character device or a FIFO needs only to be writable: nothing is created beside it.
    """
    existing = path.parent
    try:
        special = special_file(path)
        if special is not None:
            if kind == "folder" or special not in WRITTEN_THROUGH:
                wanted = "folder" if kind == "folder" else "regular file"
                return f"is {special}, not a {wanted}; name another path"
            return None if os.access(path, os.W_OK) else "cannot be written: Permission denied"
        if kind != "folder" and path.is_dir():
            return "is a folder; name the file, e.g. " + str(path / kind)
        if kind == "folder" and path.exists() and not path.is_dir():
            return "is a file, not a folder"
        existing = path if kind == "folder" and path.is_dir() else path.parent
        while not existing.exists():
            if not make_folders:
                return f"folder {existing} does not exist"
            existing = existing.parent
        if not existing.is_dir():
            return f"{existing} is a file, not a folder"
        with tempfile.TemporaryFile(dir=existing):
            pass
        if kind != "folder" and path.exists() and not os.access(path, os.W_OK):
            return "cannot be written: Permission denied (it is read-only)"
    except OSError as error:
        return f"cannot write in {existing}: {error.strerror or error}"
    return None


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: writing reports it
        return None


def _keys(path: Path) -> list[_Identity]:
    """What makes two paths the same file: the resolved path (symlinks and ``..`` followed, as far as they
    exist), and (device, inode) when it exists (a hard link, a bind mount); none for a path that cannot
    be resolved (a symlink loop, a NUL byte: writing it reports the error)."""
    resolved = _resolved(path)
    if resolved is None:
        return []
    try:
        status = os.stat(resolved)
    except (OSError, ValueError):
        return [resolved]
    return [resolved, (status.st_dev, status.st_ino)]


def _ancestors(path: Path) -> Iterator[list[_Identity]]:
    """The keys of the path itself and of each folder it is in, nearest first."""
    resolved = _resolved(path)
    if resolved is not None:
        for folder in (resolved, *resolved.parents):
            yield _keys(folder)
