"""The embedding cache: unit vectors on disk, content-addressed by model, kind and text.

An entry's key is (model, kind, text): the arm's digest (sha256 of its fingerprint: weights hash or revision,
configuration, prompts, normalisation, maximum sequence length), "query" or "document" (their prompts
differ), and the sha256 of the exact UTF-8 text embedded. A changed document has a new key and is embedded
again; an unchanged one never is, whichever process or machine embedded it first.

Layout under the cache root::

    embeddings/<model digest, 16 hex>/fingerprint.json      the model's fingerprint, for people
    embeddings/<model digest, 16 hex>/<kind>/<sha256>.pack  vectors; the file is named by its bytes' sha256
    digests/<sha256>.sha256                                  a model file's digest (`digests.file_sha256`)

A *pack* holds the vectors of texts embedded together (at most ``PACK_ROWS``). Each encoder call's vectors
are stored as a pack the moment the call returns, so a run that is interrupted (Ctrl-C, a killed CI job, an
endpoint that gives up) loses at most the calls in flight; when an `EmbeddingCache.embed` call ends, its small
packs (and any an interrupted run left) are merged into packs of up to ``PACK_ROWS``, so a corpus of 100,000
texts is read from a few dozen files (their format: `packs`).

A pack's index is verified before any of it is used and every row against its crc32 before it is served, so
a truncated or bit-flipped pack is detected: its intact rows are rewritten into a new pack, the damaged file
is deleted, and the lost entries are counted (the plugin reports the count once) and embedded again.

Processes sharing the folder (xdist workers, CI jobs) embed a text they all need once: each claims the
texts it is about to embed, and one that needs texts another is embedding waits for them and reads them
(`claims`). No lock is needed for concurrent writers. A pack is written
to a uniquely named temporary file in its directory and moved into place with ``os.replace``, which is
atomic: readers see a whole pack or none. Its name is the sha256 of its bytes, so two processes writing the
same pack write identical bytes under the same name, and whichever rename lands last changes nothing. Two
processes that embed overlapping texts write different packs with some keys in common: a duplicate costs disk,
never correctness, as any intact copy serves. A merge, like the repair of a damaged pack, writes the new pack
before it deletes the old ones, so a reader that finds a pack gone, when it reads it or when it indexes a
file it listed, scans again and finds its rows. A damaged pack is deleted only while it is still the damaged
file: another process's good pack written under its name meanwhile stays (`packs.remove_damaged`). Packs are
not fsync'ed: one torn by a crash fails its checksums like any other damage.

A pack's modification time is when it was last used: a lookup that reads a pack last modified more than
`USE_RESOLUTION_NS` ago sets it to now (one ``utime`` per pack and hour, never a write of its bytes), and
``embeval cache prune`` removes the least recently used first. Not the access time: file systems mounted
``noatime`` or ``relatime`` do not keep it, and a CI cache saved and restored as an archive keeps
modification times only.

A cache folder that cannot be created, read or written (under a file, read-only, disk full) never fails the
run: what cannot be read is embedded, and the first error that kept vectors from being stored is kept in
`CacheStats.write_error` for the plugin's one line.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from pytest_embeval.arms.embedding import Arm, EncoderError, Kind, embed, validate_texts
from pytest_embeval.cache.claims import Claim, claim
from pytest_embeval.cache.pack_reads import (
    RowsRead,
    consecutive,
    copy_rows,
    read_each,
    read_outcome,
    result_matrix,
)
from pytest_embeval.cache.packs import (
    FLOAT,
    KIND_CODES,
    PACK_ROWS,
    DamagedPack,
    Pack,
    Shelf,
    read_index,
    remove_damaged,
    token_counts,
    unlink_pack,
    write_named,
    write_pack,
)
from pytest_embeval.core.canonical import KeyedTexts, text_key

__all__ = ["MERGE_BELOW", "USE_RESOLUTION_NS", "CacheStats", "EmbeddingCache", "Keyed", "text_key"]

#: Packs with fewer rows are merged when an `EmbeddingCache.embed` call that stored something ends. Bigger
#: packs are left alone, so a session that adds a few texts rewrites at most this many rows.
MERGE_BELOW = PACK_ROWS // 4

#: How stale a pack's last use (its modification time) may be before a lookup that reads it sets it anew.
USE_RESOLUTION_NS = 3600 * 10**9

# Lookups of texts whose pack vanished mid-read (replaced by another process) before giving up on them and
# embedding them again, and listings of a folder whose listed pack vanished before its index was read.
# Replacements come in chains: two workers that meet one damaged pack each repair it (its intact rows
# rewritten) and then merge the repair with the rows they recomputed, each step deleting the pack the other
# may be about to read.
_ATTEMPTS = 8


class Keyed(Protocol):
    """What entries are stored under: an `embedding.Arm`, or anything else computed from texts and
    identified the same way (a reranker's scores are stored as one-value rows under its own digest)."""

    @property
    def digest(self) -> str: ...

    @property
    def fingerprint(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a cache did: texts served from it, texts embedded, corrupt entries discarded, packs discarded
    whose header could not be read (how many entries they held is unknown), and the first error that kept
    new vectors from being stored (the run goes on without storing them)."""

    read: int = 0
    embedded: int = 0
    corrupt: int = 0
    write_error: str | None = None
    unreadable: int = 0

    def __sub__(self, before: CacheStats) -> CacheStats:
        return CacheStats(
            read=self.read - before.read,
            embedded=self.embedded - before.embedded,
            corrupt=self.corrupt - before.corrupt,
            unreadable=self.unreadable - before.unreadable,
            write_error=self.write_error if self.write_error != before.write_error else None,
        )


class EmbeddingCache:
    """Embeddings on disk under ``root``; its :meth:`embed` is a drop-in for `embedding.embed`.

    Nothing is read or created before the first lookup or store.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._shelves: dict[tuple[str, Kind], Shelf] = {}
        self._stats = CacheStats()
        self._used: set[Path] = set()  # packs whose last use this process has set

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
        """`embedding.embed` through the cache: each distinct text missing from it is embedded once (the model
        is not touched, nor loaded, when none is missing), and each encoder call's vectors are stored as it
        returns; ``progress`` counts the missing texts. An arm with `Arm.usage` is told the tokens the texts
        served from the cache had cost.
        """
        validate_texts(texts, kind)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        if isinstance(texts, KeyedTexts):  # hashed already
            key_of = dict(zip(texts.texts, texts.keys, strict=True))
            unique, keys = list(key_of), list(key_of.values())
        else:
            unique = list(dict.fromkeys(texts))
            keys = [text_key(text) for text in unique]
        shelf = self._shelf(arm, kind)
        who = f"{role} encoder {arm.spec!r}" if role else f"encoder {arm.spec!r}"
        vectors, found, tokens, held = self._find_or_claim(shelf, keys, who=who, kind=kind)
        self._count(read=int(found.sum()))
        if arm.usage is not None and found.any():
            arm.usage.add(cached_tokens=int(tokens[found].sum()))
        missing_rows = np.flatnonzero(~found)
        if missing_rows.size:
            assert held is not None  # claimed: no other process is embedding them
            try:
                missing = [unique[row] for row in missing_rows.tolist()]
                fresh = self._embed_missing(shelf, arm, keys, missing, kind, progress=progress, role=role)
            finally:
                held.release()  # after the merge: whoever waited for these texts reads the final packs
            if vectors is None:  # nothing was cached: the fresh vectors are all of them, in order
                vectors = fresh
            elif fresh.shape[1] != vectors.shape[1]:
                raise _mixed_dimensions(who, self.root, kind, [vectors.shape[1], fresh.shape[1]])
            else:
                vectors[missing_rows] = fresh
        assert vectors is not None
        if len(unique) == len(texts):
            return vectors
        row_of = {text: row for row, text in enumerate(unique)}
        return vectors[[row_of[text] for text in texts]]

    def _embed_missing(
        self,
        shelf: Shelf,
        arm: Arm,
        keys: Sequence[bytes],
        missing: list[str],
        kind: Kind,
        *,
        progress: Callable[[int, int], None] | None,
        role: str | None,
    ) -> np.ndarray:
        """Embed the ``missing`` texts of a call of the text ``keys``, storing each encoder call's vectors
        as it returns and merging the call's packs at the end (`_merge`)."""
        # This call's packs, with their rows: merged from memory rather than read back.
        stored: dict[str, tuple[np.ndarray, np.ndarray]] = {}

        def keep(rows: np.ndarray, batch: np.ndarray, tokens: np.ndarray | None) -> None:
            # In text order (a batch comes longest text first): the pack does not depend on batching.
            order = np.argsort(rows, kind="stable")
            chunk = [missing[row] for row in rows[order].tolist()]
            self._count(embedded=len(chunk))
            try:
                written = self._store(
                    shelf, arm, chunk, batch[order], None if tokens is None else tokens[order]
                )
            except OSError as error:  # a read-only or full cache must not fail the comparison
                self._count(write_error=f"{type(error).__name__}: {error}")
            else:
                stored.update((pack.path.name, (rows, counts)) for pack, rows, counts in written)

        try:
            fresh = embed(arm, missing, kind, progress=progress, role=role, on_batch=keep)
        except Exception:
            if stored:
                self._merge(shelf, keys, stored)
            raise
        if stored:
            self._merge(shelf, keys, stored)
        return fresh

    def _find_or_claim(
        self, shelf: Shelf, keys: Sequence[bytes], *, who: str, kind: Kind
    ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, Claim | None]:
        """`_find`, and a claim on the texts still missing (`claims`): those another process is embedding
        are waited for and looked up again, so two processes embed a text they share once. Claimed texts
        are looked up again too: another process may have stored them and let go of its claim between the
        first look-up and this claim (nobody else embeds them once this claim is held)."""
        vectors, found, tokens = self._find(shelf, keys, who=who, kind=kind)
        while not found.all():
            pending = np.flatnonzero(~found)
            held = claim(shelf.directory, [keys[i] for i in pending.tolist()])
            more, more_found, more_tokens = self._find(
                shelf, [keys[i] for i in pending.tolist()], who=who, kind=kind
            )
            if more is not None:
                if vectors is None:
                    vectors = result_matrix(len(keys), more.shape[1])
                elif more.shape[1] != vectors.shape[1]:
                    if held is not None:
                        held.release()
                    raise _mixed_dimensions(who, self.root, kind, [vectors.shape[1], more.shape[1]])
                rows = pending[more_found]
                vectors[rows], tokens[rows], found[rows] = more[more_found], more_tokens[more_found], True
            if held is not None:
                if not found.all():
                    return vectors, found, tokens, held
                held.release()
        return vectors, found, tokens, None

    def lookup(self, arm: Keyed, kind: Kind, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those ``texts`` that have an intact entry, by text."""
        unique = list(dict.fromkeys(texts))
        vectors, found, _ = self._find(
            self._shelf(arm, kind),
            [text_key(text) for text in unique],
            # What else is keyed like an arm (a reranker's scores) is named by its digest.
            who=f"encoder {arm.spec!r}" if isinstance(arm, Arm) else f"entries of {arm.digest[:19]}…",
            kind=kind,
        )
        if vectors is None:
            return {}
        return {unique[row]: vectors[row] for row in np.flatnonzero(found).tolist()}

    def contains(self, arm: Arm, kind: Kind, texts: Sequence[str]) -> np.ndarray:
        """Which ``texts`` have an entry, from the packs' indexes alone: no vector is read (so a damaged row
        counts until a lookup finds it damaged and embeds it again)."""
        validate_texts(texts, kind)
        shelf = self._shelf(arm, kind)
        self._scan(shelf)
        found, _, _, _ = shelf.find([text_key(text) for text in texts])
        return found

    def store(
        self,
        arm: Keyed,
        kind: Kind,
        texts: Sequence[str],
        vectors: np.ndarray,
        tokens: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        """Store the vectors of ``texts``: one finite float32 row per text, as `embedding.embed` returns them,
        and optionally the tokens each text cost (non-negative integers).

        This is also how embeddings computed elsewhere (a batch job) are brought in: ``arm`` from
        `model_specs.resolve_model` gives the same key without loading the model.
        """
        validate_texts(texts, kind)
        self._store(self._shelf(arm, kind), arm, texts, vectors, tokens)

    def _store(
        self,
        shelf: Shelf,
        arm: Keyed,
        texts: Sequence[str],
        vectors: np.ndarray,
        tokens: Sequence[int] | np.ndarray | None,
    ) -> list[tuple[Pack, np.ndarray, np.ndarray]]:
        """Write the packs of ``texts`` (at most `PACK_ROWS` each); each with its float32 rows and tokens."""
        matrix = np.ascontiguousarray(vectors, dtype=FLOAT)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise ValueError(f"vectors must have shape ({len(texts)}, d) with d >= 1, got {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise ValueError("vectors must be finite")
        counts = token_counts(tokens, len(texts))
        shelf.directory.mkdir(parents=True, exist_ok=True)
        if not shelf.noted:
            note = shelf.directory.parent / "fingerprint.json"
            if not note.exists():
                write_named(note, [arm.fingerprint.encode("utf-8"), b"\n"])
            shelf.noted = True
        written = []
        for start in range(0, len(texts), PACK_ROWS):
            keys = tuple(text_key(text) for text in texts[start : start + PACK_ROWS])
            part = slice(start, start + PACK_ROWS)
            pack = write_pack(shelf, keys, matrix[part], counts[part])
            shelf.add(pack)
            written.append((pack, matrix[part], counts[part]))
        return written

    def _find(
        self, shelf: Shelf, keys: Sequence[bytes], *, who: str, kind: Kind
    ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """``(vectors, found, tokens)`` for these (distinct) text keys: float32 ``(len(keys), d)`` whose rows
        of the keys with an intact entry hold their cached vectors (None when no key has one), which rows
        those are, and their token counts.

        Each pack is read once, and its wanted rows copied straight into ``vectors``: memory holds the
        result and at most `pack_reads.READERS` packs, never a vector per text."""
        found = np.zeros(len(keys), dtype=bool)
        tokens = np.zeros(len(keys), dtype="<u4")
        vectors: np.ndarray | None = None
        pending = np.arange(len(keys))
        # A pack can vanish between indexing and reading when another process replaces it (a damaged one,
        # or small ones merged); the replacement is written before the deletion, so a fresh scan finds it.
        for _ in range(_ATTEMPTS):
            self._scan(shelf)
            located, packs, pack_numbers, pack_rows = shelf.find([keys[i] for i in pending.tolist()])
            positions = pending[located]
            # Grouped by pack, in the packs' order: each pack is read once.
            order = np.argsort(pack_numbers, kind="stable")
            pack_numbers, pack_rows, positions = pack_numbers[order], pack_rows[order], positions[order]
            bounds = np.append(np.flatnonzero(np.diff(pack_numbers, prepend=-1)), pack_numbers.size).tolist()
            groups = [
                (packs[int(pack_numbers[start])], pack_rows[start:end], positions[start:end])
                for start, end in itertools.pairwise(bounds)
            ]
            dims = {pack.dim for pack, _, _ in groups} | (set() if vectors is None else {vectors.shape[1]})
            if len(dims) > 1:
                raise _mixed_dimensions(who, self.root, kind, dims)
            if not groups:
                break
            if vectors is None:
                vectors = result_matrix(len(keys), groups[0][0].dim)
            # Every row of a pack, in order, to consecutive rows (a rerun of the texts that filled it): read
            # straight into them; the packs are read a few at a time (`pack_reads`).
            in_place = [
                wanted.size == len(pack.keys) and consecutive(wanted, first=0) and consecutive(targets)
                for pack, wanted, targets in groups
            ]
            reads = [
                (pack, vectors[targets[0] : targets[-1] + 1] if straight else None)
                for (pack, _, targets), straight in zip(groups, in_place, strict=True)
            ]
            vanished = False
            for (pack, outcome), (_, wanted_rows, targets), straight in zip(
                read_each(reads), groups, in_place, strict=True
            ):
                read = self._settle(shelf, pack, outcome)
                if read is None:
                    vanished = True
                    continue
                packed, intact = read
                ok = intact[wanted_rows]
                targets, rows = targets[ok], wanted_rows[ok]
                if not straight:
                    copy_rows(vectors, targets, packed, rows)
                tokens[targets] = pack.tokens[rows]
                found[targets] = True
            if not vanished:
                break
            pending = np.flatnonzero(~found)
        return vectors, found, tokens

    def _merge(
        self, shelf: Shelf, order: Sequence[bytes], held: Mapping[str, tuple[np.ndarray, np.ndarray]]
    ) -> None:
        """Merge the shelf's packs of fewer than `MERGE_BELOW` rows whose texts are all among ``order`` (the
        text keys of the call that stored) into packs of up to `PACK_ROWS`, its texts in its order: so the
        packs a call leaves are a function of its texts alone, the same whatever was interrupted and resumed,
        and never hold texts another process is still storing (`embeval embed` shards rely on it). Small
        packs of other texts (an interrupted run's) are merged by the call that covers them. The rows of the
        packs in ``held`` (by file name) are in memory already; the others are read."""
        position = {key: i for i, key in enumerate(order)}
        small = sorted(
            (
                pack
                for pack in shelf.packs.values()
                if len(pack.keys) < MERGE_BELOW and all(key in position for key in pack.keys)
            ),
            key=lambda p: p.path.name,
        )
        if len(small) < 2:
            return
        merged: list[Pack] = []
        keys: list[bytes] = []
        vectors: list[np.ndarray] = []
        tokens: list[np.ndarray] = []
        for pack in small:
            if pack.path.name in held:
                rows, counts = held[pack.path.name]
                intact = np.arange(len(pack.keys))
            else:
                read = self._read(shelf, pack)
                if read is None:
                    continue  # gone: merged or repaired by another process
                rows, whole = read
                counts = pack.tokens
                intact = np.flatnonzero(whole)
            merged.append(pack)
            keys.extend(pack.keys[row] for row in intact.tolist())
            vectors.append(rows[intact])
            tokens.append(counts[intact])
        if len(merged) < 2 or len({part.shape[1] for part in vectors}) > 1:
            return  # nothing to merge, or a model changed without its fingerprint changing (`embed` says)
        # Rank: position in ``order``; the first copy of a key wins.
        ranked = np.argsort([position[key] for key in keys], kind="stable")
        first: dict[bytes, int] = {}
        for i in ranked.tolist():
            first.setdefault(keys[i], i)
        chosen = np.fromiter(first.values(), dtype=np.intp, count=len(first))
        all_vectors, all_tokens = np.concatenate(vectors), np.concatenate(tokens)
        try:
            for start in range(0, len(chosen), PACK_ROWS):
                part = chosen[start : start + PACK_ROWS]
                pack = write_pack(
                    shelf, tuple(keys[i] for i in part.tolist()), all_vectors[part], all_tokens[part]
                )
                shelf.add(pack)
        except OSError:
            return  # a full or read-only cache keeps its small packs, which serve as well
        for pack in merged:
            if shelf.packs.get(pack.path.name) is not pack and pack.path.name in shelf.packs:
                continue  # the merged pack has the same bytes, and so the same name: it is the merge
            shelf.forget(pack)
            # Kept if it cannot be deleted (Windows, while a reader holds it open): a duplicate costs disk.
            with contextlib.suppress(OSError):
                unlink_pack(pack.path)

    # ---------------------------------------------------------------------------------------------- internals

    def _count(
        self,
        *,
        read: int = 0,
        embedded: int = 0,
        corrupt: int = 0,
        unreadable: int = 0,
        write_error: str | None = None,
    ) -> None:
        stats = self._stats
        self._stats = CacheStats(
            read=stats.read + read,
            embedded=stats.embedded + embedded,
            corrupt=stats.corrupt + corrupt,
            write_error=stats.write_error or write_error,
            unreadable=stats.unreadable + unreadable,
        )

    def _shelf(self, arm: Keyed, kind: Kind) -> Shelf:
        shelf = self._shelves.get((arm.digest, kind))
        if shelf is None:
            model = bytes.fromhex(arm.digest.removeprefix("sha256:"))
            directory = self.root / "embeddings" / model.hex()[:16] / kind
            shelf = self._shelves[arm.digest, kind] = Shelf(directory, model, KIND_CODES[kind])
        return shelf

    def _scan(self, shelf: Shelf) -> None:
        """Index the packs that appeared since the last scan (other processes write them too)."""
        # A listed pack deleted before its index is read was replaced (a merge, a repair) by a pack written
        # before the deletion, and so maybe after the listing: the folder is listed again to find it.
        for _ in range(_ATTEMPTS):
            if not self._scan_listing(shelf):
                return

    def _scan_listing(self, shelf: Shelf) -> bool:
        """Index the new packs of one listing of the shelf's folder; True if one vanished meanwhile."""
        try:
            names = sorted(os.listdir(shelf.directory))
        except OSError:  # not there yet, or a cache folder that cannot be read (under a file, say)
            return False
        vanished = False
        for name in names:
            if not name.endswith(".pack") or name in shelf.seen:
                continue
            shelf.seen.add(name)
            path = shelf.directory / name
            try:
                pack = read_index(path, shelf)
            except FileNotFoundError:  # deleted meanwhile by another process
                shelf.seen.discard(name)
                vanished = True
                continue
            except OSError:  # unreadable (permissions, I/O): not used, nor read again by this process
                continue
            except DamagedPack as damage:
                self._discard(shelf, path, damage.entries)
                continue
            if pack is not None:
                shelf.add(pack)
        return vanished

    def _read(self, shelf: Shelf, pack: Pack) -> tuple[np.ndarray, np.ndarray] | None:
        """The pack's vectors and which rows are intact (`_settle`), read into memory of their own."""
        return self._settle(shelf, pack, read_outcome(pack))

    def _settle(
        self, shelf: Shelf, pack: Pack, outcome: RowsRead | OSError
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """What reading a pack found, for the cache: its vectors and which rows are intact, a damaged pack
        replaced by its intact rows, a pack just read marked as used; None if the pack vanished or cannot
        be read (its texts are embedded again, and an unreadable pack is not read again)."""
        if isinstance(outcome, FileNotFoundError):
            shelf.forget(pack)
            return None
        if isinstance(outcome, OSError):  # unreadable: permissions, I/O
            shelf.forget(pack)
            shelf.seen.add(pack.path.name)
            return None
        if not outcome.complete or not outcome.intact.all():
            self._replace(shelf, pack, outcome.vectors, outcome.intact)
        elif pack.modified_ns < time.time_ns() - USE_RESOLUTION_NS and pack.path not in self._used:
            self._used.add(pack.path)
            with contextlib.suppress(OSError):  # a read-only cache: its packs' last use stays as it was
                os.utime(pack.path)
        return outcome.vectors, outcome.intact

    def _replace(self, shelf: Shelf, pack: Pack, vectors: np.ndarray, intact: np.ndarray) -> None:
        """Rewrite a damaged pack's intact rows into a new pack, then delete it and count what was lost."""
        rows = np.flatnonzero(intact)
        shelf.forget(pack)
        if rows.size:
            try:
                kept = write_pack(
                    shelf, tuple(pack.keys[row] for row in rows), vectors[rows], pack.tokens[rows]
                )
            except OSError:
                pass  # a read-only cache: the intact rows still serve this run, from memory
            else:
                shelf.add(kept)
                if kept.path == pack.path:
                    return  # nothing lost, bytes appended: the rewrite took the damaged file's place
        self._discard(shelf, pack.path, len(pack.keys) - int(rows.size))

    def _discard(self, shelf: Shelf, path: Path, entries: int | None) -> None:
        """Delete a damaged pack and count its lost entries (None: the pack, as one whose header could not
        be read), unless another process deleted it first (and counted them); a good pack that took its
        name since (another process's merge of its repair, with the same name when it holds the same
        vectors) is left alone (`remove_damaged`)."""
        try:
            first = remove_damaged(path)
        except OSError:  # a read-only cache keeps it: not to be read (nor counted) again by this process
            shelf.seen.add(path.name)
            first = True
        else:
            # Whoever deleted it, the same content may come back under this name, valid: index it then.
            shelf.seen.discard(path.name)
        if first:
            self._count(corrupt=entries or 0, unreadable=entries is None)


def _mixed_dimensions(who: str, root: Path, kind: Kind, dims: Iterable[int]) -> EncoderError:
    return EncoderError(
        f"{who}: the embedding cache {root} holds {kind} vectors of {sorted(set(dims))} dimensions for "
        "the same model fingerprint, so the model changed without its fingerprint changing: give it "
        "a new `name` or `fingerprint`, or delete that cache folder"
    )
