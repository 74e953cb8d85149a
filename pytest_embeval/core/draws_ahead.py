"""numpy's scalar draws of a PCG64 generator, computed from its raw outputs drawn a block at a time.

A reservoir over nine million documents replaces its items 760,000 times, each replacement an
``rng.integers(k)`` and two ``rng.random()``: 1.8 s of numpy calls and the Python around them, more than the
engine takes to read the corpus's ids. `DrawsAhead` gives the same numbers in the same order from blocks of
the generator's raw 64-bit outputs (``bit_generator.random_raw``), a few times faster, and `DrawsAhead.close`
leaves the generator exactly where the scalar calls would have, so that every later draw is the same too.

The numbers are numpy's own (``numpy/random/src/distributions``): a double is the top 53 bits of one output
times 2⁻⁵³; an integer below k (1 < k <= 2³²) is Lemire's (2019) multiply-and-reject on 32-bit draws, where
a 32-bit draw is the low half of a new output and the generator keeps the high half for its next one, and
k = 1 draws nothing. `exact` checks once per process, on generators of its own, that this numpy draws these
(bounds that reject often included); where it does not, or for another bit generator or a larger bound,
`draws_for` gives `ScalarDraws`, one numpy call each.
"""

from __future__ import annotations

import functools
from typing import Protocol

import numpy as np

__all__ = ["Draws", "DrawsAhead", "ScalarDraws", "draws_for", "exact"]

#: Raw outputs drawn at a time.
_BLOCK = 1 << 16
#: The largest bound `DrawsAhead.integers` takes: numpy draws a larger one from 64 bits.
_LARGEST_BOUND = 1 << 32
_LOW_HALF = 0xFFFF_FFFF
#: 2⁻⁵³: a double from the top 53 bits of an output.
_DOUBLE_UNIT = 1.0 / 9007199254740992.0


class Draws(Protocol):
    """Uniform draws: a double in [0, 1), an integer below a bound."""

    def random(self) -> float: ...

    def integers(self, bound: int) -> int: ...

    def close(self) -> None: ...


class ScalarDraws:
    """A generator's draws, one numpy call each."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def random(self) -> float:
        return float(self._rng.random())

    def integers(self, bound: int) -> int:
        return int(self._rng.integers(bound))

    def close(self) -> None:
        """Nothing to settle: the generator is where its calls left it."""


class DrawsAhead:
    """``random()`` and ``integers(k)`` of ``rng`` (a PCG64 generator; 1 <= k <= 2³²) from raw outputs drawn
    ahead (see the module). ``close`` before the generator is used again."""

    def __init__(self, rng: np.random.Generator) -> None:
        bits = rng.bit_generator
        if not isinstance(bits, np.random.PCG64):
            raise TypeError(f"draws ahead from a PCG64 generator, not {type(bits).__name__}")
        self._bits = bits
        self._start = bits.state  # a new dict at each read
        self._has_half = bool(self._start["has_uint32"])
        self._half = int(self._start["uinteger"])
        self._block: list[int] = []
        #: the next output's place in the block, and the outputs drawn before the block
        self._at = 0
        self._before = 0

    def _raw(self) -> int:
        at = self._at
        if at == len(self._block):
            self._before += len(self._block)
            self._block, at = self._bits.random_raw(_BLOCK).tolist(), 0
        self._at = at + 1
        return self._block[at]

    def random(self) -> float:
        return (self._raw() >> 11) * _DOUBLE_UNIT

    def integers(self, bound: int) -> int:
        if bound == 1:
            return 0
        threshold = (_LARGEST_BOUND - bound) % bound
        while True:
            if self._has_half:
                bits, self._has_half = self._half, False
            else:
                raw = self._raw()
                bits, self._half, self._has_half = raw & _LOW_HALF, raw >> 32, True
            product = bits * bound
            if product & _LOW_HALF >= threshold:
                return product >> 32

    def close(self) -> None:
        """Leave the generator where the scalar draws would have: its start advanced by the outputs used,
        holding the high half it would hold."""
        self._bits.state = self._start
        self._bits.advance(self._before + self._at)
        state = self._bits.state
        state["has_uint32"], state["uinteger"] = int(self._has_half), self._half
        self._bits.state = state


@functools.cache
def exact() -> bool:
    """Whether this numpy's scalar draws are `DrawsAhead`'s: interleaved draws and the generators' states
    compared for bounds of every kind (1, small, one that rejects a quarter of its 32-bit draws, 2³²)."""
    for bound in (1, 2, 3, 200_000, 3 << 30, _LARGEST_BOUND):
        scalar, ahead_rng = np.random.default_rng(bound), np.random.default_rng(bound)
        ahead = DrawsAhead(ahead_rng)
        expected = [(int(scalar.integers(bound)), float(scalar.random())) for _ in range(64)]
        drawn = [(ahead.integers(bound), ahead.random()) for _ in range(64)]
        ahead.close()
        if drawn != expected or ahead_rng.bit_generator.state != scalar.bit_generator.state:
            return False
    return True


def draws_for(rng: np.random.Generator, bound: int) -> Draws:
    """``rng``'s scalar draws with bounds up to ``bound``: drawn ahead where `DrawsAhead` gives them, else one
    call each. ``close`` them before using ``rng`` again."""
    if isinstance(rng.bit_generator, np.random.PCG64) and bound <= _LARGEST_BOUND and exact():
        return DrawsAhead(rng)
    return ScalarDraws(rng)
