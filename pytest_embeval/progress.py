"""The encoding progress line an item prints while a golden set's arms embed a long list of texts."""

from __future__ import annotations

import sys
import time
from typing import Any

#: Corpora at least this long get a progress line while they are encoded.
PROGRESS_MIN_TEXTS = 256
#: Seconds between progress lines when the output is not a terminal (a CI log).
PROGRESS_LOG_SECONDS = 10.0


class ProgressLine:
    """Encoding progress on the terminal, past pytest's output capture (as live logging does).

    On a terminal one line is rewritten in place; in a CI log, where that would be noise, a line is printed
    when an arm starts a long list of texts, at most every `PROGRESS_LOG_SECONDS` after, and when it ends.
    The rate counts from the first report, which comes after the first batch: its duration is unknown.
    """

    def __init__(self, name: str, reporter: Any, capture: Any) -> None:
        self.name = name
        self.reporter = reporter
        self.capture = capture
        self.tty = sys.stdout.isatty()
        #: (time, texts done) at this list's first report, and the time of the last line printed
        self.first: tuple[float, int] | None = None
        self.logged = 0.0

    def __call__(self, role: str, kind: str, done: int, total: int) -> None:
        if total < PROGRESS_MIN_TEXTS:
            return
        now = time.perf_counter()
        finished = done >= total
        if self.first is None:
            self.first = (now, done)
        elif not (self.tty or finished or now - self.logged >= PROGRESS_LOG_SECONDS):
            return
        self.logged = now
        since, base = self.first
        rate = f" ({(done - base) / (now - since):,.0f}/s)" if now > since else ""
        text = f"embeval {self.name}: {role} encoding {kind} texts {done:,}/{total:,}{rate}"
        with self.capture.global_and_fixture_disabled():
            if self.tty:
                self.reporter.write(f"\r{text}", flush=True)
                if finished:
                    self.reporter.write("\n")
            else:
                self.reporter.write_line(text)
        if finished:
            self.first = None
