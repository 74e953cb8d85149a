"""What every ``embeval`` command shares: exit statuses, the one-line error, argument types, reading the
golden set and sheets, printing lines."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_embeval.files.output_paths import clash, file_output_problem, output_problem, special_file
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.inputs import golden_inputs
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.merging import DEFAULT_MAX_GRADE, sheet_grades
from pytest_embeval.judging.pooling import Sheet, SheetError, read_sheet
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MAY_HOLD_GRADES",
    "CliError",
    "add_scale",
    "bounded_float",
    "check_out",
    "check_outputs",
    "golden_reads",
    "golden_set",
    "model_folders",
    "nonnegative_int",
    "positive_int",
    "print_lines",
    "sheet_grades_of",
    "sheets",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

#: Said when a sheet to be written exists: overwriting it could lose a judge's work.
MAY_HOLD_GRADES = " (it may hold grades)"


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


def bounded_float(
    low: float, high: float, *, include_high: bool, include_low: bool = True
) -> Callable[[str], float]:
    """An argument type for a number in the interval, which its message writes as it is: ``[0, 1)``,
    ``(0, 1]``; not a number (``nan``) is never in it."""
    opening, closing = "[" if include_low else "(", "]" if include_high else ")"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        above = low <= value if include_low else low < value
        below = value <= high if include_high else value < high
        if not (above and below):
            raise argparse.ArgumentTypeError(
                f"expected a number in {opening}{low:g}, {high:g}{closing}, got {text!r}"
            )
        return value

    return parse


def golden_reads(path: str) -> tuple[dict[Path, str], dict[Path, str]]:
    """The files and folders a command reading the golden file at ``path`` reads (`golden.inputs`)."""
    inputs = golden_inputs(path)
    return inputs.files, inputs.folders


def model_folders(specs: Sequence[str]) -> dict[Path, str]:
    """The folders of the local models among model ``specs`` (a folder, before any ``?parameters``)."""
    folders = {}
    for spec in specs:
        folder = Path(spec.split("?", 1)[0])
        if folder.is_dir():
            folders[folder] = f"the model folder of {spec!r}"
    return folders


def check_out(
    value: str,
    *,
    example: str,
    reads: Mapping[Path, str],
    force: bool | None,
    holds: str = "",
    beside: Mapping[str, Path] | None = None,
    folders: Mapping[Path, str] | None = None,
    option: str = "--out",
) -> Path:
    """The path of an output option (``--out``, as given: ``value``), once it and the files written ``beside``
    it (what each is -> its path: a draw record, an audit file) can be written; else `CliError`, before any
    work. Refused: a folder (``example`` names a file it could hold), a missing folder, a special file that
    is not written through (`files.output_paths`), one with files beside it (they would be created next to
    a device), and an input: one of the files the command ``reads`` (path -> what it is) or inside one of
    its ``folders``, whatever ``force`` says. An existing output is overwritten only with ``--force``
    (``force`` None: the option has none, and is overwritten), its message saying what it ``holds``."""
    path = Path(value)
    problem = file_output_problem(value, example) or output_problem(path, example, make_folders=False)
    if problem is not None:
        raise CliError(f"{option} {value}: {problem}")
    others = beside or {}
    special = special_file(path)
    if special is not None and others:
        what, where = next(iter(others.items()))
        problem = f"is {special}; {what} would be written beside it ({where}): name a regular file"
        raise CliError(f"{option} {value}: {problem}")
    check_outputs(
        {f"{option} {value}": path, **{f"{option} {value}: {what} {p}": p for what, p in others.items()}},
        reads=reads,
        folders=folders,
        force=force,
        holds=holds,
    )
    return path


def check_outputs(
    outputs: Mapping[str, Path],
    *,
    reads: Mapping[Path, str],
    folders: Mapping[Path, str] | None = None,
    force: bool | None,
    holds: str = "",
) -> None:
    """`CliError` for the first output (how it was given -> its path) that is an input of the command
    (`output_paths.clash`: ``--force`` or not), or that exists without ``--force`` (``force`` False); a
    special file written through holds nothing to lose and needs no ``--force``."""
    problem = clash(outputs, reads, folders, reader="this command")
    if problem is not None:
        raise CliError(problem)
    if force is False:
        for given, path in outputs.items():
            if path.exists() and special_file(path) is None:
                raise CliError(f"{given} exists{holds}; choose another name or pass --force")


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
