"""Progress lines: the one an item prints while a golden set's arms embed a long list of texts, and the one
the `embeval` commands print on long work (grading a sheet)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

#: Corpora at least this long get a progress line while they are encoded.
PROGRESS_MIN_TEXTS = 256
#: Seconds between progress lines when the output is not a terminal (a CI log).
PROGRESS_LOG_SECONDS = 10.0


class Pace:
    """When the next progress line is due, and the rate since the first report of a list.

    On a terminal every report is due (one line is rewritten in place); in a log, the first report, one at
    most every `PROGRESS_LOG_SECONDS` after, and the last. The rate counts from the first report, which
    comes after the first batch: its duration is unknown.
    """

    def __init__(self) -> None:
        #: (time, done) at this list's first report, and the time of the last line printed
        self.first: tuple[float, int] | None = None
        self.logged = 0.0

    def due(self, done: int, total: int, *, tty: bool) -> str | None:
        """The rate to print (``" (12/s)"``, or ``""`` before one is known) when a line is due, else None."""
        now = time.perf_counter()
        finished = done >= total
        if self.first is None:
            self.first = (now, done)
        elif not (tty or finished or now - self.logged >= PROGRESS_LOG_SECONDS):
            return None
        self.logged = now
        since, base = self.first
        rate = f" ({(done - base) / (now - since):,.0f}/s)" if now > since else ""
        if finished:
            self.first = None
        return rate


class ProgressLine:
    """Encoding progress on the terminal, past pytest's output capture (as live logging does), paced by
    `Pace`: one line rewritten in place on a terminal; in a CI log, where that would be noise, a line when an
    arm starts a long list of texts, at most every `PROGRESS_LOG_SECONDS` after, and when it ends."""

    def __init__(self, name: str, reporter: Any, capture: Any) -> None:
        self.name = name
        self.reporter = reporter
        self.capture = capture
        self.tty = sys.stdout.isatty()
        self.pace = Pace()

    def __call__(self, role: str, kind: str, done: int, total: int) -> None:
        if total < PROGRESS_MIN_TEXTS:
            return
        rate = self.pace.due(done, total, tty=self.tty)
        if rate is None:
            return
        text = f"embeval {self.name}: {role} encoding {kind} texts {done:,}/{total:,}{rate}"
        with self.capture.global_and_fixture_disabled():
            if self.tty:
                self.reporter.write(f"\r{text}", flush=True)
                if done >= total:
                    self.reporter.write("\n")
            else:
                self.reporter.write_line(text)


class StreamProgress:
    """The same paced progress for the `embeval` commands, on standard error (standard output holds their
    results): ``embeval judge: pairs graded 120/4,354 (8/s)``."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty()
        self.pace = Pace()

    def __call__(self, done: int, total: int) -> None:
        rate = self.pace.due(done, total, tty=self.tty)
        if rate is None:
            return
        text = f"{self.label} {done:,}/{total:,}{rate}"
        if self.tty:
            self.stream.write(f"\r{text}" + ("\n" if done >= total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
