"""Paired comparison of two per-query score arrays: bootstrap interval, sign test, power.

Everything here works on the *differences* ``candidate - incumbent`` of one query set scored under both
arms, so the between-query variance (some queries are hard for every model) cancels before anything is
averaged. Inputs are validated up front (``ValueError`` naming the offending value) and kept apart from
the algorithms, in the manner of ``scipy.stats``; randomness comes only from an explicit
``numpy.random.Generator``.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri
from scipy.stats import binomtest

__all__ = [
    "DegenerateComparisonWarning",
    "PairedComparison",
    "compare_paired",
    "minimum_detectable_effect",
    "paired_bootstrap_ci",
    "paired_n",
    "sign_test",
    "stable_seed",
]

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

_NEEDS_TWO = "too few paired queries for an interval"
_ALL_ZERO = "all paired differences are zero"


class DegenerateComparisonWarning(UserWarning):
    """A paired comparison could not be computed normally (too few pairs, or no differences at all)."""


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """One metric compared on one stratum: plain Python numbers only, so it can cross processes (xdist)."""

    n: int  # pairs used (both arms finite)
    excluded: int  # pairs dropped because either arm was NaN (a query without relevance judgments)
    incumbent_mean: float
    candidate_mean: float
    delta: float  # mean(candidate - incumbent)
    ci_low: float  # percentile bootstrap interval of delta
    ci_high: float
    confidence: float
    sd: float  # sample sd of the paired differences (ddof=1)
    wins: int  # queries where candidate > incumbent
    losses: int  # queries where candidate < incumbent
    sign_p: float  # exact two-sided binomial p of wins vs losses (ties dropped); 1.0 if none
    mde: float  # minimum detectable effect at alpha = 1 - confidence, power 0.8
    note: str | None  # why the comparison is degenerate, else None


# --------------------------------------------------------------------------------------------------------
# Input validation (kept apart from the algorithms).


def _as_scores(values: ArrayLike, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    infinite = np.flatnonzero(np.isinf(array))
    if infinite.size:
        i = int(infinite[0])
        raise ValueError(
            f"{name}[{i}] is {float(array[i])!r}; per-query scores must be finite "
            "(NaN marks a query excluded from both arms)"
        )
    return array


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_probability(value: float, name: str) -> float:
    if not _is_real(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def _check_n_resamples(n_resamples: int) -> int:
    if not _is_integer(n_resamples) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def _check_rng(rng: np.random.Generator) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def _check_workers(workers: int | None) -> int | None:
    if workers is not None and (not _is_integer(workers) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    return None if workers is None else int(workers)


def _check_nonnegative(value: float, name: str) -> float:
    if not _is_real(value) or not 0.0 <= float(value) < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_differences(differences: ArrayLike) -> FloatArray:
    d = _as_scores(differences, "differences")
    missing = np.flatnonzero(np.isnan(d))
    if missing.size:
        raise ValueError(
            f"differences[{int(missing[0])}] is nan; drop NaN pairs first "
            "(compare_paired does, from both arms)"
        )
    return d


# --------------------------------------------------------------------------------------------------------
# Public API.


def paired_bootstrap_ci(
    differences: ArrayLike,
    *,
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval for the mean of paired differences.

    Pairs are resampled as units: resampling the differences ``candidate - incumbent`` by one shared
    index is the paired bootstrap. The interval is ``numpy.quantile`` (its default ``'linear'`` method) of
    the ``n_resamples`` resampled means at ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``, which is
    what ``scipy.stats.bootstrap(..., method='percentile')`` returns.

    Reproducibility: 128 bits drawn from ``rng`` seed a ``numpy.random.SeedSequence`` whose children (one
    per block of 1,000 resamples) drive ``PCG64`` streams. The same generator state gives the same
    interval whatever ``workers`` is; ``rng`` advances, so a second call gives a new, independent draw.
    Resampled indices are exactly uniform: a 16-bit word of raw PCG64 output divided by
    ``2**16 // n``, with the few words that would bias it rejected and redrawn (no modulo bias).

    ``workers`` threads share the blocks (numpy releases the GIL in the gathers and sums); ``None`` uses
    the available cores for large problems. Raises ``ValueError`` for NaN/inf differences, fewer than two
    differences, or a bad ``confidence``/``n_resamples``.
    """
    d = _check_differences(differences)
    if d.size < 2:
        raise ValueError(f"the bootstrap needs at least 2 paired differences, got {d.size}")
    return _percentile_interval(
        d,
        confidence=_check_probability(confidence, "confidence"),
        n_resamples=_check_n_resamples(n_resamples),
        rng=_check_rng(rng),
        workers=_check_workers(workers),
    )


