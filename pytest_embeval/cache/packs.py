"""The pack files of the embedding cache, and the index of them one process keeps.

A *pack* holds the vectors of texts embedded together (at most ``PACK_ROWS``). Its layout, little-endian,
with no pickle anywhere::

    header   b"EMBVPK02" | model digest (32 bytes) | kind (u8: 0 query, 1 document) + 3 zero bytes
             | n (u32) | dim (u32) | sha256 of the header fields before it and of the index (32 bytes)
    index    n text digests (32 bytes each), n crc32 of the vector rows (u32 each), then n token counts
             (u32 each: what embedding the text cost at an endpoint billed by the token, 0 otherwise)
    vectors  n x dim float32, as `embedding.embed` returned them (L2-normalised)

Packs written by pytest-embeval 0.1 (b"EMBVPK01", no token counts) are read as costing no tokens. A pack's
index is verified before any of it is used (`read_index`); a pack is written to a uniquely named temporary
file and renamed into place under the sha256 of its bytes (`write_pack`), so a file whose bytes hash to its
name is a good pack and any other is damaged, which is how a damaged pack is deleted without ever deleting
the good one another process put under its name (`remove_damaged`). `Shelf` is what this process has
indexed of one model and kind, found through `_Locator`.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import struct
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from pytest_embeval.arms.embedding import KINDS
from pytest_embeval.files.atomic import write_atomic

__all__ = [
    "FLOAT",
    "KIND_CODES",
    "PACK_ROWS",
    "DamagedPack",
    "Pack",
    "Shelf",
    "check_pack",
    "pack_entries",
    "read_index",
    "remove_damaged",
    "token_counts",
    "unlink_pack",
    "write_named",
    "write_pack",
]


_MAGIC = b"EMBVPK02"


_MAGIC_V1 = b"EMBVPK01"  # without token counts


_FIELDS = struct.Struct("<8s32sB3xII")  # magic, model digest, kind, n, dim


_SHA = 32  # bytes of a sha256 digest: the index checksum, and each text key


_CRC = 4


_TOKENS = 4


FLOAT = np.dtype("<f4")


KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}


@dataclass(frozen=True, slots=True, eq=False)  # identity: packs are compared with `is`
class Pack:
    """A pack whose index was verified: where its rows are and what they must checksum to."""

    path: Path
    dim: int
    offset: int  # of the vectors
    keys: tuple[bytes, ...]
    crcs: np.ndarray
    tokens: np.ndarray  # per row, uint32
    #: the file's modification time when indexed or written: when it was last used (see `store`)
    modified_ns: int = 0


class DamagedPack(Exception):
    """A pack that cannot be used at all; ``entries`` is how many it held, None when its header cannot be
    read (an emptied or overwritten file: how many it held is unknown)."""

    def __init__(self, entries: int | None) -> None:
        super().__init__(entries)
        self.entries = entries


class _Locator:
    """Where the first copy of each text key is among a shelf's indexed packs (first in the order the packs
    were indexed, then by row), found for many keys at once: the keys sorted by their first 8 bytes, a
    binary search, a comparison of the whole keys. 403,000 lookups take 0.1 s, against 2 s for a dict
    lookup and a Python loop per key (benchmarks/README.md, "At the practice's scale")."""

    __slots__ = ("keys", "pack_of", "packs", "prefixes", "row_of")

    def __init__(self, packs: Iterable[Pack]) -> None:
        self.packs = tuple(packs)
        keys = _key_array(key for pack in self.packs for key in pack.keys)
        sizes = [len(pack.keys) for pack in self.packs]
        pack_of = np.repeat(np.arange(len(self.packs), dtype=np.intp), sizes)
        row_of = np.concatenate([np.empty(0, dtype=np.intp), *(np.arange(n, dtype=np.intp) for n in sizes)])
        prefixes = _prefixes(keys)
        # Stable: among copies of a key, the first indexed stays first.
        order = np.argsort(prefixes, kind="stable")
        self.keys, self.prefixes = keys[order], prefixes[order]
        self.pack_of, self.row_of = pack_of[order], row_of[order]

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For ``wanted`` keys (`_key_array`): which have a copy, and the pack number and row of the first
        copy of each that has one."""
        found = np.zeros(wanted.shape[0], dtype=bool)
        if self.keys.size == 0 or wanted.size == 0:
            return found, np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
        prefixes = _prefixes(wanted)
        at = np.minimum(np.searchsorted(self.prefixes, prefixes), self.keys.size - 1)
        found[:] = self.keys[at] == wanted
        # Two different keys with the same 8-byte prefix (about one pair in 10^8 at a million texts): the
        # wanted one, if present, comes later among the keys sharing it.
        for i in np.flatnonzero(~found & (self.prefixes[at] == prefixes)).tolist():
            j = int(at[i]) + 1
            while j < self.keys.size and self.prefixes[j] == prefixes[i]:
                if self.keys[j] == wanted[i]:
                    at[i], found[i] = j, True
                    break
                j += 1
        return found, self.pack_of[at[found]], self.row_of[at[found]]


