"""The encoding progress line: rewritten in place on a terminal, rate-limited lines in a CI log."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from pytest_embeval import progress


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
