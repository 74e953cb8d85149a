"""The frontier of quality against the bill: which arms no other arm beats on both, and the cheapest arm that
no stratum found worse.

Each arm is a point: its quality, the primary metric's Δ against the incumbent over all queries (the
incumbent's own is 0), and its bill, what its index takes in memory (at the production size when one is
declared). An arm is *dominated* when another arm's Δ is at least its Δ and whose bill is at most its bill,
one of the two strictly; the arms no other dominates are the frontier (Pareto-optimal: none can be made
cheaper without losing quality, nor better without costing more). Arms whose bill is unknown (an arm that
embeds nothing) are on no frontier and dominate nothing.

The point estimate decides the frontier, as the chart draws it; the interval beside each Δ says how sure it
is, and the line under the frontier names the cheapest arm without a WORSE stratum: the one decision the
verdicts, not the point estimates, already support.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FrontierArm", "cheapest_without_worse", "dominated", "on_frontier"]


@dataclass(frozen=True, slots=True)
class FrontierArm:
    """One arm on the chart."""

    #: what reports call it: its role, or its name in a shortlist
    name: str
    spec: str
    #: the primary metric's Δ against the incumbent over all queries, and its interval (None: undefined)
    delta: float | None
    ci: tuple[float | None, float | None]
    #: bytes of its index (at the production size when declared); None: unknown (nothing embedded)
    bill: float | None
    #: what that memory costs a month, when a price is declared
    cost: float | None
    #: the strata that found it WORSE (and failed)
    worse: tuple[str, ...] = ()

    @property
    def comparable(self) -> bool:
        """Whether it has both coordinates."""
        return self.bill is not None and self.delta is not None and math.isfinite(self.delta)


def dominated(arm: FrontierArm, by: FrontierArm) -> bool:
    """Whether ``by`` beats ``arm`` on both: Δ at least as high and bill at most as high, one strictly."""
    if not (arm.comparable and by.comparable):
        return False
    assert arm.delta is not None and by.delta is not None and arm.bill is not None and by.bill is not None
    return by.delta >= arm.delta and by.bill <= arm.bill and (by.delta > arm.delta or by.bill < arm.bill)


def on_frontier(arms: Sequence[FrontierArm]) -> tuple[bool, ...]:
    """For each arm, whether no other arm dominates it (False for an arm without both coordinates)."""
    return tuple(
        arm.comparable and not any(dominated(arm, other) for other in arms if other is not arm)
        for arm in arms
    )


def cheapest_without_worse(arms: Sequence[FrontierArm]) -> FrontierArm | None:
    """The arm with the smallest bill among those no stratum found WORSE (equal bills: the higher Δ, then the
    first given); None when no such arm has a bill."""
    eligible = [arm for arm in arms if not arm.worse and arm.bill is not None]
    if not eligible:
        return None
    return min(
        eligible,
        key=lambda arm: (arm.bill, -(arm.delta if arm.delta is not None else -math.inf), eligible.index(arm)),
    )
