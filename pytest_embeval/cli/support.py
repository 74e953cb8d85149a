"""What every ``embeval`` command shares: exit statuses, the one-line error, argument types, reading the
golden set and sheets, printing lines."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.merging import DEFAULT_MAX_GRADE, sheet_grades
from pytest_embeval.judging.pooling import Sheet, SheetError, read_sheet
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "add_scale",
    "bounded_float",
    "golden_set",
    "nonnegative_int",
    "positive_int",
    "print_lines",
    "sheet_grades_of",
    "sheets",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CliError(Exception):
    """Bad input: printed as ``embeval <command>: error: <line>`` for each line, exit status 2."""


def _int_at_least(low: int, expected: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


positive_int = _int_at_least(1, "a positive integer")
nonnegative_int = _int_at_least(0, "an integer >= 0")


def bounded_float(low: float, high: float, *, include_high: bool) -> Callable[[str], float]:
    closing = "]" if include_high else ")"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (low <= value <= high if include_high else low <= value < high):
            raise argparse.ArgumentTypeError(
                f"expected a number in [{low:g}, {high:g}{closing}, got {text!r}"
            )
        return value

    return parse


def golden_set(path: str) -> GoldenSet:
    try:
        return load_golden(path)
    except GoldenError as error:
        raise CliError(str(error)) from None


def sheets(paths: Sequence[str]) -> list[Sheet]:
    problems: list[str] = []
    read: list[Sheet] = []
    for path in paths:
        try:
            read.append(read_sheet(path))
        except SheetError as error:
            problems.extend(error.problems)
    if problems:
        raise CliError("\n".join(problems))
    return read


def sheet_grades_of(read: Sequence[Sheet], max_grade: int) -> list[dict[Pair, int]]:
    """Each sheet's grades (`merging.sheet_grades`); every sheet's problems together as one `CliError`."""
    problems: list[str] = []
    grades: list[dict[Pair, int]] = []
    for sheet in read:
        try:
            grades.append(sheet_grades(sheet, max_grade=max_grade))
        except SheetError as error:
            problems.extend(error.problems)
    if problems:
        raise CliError("\n".join(problems))
    return grades


def print_lines(lines: Sequence[str]) -> None:
    for line in lines:
        print(line)


def add_scale(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-grade",
        type=positive_int,
        default=DEFAULT_MAX_GRADE,
        metavar="N",
        help="grades are integers 0..N (default %(default)s).",
    )
