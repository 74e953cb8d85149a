"""The protocol a vector database is driven through, and what every engine shares: opening the declared one,
its faults as one line, and naming, marking and cleaning up the collections a run builds in it.

An adapter (`VectorIndex`) does four things with a collection: build it from ids, vectors and filterable
fields (`create`), search it with query vectors, a depth and one filter (`search`), describe it
(`parameters`) and drop it (`drop`); and it lists the collections it holds that carry a marker (`markers`).
An adapter whose search has a parameter a recall target can tune (HNSW's ``ef_search``, IVF's ``nprobes``)
also offers `TunableIndex`. Everything else (one collection per arm, the per-query filters grouped into one
search per distinct filter, the exact rescoring, the recall against exact search, the latency) is the same
for every engine and lives in `engine_search`. Filters reach an adapter as the golden set's own `Filter`
mappings (field -> the values one of which a record must hold, compared as text); each adapter generates
its engine's syntax from them.

Collections are named ``embeval-<golden>-<arm>-<token>``: a digest of the golden file's path, the arm, and a
random token, so two runs never build into one collection. Each carries a marker (`owner_marker`): the
golden file's digest, the host and process id that built it, and whether it is to be kept. A run drops its
collections when its arm is done, whatever happened (`engine_search.EngineCollection.drop`, called from the
pipeline's ``finally``); a run killed outright cannot, so before it builds anything, a run removes the
collections of its own golden file built on its own host by a process that is no longer running, and
nothing else (`remove_leftovers`): not another golden file's, not another host's (which it cannot tell
from a live one), not a live process's, not a kept one, and never a collection without the prefix.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import secrets
import socket
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from pytest_embeval.golden.engine_spec import ENGINE_EXTRAS, EngineSpec
from pytest_embeval.golden.filters import Filter

__all__ = [
    "COLLECTION_PREFIX",
    "EngineError",
    "Found",
    "LeftoverCollectionsWarning",
    "OpenedEngine",
    "Records",
    "SearchParameter",
    "TunableIndex",
    "VectorIndex",
    "collection_name",
    "golden_key",
    "guarded",
    "leftovers",
    "open_index",
    "opened_engine",
    "owner_marker",
    "remove_leftovers",
]

#: Every collection a run builds is named with this prefix; no other collection is ever touched.
COLLECTION_PREFIX = "embeval-"
#: The marker's keys (string values, which every engine's collection metadata can hold).
MARK_GOLDEN = "embeval_golden"
MARK_HOST = "embeval_host"
MARK_PID = "embeval_pid"
MARK_KEPT = "embeval_kept"


@dataclass(frozen=True, slots=True, eq=False)
class Records:
    """What a collection is built from, in this order (the same for both arms): each record's id, its
    vector (float32 rows of unit length: inner product is cosine similarity) and its filterable fields (field
    -> values, compared as text; a record without a field does not have it)."""

    ids: Sequence[str]
    vectors: np.ndarray
    fields: Sequence[Mapping[str, tuple[str, ...]]]


@dataclass(frozen=True, slots=True)
class Found:
    """One query's results as the engine returned them: ids, best first, and the engine's similarity for
    each (larger is closer; an adapter converts a distance)."""

    ids: tuple[str, ...]
    scores: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SearchParameter:
    """The search parameter a recall target tunes: its name, its value now, and the range it is chosen
    from (``low``: the least worth trying for this depth; ``high``: the value that searches everything the
    index can reach)."""

    name: str
    value: int
    low: int
    high: int


@runtime_checkable
class VectorIndex(Protocol):
    """A vector database, connected and configured with the golden file's parameters.

    ``engine`` and ``address`` name it in every message (``chroma``, ``http://10.0.0.5:8000``); ``version``
    is recorded with the parameters. Every method may raise what the engine's client raises: the caller
    turns it into one line naming the engine and the address (`guarded`).
    """

    engine: str
    address: str
    version: str

    def create(self, name: str, records: Records, marker: Mapping[str, str]) -> None:
        """Build collection ``name`` from ``records`` (added in their order) and store ``marker`` with it,
        so that `markers` can list it."""
        ...

    def search(self, name: str, queries: np.ndarray, k: int, where: Filter | None) -> Sequence[Found]:
        """The ``k`` nearest records of each query row (float32, unit length) among those ``where`` allows
        (None: all), one `Found` per row, in row order; fewer than ``k`` where fewer are allowed."""
        ...

    def parameters(self, name: str) -> Mapping[str, Any]:
        """How collection ``name`` is indexed and searched, as the engine reports it (plain JSON values)."""
        ...

    def drop(self, name: str) -> None:
        """Delete collection ``name``."""
        ...

    def markers(self, prefix: str) -> Mapping[str, Mapping[str, str]]:
        """Every collection whose name starts with ``prefix``, with the marker it was created with ({} when
        it has none)."""
        ...

    def close(self) -> None:
        """Let go of the connection (and anything the adapter made for itself)."""
        ...


@runtime_checkable
class TunableIndex(Protocol):
    """An adapter whose search parameter a recall target can choose, collection by collection."""

    def search_parameter(self, name: str, k: int) -> SearchParameter | None:
        """Collection ``name``'s search parameter for searches of depth ``k``; None when this collection has
        none (an exhaustive index)."""
        ...

    def set_search_parameter(self, name: str, value: int) -> None:
        """Search collection ``name`` with this value from now on."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class OpenedEngine:
    """The engine a golden set's arms each build a collection in: its adapter, opened once for the golden
    set (`open_index`), the golden file's digest (`golden_key`) and whether collections are kept."""

    index: VectorIndex
    golden: str
    keep: bool = False


class EngineError(Exception):
    """A vector database failed (down, slow past its timeout, refusing a write, answering what cannot be
    used): one line naming the engine and its address. A fault of the engine, never a verdict."""

    def __init__(self, engine: str, address: str, problem: str) -> None:
        self.engine, self.address, self.problem = engine, address, problem
        super().__init__(f"{engine} at {address}: {problem}")

    def __reduce__(self) -> tuple[type[EngineError], tuple[str, str, str]]:
        return EngineError, (self.engine, self.address, self.problem)


T = TypeVar("T")


def guarded(index: VectorIndex, what: str, call: Callable[[], T]) -> T:
    """``call()``, with whatever it raises turned into an `EngineError` saying ``what`` was being done: the
    first line of the client's message after its class name (an `EngineError` passes as it is)."""
    try:
        return call()
    except EngineError:
        raise
    except Exception as error:
        raise EngineError(index.engine, index.address, f"{what}: {describe_fault(error)}") from error


def describe_fault(error: BaseException) -> str:
    """What a client's exception says, on one line: its class and its message's first line, or the first
    line of what caused it when it has no message of its own (``httpx.ReadTimeout('')``)."""
    current: BaseException | None = error
    while current is not None:
        lines = str(current).strip().splitlines()
        if lines:
            return f"{type(error).__name__}: {lines[0]}"
        current = current.__cause__ or current.__context__
    return type(error).__name__


def open_index(spec: EngineSpec) -> VectorIndex:
    """The declared engine's adapter, connected: a shipped one (its client imported only now), or a
    ``service`` factory called with its keyword arguments. Raises `EngineError` when it cannot be."""
    address = str(spec.params.get("url") or spec.params.get("path") or spec.factory or spec.engine)
    if spec.engine in ENGINE_EXTRAS:
        package, extra = ENGINE_EXTRAS[spec.engine]
        try:
            importlib.import_module(package)
        except ImportError:
            problem = f"needs {package}, which is not installed: pip install 'pytest-embeval[{extra}]'"
            raise EngineError(spec.engine, address, problem) from None
        module = importlib.import_module(f"pytest_embeval.search.engines.{_MODULES[spec.engine]}")
        factory: Callable[..., Any] = module.ADAPTER
    else:
        module_name, _, attribute = str(spec.factory).partition(":")
        try:
            found: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                found = getattr(found, part)
        except Exception as error:
            raise EngineError(
                "service", address, f"cannot load {spec.factory}: {describe_fault(error)}"
            ) from None
        factory = found
    try:
        index = factory(**spec.params)
    except EngineError:
        raise
    except Exception as error:
        raise EngineError(spec.engine, address, f"cannot open: {describe_fault(error)}") from error
    if not isinstance(index, VectorIndex):
        raise EngineError(
            spec.engine,
            address,
            f"{spec.factory} returned a {type(index).__name__}, which lacks what the VectorIndex protocol "
            "needs (engine, address, version, create, search, parameters, drop, markers, close)",
        )
    return index


_MODULES = {"chroma": "chroma", "lancedb": "lance"}


def golden_key(path: Path) -> str:
    """A golden file's digest in collection names and markers: its resolved path's, 12 hex digits."""
    return hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:12]


