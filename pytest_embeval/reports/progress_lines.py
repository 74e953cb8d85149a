"""Progress lines: the one a golden set's run prints while its steps take long (`StepLine`: loading a
model, building the demo candidate, encoding texts, building an HNSW graph, the bootstrap), and the one the
`embeval` commands print on long work (`StreamProgress`: grading a sheet; a `StepLine` on a `StreamTerminal`:
reading a query log or a corpus).

On a terminal a line is fitted to its width (`fitted_line`): what moves (the count, the rate, the time left
or so far) is always shown whole, and the fixed part (the golden set's name, the steps) gives way, its middle
elided. A line cut at the terminal's last column would look hung: the count is at its end."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Protocol, TextIO

#: Seconds between progress lines of an `embeval` command when its output is not a terminal (a CI log).
PROGRESS_LOG_SECONDS = 10.0
#: A step is shown once it has lasted this long: shorter ones (a cached model, a small corpus) print nothing.
STEP_SHOW_AFTER = 1.0
#: Seconds between the lines of a step still running in a CI log: under the 10 s a reader takes for a hang.
STEP_LOG_SECONDS = 5.0
#: How often a running step is looked at (its line rewritten on a terminal, its time told in a log).
STEP_TICK = 0.25
#: The fewest characters a narrow terminal shows of a name or a step whose middle it elides.
ELIDED_LEAST = 10
ELLIPSIS = "…"


def elided(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: whole if it fits, else its start and its end around an
    `ELLIPSIS`."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[: max(width, 0)]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def _shrunk(texts: Sequence[str], room: int) -> list[str] | None:
    """``texts`` elided in the middle, the longest first and none below `ELIDED_LEAST` characters, so that
    together they take at most ``room``; None when they cannot."""
    lengths = [len(text) for text in texts]
    if sum(lengths) <= room:
        return list(texts)
    if sum(min(length, ELIDED_LEAST) for length in lengths) > room:
        return None
    cap = max(lengths)
    while sum(min(length, cap) for length in lengths) > room:
        cap -= 1
    spare = room - sum(min(length, cap) for length in lengths)
    fitted = []
    for text in texts:
        width = cap
        if len(text) > cap and spare:
            width, spare = cap + 1, spare - 1
        fitted.append(elided(text, width))
    return fitted


def fitted_line(prefix: str, name: str, steps: Sequence[str], moving: str, width: int | None) -> str:
    """``PREFIX NAME: STEP: …: STEP`` then ``moving`` (the count, rate and time left, or the time so far), in
    ``width`` characters (None: any). ``moving`` is never cut; the fixed part gives way until the line fits,
    in this order: the outer steps are elided in the middle, then the name; then the outer steps are left
    out (one `ELLIPSIS` stands for them) and the name elided, then the innermost step too; last, the whole
    fixed part is elided in the middle."""

    def joined(name: str, steps: Sequence[str]) -> str:
        return prefix + ": ".join([name, *steps]) + moving

    line = joined(name, steps)
    if width is None or len(line) <= width:
        return line
    *outer, inner = steps
    # What the name and the steps may take beside the prefix, the separators and the moving part.
    room = width - len(prefix) - len(moving) - 2 * len(steps)
    shrunk = _shrunk(outer, room - len(name) - len(inner))
    if shrunk is not None:
        return joined(name, [*shrunk, inner])
    shrunk = _shrunk([name, *outer], room - len(inner))
    if shrunk is not None:
        return joined(shrunk[0], [*shrunk[1:], inner])
    kept = [ELLIPSIS] if outer else []
    room = width - len(prefix) - len(moving) - 2 * (len(kept) + 1) - len(ELLIPSIS) * len(kept)
    shrunk = _shrunk([name], room - len(inner))
    if shrunk is not None:
        return joined(shrunk[0], [*kept, inner])
    shrunk = _shrunk([name, inner], room)
    if shrunk is not None:
        return joined(shrunk[0], [*kept, shrunk[1]])
    fixed = prefix + ": ".join([name, *steps])
    if width - len(moving) < 1:
        return moving.lstrip()[:width]
    return elided(fixed, width - len(moving)) + moving


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


class Terminal(Protocol):
    """Where a `StepLine` writes: pytest's terminal (the plugin's), or a stream."""

    #: whether it is a real terminal, where one line is rewritten in place
    tty: bool

    @property
    def width(self) -> int | None:
        """The most characters a line may take (a terminal's width, less the last column), None: any."""
        ...

    def line(self, text: str) -> None:
        """Write ``text`` as a line of its own (a log), or rewrite the current line with it (a terminal)."""
        ...

    def close(self) -> None:
        """Nothing more is shown: give the terminal back as it was (called only if something was)."""
        ...


@dataclasses.dataclass
class _Step:
    what: str
    total: int | None
    started: float
    label: str = ""
    done: int = 0
    #: (time, done) at the first count: the rate counts from it (the first batch's duration is unknown)
    first: tuple[float, int] | None = None
    shown: bool = False

    def counts(self, now: float, *, finished: bool = False) -> str:
        """`` 3,328/29,525 (3,283/s, ETA 8s)``: what is done, the rate and the time left; "" uncounted."""
        if self.total is None:
            return ""
        text = f" {self.done:,}/{self.total:,}"
        if self.first is None or now <= self.first[0] or self.done <= self.first[1]:
            return text
        rate = (self.done - self.first[1]) / (now - self.first[0])
        if finished or self.done >= self.total:
            return f"{text} ({rate:,.0f}/s)"
        return f"{text} ({rate:,.0f}/s, ETA {_duration((self.total - self.done) / rate)})"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


class StepLine:
    """The steps of a golden set's run as one progress line (a `core.step_progress.Progress`): the open
    steps, outermost first, with the innermost's count, rate and ETA, or its time so far.

    A step is shown once one of the open steps has lasted `STEP_SHOW_AFTER`, so quick ones print nothing.
    On a terminal the line is rewritten in place as the steps go; in a CI log, where that would be noise, a
    line when a step is first shown, one every `STEP_LOG_SECONDS` while it runs, and one when it ends. A
    thread looks at the open steps every `STEP_TICK` while the line is in use (``with line:``): loading a
    model or distilling one counts nothing for seconds on end.
    """

    def __init__(
        self,
        name: str,
        terminal: Terminal,
        *,
        clock: Callable[[], float] = time.monotonic,
        tick: float | None = STEP_TICK,
    ) -> None:
        self.name = name
        self.terminal = terminal
        self.clock = clock
        #: seconds between looks at the open steps; None: only when `tick` is called (tests)
        self.interval = tick
        self.steps: list[_Step] = []
        self.shown = False
        self._written = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StepLine:
        if self.interval is not None:
            self._thread = threading.Thread(target=self._watch, name="embeval-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown:
                self.terminal.close()

    def _watch(self) -> None:
        assert self.interval is not None
        while not self._stop.wait(self.interval):
            self.tick()

    def begin(self, what: str, total: int | None = None, label: str = "") -> None:
        with self._lock:
            self.steps.append(_Step(what, total, self.clock(), label))
            self._look(self.clock())

    def advance(self, done: int) -> None:
        with self._lock:
            if not self.steps:
                return
            now = self.clock()
            current = self.steps[-1]
            current.done = done
            if current.first is None:
                current.first = (now, done)
            self._look(now, counted=True)

    def end(self) -> None:
        with self._lock:
            if not self.steps:
                return
            now = self.clock()
            current = self.steps[-1]
            if current.shown:
                self._write(self._text(now, ending=f", done in {now - current.started:.1f}s"), now)
            self.steps.pop()
            for step in self.steps:
                step.shown = step.shown or current.shown

    def tick(self) -> None:
        """Look at the open steps now: show them once they have lasted, tell their time."""
        with self._lock:
            self._look(self.clock())

    def _look(self, now: float, *, counted: bool = False) -> None:
        if not self.steps:
            return
        outermost, innermost = self.steps[0], self.steps[-1]
        # The line appears once the steps have lasted; a step begun under a shown one, once it has too.
        if not outermost.shown:
            due = now - outermost.started >= STEP_SHOW_AFTER
        elif not innermost.shown and now - innermost.started >= STEP_SHOW_AFTER:
            due = True
        elif self.terminal.tty:
            due = now - self._written >= (0.1 if counted else 1.0)
        else:
            due = innermost.shown and now - self._written >= STEP_LOG_SECONDS
        if due:
            self._write(self._text(now), now)

    def _text(self, now: float, *, ending: str = "") -> str:
        """The line: the open steps, outermost first, then what moves (the innermost's count, rate and time
        left, or its time so far; ``ending`` when it ends), fitted to the terminal's width."""
        finished = bool(ending)
        parts = []
        for outer, step in zip([None, *self.steps[:-1]], self.steps, strict=True):
            # A label is said once: the steps nested in an arm's are the arm's too.
            label = step.label if step.label and (outer is None or outer.label != step.label) else ""
            parts.append(f"{label} {step.what}".lstrip())
            if step is not self.steps[-1]:
                parts[-1] += step.counts(now, finished=finished)
        innermost = self.steps[-1]
        moving = innermost.counts(now, finished=finished)
        if innermost.total is None and not finished and now - innermost.started >= 1:
            moving += f" ({now - innermost.started:.0f}s)"
        return fitted_line("embeval ", self.name, parts, moving + ending, self.terminal.width)

    def _write(self, text: str, now: float) -> None:
        self.terminal.line(text)
        self._written = now
        self.shown = True
        for step in self.steps:
            step.shown = True


class StreamTerminal:
    """A `Terminal` on a plain stream: one line rewritten in place when it is a terminal, a line each
    otherwise (a CI log). The plugin shows on it the steps taken while the session is configured, before
    pytest's terminal reporter exists: resolving a model spec may build a model (the demo's candidate)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        #: the length of the line on the terminal now, blanked where a shorter one rewrites it
        self._shown = 0

    @property
    def width(self) -> int | None:
        return shutil.get_terminal_size().columns - 1 if self.tty else None

    def line(self, text: str) -> None:
        if self.tty:
            self.stream.write(f"\r{text}{' ' * (self._shown - len(text))}")
            self._shown = len(text)
        else:
            self.stream.write(f"{text}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


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
        counts = f" {done:,}/{total:,}{rate}"
        if self.tty:
            width = shutil.get_terminal_size().columns - 1
            text = f"{elided(self.label, width - len(counts))}{counts}"
            self.stream.write(f"\r{text}" + ("\n" if done >= total else ""))
        else:
            self.stream.write(f"{self.label}{counts}\n")
        self.stream.flush()
