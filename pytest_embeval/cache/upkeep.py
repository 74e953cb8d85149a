"""Keeping a cache folder: what it holds (`inventory`), which packs are damaged (`verify`), and removing what
is no longer wanted (`prune`), for ``embeval cache stats|verify|prune``.

Everything here is safe while runs use the folder. Packs are only ever deleted whole (a run that finds one
gone embeds its texts again, as after any other process's deletion), never rewritten; a damaged pack is
deleted only while it is still the damaged file (`packs.remove_damaged`). A pack's last use is its
modification time, which lookups set (see `store`), so "least recently used" needs no index of its own that
processes would have to update together. Temporary files are removed only when orphaned: named by a process
that no longer runs on this machine, or older than `ORPHAN_AGE_NS` (a write takes well under a second).

An entry named like a pack that is not a regular file (a folder, a FIFO), or a pack this user cannot read,
stops nothing: `inventory` lists it among its `CacheInventory.strays`, `verify` reports it with what is wrong,
`prune` leaves what is not a pack and carries on past a pack it cannot remove (`Pruned.failed`); the
commands say so and exit non-zero at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pytest_embeval.arms.embedding import KINDS, Kind
from pytest_embeval.cache.packs import check_pack, pack_entries, remove_damaged, unlink_pack
from pytest_embeval.files.output_paths import special_kind

__all__ = [
    "ORPHAN_AGE_NS",
    "CacheInventory",
    "Damage",
    "ModelShelf",
    "Pruned",
    "Stray",
    "inventory",
    "orphans",
    "prune",
    "repair",
    "verify",
]

#: A temporary file this old is orphaned whoever wrote it.
ORPHAN_AGE_NS = 3600 * 10**9

_WRITER_PID = re.compile(r"\.(\d+)-[0-9a-f]+\.tmp\Z")


@dataclasses.dataclass(frozen=True, slots=True)
class ModelShelf:
    """The packs of one model and kind."""

    digest: str  # the folder's name: the first 16 hex digits of the model's digest
    name: str  # the model's name in its fingerprint.json, else its class ("?" if unreadable)
    kind: Kind
    packs: tuple[Path, ...]
    entries: int  # rows in the packs' headers (a text held by two packs counts twice)
    size: int  # bytes
    last_use_ns: int  # the latest modification time of its packs


@dataclasses.dataclass(frozen=True, slots=True)
class Stray:
    """An entry named like a pack that is not one to read: not a regular file, or one that cannot be read."""

    path: Path
    problem: str  # "a folder, not a pack file", "cannot be read: Permission denied"


@dataclasses.dataclass(frozen=True, slots=True)
class CacheInventory:
    shelves: tuple[ModelShelf, ...]  # by model name, digest, kind
    graphs: tuple[Path, ...]  # HNSW graphs (graphs/)
    graphs_size: int
    orphans: tuple[Path, ...]
    orphans_size: int
    #: entries named like packs that are not packs, and packs that cannot be read (counted in no shelf)
    strays: tuple[Stray, ...] = ()

    @property
    def size(self) -> int:
        """Bytes of packs, graphs and orphaned temporary files."""
        return sum(shelf.size for shelf in self.shelves) + self.graphs_size + self.orphans_size


@dataclasses.dataclass(frozen=True, slots=True)
class Damage:
    path: Path
    entries: int | None  # None when its header cannot be read: how many it held is unknown
    lost: int | None  # entries that cannot be read: all of them when the header or index is damaged
    #: what keeps it from being checked at all (a `Stray`'s problem); None for a pack read and found damaged
    problem: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Pruned:
    """What a prune removed (or would remove, ``dry_run``)."""

    packs: tuple[Path, ...]
    entries: int
    graphs: tuple[Path, ...]
    orphans: tuple[Path, ...]
    freed: int  # bytes
    #: what it should have removed and could not, with why (a read-only folder)
    failed: tuple[Stray, ...] = ()
    #: entries named like packs that are not packs, or cannot be read, left alone (`CacheInventory.strays`)
    strays: tuple[Stray, ...] = ()


def inventory(root: Path, *, now_ns: int | None = None) -> CacheInventory:
    """What the cache folder ``root`` holds; only pack headers are read."""
    shelves = []
    strays: list[Stray] = []
    for folder in _model_folders(root):
        name = _model_name(folder)
        for kind in KINDS:
            present: list[tuple[Path, os.stat_result, int]] = []
            for path in _packs(folder / kind):
                status = _status(path)
                if status is None:
                    continue
                problem = _not_a_pack(status)
                if problem is None:
                    try:
                        present.append((path, status, pack_entries(path)))
                        continue
                    except OSError as error:
                        problem = f"cannot be read: {error.strerror or error}"
                strays.append(Stray(path, problem))
            if not present:
                continue
            shelves.append(
                ModelShelf(
                    digest=folder.name,
                    name=name,
                    kind=kind,
                    packs=tuple(path for path, _, _ in present),
                    entries=sum(entries for _, _, entries in present),
                    size=sum(st.st_size for _, st, _ in present),
                    last_use_ns=max(st.st_mtime_ns for _, st, _ in present),
                )
            )
    shelves.sort(key=lambda shelf: (shelf.name, shelf.digest, KINDS.index(shelf.kind)))
    graphs = sorted((root / "graphs").glob("*.hnsw")) if (root / "graphs").is_dir() else []
    graphs = [path for path in graphs if not path.name.startswith(".")]
    found = orphans(root, now_ns=now_ns)
    return CacheInventory(
        shelves=tuple(shelves),
        graphs=tuple(graphs),
        graphs_size=sum(_size(path) for path in graphs),
        orphans=tuple(found),
        orphans_size=sum(_size(path) for path in found),
        strays=tuple(strays),
    )


def verify(root: Path) -> Iterator[Damage]:
    """The damaged packs under ``root``: every pack's header, index and rows are read and checked; an
    entry that is not a pack, or cannot be read, is reported with its problem, and the others are checked."""
    for folder in _model_folders(root):
        for kind in KINDS:
            for path in _packs(folder / kind):
                status = _status(path)
                problem = None if status is None else _not_a_pack(status)
                if problem is not None:
                    yield Damage(path, None, None, problem)
                    continue
                try:
                    entries, lost = check_pack(path)
                except FileNotFoundError:  # deleted by a run meanwhile (merged, repaired)
                    continue
                except OSError as error:
                    yield Damage(path, None, None, f"cannot be read: {error.strerror or error}")
                    continue
                if lost is None or lost:
                    yield Damage(path, entries, lost)


def repair(damage: Iterable[Damage]) -> list[Damage]:
    """Delete the damaged packs (a run embeds their texts again); those this call deleted. What could not be
    checked (`Damage.problem`: not a pack, unreadable) is left alone, and so is a pack it cannot delete."""
    removed = []
    for one in damage:
        if one.problem is None:
            with contextlib.suppress(OSError):
                if remove_damaged(one.path):
                    removed.append(one)
    return removed


def prune(
    root: Path,
    *,
    older_than_ns: int | None = None,
    models: Sequence[str] = (),
    max_size: int | None = None,
    dry_run: bool = False,
    now_ns: int | None = None,
) -> Pruned:
    """Remove the packs and HNSW graphs last used more than ``older_than_ns`` ago, every pack of the
    ``models`` (folder names, as `ModelShelf.digest`), then the least recently used packs and graphs until
    those left take at most ``max_size`` bytes; and the orphaned temporary files, always. A graph belongs to
    no one model (it is keyed by vectors), so ``models`` leaves the graphs; a run rebuilds a removed one."""
    now = time.time_ns() if now_ns is None else now_ns
    held = inventory(root, now_ns=now)
    chosen: dict[Path, tuple[int, int]] = {}  # pack or graph: (size, entries; a graph has none)
    candidates = []
    files = [(path, shelf.digest in models) for shelf in held.shelves for path in shelf.packs]
    files += [(path, False) for path in held.graphs]
    graphs = set(held.graphs)
    for path, of_a_model in files:
        status = _status(path)
        if status is None:
            continue
        used = status.st_mtime_ns
        if of_a_model or (older_than_ns is not None and used < now - older_than_ns):
            chosen[path] = (status.st_size, _entries(path, graphs))
        else:
            candidates.append((used, path.name, path, status.st_size))
    if max_size is not None:
        remaining = sum(size for _, _, _, size in candidates)
        for _, _, path, size in sorted(candidates):  # least recently used first
            if remaining <= max_size:
                break
            chosen[path] = (size, _entries(path, graphs))
            remaining -= size
    removed: list[Path] = []
    failed: list[Stray] = []
    for path in chosen:
        try:
            if dry_run or unlink_pack(path):
                removed.append(path)
        except OSError as error:  # a read-only folder: the others are still removed
            failed.append(Stray(path, f"cannot be removed: {error.strerror or error}"))
    orphan_sizes = {path: _size(path) for path in held.orphans}
    gone = [path for path in held.orphans if dry_run or _unlink_quietly(path)]
    if not dry_run:
        for digest in models:
            _remove_model_folder(root / "embeddings" / digest)
    return Pruned(
        packs=tuple(path for path in removed if path not in graphs),
        entries=sum(chosen[path][1] for path in removed),
        graphs=tuple(path for path in removed if path in graphs),
        orphans=tuple(gone),
        freed=sum(chosen[path][0] for path in removed) + sum(orphan_sizes[path] for path in gone),
        failed=tuple(failed),
        strays=held.strays,
    )


def _entries(path: Path, graphs: set[Path]) -> int:
    if path in graphs:
        return 0
    try:
        return pack_entries(path)
    except OSError:  # gone meanwhile, or unreadable since: its entries are not known
        return 0


def orphans(root: Path, *, now_ns: int | None = None) -> list[Path]:
    """Temporary files under ``root`` that no running write will move into place: named by a process not
    running on this machine, or older than `ORPHAN_AGE_NS` (HNSW build scratch files: by age alone)."""
    now = time.time_ns() if now_ns is None else now_ns
    found = []
    for path in sorted(_temporary_files(root)):
        status = _status(path)
        if status is None:
            continue
        match = _WRITER_PID.search(path.name)
        if status.st_mtime_ns < now - ORPHAN_AGE_NS or (match is not None and not _running(int(match[1]))):
            found.append(path)
    return found


# --------------------------------------------------------------------------------------------------- helpers


def _model_folders(root: Path) -> list[Path]:
    embeddings = root / "embeddings"
    if not embeddings.is_dir():
        return []
    return sorted(path for path in embeddings.iterdir() if path.is_dir())


def _model_name(folder: Path) -> str:
    try:
        fingerprint = json.loads((folder / "fingerprint.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "?"
    if not isinstance(fingerprint, dict):
        return "?"
    # A module:attr model's name; a model folder's fingerprint names no model, only its class and files.
    for field in ("name", "class"):
        if isinstance(fingerprint.get(field), str) and fingerprint[field]:
            return str(fingerprint[field])
    return "?"


def _not_a_pack(status: os.stat_result) -> str | None:
    """What an entry named like a pack is when it is not a regular file (symlinks followed), else None."""
    if stat.S_ISREG(status.st_mode):
        return None
    kind = "a folder" if stat.S_ISDIR(status.st_mode) else special_kind(status.st_mode)
    return f"{kind}, not a pack file"


def _packs(folder: Path) -> list[Path]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [folder / name for name in sorted(names) if name.endswith(".pack") and not name.startswith(".")]


def _temporary_files(root: Path) -> Iterator[Path]:
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".tmp") or (name.startswith(".build-") and name.endswith(".hnsw")):
                yield Path(folder, name)


def _status(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:  # deleted meanwhile by a run (merged, repaired)
        return None


def _size(path: Path) -> int:
    status = _status(path)
    return 0 if status is None else status.st_size


def _running(pid: int) -> bool:
    """Whether a process of this id runs on this machine (where that cannot be asked: assumed so)."""
    if os.name == "nt":  # os.kill would end it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's
        return True
    return True


def _unlink_quietly(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:
        return False
    return True


def _remove_model_folder(folder: Path) -> None:
    """The model's folder, once its packs are gone; kept if a run is writing into it meanwhile."""
    for kind in KINDS:
        with contextlib.suppress(OSError):
            (folder / kind / ".claims.lock").unlink()
        with contextlib.suppress(OSError):
            (folder / kind).rmdir()  # not empty: a run stores vectors there now
    with contextlib.suppress(OSError):
        if os.listdir(folder) == ["fingerprint.json"]:
            (folder / "fingerprint.json").unlink()
            folder.rmdir()
