"""`core.draws_ahead`: numpy's scalar draws, computed ahead, are numpy's scalar draws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_embeval.core import draws_ahead
from pytest_embeval.core.draws_ahead import DrawsAhead, ScalarDraws, draws_for, exact

#: 1 draws nothing; 3 << 30 rejects a quarter of its 32-bit draws; 2**32 takes a 32-bit draw whole.
BOUNDS = [1, 2, 3, 7, 200_000, 3 << 30, 2**32]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**64 - 1),
    st.booleans(),
    st.lists(st.none() | st.sampled_from(BOUNDS), max_size=200),
)
def test_draws_ahead_are_numpys_scalar_draws_and_leave_the_generator_where_they_would(
    seed: int, half_held: bool, steps: list[int | None]
) -> None:
    # A step is a double (None) or an integer below a bound. A generator may hold the high half of its last
    # output already (a 32-bit draw before): the first integer drawn ahead must take it.
    scalar, ahead_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    if half_held:
        scalar.integers(5)
        ahead_rng.integers(5)
    ahead = DrawsAhead(ahead_rng)
    expected = [float(scalar.random()) if b is None else int(scalar.integers(b)) for b in steps]
    drawn = [ahead.random() if b is None else ahead.integers(b) for b in steps]
    ahead.close()
    assert drawn == expected
    assert ahead_rng.bit_generator.state == scalar.bit_generator.state
    assert ahead_rng.integers(10**6, size=3).tolist() == scalar.integers(10**6, size=3).tolist()


def test_more_draws_than_a_block_leave_the_generator_where_the_scalar_draws_would() -> None:
    scalar, ahead_rng = np.random.default_rng(7), np.random.default_rng(7)
    ahead = DrawsAhead(ahead_rng)
    drawn = [(ahead.integers(3 << 30), ahead.random()) for _ in range(70_000)]
    ahead.close()
    assert drawn == [(int(scalar.integers(3 << 30)), float(scalar.random())) for _ in range(70_000)]
    assert ahead_rng.bit_generator.state == scalar.bit_generator.state


def test_this_numpy_draws_as_draws_ahead_does() -> None:
    assert exact()


def test_draws_are_one_call_each_where_they_cannot_be_drawn_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    pcg = np.random.default_rng(0)
    assert isinstance(draws_for(pcg, 200_000), DrawsAhead)
    assert isinstance(draws_for(pcg, 2**32 + 1), ScalarDraws)  # numpy draws 64 bits for it
    assert isinstance(draws_for(np.random.Generator(np.random.MT19937(0)), 10), ScalarDraws)
    # A numpy whose scalar draws differ (its algorithms changed) is drawn from one call at a time.
    monkeypatch.setattr(draws_ahead, "exact", lambda: False)
    assert isinstance(draws_for(pcg, 200_000), ScalarDraws)


def test_the_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """`exact` compares: drawing integers from the high half first is caught."""

    def high_first(self: DrawsAhead, bound: int) -> int:
        raw = self._raw()
        return ((raw >> 32) * bound) >> 32

    exact.cache_clear()
    monkeypatch.setattr(DrawsAhead, "integers", high_first)
    try:
        assert not exact()
    finally:
        exact.cache_clear()