def collection_name(golden: str, arm: str) -> str:
    """A fresh collection name for ``arm`` of the golden file with digest ``golden``: the prefix, the
    digest, the arm (lower-case letters, digits and dashes, at most 24) and a random token; at most 56
    characters of ``[a-z0-9-]``, which every engine accepts as a name."""
    shown = "".join(c if c.isascii() and c.isalnum() else "-" for c in arm.lower()).strip("-")[:24] or "arm"
    return f"{COLLECTION_PREFIX}{golden}-{shown}-{secrets.token_hex(4)}"


def owner_marker(golden: str, *, keep: bool) -> dict[str, str]:
    """What a collection records of who built it: the golden file's digest, this host and process, and
    whether it is to be kept after the run."""
    return {
        MARK_GOLDEN: golden,
        MARK_HOST: socket.gethostname(),
        MARK_PID: str(os.getpid()),
        MARK_KEPT: "1" if keep else "0",
    }


def _running(pid: int) -> bool:
    """Whether a process with this id runs on this host (on Windows, where a signal 0 would end it, every
    process is taken to be running: leftovers are then never removed, only left)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and belongs to someone else
        return True
    return True


def leftovers(markers: Mapping[str, Mapping[str, str]], golden: str) -> list[str]:
    """The collections among ``markers`` that a run of golden file ``golden`` removes: named with the prefix,
    marked as built for that golden file on this host by a process that no longer runs, and not kept."""
    host = socket.gethostname()
    found = []
    for name, marker in markers.items():
        pid = str(marker.get(MARK_PID, ""))
        if (
            name.startswith(COLLECTION_PREFIX)
            and marker.get(MARK_GOLDEN) == golden
            and marker.get(MARK_HOST) == host
            and marker.get(MARK_KEPT) == "0"
            and pid.isdigit()
            and int(pid) != os.getpid()
            and not _running(int(pid))
        ):
            found.append(name)
    return sorted(found)


def remove_leftovers(index: VectorIndex, golden: str) -> list[str]:
    """Drop the collections an interrupted run of this golden file left in the engine (`leftovers`), and
    return their names."""
    markers = guarded(index, "listing collections", lambda: index.markers(COLLECTION_PREFIX))
    names = leftovers(markers, golden)
    for name in names:
        guarded(index, f"dropping leftover collection {name!r}", lambda name=name: index.drop(name))  # type: ignore[misc]
    return names


class LeftoverCollectionsWarning(UserWarning):
    """A run removed collections an interrupted run of the same golden file left in the engine."""


@contextlib.contextmanager
def opened_engine(spec: EngineSpec, golden_path: Path, *, keep: bool = False) -> Iterator[OpenedEngine]:
    """The declared engine opened for a golden set's arms (`open_index`), once its leftovers are removed
    (`remove_leftovers`, with a `LeftoverCollectionsWarning` naming them), and closed after; ``keep`` (or
    the spec's own ``keep``) leaves the arms' collections after the run."""
    index = open_index(spec)
    try:
        golden = golden_key(golden_path)
        removed = remove_leftovers(index, golden)
        if removed:
            warnings.warn(
                LeftoverCollectionsWarning(
                    f"{index.engine} at {index.address}: removed {len(removed)} collection(s) an interrupted "
                    f"run of this golden file left behind: {', '.join(removed)}"
                ),
                stacklevel=3,
            )
        yield OpenedEngine(index=index, golden=golden, keep=keep or spec.keep)
    finally:
        index.close()
