"""``embeval judge-page``: serve a judging sheet on a local page for one judge (`cli` registers it; the server
and the page are in `judge_page`)."""

from __future__ import annotations

import argparse
import signal
import sys
import webbrowser
from pathlib import Path
from types import FrameType
from typing import Any

from pytest_embeval.cli.support import EXIT_OK, CliError, golden_set, positive_int, print_lines
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judge_page.pairs import open_workbook
from pytest_embeval.judge_page.server import JudgingServer, JudgingState
from pytest_embeval.judging.grade_scale import grade_scale, no_guidelines_note
from pytest_embeval.judging.llm_judge import is_model_judge
from pytest_embeval.judging.merging import DEFAULT_MAX_GRADE
from pytest_embeval.judging.pooling import SheetError

__all__ = ["add_parser"]

#: One key per grade: the digits.
_KEYS = 10


def _judge_page(args: argparse.Namespace) -> int:
    if args.judge and is_model_judge(args.judge):
        raise CliError(f"--judge {args.judge!r} names a model; the page is for a person's grades")
    golden = golden_set(args.golden) if args.golden is not None else None
    scale = grade_scale(golden, args.max_grade, default_max_grade=DEFAULT_MAX_GRADE)
    if scale.max_grade >= _KEYS:
        raise CliError(f"--max-grade {scale.max_grade}: the page grades by one digit key, so 0..9 at most")
    calibration = Path(args.calibration) if args.calibration is not None else None
    sheet = Path(args.sheet)
    if calibration is not None and calibration.resolve() == sheet.resolve():
        raise CliError(f"--calibration {calibration} is the sheet itself")
    try:
        workbook, sheets = open_workbook(
            sheet, calibration=calibration, golden=golden, scale=scale, judge=args.judge
        )
    except SheetError as error:
        raise CliError("\n".join(error.problems)) from None
    try:
        server = JudgingServer(JudgingState(workbook, sheets), args.port)
    except OSError as error:
        raise CliError(f"--port {args.port}: cannot listen on 127.0.0.1: {error.strerror or error}") from None
    # Stopped by Ctrl-C or by SIGTERM alike (a shell's background job ignores SIGINT): every grade is in
    # the sheets already, so stopping only closes the socket.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        print_lines(_opening_lines(server, golden, calibration))
        sys.stdout.flush()
        if args.open:
            webbrowser.open(server.url)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
    graded = sum(1 for grade in server.state.marks.grades if grade)
    print(f"stopped: {graded} of {len(workbook.pairs)} pairs graded")
    return EXIT_OK


def _opening_lines(server: JudgingServer, golden: GoldenSet | None, calibration: Path | None) -> list[str]:
    """What the sheets hold, the scale, what is missing, and the address."""
    workbook = server.state.workbook
    graded = sum(1 for grade in server.state.marks.grades if grade)
    sheets = " then ".join(map(str, workbook.sheets))
    lines = [f"judging page for {sheets}: {len(workbook.pairs)} pairs, {graded} graded"]
    if calibration is not None:
        lines.append(
            f"the first {workbook.shared} pairs are the calibration sample ({calibration}), which the other "
            "judge grades too: the page says when they are done"
        )
    scale = workbook.scale
    labels = ", ".join(f"{grade} {label}".rstrip() for grade, label in enumerate(scale.labels))
    if scale.source == "guidelines" and golden is not None and golden.guidelines is not None:
        source = f"the labels {golden.guidelines.path} names"
    else:
        source = "their usual names"
    lines.append(f"grades 0..{scale.max_grade}, by {source}: {labels}")
    if golden is None:
        lines.append(
            "no guidelines: without --golden GOLDEN.yaml the page cannot show the golden set's written "
            "relevance definition"
        )
    elif (note := no_guidelines_note(golden)) is not None:
        lines.append(note)
    lines.append(
        f"open {server.url} in a browser on this machine (Ctrl-C stops; each grade is saved at once)"
    )
    return lines


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0..65535, got {text!r}")
    return int(text)


def add_parser(commands: Any) -> None:
    """Add ``judge-page`` to the ``embeval`` parser's subcommands."""
    parser = commands.add_parser(
        "judge-page",
        help="grade a blind sheet on a local web page: one pair at a time, one key per grade.",
        description="Serves SHEET on http://127.0.0.1 (a free port, behind a per-session token in the "
        "address it prints) for one judge: the query, the document, the golden set's guidelines on top, "
        "a grade by one key, the next pair at once. Each grade is written into the sheet as it is given, "
        "atomically; opening the sheet again resumes at the first ungraded pair; two pages on one sheet "
        "keep each other's grades. The sheet stays a valid sheet for embeval merge and embeval agreement "
        "throughout.",
    )
    parser.add_argument("sheet", metavar="SHEET.csv", help="the judge's sheet (embeval pool).")
    parser.add_argument(
        "--golden",
        default=None,
        metavar="GOLDEN.yaml",
        help="the golden set: its guidelines on the page, its grade labels, its texts, and every row checked "
        "against it (without it, the sheet's own text cells are shown and no guidelines).",
    )
    parser.add_argument(
        "--calibration",
        default=None,
        metavar="CALIBRATION.csv",
        help="the judge's copy of the calibration sample (embeval pool --sample), graded first: the pairs "
        "both judges grade; the page says when they are done (then: embeval agreement).",
    )
    parser.add_argument(
        "--judge",
        default="",
        metavar="NAME",
        help="written into the judge cell of every pair graded (default: the cell is left as it is, and "
        "embeval merge names the judge by the sheet's file).",
    )
    parser.add_argument(
        "--max-grade",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"grades are integers 0..N, at most 9 (default: the highest grade the guidelines name, else "
        f"{DEFAULT_MAX_GRADE}).",
    )
    parser.add_argument(
        "--port", type=_port, default=0, metavar="N", help="the port on 127.0.0.1 (default: a free one)."
    )
    parser.add_argument("--open", action="store_true", help="open the page in the default browser.")
    parser.set_defaults(run=_judge_page)
