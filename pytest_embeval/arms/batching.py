"""How `embedding.embed` cuts texts into encoder calls, and makes those calls, some at once.

An in-process model gets batches of a fixed number of texts, one call after the other. An endpoint also
bounds each request by an estimated token budget (providers cap the tokens of one request) and keeps a few
requests in flight at once, since most of a request's time is spent waiting for the server.
"""

from __future__ import annotations

import dataclasses
import math
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar, cast

import numpy as np

__all__ = ["Batching", "completed", "estimate_tokens", "plan"]

Job = TypeVar("Job")
Result = TypeVar("Result")


@dataclasses.dataclass(frozen=True, slots=True)
class Batching:
    """At most ``size`` texts per call and, when ``token_budget`` is set, at most that many estimated tokens
    (a text over the budget is sent alone); ``concurrency`` calls in flight at once."""

    size: int = 64
    token_budget: int | None = None
    concurrency: int = 1

    def __post_init__(self) -> None:
        for name in ("size", "token_budget", "concurrency"):
            value = getattr(self, name)
            if value is None and name == "token_budget":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def estimate_tokens(text: str) -> int:
    """Tokens a text may take: a third of its UTF-8 bytes, at least 1.

    English averages about four characters per token with the usual BPE vocabularies, and other scripts take
    more bytes per character, so this errs on the high side: it is a bound to stay under, not a bill.
    """
    return max(1, math.ceil(len(text.encode("utf-8", "surrogatepass")) / 3))


def plan(texts: Sequence[str], batching: Batching) -> list[np.ndarray]:
    """The rows of ``texts`` in each call: longest texts first (as sentence-transformers orders one call, so
    a batch pads to similar lengths), cut at ``size`` texts or the token budget, whichever comes first.

    The order is stable (equal lengths keep their order), so a run makes the same calls every time.
    """
    order = np.argsort([-len(text) for text in texts], kind="stable")
    if batching.token_budget is None:
        return [order[start : start + batching.size] for start in range(0, len(order), batching.size)]
    batches: list[np.ndarray] = []
    start, spent = 0, 0
    for position, row in enumerate(order.tolist()):
        tokens = estimate_tokens(texts[row])
        full = position - start >= batching.size or spent + tokens > batching.token_budget
        if position > start and full:
            batches.append(order[start:position])
            start, spent = position, 0
        spent += tokens
    if start < len(order):
        batches.append(order[start:])
    return batches


def completed(
    call: Callable[[Job], Result], jobs: Sequence[Job], concurrency: int
) -> Iterator[tuple[int, Result]]:
    """``(position, call(job))`` for every job, as each call returns, with at most ``concurrency`` in flight.

    One at a time, calls run in this thread in order. Concurrently, each runs in a daemon thread of its own;
    when one raises no new one starts, the calls in flight are waited for and their results still yielded
    (work already paid for is kept), then the first exception is raised. On an interrupt (Ctrl-C) nothing is
    waited for: the calls in flight are abandoned, and do not keep the interpreter from exiting.
    """
    if concurrency <= 1 or len(jobs) <= 1:
        for position, job in enumerate(jobs):
            yield position, call(job)
        return
    finished: queue.SimpleQueue[tuple[int, Result | None, BaseException | None]] = queue.SimpleQueue()

    def run(position: int, job: Job) -> None:
        try:
            finished.put((position, call(job), None))
        except BaseException as error:  # handed to the waiting thread, which raises it
            finished.put((position, None, error))

    queued = iter(enumerate(jobs))
    running = 0
    error: BaseException | None = None

    def start_next() -> None:
        nonlocal running
        for position, job in queued:
            threading.Thread(target=run, args=(position, job), name="embeval-encode", daemon=True).start()
            running += 1
            return

    for _ in range(concurrency):
        start_next()
    while running:
        position, result, failure = finished.get()
        running -= 1
        if failure is not None:
            error = error or failure
            continue
        yield position, cast(Result, result)
        # Only once the caller has kept this result (the cache stores a batch's vectors here): an interrupt
        # then loses at most the ``concurrency`` calls in flight, never also one returned and not yet kept.
        if error is None:
            start_next()
    if error is not None:
        raise error