def sign_test(differences: ArrayLike) -> tuple[int, int, float]:
    """Return ``(wins, losses, p)``: the exact two-sided binomial sign test of the paired differences.

    A win is a positive difference, a loss a negative one; zero differences (ties) are dropped, as in the
    classical sign test. ``p`` is ``scipy.stats.binomtest(wins, wins + losses, 0.5).pvalue``, or 1.0 when
    every difference is zero.
    """
    d = _check_differences(differences)
    wins, losses = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    return wins, losses, _sign_p(wins, losses)


def minimum_detectable_effect(sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean difference a two-sided paired test detects with the given power.

    Normal approximation: ``(z_{1-alpha/2} + z_{power}) * sd / sqrt(n)``. With sd 0.17 over 118 queries at
    alpha 0.05 and power 0.8 this is 0.044: a true effect smaller than that will usually end as a tie.
    """
    sd = _check_nonnegative(sd, "sd")
    if not _is_integer(n) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return _z_sum(_check_probability(alpha, "alpha"), _check_probability(power, "power")) * sd / math.sqrt(n)


def paired_n(delta: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Paired queries needed to detect a true mean difference ``delta`` with the given power.

    ``ceil(((z_{1-alpha/2} + z_{power}) * sd / delta) ** 2)``, and at least 2 (an interval needs two
    pairs). Detecting 0.02 with a paired sd of 0.15 takes 442 queries; detecting 0.05 takes 71.
    """
    if not _is_real(delta) or not math.isfinite(delta) or delta == 0:
        raise ValueError(f"delta must be a finite nonzero number, got {delta!r}")
    sd = _check_nonnegative(sd, "sd")
    z = _z_sum(_check_probability(alpha, "alpha"), _check_probability(power, "power"))
    return max(2, math.ceil((z * sd / abs(float(delta))) ** 2))


def compare_paired(
    incumbent: ArrayLike,
    candidate: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    rng: np.random.Generator,
    workers: int | None = None,
) -> PairedComparison:
    """Compare two arms' per-query scores (same queries, same order).

    A query whose score is NaN in either arm is dropped from *both* arms and counted in ``excluded``.
    Degenerate input gives a result with ``note`` set and a ``DegenerateComparisonWarning``:

    - fewer than two pairs: ``"n=1: too few paired queries for an interval"``; the interval, ``sd`` and
      ``mde`` are NaN (means and delta are still reported when n is 1);
    - every difference zero: ``"all paired differences are zero"``; interval (0, 0), sd 0, sign p 1.0.

    Raises ``ValueError`` (naming the value) for arms of different lengths, non-1-D input, inf scores, a
    ``confidence`` outside (0, 1) or ``n_resamples`` < 1; ``TypeError`` if ``rng`` is not a Generator.
    """
    a = _as_scores(incumbent, "incumbent")
    b = _as_scores(candidate, "candidate")
    if a.size != b.size:
        raise ValueError(f"incumbent and candidate must have the same length, got {a.size} and {b.size}")
    return _compare(
        a,
        b,
        confidence=_check_probability(confidence, "confidence"),
        n_resamples=_check_n_resamples(n_resamples),
        rng=_check_rng(rng),
        workers=_check_workers(workers),
    )


def stable_seed(*parts: str | int) -> int:
    """Seed in ``[0, 2**63)`` from a SHA-256 of the parts: identical across processes, machines and runs.

    Unlike ``hash()``, which is salted per process for strings, this is safe for xdist workers. The parts
    are encoded unambiguously (``("ab", "c")`` and ``("a", "bc")`` differ, as do ``"1"`` and ``1``).
    """
    tagged: list[tuple[str, str | int]] = []
    for part in parts:
        if isinstance(part, str):
            tagged.append(("str", part))
        elif _is_integer(part):
            tagged.append(("int", int(part)))
        else:
            raise TypeError(f"stable_seed parts must be str or int, got {part!r}")
    encoded = json.dumps(tagged, separators=(",", ":")).encode("utf-8")
    return int.from_bytes(hashlib.sha256(encoded).digest()[:8], "big") >> 1


# --------------------------------------------------------------------------------------------------------
# Algorithms (inputs already validated).


def _z_sum(alpha: float, power: float) -> float:
    return float(ndtri(1.0 - alpha / 2.0) + ndtri(power))


def _sign_p(wins: int, losses: int) -> float:
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5).pvalue)


