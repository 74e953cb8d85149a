"""The embedding cache: unit vectors on disk, content-addressed by model, kind and text.

An entry's key is (model, kind, text): the arm's digest (sha256 of its fingerprint: weights hash or revision,
configuration, prompts, normalisation, maximum sequence length), "query" or "document" (their prompts
differ), and the sha256 of the exact UTF-8 text embedded. A changed document has a new key and is embedded
again; an unchanged one never is, whichever process or machine embedded it first.

Layout under the cache root::

    embeddings/<model digest, 16 hex>/fingerprint.json      the model's fingerprint, for people
    embeddings/<model digest, 16 hex>/<kind>/<sha256>.pack  vectors; the file is named by its bytes' sha256

A *pack* holds the vectors of texts embedded together (at most ``PACK_ROWS``), so a corpus of 100,000 texts
is 25 files rather than 100,000. Its layout, little-endian, with no pickle anywhere::

    header   b"EMBVPK01" | model digest (32 bytes) | kind (u8: 0 query, 1 document) + 3 zero bytes
             | n (u32) | dim (u32) | sha256 of the header fields before it and of the index (32 bytes)
    index    n text digests (32 bytes each), then n crc32 of the vector rows (u32 each)
    vectors  n x dim float32, as `encoders.embed` returned them (L2-normalised)

A pack's index is verified before any of it is used and every row against its crc32 before it is served, so
a truncated or bit-flipped pack is detected: its intact rows are rewritten into a new pack, the damaged file
is deleted, and the lost entries are counted (the plugin reports the count once) and embedded again.

No lock is needed for concurrent writers (xdist workers, CI jobs sharing the directory). A pack is written
to a uniquely named temporary file in its directory and moved into place with ``os.replace``, which is
atomic: readers see a whole pack or none. Its name is the sha256 of its bytes, so two processes writing the
same pack write identical bytes under the same name, and whichever rename lands last changes nothing. Two
processes that embed overlapping texts write different packs with some keys in common: a duplicate costs disk,
never correctness, as any intact copy serves. The worst a race can do is delete a good pack (a process
discarding a damaged pack just as another rewrote the same bytes under that name), which costs a
recomputation, never a wrong vector. Packs are not fsync'ed: one torn by a crash fails its checksums like any
other damage.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from pytest_embeval.encoders import KINDS, Arm, EncoderError, Kind, embed, validate_texts
from pytest_embeval.output import write_atomic

__all__ = ["PACK_ROWS", "CacheStats", "EmbeddingCache", "Keyed", "text_key"]

#: Texts per pack. A multiple of `embed`'s batch size (64), so embedding the missing texts pack by pack
#: gives the model exactly the batches one call would.
PACK_ROWS = 4096

_MAGIC = b"EMBVPK01"
_FIELDS = struct.Struct("<8s32sB3xII")  # magic, model digest, kind, n, dim
_SHA = 32  # bytes of a sha256 digest: the index checksum, and each text key
_CRC = 4
_FLOAT = np.dtype("<f4")
_KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
# Lookups of texts whose pack vanished mid-read (replaced by another process) before giving up on them.
_ATTEMPTS = 3


class Keyed(Protocol):
    """What entries are stored under: an `encoders.Arm`, or anything else computed from texts and
    identified the same way (a reranker's scores are stored as one-value rows under its own digest)."""

    @property
    def digest(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...


def text_key(text: str) -> bytes:
    """The cache key of a text: sha256 of its UTF-8 bytes (lone surrogates kept, never an encoding error)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a cache did: texts served from it, texts embedded, corrupt entries discarded, and the first
    error that kept new vectors from being stored (the run goes on without storing them)."""

    read: int = 0
    embedded: int = 0
    corrupt: int = 0
    write_error: str | None = None

    def __sub__(self, before: CacheStats) -> CacheStats:
        return CacheStats(
            read=self.read - before.read,
            embedded=self.embedded - before.embedded,
            corrupt=self.corrupt - before.corrupt,
            write_error=self.write_error if self.write_error != before.write_error else None,
        )


@dataclass(frozen=True, slots=True, eq=False)  # identity: packs are compared with `is`
class _Pack:
    """A pack whose index was verified: where its rows are and what they must checksum to."""

    path: Path
    dim: int
    offset: int  # of the vectors
    keys: tuple[bytes, ...]
    crcs: np.ndarray


class _Damaged(Exception):
    """A pack that cannot be used at all; ``entries`` is how many it held (1 if its header is unreadable)."""

    def __init__(self, entries: int) -> None:
        super().__init__(entries)
        self.entries = entries


class _Shelf:
    """The packs of one model and kind that this process has indexed."""

    __slots__ = ("code", "directory", "model", "packs", "seen", "where")

    def __init__(self, directory: Path, model: bytes, code: int) -> None:
        self.directory = directory
        self.model = model
        self.code = code
        self.seen: set[str] = set()  # pack file names not to read again: indexed, or damaged and kept
        self.packs: dict[str, _Pack] = {}  # indexed packs by file name
        self.where: dict[bytes, tuple[_Pack, int]] = {}  # text key -> its first copy in an indexed pack

    def add(self, pack: _Pack) -> None:
        self.seen.add(pack.path.name)
        self.packs[pack.path.name] = pack
        for row, key in enumerate(pack.keys):
            self.where.setdefault(key, (pack, row))

    def forget(self, pack: _Pack) -> None:
        """Drop a pack that vanished or is being replaced; a file by its name is indexed again if it appears
        (content-addressed names come back whenever the same vectors are written again)."""
        self.seen.discard(pack.path.name)
        if self.packs.get(pack.path.name) is pack:
            del self.packs[pack.path.name]
        # Keys it held may have copies in other packs.
        self.where = {}
        for other in self.packs.values():
            for row, key in enumerate(other.keys):
                self.where.setdefault(key, (other, row))


class EmbeddingCache:
    """Embeddings on disk under ``root``; its :meth:`embed` is a drop-in for `encoders.embed`.

    Nothing is read or created before the first lookup or store.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._shelves: dict[tuple[str, Kind], _Shelf] = {}
        self._stats = CacheStats()

    def stats(self) -> CacheStats:
        return self._stats

    def embed(
        self,
        arm: Arm,
        texts: Sequence[str],
        kind: Kind,
        *,
        progress: Callable[[int, int], None] | None = None,
        role: str | None = None,
    ) -> np.ndarray:
        """`encoders.embed` through the cache: each distinct text missing from it is embedded once (the model
        is not touched, nor loaded, when none is missing) and stored; ``progress`` counts the missing texts.
        """
        validate_texts(texts, kind)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        vectors = self.lookup(arm, kind, unique)
        missing = [text for text in unique if text not in vectors]
        self._count(read=len(unique) - len(missing))
        for start in range(0, len(missing), PACK_ROWS):
            chunk = missing[start : start + PACK_ROWS]
            fresh = embed(arm, chunk, kind, progress=_shifted(progress, start, len(missing)), role=role)
            vectors.update(zip(chunk, fresh, strict=True))
            self._count(embedded=len(chunk))
            try:
                self.store(arm, kind, chunk, fresh)
            except OSError as error:  # a read-only or full cache must not fail the comparison
                self._count(write_error=f"{type(error).__name__}: {error}")
        dims = sorted({vector.shape[0] for vector in vectors.values()})
        if len(dims) > 1:
            who = f"{role} encoder {arm.spec!r}" if role else f"encoder {arm.spec!r}"
            raise EncoderError(
                f"{who}: the embedding cache {self.root} holds {kind} vectors of {dims} dimensions for "
                "the same model fingerprint, so the model changed without its fingerprint changing: give it "
                "a new `name` or `fingerprint`, or delete that cache folder"
            )
        return np.stack([vectors[text] for text in texts])

    def lookup(self, arm: Keyed, kind: Kind, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those ``texts`` that have an intact entry, by text."""
        shelf = self._shelf(arm, kind)
        pending = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        # A pack can vanish between indexing and reading when another process replaces it (a damaged one);
        # the replacement is written before the deletion, so a fresh scan finds it.
        for _ in range(_ATTEMPTS):
            self._scan(shelf)
            wanted: dict[Path, tuple[_Pack, list[tuple[str, int]]]] = {}
            for text in pending:
                location = shelf.where.get(text_key(text))
                if location is not None:
                    pack, row = location
                    wanted.setdefault(pack.path, (pack, []))[1].append((text, row))
            vanished = False
            for pack, rows in wanted.values():
                read = self._read(shelf, pack)
                if read is None:
                    vanished = True
                    continue
                vectors, intact = read
                found.update((text, vectors[row]) for text, row in rows if intact[row])
            if not vanished:
                break
            pending = [text for text in pending if text not in found]
        return found

    def store(self, arm: Keyed, kind: Kind, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store the vectors of ``texts``: one finite float32 row per text, as `encoders.embed` returns them.

        This is also how embeddings computed elsewhere (a batch job) are brought in: ``arm`` from
        `encoders.resolve_model` gives the same key without loading the model.
        """
        validate_texts(texts, kind)
        matrix = np.ascontiguousarray(vectors, dtype=_FLOAT)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise ValueError(f"vectors must have shape ({len(texts)}, d) with d >= 1, got {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise ValueError("vectors must be finite")
        shelf = self._shelf(arm, kind)
        shelf.directory.mkdir(parents=True, exist_ok=True)
        note = shelf.directory.parent / "fingerprint.json"
        if not note.exists():
            _write_atomic(note, [arm.fingerprint.encode("utf-8"), b"\n"])
        for start in range(0, len(texts), PACK_ROWS):
            keys = tuple(text_key(text) for text in texts[start : start + PACK_ROWS])
            shelf.add(_write_pack(shelf, keys, matrix[start : start + PACK_ROWS]))

    # ---------------------------------------------------------------------------------------------- internals

    def _count(
        self, *, read: int = 0, embedded: int = 0, corrupt: int = 0, write_error: str | None = None
    ) -> None:
        stats = self._stats
        self._stats = CacheStats(
            read=stats.read + read,
            embedded=stats.embedded + embedded,
            corrupt=stats.corrupt + corrupt,
            write_error=stats.write_error or write_error,
        )

    def _shelf(self, arm: Keyed, kind: Kind) -> _Shelf:
        shelf = self._shelves.get((arm.digest, kind))
        if shelf is None:
            model = bytes.fromhex(arm.digest.removeprefix("sha256:"))
            directory = self.root / "embeddings" / model.hex()[:16] / kind
            shelf = self._shelves[arm.digest, kind] = _Shelf(directory, model, _KIND_CODES[kind])
        return shelf

    def _scan(self, shelf: _Shelf) -> None:
        """Index the packs that appeared since the last scan (other processes write them too)."""
        try:
            names = sorted(os.listdir(shelf.directory))
        except FileNotFoundError:
            return
        for name in names:
            if not name.endswith(".pack") or name in shelf.seen:
                continue
            shelf.seen.add(name)
            path = shelf.directory / name
            try:
                pack = _read_index(path, shelf)
            except FileNotFoundError:  # deleted meanwhile by another process
                shelf.seen.discard(name)
                continue
            except _Damaged as damage:
                self._discard(shelf, path, damage.entries)
                continue
            if pack is not None:
                shelf.add(pack)

    def _read(self, shelf: _Shelf, pack: _Pack) -> tuple[np.ndarray, np.ndarray] | None:
        """The pack's vectors and which rows are intact (a damaged pack is replaced by its intact rows);
        None if the pack vanished."""
        row_bytes = pack.dim * _FLOAT.itemsize
        n = len(pack.keys)
        try:
            with pack.path.open("rb") as handle:
                handle.seek(pack.offset)
                raw = handle.read(n * row_bytes + 1)  # the byte too many reveals a file that grew
        except FileNotFoundError:
            shelf.forget(pack)
            return None
        whole = min(len(raw) // row_bytes, n)
        view = memoryview(raw)
        intact = np.zeros(n, dtype=bool)
        intact[:whole] = [
            zlib.crc32(view[row * row_bytes : (row + 1) * row_bytes]) == crc
            for row, crc in enumerate(pack.crcs[:whole].tolist())
        ]
        vectors = np.frombuffer(raw, dtype=_FLOAT, count=whole * pack.dim).reshape(whole, pack.dim)
        if len(raw) != n * row_bytes or not intact.all():
            self._replace(shelf, pack, vectors, intact)
        return vectors, intact

    def _replace(self, shelf: _Shelf, pack: _Pack, vectors: np.ndarray, intact: np.ndarray) -> None:
        """Rewrite a damaged pack's intact rows into a new pack, then delete it and count what was lost."""
        rows = np.flatnonzero(intact)
        shelf.forget(pack)
        if rows.size:
            try:
                kept = _write_pack(shelf, tuple(pack.keys[row] for row in rows), vectors[rows])
            except OSError:
                pass  # a read-only cache: the intact rows still serve this run, from memory
            else:
                shelf.add(kept)
                if kept.path == pack.path:
                    return  # nothing lost, bytes appended: the rewrite took the damaged file's place
        self._discard(shelf, pack.path, len(pack.keys) - int(rows.size))

    def _discard(self, shelf: _Shelf, path: Path, entries: int) -> None:
        """Delete a damaged pack and count its lost entries, unless another process deleted it first (and
        counted them)."""
        try:
            first = _unlink(path)
        except OSError:  # a read-only cache keeps it: not to be read (nor counted) again by this process
            shelf.seen.add(path.name)
            first = True
        else:
            # Whoever deleted it, the same content may come back under this name, valid: index it then.
            shelf.seen.discard(path.name)
        if first:
            self._count(corrupt=entries)


def _shifted(
    progress: Callable[[int, int], None] | None, start: int, total: int
) -> Callable[[int, int], None] | None:
    """``progress`` for one pack of the missing texts, reporting over all of them."""
    if progress is None:
        return None
    return lambda done, _: progress(start + done, total)


def _read_index(path: Path, shelf: _Shelf) -> _Pack | None:
    """The verified index of a pack; None for another model's pack (left alone); `_Damaged` if unusable."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(_FIELDS.size + _SHA)
        if len(head) < _FIELDS.size + _SHA or not head.startswith(_MAGIC):
            raise _Damaged(1)
        _, model, code, n, dim = _FIELDS.unpack_from(head)
        # Before the header is verified, n is only plausible if a writer could have written it.
        entries = n if 1 <= n <= PACK_ROWS else 1
        if len(head) + n * (_SHA + _CRC) > size:
            raise _Damaged(entries)  # truncated inside its index (or n is damaged)
        index = handle.read(n * (_SHA + _CRC))
    if hashlib.sha256(head[: _FIELDS.size] + index).digest() != head[_FIELDS.size :]:
        raise _Damaged(entries)
    if (model, code) != (shelf.model, shelf.code):
        return None  # not this model's: a misplaced file, or a 64-bit digest-prefix collision
    keys = tuple(index[i * _SHA : (i + 1) * _SHA] for i in range(n))
    crcs = np.frombuffer(index, dtype="<u4", offset=n * _SHA)
    return _Pack(path=path, dim=dim, offset=_FIELDS.size + _SHA + len(index), keys=keys, crcs=crcs)


def _write_pack(shelf: _Shelf, keys: tuple[bytes, ...], vectors: np.ndarray) -> _Pack:
    matrix = np.ascontiguousarray(vectors, dtype=_FLOAT)
    data = matrix.tobytes()
    rows = memoryview(data)
    row_bytes = matrix.shape[1] * _FLOAT.itemsize
    crcs = np.array(
        [zlib.crc32(rows[row * row_bytes : (row + 1) * row_bytes]) for row in range(len(keys))], dtype="<u4"
    )
    fields = _FIELDS.pack(_MAGIC, shelf.model, shelf.code, len(keys), matrix.shape[1])
    index = b"".join(keys) + crcs.tobytes()
    parts = [fields, hashlib.sha256(fields + index).digest(), index, data]
    name = hashlib.sha256(b"".join(parts)).hexdigest()
    path = shelf.directory / f"{name}.pack"
    _write_atomic(path, parts)
    return _Pack(path=path, dim=matrix.shape[1], offset=len(fields) + _SHA + len(index), keys=keys, crcs=crcs)


def _write_atomic(path: Path, parts: Sequence[bytes]) -> None:
    """`write_atomic`, for files named by their content: an existing file at ``path`` holds these bytes."""
    try:
        write_atomic(path, parts)
    except PermissionError:
        # Windows cannot replace a file another process has open; that file holds these very bytes.
        if not path.exists():
            raise


def _unlink(path: Path) -> bool:
    """Delete ``path``; False if another process already did."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
