"""The encoding progress line: rewritten in place on a terminal, rate-limited lines in a CI log."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

import pytest

from pytest_embeval.reports import progress


class FakeReporter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.written: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)

    def write(self, text: str, flush: bool = False) -> None:
        self.written.append(text)


class FakeCapture:
    @contextlib.contextmanager
    def global_and_fixture_disabled(self) -> Iterator[None]:
        yield


def test_a_ci_log_gets_a_line_every_ten_seconds_and_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 4.0, 11.0, 15.0, 22.5, 30.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    reporter = FakeReporter()
    line = progress.ProgressLine("support", reporter, FakeCapture())
    line.tty = False
    for done in (64, 128, 192, 256, 320, 400):
        line("candidate", "document", done, 400)
    assert reporter.lines == [
        "embeval support: candidate encoding document texts 64/400",
        "embeval support: candidate encoding document texts 192/400 (12/s)",
        "embeval support: candidate encoding document texts 320/400 (11/s)",
        "embeval support: candidate encoding document texts 400/400 (11/s)",
    ]


def test_a_terminal_line_is_rewritten_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 1.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    reporter = FakeReporter()
    line = progress.ProgressLine("support", reporter, FakeCapture())
    line.tty = True
    line("incumbent", "query", 200, 300)
    line("incumbent", "query", 300, 300)
    assert [text.startswith("\r") for text in reporter.written] == [True, True, False]
    assert reporter.written[-2:] == [
        "\rembeval support: incumbent encoding query texts 300/300 (100/s)",
        "\n",
    ]


def test_short_corpora_print_nothing() -> None:
    reporter = FakeReporter()
    progress.ProgressLine("support", reporter, FakeCapture())("incumbent", "document", 10, 100)
    assert reporter.lines == reporter.written == []


class FakeStream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_a_commands_progress_goes_to_its_stream_paced_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 5.0, 12.0, 14.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    stream = FakeStream(tty=False)
    line = progress.StreamProgress("embeval judge: pairs graded", stream)
    for done in (0, 50, 120, 140):
        line(done, 140)
    assert stream.getvalue() == (
        "embeval judge: pairs graded 0/140\n"
        "embeval judge: pairs graded 120/140 (10/s)\n"
        "embeval judge: pairs graded 140/140 (10/s)\n"
    )


def test_a_commands_progress_on_a_terminal_is_one_line_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 1.0, 2.0])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    stream = FakeStream(tty=True)
    line = progress.StreamProgress("embeval judge: pairs graded", stream)
    for done in (0, 1_000, 2_000):
        line(done, 2_000)
    assert stream.getvalue() == (
        "\rembeval judge: pairs graded 0/2,000"
        "\rembeval judge: pairs graded 1,000/2,000 (1,000/s)"
        "\rembeval judge: pairs graded 2,000/2,000 (1,000/s)\n"
    )