def _compare(
    a: FloatArray,
    b: FloatArray,
    *,
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
    workers: int | None,
) -> PairedComparison:
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n, excluded = int(a.size), int(keep.size - a.size)
    d = b - a
    wins, losses = int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))
    if n < 2:
        return _too_few_pairs(a, b, excluded=excluded, confidence=confidence)
    note: str | None = None
    if wins == 0 and losses == 0:
        note = _ALL_ZERO
        warnings.warn(note, DegenerateComparisonWarning, stacklevel=3)
        ci, sd = (0.0, 0.0), 0.0
    else:
        ci = _percentile_interval(d, confidence=confidence, n_resamples=n_resamples, rng=rng, workers=workers)
        sd = float(np.std(d, ddof=1))
    return PairedComparison(
        n=n,
        excluded=excluded,
        incumbent_mean=float(np.mean(a)),
        candidate_mean=float(np.mean(b)),
        delta=float(np.mean(d)),
        ci_low=ci[0],
        ci_high=ci[1],
        confidence=confidence,
        sd=sd,
        wins=wins,
        losses=losses,
        sign_p=_sign_p(wins, losses),
        mde=_z_sum(1.0 - confidence, 0.8) * sd / math.sqrt(n),
        note=note,
    )


def _too_few_pairs(a: FloatArray, b: FloatArray, *, excluded: int, confidence: float) -> PairedComparison:
    n = int(a.size)
    note = f"n={n}: {_NEEDS_TWO}"
    warnings.warn(note, DegenerateComparisonWarning, stacklevel=4)
    wins, losses = int(np.count_nonzero(b > a)), int(np.count_nonzero(b < a))
    nan = math.nan
    return PairedComparison(
        n=n,
        excluded=excluded,
        incumbent_mean=float(a[0]) if n else nan,
        candidate_mean=float(b[0]) if n else nan,
        delta=float(b[0] - a[0]) if n else nan,
        ci_low=nan,
        ci_high=nan,
        confidence=confidence,
        sd=nan,
        wins=wins,
        losses=losses,
        sign_p=_sign_p(wins, losses),
        mde=nan,
        note=note,
    )


def _percentile_interval(
    d: FloatArray, *, confidence: float, n_resamples: int, rng: np.random.Generator, workers: int | None
) -> tuple[float, float]:
    means = _bootstrap_means(d, n_resamples, rng, workers)
    low, high = np.quantile(means, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return float(low), float(high)


def _bootstrap_means(
    d: FloatArray, n_resamples: int, rng: np.random.Generator, workers: int | None
) -> FloatArray:
    """Means of ``n_resamples`` resamples of ``d`` (with replacement, size ``d.size``), in a fixed order."""
    root = np.random.SeedSequence(int.from_bytes(rng.bytes(16), "little"))
    starts = range(0, n_resamples, _BLOCK_RESAMPLES)
    seeds = root.spawn(len(starts))
    sums = np.empty(n_resamples)
    n = d.size
    rows = max(1, min(_BLOCK_RESAMPLES, n_resamples, _CHUNK_ELEMENTS // n))
    words = _word_split(n) if n <= _WORDS else None
    pending = iter(range(len(starts)))
    lock = threading.Lock()

    def work() -> None:
        resampler = _Resampler(d, words, rows)
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            resampler.fill(seeds[i], sums[starts[i] : starts[i] + _BLOCK_RESAMPLES])

    if workers is None:
        large = n_resamples * n >= _PARALLEL_MIN_ELEMENTS
        workers = min(_available_cores(), _MAX_DEFAULT_WORKERS) if large else 1
    workers = min(workers, len(starts))
    if workers == 1:
        work()
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embeval-bootstrap") as pool:
            for future in [pool.submit(work) for _ in range(workers)]:
                future.result()
    sums /= n
    return sums


def _available_cores() -> int:
    sched_getaffinity: Callable[[int], set[int]] | None = getattr(os, "sched_getaffinity", None)
    if sched_getaffinity is not None:
        return max(1, len(sched_getaffinity(0)))
    return os.cpu_count() or 1


class _Resampler:
    """One thread's buffers, reused across the blocks that thread resamples."""

    def __init__(self, d: FloatArray, words: tuple[int, int] | None, rows: int) -> None:
        self.d, self.words, self.rows = d, words, rows
        size = rows * d.size
        self.index = np.empty(size, dtype=np.intp)
        self.gathered = np.empty(size, dtype=np.float64)
        small = size if words is not None else 0
        self.index16 = np.empty(small, dtype=np.uint16)
        self.rejected = np.empty(small, dtype=np.bool_)

    def fill(self, seed: np.random.SeedSequence, out: FloatArray) -> None:
        """Fill ``out`` with sums of resamples, one per slot, from a PCG64 stream seeded by ``seed``."""
        n = self.d.size
        bitgen = np.random.PCG64(seed)
        generator = np.random.Generator(bitgen)  # for n > 2**16 only; wrapping costs nothing
        for start in range(0, out.size, self.rows):
            count = min(self.rows, out.size - start)
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
            np.take(self.d, index, out=gathered, mode="clip")  # 'raise' would copy the output
            np.add.reduce(gathered.reshape(count, n), axis=1, out=out[start : start + count])


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
