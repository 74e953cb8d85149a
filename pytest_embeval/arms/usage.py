"""Tokens an arm's endpoint counted, and what they cost.

An arm whose encoder is billed by the token (a hosted or served model, see `endpoint`) carries a
:class:`TokenUsage`: the endpoint's own ``usage`` counts are added to it as each request returns, and the
embedding cache adds the tokens that texts served from it cost when they were first embedded, so a cached
rerun says what it did *not* spend. In-process models have none (their tokens are the tokenizer's business,
counted where they are needed).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import numpy as np

__all__ = ["TokenUsage", "UsageCount", "apportion", "cost"]


@dataclasses.dataclass(frozen=True, slots=True)
class UsageCount:
    """A snapshot of a :class:`TokenUsage`, or the difference of two (what one golden set used).

    ``tokens``: as the endpoint reported them for the requests sent; ``requests``: requests that returned
    vectors (retries are the client's and are not counted); ``cached_tokens``: the tokens that the texts
    served from the embedding cache cost when they were embedded, i.e. tokens not spent.
    """

    tokens: int = 0
    requests: int = 0
    cached_tokens: int = 0

    def __sub__(self, before: UsageCount) -> UsageCount:
        return UsageCount(
            tokens=self.tokens - before.tokens,
            requests=self.requests - before.requests,
            cached_tokens=self.cached_tokens - before.cached_tokens,
        )


class TokenUsage:
    """Token counts of one arm, added to from the threads that send its requests."""

    __slots__ = ("_count", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = UsageCount()

    def add(self, *, tokens: int = 0, requests: int = 0, cached_tokens: int = 0) -> None:
        with self._lock:
            count = self._count
            self._count = UsageCount(
                tokens=count.tokens + tokens,
                requests=count.requests + requests,
                cached_tokens=count.cached_tokens + cached_tokens,
            )

    def snapshot(self) -> UsageCount:
        return self._count

    def __repr__(self) -> str:
        return f"TokenUsage({self._count})"


def cost(tokens: int, price_per_million_tokens: float | None) -> float | None:
    """What ``tokens`` cost at a declared price (None without one)."""
    if price_per_million_tokens is None:
        return None
    return tokens * price_per_million_tokens / 1_000_000


def apportion(total: int, weights: Sequence[int]) -> np.ndarray:
    """``total`` split into integers proportional to ``weights`` that add up to it exactly (largest remainder;
    ties to the earlier position). How one request's tokens are shared among its texts."""
    shares = np.asarray(weights, dtype=np.float64)
    if not shares.size:
        return np.zeros(0, dtype=np.int64)
    exact = total * shares / shares.sum() if shares.sum() > 0 else np.full(shares.size, total / shares.size)
    counts = np.floor(exact).astype(np.int64)
    short = total - int(counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    result: np.ndarray = counts
    return result
