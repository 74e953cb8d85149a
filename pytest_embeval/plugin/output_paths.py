"""Output paths that would overwrite what the run reads, or another output: refused before any work.

An output (``--embeval-json/-runs/-pool/-md/-html/-plot``, the step summary) is compared by its resolved
path (symlinks and ``..`` followed) with every input of the run: the golden files and the files they name
(`golden.inputs`), and the folders within which anything is an input: the embedding cache, a local model's
folder. Each check runs as soon as what it compares is known: the outputs with each other and with the cache
when the settings are resolved, with the models' folders when the models are, with the golden sets' files
when they are collected. Only the standard library is imported: the options module imports this one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["clash", "file_output_problem"]

_SEPARATORS = tuple(sep for sep in (os.sep, os.altsep) if sep)


def clash(
    outputs: Mapping[str, tuple[str, Path]],
    files: Mapping[Path, str] | None = None,
    folders: Mapping[Path, str] | None = None,
) -> str | None:
    """The one-line error for the first output (option -> (value as given, path)) that resolves to one of
    the ``files`` or into one of the ``folders`` (resolved path -> what it is), or to another output; None
    when every output is apart."""
    seen: dict[Path, str] = {}
    for option, (value, path) in outputs.items():
        resolved = _resolved(path)
        if resolved is None:
            continue
        what = (files or {}).get(resolved)
        if what is not None:
            return f"{option} {value}: is {what}, which this run reads; name another path"
        for folder, kind in (folders or {}).items():
            if resolved == folder or resolved.is_relative_to(folder):
                return (
                    f"{option} {value}: is inside {kind} ({folder}/), which this run reads; name another path"
                )
        if resolved in seen:
            return f"{option} {value}: is also the path of {seen[resolved]}; give each output its own path"
        seen[resolved] = f"{option} {value}"
    return None


def file_output_problem(value: str, example: str) -> str | None:
    """A file output written with a trailing separator names a folder (``out/``): refused as a folder is,
    rather than dropped (``Path('out/')`` is ``out``)."""
    if value.endswith(_SEPARATORS) and value.rstrip("".join(_SEPARATORS)):
        return f"ends in {value[-1]!r}, a folder; name the file, e.g. {value}{example}"
    return None


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: writing reports it
        return None