def _key_array(keys: Iterable[bytes]) -> np.ndarray:
    """32-byte text keys as one numpy array of ``S32`` items (equal items: equal keys)."""
    return np.frombuffer(b"".join(keys), dtype="S32")


def _prefixes(keys: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each ``S32`` key as an unsigned integer (keys are sha256 digests: uniform)."""
    return keys.view(">u8")[::4].astype(np.uint64) if keys.size else np.empty(0, dtype=np.uint64)


def read_index(path: Path, shelf: Shelf | None) -> Pack | None:
    """The verified index of a pack; None for another model's pack than the shelf's (left alone);
    `DamagedPack` if unusable."""
    with path.open("rb") as handle:
        status = os.fstat(handle.fileno())
        size = status.st_size
        head = handle.read(_FIELDS.size + _SHA)
        if len(head) < _FIELDS.size + _SHA or not head.startswith((_MAGIC, _MAGIC_V1)):
            raise DamagedPack(None)
        magic, model, code, n, dim = _FIELDS.unpack_from(head)
        # Before the header is verified, n is only plausible if a writer could have written it.
        entries = n if 1 <= n <= PACK_ROWS else None
        row_index = _SHA + _CRC + (_TOKENS if magic == _MAGIC else 0)
        if len(head) + n * row_index > size:
            raise DamagedPack(entries)  # truncated inside its index (or n is damaged)
        index = handle.read(n * row_index)
    if hashlib.sha256(head[: _FIELDS.size] + index).digest() != head[_FIELDS.size :]:
        raise DamagedPack(entries)
    if shelf is not None and (model, code) != (shelf.model, shelf.code):
        return None  # not this model's: a misplaced file, or a 64-bit digest-prefix collision
    keys = tuple(index[i * _SHA : (i + 1) * _SHA] for i in range(n))
    crcs = np.frombuffer(index, dtype="<u4", count=n, offset=n * _SHA)
    if magic == _MAGIC:
        tokens = np.frombuffer(index, dtype="<u4", count=n, offset=n * (_SHA + _CRC))
    else:
        tokens = np.zeros(n, dtype="<u4")
    return Pack(
        path=path,
        dim=dim,
        offset=_FIELDS.size + _SHA + len(index),
        keys=keys,
        crcs=crcs,
        tokens=tokens,
        modified_ns=status.st_mtime_ns,
    )


def pack_entries(path: Path) -> int:
    """The rows a pack's header declares, unverified (0 if it holds no header); `OSError` if the file cannot
    be read."""
    with path.open("rb") as handle:
        head = handle.read(_FIELDS.size)
    if len(head) < _FIELDS.size or not head.startswith((_MAGIC, _MAGIC_V1)):
        return 0
    return int(_FIELDS.unpack(head)[3])


def check_pack(path: Path) -> tuple[int | None, int | None]:
    """``(entries, lost)`` of a pack, every row read and checked: all entries are lost when its header or
    index is damaged (None, None when its header cannot be read), the rows missing or failing their crc32
    otherwise (bytes appended are no damage). `OSError` for a pack that cannot be read at all."""
    try:
        pack = read_index(path, None)
    except DamagedPack as damage:
        return damage.entries, damage.entries
    assert pack is not None
    n, row_bytes = len(pack.keys), pack.dim * FLOAT.itemsize
    lost = 0
    with path.open("rb") as handle:
        handle.seek(pack.offset)
        for crc in pack.crcs.tolist():
            row = handle.read(row_bytes)
            if len(row) < row_bytes or zlib.crc32(row) != crc:
                lost += 1
    return n, lost


def write_pack(shelf: Shelf, keys: tuple[bytes, ...], vectors: np.ndarray, tokens: np.ndarray) -> Pack:
    matrix = np.ascontiguousarray(vectors, dtype=FLOAT)
    counts = np.ascontiguousarray(tokens, dtype="<u4")
    data = matrix.tobytes()
    rows = memoryview(data)
    row_bytes = matrix.shape[1] * FLOAT.itemsize
    crcs = np.array(
        [zlib.crc32(rows[row * row_bytes : (row + 1) * row_bytes]) for row in range(len(keys))], dtype="<u4"
    )
    fields = _FIELDS.pack(_MAGIC, shelf.model, shelf.code, len(keys), matrix.shape[1])
    index = b"".join(keys) + crcs.tobytes() + counts.tobytes()
    parts = [fields, hashlib.sha256(fields + index).digest(), index, data]
    name = hashlib.sha256(b"".join(parts)).hexdigest()
    path = shelf.directory / f"{name}.pack"
    write_named(path, parts)
    return Pack(
        path=path,
        dim=matrix.shape[1],
        offset=len(fields) + _SHA + len(index),
        keys=keys,
        crcs=crcs,
        tokens=counts,
        modified_ns=time.time_ns(),
    )


def write_named(path: Path, parts: Sequence[bytes]) -> None:
    """`write_atomic`, for files named by their content: an existing file at ``path`` holds these bytes."""
    try:
        write_atomic(path, parts)
    except PermissionError:
        # Windows cannot replace a file another process has open; that file holds these very bytes.
        if not path.exists():
            raise


def unlink_pack(path: Path) -> bool:
    """Delete ``path``; False if another process already did."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def remove_damaged(path: Path) -> bool:
    """Delete the pack at ``path`` if it is damaged (its bytes do not hash to its name); False if it is gone
    already, or if a good pack took its place since it was found damaged (left there).

    Two processes that meet one damaged pack both repair it, and the first one to merge the repair with the
    rows it recomputed writes the very bytes the damaged file was written with, under the same name. To
    check which file is there and then delete by name would delete that good pack whenever the other process
    lands in between (a lookup then embeds again every text it held: one xdist run in 45, under load). So
    the file is moved aside atomically, under a temporary name, while the damaged file is held open (its
    inode cannot be reused meanwhile), and deleted only if what was moved is that file; another process's
    good pack, moved by that very race, goes back under its name.
    """
    aside = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with path.open("rb") as handle:
            if _holds_its_name(handle, path):
                return False
            os.rename(path, aside)
            moved_it = os.path.samestat(os.fstat(handle.fileno()), os.stat(aside))
    except FileNotFoundError:  # deleted by another process meanwhile
        return False
    if not moved_it:
        os.replace(aside, path)
        return False
    os.unlink(aside)
    return True


def _holds_its_name(handle: BinaryIO, path: Path) -> bool:
    """Whether the bytes ``handle`` reads from its start hash to ``path``'s name (`write_pack`)."""
    digest = hashlib.sha256()
    while chunk := handle.read(2**20):
        digest.update(chunk)
    return digest.hexdigest() == path.stem


class Shelf:
    """The packs of one model and kind that this process has indexed."""

    __slots__ = (
        "_locator",
        "_recent",
        "_recent_packs",
        "code",
        "directory",
        "model",
        "noted",
        "packs",
        "seen",
    )

    def __init__(self, directory: Path, model: bytes, code: int) -> None:
        self.directory = directory
        self.model = model
        self.code = code
        self.noted = False  # fingerprint.json exists
        self.seen: set[str] = set()  # pack file names not to read again: indexed, or damaged and kept
        self.packs: dict[str, Pack] = {}  # indexed packs by file name
        self._locator: _Locator | None = None  # None: to be built when next needed
        # Packs indexed since the locator was built, and their keys' first copies (number in that list,
        # row): a store adds packs one call at a time (`embeval embed`, a block after another), and
        # rebuilding the locator over every key for each would cost time quadratic in the corpus.
        self._recent_packs: list[Pack] = []
        self._recent: dict[bytes, tuple[int, int]] = {}

    def find(self, keys: Sequence[bytes]) -> tuple[np.ndarray, tuple[Pack, ...], np.ndarray, np.ndarray]:
        """For these text keys: which have a copy in the packs indexed now, those packs, and for each key
        that has one the number (in those packs) and row of its first copy."""
        if self._locator is None:
            self._locator = _Locator(self.packs.values())
            self._recent_packs, self._recent = [], {}
        found, numbers, rows = self._locator.find(_key_array(keys))
        packs = self._locator.packs
        if not self._recent:
            return found, packs, numbers, rows
        # Keys the locator lacks may be in the recent packs, indexed after its packs (so after its copies).
        number_of = np.full(len(keys), -1, dtype=np.intp)
        row_of = np.full(len(keys), -1, dtype=np.intp)
        number_of[found], row_of[found] = numbers, rows
        for i in np.flatnonzero(~found).tolist():
            location = self._recent.get(keys[i])
            if location is not None:
                number_of[i], row_of[i] = len(packs) + location[0], location[1]
                found[i] = True
        return found, packs + tuple(self._recent_packs), number_of[found], row_of[found]

    def add(self, pack: Pack) -> None:
        self.seen.add(pack.path.name)
        self.packs[pack.path.name] = pack
        if self._locator is None:
            return  # it will index this pack when it is built
        number = len(self._recent_packs)
        self._recent_packs.append(pack)
        for row, key in enumerate(pack.keys):
            self._recent.setdefault(key, (number, row))
        if len(self._recent) > max(PACK_ROWS, self._locator.keys.size // 4):
            self._locator = None  # rebuilt when next needed: the recent keys are a quarter of it

    def forget(self, pack: Pack) -> None:
        """Drop a pack that vanished or is being replaced; a file by its name is indexed again if it appears
        (content-addressed names come back whenever the same vectors are written again)."""
        self.seen.discard(pack.path.name)
        if self.packs.get(pack.path.name) is pack:
            del self.packs[pack.path.name]
        # Keys it held may have copies in other packs: found when the locator is next built, once however
        # many packs were dropped meanwhile (a merge drops hundreds).
        self._locator = None


#: Most texts per pack.
PACK_ROWS = 4096


def token_counts(tokens: Sequence[int] | np.ndarray | None, n: int) -> np.ndarray:
    """The tokens of ``n`` texts as a pack stores them, uint32 (zeros when not given), validated."""
    if tokens is None:
        return np.zeros(n, dtype="<u4")
    counts = np.asarray(tokens)
    if counts.shape != (n,) or counts.dtype.kind not in "iu" or (counts < 0).any() or (counts >= 2**32).any():
        raise ValueError(
            f"tokens must be {n} integers from 0 to 2**32 - 1, got {counts.dtype} {counts.shape}"
        )
    return counts.astype("<u4")
