"""The bootstrap's resampling engine: sums (and sums of squares) of many resamples of one array, fast.

Every interval in :mod:`pytest_embeval.core.stats` is built from what this engine returns for one array of
paired differences: for each of ``n_resamples`` resamples (``n`` draws with replacement), the sum of the
drawn values and, when asked, the sum of their squares. A traffic-weighted interval needs several sums of
one resample (of the weights, of weight times difference, ...): `bootstrap_column_sums` draws the same
indices for every column of an ``(n, k)`` array, and the same indices as `bootstrap_sums` for the same
generator state. Nothing here validates input: ``stats`` does.

Reproducibility: 128 bits drawn from the caller's ``numpy.random.Generator`` seed a
``numpy.random.SeedSequence`` whose children (one per block of 1,000 resamples) drive ``PCG64`` streams.
The same generator state gives the same sums whatever ``workers`` is; the generator advances, so a second
call draws anew. Resampled indices are exactly uniform: a 16-bit word of raw PCG64 output divided by
``2**16 // n``, with the few words that would bias it rejected and redrawn (no modulo bias); beyond 65,536
values, ``Generator.integers``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

__all__ = ["bootstrap_column_sums", "bootstrap_sums"]

FloatArray = NDArray[np.float64]

# Resampling layout. Each block of resamples draws from its own child stream, so the result depends only
# on the data, the generator and these constants, never on how many threads ran or which finished first.
_BLOCK_RESAMPLES = 1000
# Index draws, gathers and row sums go chunk by chunk through reused buffers (2.5 MB per thread), never
# through a (B, n) index matrix; smaller chunks lose more to per-call overhead than they gain in cache.
_CHUNK_ELEMENTS = 1 << 17
# Up to this n each resampled index comes from one 16-bit word of raw PCG64 output (see _word_split).
_WORDS = 1 << 16
# Below this many gathered elements a second thread costs more than it saves; beyond a few threads the
# Python glue between numpy calls (which holds the GIL) stops them scaling.
_PARALLEL_MIN_ELEMENTS = 1 << 21
_MAX_DEFAULT_WORKERS = 4


def bootstrap_sums(
    values: FloatArray,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None,
    *,
    squares: bool = False,
) -> tuple[FloatArray, FloatArray | None]:
    """Sums of ``n_resamples`` resamples of ``values`` (with replacement, size ``values.size``), in a fixed
    order, and the sums of their squares if ``squares`` (else None).

    ``workers`` threads share the blocks (numpy releases the GIL in the gathers and sums); ``None`` uses
    the available cores (at most 4) for large problems and one thread for small ones.
    """
    sums = np.empty(n_resamples)
    sums_of_squares = np.empty(n_resamples) if squares else None
    _resample(values, n_resamples, rng, workers, sums, sums_of_squares)
    return sums, sums_of_squares


def bootstrap_column_sums(
    columns: FloatArray, n_resamples: int, rng: np.random.Generator, workers: int | None
) -> FloatArray:
    """Column sums of ``n_resamples`` resamples of the rows of ``columns`` (shape ``(n, k)``): an array of
    shape ``(n_resamples, k)``. Every column of a resample is summed over the same drawn rows, and the rows
    drawn are those `bootstrap_sums` draws from the same generator state (so a column of ones and the
    differences give the unweighted resamples, up to the rounding of the sums)."""
    sums = np.empty((n_resamples, columns.shape[1]))
    _resample(columns, n_resamples, rng, workers, sums, None)
    return sums


def _resample(
    values: FloatArray,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None,
    sums: FloatArray,
    sums_of_squares: FloatArray | None,
) -> None:
    """Fill ``sums`` (and ``sums_of_squares``) block by block, ``values`` 1-D or ``(n, k)``."""
    root = np.random.SeedSequence(int.from_bytes(rng.bytes(16), "little"))
    starts = range(0, n_resamples, _BLOCK_RESAMPLES)
    seeds = root.spawn(len(starts))
    n, width = values.shape[0], (values.shape[1] if values.ndim == 2 else 1)
    # Chunks of as many resamples whatever the width: the index stream depends on the chunking (lanes left
    # over at a chunk's end are dropped), and columns must draw the rows one array draws.
    rows = max(1, min(_BLOCK_RESAMPLES, n_resamples, _CHUNK_ELEMENTS // n))
    words = _word_split(n) if n <= _WORDS else None
    pending = iter(range(len(starts)))
    lock = threading.Lock()

    def work() -> None:
        resampler = _Resampler(values, words, rows)
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            block = slice(starts[i], starts[i] + _BLOCK_RESAMPLES)
            resampler.fill(seeds[i], sums[block], None if sums_of_squares is None else sums_of_squares[block])

    if workers is None:
        large = n_resamples * n * width >= _PARALLEL_MIN_ELEMENTS
        workers = min(_available_cores(), _MAX_DEFAULT_WORKERS) if large else 1
    workers = min(workers, len(starts))
    if workers == 1:
        work()
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embeval-bootstrap") as pool:
            for future in [pool.submit(work) for _ in range(workers)]:
                future.result()


def _available_cores() -> int:
    sched_getaffinity: Callable[[int], set[int]] | None = getattr(os, "sched_getaffinity", None)
    if sched_getaffinity is not None:
        return max(1, len(sched_getaffinity(0)))
    return os.cpu_count() or 1


class _Resampler:
    """One thread's buffers, reused across the blocks that thread resamples."""

    def __init__(self, values: FloatArray, words: tuple[int, int] | None, rows: int) -> None:
        self.values, self.words, self.rows = values, words, rows
        size = rows * values.shape[0]
        self.index = np.empty(size, dtype=np.intp)
        # Columns are summed from each resample's counts of every row (one bincount, one BLAS product)
        # rather than gathered: gathering k columns and reducing across the strided axis cost 5x more.
        self.gathered = np.empty(size if values.ndim == 1 else 0, dtype=np.float64)
        self.offsets = (np.arange(rows, dtype=np.intp) * values.shape[0])[:, None]
        small = size if words is not None else 0
        self.index16 = np.empty(small, dtype=np.uint16)
        self.rejected = np.empty(small, dtype=np.bool_)

    def fill(self, seed: np.random.SeedSequence, sums: FloatArray, squares: FloatArray | None) -> None:
        """Fill ``sums`` (and ``squares``) with the sums (of squares) of resamples, one per slot (a row of
        column sums for 2-D values), from a PCG64 stream seeded by ``seed``."""
        n = self.values.shape[0]
        bitgen = np.random.PCG64(seed)
        generator = np.random.Generator(bitgen)  # for n > 2**16 only; wrapping costs nothing
        for start in range(0, sums.shape[0], self.rows):
            count = min(self.rows, sums.shape[0] - start)
            k = count * n
            index, gathered = self.index[:k], self.gathered[:k]
            if self.words is not None:
                q, limit = self.words
                words = _accepted_words(bitgen, k, limit, self.rejected[:k])
                # Dividing in uint16 is cheap; take() wants intp, and a cast into a reused buffer
                # saves it an allocation.
                np.copyto(index, np.floor_divide(words, np.uint16(q), out=self.index16[:k]))
            else:
                index[:] = generator.integers(0, n, size=k, dtype=np.intp)
            if self.values.ndim == 2:
                # Row r of resample j counts at j * n + r: the counts of every resample of the chunk at once.
                flat = (index.reshape(count, n) + self.offsets[:count]).ravel()
                counts = np.bincount(flat, minlength=k).reshape(count, n).astype(np.float64)
                np.matmul(counts, self.values, out=sums[start : start + count])
                continue
            np.take(self.values, index, out=gathered, mode="clip")  # 'raise' would copy the output
            rows = gathered.reshape(count, n)
            np.add.reduce(rows, axis=1, out=sums[start : start + count])
            if squares is not None:
                # One dot product per row (BLAS): a third faster than einsum or square-then-sum, and no
                # second buffer.
                np.matmul(rows[:, None, :], rows[:, :, None], out=squares[start : start + count, None, None])


