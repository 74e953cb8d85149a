"""The progress line on pytest's terminal: a `progress_lines.StepLine` writing past pytest's output capture
(as live logging does), between the results of a golden file's items; and, before pytest's terminal reporter
exists, the progress of resolving the model specs the session was given (`spec_progress`: resolving the
demo's candidate distils it, for minutes on a first run), on standard output.

Whether it is a terminal is asked of the file pytest's terminal reporter writes to (``sys.stdout`` as pytest
found it), never of ``sys.stdout`` during a test, which is pytest's capture. The line breaks pytest's line of
results and gives it back (the file's name again) when the steps are over. Nothing is printed with
``-q -q``, with ``--embeval-no-progress``, or on an xdist worker (only the controller prints).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_embeval.core.step_progress import reporting, step
from pytest_embeval.reports.progress_lines import StepLine, StreamTerminal

__all__ = ["PytestTerminal", "spec_progress", "step_line"]


def _prints(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput") and config.get_verbosity() > -2


def step_line(config: pytest.Config, name: str, nodeid: str) -> StepLine | None:
    """The progress line of golden set ``name`` for steps run by item ``nodeid``; None when nothing is to
    be printed."""
    if not _prints(config):
        return None
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return None
    return StepLine(name, PytestTerminal(reporter, capture, nodeid))


@contextlib.contextmanager
def spec_progress(config: pytest.Config, where: str, spec: str, *, shown: bool = True) -> Iterator[None]:
    """Resolving ``spec`` (given by ``where``: ``--embeval-candidate``) as a step, with the steps it takes
    (building the demo's candidate), on a progress line of its own (``shown``: ``--embeval-no-progress``
    not given). The session is being configured: pytest's terminal reporter does not exist yet and its
    capture is suspended, so the line goes to standard output itself."""
    if not (shown and _prints(config)):
        yield
        return
    with StepLine(where, StreamTerminal(sys.stdout)) as line, reporting(line), step(f"resolving {spec}"):
        yield


class PytestTerminal:
    """A `progress_lines.Terminal` on pytest's terminal reporter, for the steps of item ``nodeid``."""

    def __init__(self, reporter: Any, capture: Any, nodeid: str) -> None:
        self.reporter = reporter
        self.capture = capture
        self.nodeid = nodeid
        self.tty = bool(reporter.isatty)
        self.started = False

    @property
    def width(self) -> int | None:
        # A line wider than the terminal would wrap, and only its last row be rewritten.
        return shutil.get_terminal_size().columns - 1 if self.tty else None

    def line(self, text: str) -> None:
        with self.capture.global_and_fixture_disabled():
            if not self.started:
                self._break_line()
                self.started = True
            if self.tty:
                self.reporter.rewrite(text, erase=True)
                self.reporter.write("", flush=True)
            else:
                self.reporter.write(f"{text}\n", flush=True)

    def _break_line(self) -> None:
        """Start on a line of its own: after the file's name and its results so far (``-q`` writes no
        name, only the letters)."""
        self.reporter.ensure_newline()
        writer = getattr(self.reporter, "_tw", None)
        if getattr(writer, "width_of_current_line", 0):
            self.reporter.write("\n")

    def close(self) -> None:
        with self.capture.global_and_fixture_disabled():
            verbosity = self.reporter.config.get_verbosity()
            if self.tty and verbosity <= 0:  # with -v, pytest ends the line before each item's id
                self.reporter.write("\n")
            if verbosity == 0:
                # The results of the file's next items go on under its name again, as pytest writes it
                # (with -q there is no name; with -v each item's id starts a line of its own).
                path = self.reporter.config.rootpath / self.nodeid.split("::", 1)[0]
                self.reporter.write(f"{os.path.relpath(path, self.reporter.startpath)} ")
                self.reporter.currentfspath = path
            self.reporter.write("", flush=True)
