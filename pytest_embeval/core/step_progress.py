"""Progress of long steps, told to whoever listens: a step begins (what it is, and how many things it
counts, if it counts), advances, and ends; steps nest (a model loaded while a corpus is encoded).

The layers that do long work (loading a model, distilling the demo's, encoding texts, building an HNSW
graph, the bootstrap) report through the functions here, and never know who prints: the caller that prints
(the plugin, around a golden set's run) installs a `Progress` with `reporting`, for the code it calls and
everything that code calls (a ``conftest.py`` fixture included, which no argument could reach). Nobody
listening costs one context-variable read per step. `labelled` names the arm the nested steps belong to
("incumbent"), so that the code of a step need not know it.

A context variable rather than an argument: the steps are many layers below the caller, inside user code
(fixtures), and a variable set with `reporting` is reset when it returns, per thread and per task (a
thread started inside, like the encoding threads of an endpoint, reports nothing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Protocol

__all__ = ["Progress", "counting", "labelled", "reporting", "step"]


class Progress(Protocol):
    """Who is told of the steps: ``begin`` and ``end`` pair up, innermost step last; ``advance`` counts
    in the innermost one."""

    def begin(self, what: str, total: int | None = None, label: str = "") -> None:
        """A step starts: ``what`` it does (``"loading model all-MiniLM-L6-v2"``), the things it counts,
        if it counts them, and whose step it is (`labelled`: ``"incumbent"``, or ``""``)."""
        ...

    def advance(self, done: int) -> None:
        """The innermost step has done ``done`` of its total."""
        ...

    def end(self) -> None:
        """The innermost step is over (or failed)."""
        ...


_LISTENING: ContextVar[Progress | None] = ContextVar("pytest_embeval_progress", default=None)
_LABEL: ContextVar[str] = ContextVar("pytest_embeval_progress_label", default="")


@contextlib.contextmanager
def reporting(progress: Progress | None) -> Iterator[None]:
    """Tell ``progress`` of every step taken inside (None: of none)."""
    token = _LISTENING.set(progress)
    try:
        yield
    finally:
        _LISTENING.reset(token)


@contextlib.contextmanager
def labelled(label: str) -> Iterator[None]:
    """Name the steps taken inside with ``label`` first (``"candidate"``)."""
    token = _LABEL.set(label)
    try:
        yield
    finally:
        _LABEL.reset(token)


@contextlib.contextmanager
def step(what: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """One step, begun now and ended on leaving, even by an exception; yields ``advance(done)``."""
    progress = _LISTENING.get()
    if progress is None:
        yield _ignore
        return
    progress.begin(what, total, _LABEL.get())
    try:
        yield progress.advance
    finally:
        progress.end()


@contextlib.contextmanager
def counting(what: str) -> Iterator[Callable[[int, int], None]]:
    """A counted step begun by its first count, for work that may turn out to be none (texts the
    embedding cache already holds): yields ``advance(done, total)``, which the encoding loops call after
    each batch; a step never advanced is never begun."""
    progress = _LISTENING.get()
    if progress is None:
        yield _ignore_count
        return
    begun = False

    def advance(done: int, total: int) -> None:
        nonlocal begun
        if not begun:
            progress.begin(what, total, _LABEL.get())
            begun = True
        progress.advance(done)

    try:
        yield advance
    finally:
        if begun:
            progress.end()


def _ignore(done: int) -> None:
    return None


def _ignore_count(done: int, total: int) -> None:
    return None