def _word_split(n: int) -> tuple[int, int]:
    """``(q, limit)`` for mapping a uniform 16-bit word x to an index in ``[0, n)``: ``x // q``, x < limit.

    With ``q = 2**16 // n`` and ``limit = n * q``, every index has exactly ``q`` words, so a word drawn
    uniformly from ``[0, limit)`` picks every index with probability exactly ``1 / n``: no modulo bias.
    The words at or above ``limit`` (fewer than ``n`` of the 65,536) are rejected and redrawn.
    """
    q = _WORDS // n
    return q, n * q


def _accepted_words(
    bitgen: np.random.BitGenerator, k: int, limit: int, rejected: NDArray[np.bool_]
) -> NDArray[np.uint16]:
    """Draw ``k`` independent words uniform on ``[0, limit)``, redrawing (in place, in order) the rest.

    Words are the four 16-bit lanes of each 64-bit PCG64 output, a quarter of the random bits (and of the
    per-draw overhead) of ``Generator.integers``; lanes left over in the last output are dropped.
    ``rejected`` is scratch space of ``k`` booleans.
    """
    words = bitgen.random_raw((k + 3) // 4).view(np.uint16)[:k]
    if limit < _WORDS:
        np.greater_equal(words, limit, out=rejected)
        redraw = np.flatnonzero(rejected)
        while redraw.size:
            fresh = bitgen.random_raw((redraw.size + 3) // 4).view(np.uint16)[: redraw.size]
            words[redraw] = fresh
            redraw = redraw[fresh >= limit]
    return words
