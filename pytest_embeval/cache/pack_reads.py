"""Reading the vector rows of packs and checking each against its crc32, several packs at once, into a
lookup's result (`result_matrix`, `copy_rows`).

What a lookup spends beyond the checksums is the first touch of the memory the rows are read into: the
kernel (and, on a virtual machine, its host) backs each fresh page when the copy from the page cache reaches
it. A few threads reading packs side by side are backed side by side (the read releases the GIL): 605 MiB of
cached packs read into a fresh anonymous map took 0.93 to 2.57 s with one thread and 0.29 to 0.54 s with
two on the reference machine (2 cores, a virtual machine), and no faster with four.

These functions only read: what a damaged or vanished pack means for the cache (a repair, a rescan) is
`store`'s to decide.
"""

from __future__ import annotations

import mmap
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pytest_embeval.cache.packs import FLOAT, Pack

__all__ = [
    "READERS",
    "RowsRead",
    "consecutive",
    "copy_rows",
    "read_each",
    "read_outcome",
    "read_rows",
    "result_matrix",
]

#: Packs read at once by one lookup (see the module's docstring for the figures).
READERS = 2


@dataclass(frozen=True, slots=True, eq=False)
class RowsRead:
    """A pack's vector rows as read: ``vectors`` holds the whole rows found (fewer than the pack's when the
    file is short), ``intact`` which of the pack's rows are whole and match their crc32, and ``complete``
    whether the file held exactly the pack's rows (neither short nor grown)."""

    vectors: np.ndarray
    intact: np.ndarray
    complete: bool


def read_rows(pack: Pack, into: np.ndarray | None = None) -> RowsRead:
    """Read ``pack``'s vectors, into ``into`` (float32, as many rows as the pack, C-contiguous) or into
    memory of their own, and check each row. Raises what opening or reading the file raises
    (`FileNotFoundError` when it vanished)."""
    row_bytes = pack.dim * FLOAT.itemsize
    n = len(pack.keys)
    with pack.path.open("rb") as handle:
        handle.seek(pack.offset)
        if into is None:
            raw: bytes | memoryview = handle.read(n * row_bytes + 1)
            size = len(raw)
        else:
            raw = memoryview(into.data).cast("B")
            size = (handle.readinto(raw) or 0) + len(handle.read(1))
        # the byte too many reveals a file that grew
    whole = min(size // row_bytes, n)
    view = memoryview(raw)
    intact = np.zeros(n, dtype=bool)
    intact[:whole] = [
        zlib.crc32(view[row * row_bytes : (row + 1) * row_bytes]) == crc
        for row, crc in enumerate(pack.crcs[:whole].tolist())
    ]
    vectors = np.frombuffer(raw, dtype=FLOAT, count=whole * pack.dim).reshape(whole, pack.dim)
    return RowsRead(vectors, intact, size == n * row_bytes)


def read_each(
    reads: Sequence[tuple[Pack, np.ndarray | None]], readers: int = READERS
) -> Iterator[tuple[Pack, RowsRead | OSError]]:
    """`read_rows` of each ``(pack, into)``, in their order, each with what reading it raised if it failed
    (an `OSError`; anything else propagates). At most ``readers`` reads are in flight, so what is read into
    memory of its own is at most that many packs at a time, however many are asked for; one pack is read
    without a thread."""
    if len(reads) <= 1 or readers <= 1:
        for pack, into in reads:
            yield pack, read_outcome(pack, into)
        return
    pending: deque[tuple[Pack, Future[RowsRead | OSError]]] = deque()
    with ThreadPoolExecutor(max_workers=readers, thread_name_prefix="embeval-pack-read") as pool:
        try:
            for pack, into in reads:
                if len(pending) == readers:
                    done, future = pending.popleft()
                    yield done, future.result()
                pending.append((pack, pool.submit(read_outcome, pack, into)))
            while pending:
                done, future = pending.popleft()
                yield done, future.result()
        finally:  # a consumer that stops early (an error) leaves nothing reading into its memory
            for _, future in pending:
                future.cancel()


def read_outcome(pack: Pack, into: np.ndarray | None = None) -> RowsRead | OSError:
    """`read_rows`, or the `OSError` it raised."""
    try:
        return read_rows(pack, into)
    except OSError as error:
        return error


#: Lookup results this large are an anonymous memory map of their own (see `result_matrix`).
_MAPPED_BYTES = 64 * 2**20


def result_matrix(rows: int, dim: int) -> np.ndarray:
    """Uninitialised float32 ``(rows, dim)`` for the vectors of a lookup. A large one is an anonymous memory
    map rather than numpy's own allocation, which asks the kernel for transparent huge pages: on a virtual
    machine (what CI runs on) their first touch, when the packs are read into it, measured 5 x slower than
    4 KiB pages (0.89 s against 0.17 s for 200,000 x 512), and exact search reads it no slower."""
    if rows * dim * FLOAT.itemsize < _MAPPED_BYTES:
        return np.empty((rows, dim), dtype=FLOAT)
    return np.frombuffer(mmap.mmap(-1, rows * dim * FLOAT.itemsize), dtype=FLOAT).reshape(rows, dim)


def consecutive(numbers: np.ndarray, first: int | None = None) -> bool:
    """Whether ``numbers`` are consecutive ascending integers (from ``first``, if given)."""
    if numbers.size == 0 or (first is not None and numbers[0] != first):
        return False
    return bool((np.diff(numbers) == 1).all())


def copy_rows(target: np.ndarray, at: np.ndarray, source: np.ndarray, rows: np.ndarray) -> None:
    """``target[at] = source[rows]``: one block copy when both are runs of consecutive rows, without the
    gathered temporary."""
    if consecutive(rows) and consecutive(at):
        target[at[0] : at[-1] + 1] = source[rows[0] : rows[-1] + 1]
    else:
        target[at] = source[rows]
