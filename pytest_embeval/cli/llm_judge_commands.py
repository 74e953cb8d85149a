"""``embeval judge`` and ``embeval calibrate``: an LLM grades a blind sheet, and is checked against people
before its grades may be merged (`cli` registers them; the work is in `judge`, `grading`, `disagreement`
and `provenance`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_embeval.cli.support import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    add_scale,
    bounded_float,
    check_out,
    golden_reads,
    golden_set,
    nonnegative_int,
    print_lines,
    sheet_grades_of,
    sheets,
)
from pytest_embeval.core.text_table import table
from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.judging.agreement import agreement_lines
from pytest_embeval.judging.calibration_records import calibration_record
from pytest_embeval.judging.disagreement import DEFAULT_ALPHA, DEFAULT_MIN_KAPPA, Verdict, calibrate
from pytest_embeval.judging.grading import GradingRun, Spend, audit_path, grade_sheet
from pytest_embeval.judging.llm_judge import Judge, JudgeError, Price, is_model_judge, judge_settings
from pytest_embeval.judging.pooling import Sheet, SheetError
from pytest_embeval.reports.progress_lines import StreamProgress

__all__ = ["add_parsers"]


# ---------------------------------------------------------------------------------------------- judge


def _judge(args: argparse.Namespace) -> int:
    files, folders = golden_reads(args.golden)
    # An existing --out is an earlier run's graded sheet, which the judge resumes.
    out = check_out(
        args.out,
        example="graded.csv",
        reads={**files, Path(args.sheet): "the sheet to grade"},
        folders=folders,
        force=None,
        beside={"its audit file": audit_path(Path(args.out))},
    )
    golden = golden_set(args.golden)
    if golden.guidelines is None:
        raise CliError(
            f"{args.golden}: guidelines: missing key; the judge grades by the written relevance definition "
            "people grade by: write it into a file and name it under 'guidelines:'"
        )
    highest = max((grade for docs in golden.qrels.values() for grade in docs.values()), default=0)
    if highest > args.max_grade:
        raise CliError(
            f"{args.golden}: the qrels hold grade {highest}, above --max-grade {args.max_grade}; "
            "declare the golden set's scale with --max-grade"
        )
    try:
        judge = Judge(judge_settings(args.model), golden.guidelines.text, args.max_grade)
    except JudgeError as error:
        raise CliError(str(error)) from None
    (sheet,) = sheets([args.sheet])
    try:
        run = grade_sheet(golden, sheet, judge, out, progress=StreamProgress("embeval judge: pairs graded"))
    except SheetError as error:
        raise CliError("\n".join(error.problems)) from None
    except JudgeError as error:
        raise CliError(str(error)) from None
    print_lines(_judge_lines(run, judge, sheet, out, listed=args.list))
    return EXIT_FAILED if run.ungraded else EXIT_OK


def _spend_text(spend: Spend, price: Price | None) -> str:
    text = (
        f"{spend.requests:,} request{'' if spend.requests == 1 else 's'}, {spend.input_tokens:,} input and "
        f"{spend.output_tokens:,} output tokens"
    )
    if spend.cost is not None and price is not None:
        rate = f"${price.input:g}" if price.input == price.output else f"${price.input:g} / ${price.output:g}"
        text += f" (${spend.cost:.4g} at {rate} per million)"
    return text


def _judge_lines(run: GradingRun, judge: Judge, sheet: Sheet, out: Path, *, listed: int) -> list[str]:
    price = judge.settings.price
    lines = [
        f"judge: {run.judge}",
        f"pairs on {sheet.name}: {run.pairs} ({run.resumed} graded by an earlier run, not asked again)",
        f"graded now: {run.graded}; left ungraded: {len(run.ungraded)}",
        f"this run: {_spend_text(run.spend, price)}",
    ]
    if run.total != run.spend:
        lines.append(f"every run of this sheet (audit): {_spend_text(run.total, price)}")
    lines.append(f"graded sheet written to {out}; every request and answer in {audit_path(out)}")
    if run.ungraded:
        shown = run.ungraded[:listed] if listed else ()
        lines += [
            "",
            f"left ungraded after {judge.settings.attempts} answer(s) each, never guessed ({len(shown)} of "
            f"{len(run.ungraded)} listed); the same command asks for them again:",
        ]
        lines += table(
            ["query", "document", "answer"], [[u.query_id, u.doc_id, u.problem] for u in shown], names=2
        )
    return lines


# ------------------------------------------------------------------------------------------ calibrate


def _graded_judges(sheet: Sheet) -> list[str]:
    """The judges of a sheet's graded rows, in order of first appearance (a blank cell: the file name)."""
    judges: dict[str, None] = {}
    for row in sheet.rows:
        if row.grade:
            judges.setdefault(row.judge or sheet.name, None)
    return list(judges)


def _calibrate(args: argparse.Namespace) -> int:
    if args.record is not None:
        check_out(
            args.record,
            example="calibration.json",
            reads={Path(args.people): "the people's sheet", Path(args.model): "the model's sheet"},
            force=None,
            option="--record",
        )
    people_sheet, model_sheet = sheets([args.people, args.model])
    people_judges, model_judges = _graded_judges(people_sheet), _graded_judges(model_sheet)
    models = [judge for judge in people_judges if is_model_judge(judge)]
    if models:
        raise CliError(f"{args.people}: graded by a model ({models[0]!r}): calibrate a model against people")
    if len(model_judges) != 1 or not is_model_judge(model_judges[0]):
        found = ", ".join(repr(judge) for judge in model_judges) or "nobody"
        raise CliError(
            f"{args.model}: its grades must be one model judge's (an embeval judge sheet), found {found}"
        )
    grades = sheet_grades_of([people_sheet, model_sheet], args.max_grade)
    try:
        result = calibrate(
            grades[0], grades[1], max_grade=args.max_grade, min_kappa=args.min_kappa, alpha=args.alpha
        )
    except ValueError as error:
        raise CliError(f"{args.people} and {args.model}: {error}") from None
    common = sorted(pair for pair in grades[0] if pair in grades[1])
    if args.record is not None:
        record = calibration_record(
            result,
            judge=model_judges[0],
            people=people_judges,
            human=args.people,
            model=args.model,
            pairs=common,
        )
        write_atomic(Path(args.record), json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(f"model: {model_judges[0]}")
    print(f"people: {', '.join(people_judges)}")
    print_lines(agreement_lines(result.agreement, "people", "model", listed=args.list))
    print_lines(["", *result.lines()])
    if args.record is not None:
        print(f"calibration recorded in {args.record} (embeval merge --calibration {args.record})")
    return EXIT_OK if result.verdict is Verdict.USABLE else EXIT_FAILED


# --------------------------------------------------------------------------------------------- parsers

_JUDGE_DESCRIPTION = (
    "Sends each pair (the golden set's guidelines, the query and the document; no id, arm, rank or "
    "score) to a chat model behind an OpenAI-compatible chat-completions endpoint, at temperature 0, "
    "and reads its answer strictly as a grade on the scale: anything else is asked again, then left "
    "ungraded and listed, never guessed. Rows are written as they are graded, so an interrupted run "
    "resumes with only the missing pairs; every request and answer goes to OUT's .audit.jsonl. Exits "
    "1 when pairs are left ungraded. The key is read from the environment (OPENAI_API_KEY, or the "
    "variable api_key_env names)."
)
_CALIBRATE_DESCRIPTION = (
    "On the pairs both sheets graded: percent agreement, Cohen's kappa, linearly weighted kappa, the "
    "confusion matrix (rows: people), Stuart-Maxwell's test of marginal homogeneity, Bowker's test "
    "of symmetry and the mean grade difference (model - people) with its interval. Verdict: usable "
    "(exit 0), random disagreement too high (the gate's kappa below --min-kappa, exit 1) or "
    "systematic disagreement (either test below --alpha/2, exit 1), naming the grades that shift."
)


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    judge_parser = commands.add_parser(
        "judge",
        help="grade every pair of a blind sheet with a chat model (an LLM judge) by the guidelines.",
        description=_JUDGE_DESCRIPTION,
    )
    judge_parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden set (with 'guidelines').")
    judge_parser.add_argument("sheet", metavar="SHEET.csv", help="a blind sheet of embeval pool.")
    judge_parser.add_argument(
        "--model",
        required=True,
        metavar="SPEC",
        help="the judge: openai:MODEL[?base_url=URL&api_key_env=VAR&price_per_million_tokens=IN,OUT"
        "&concurrency=4&attempts=3&max_tokens=16&max_retries=5&timeout=60].",
    )
    judge_parser.add_argument("--out", required=True, metavar="GRADED.csv", help="the graded sheet to write.")
    add_scale(judge_parser)
    judge_parser.add_argument(
        "--list",
        type=nonnegative_int,
        default=20,
        metavar="N",
        help="list up to N ungraded pairs (default %(default)s).",
    )
    judge_parser.set_defaults(run=_judge)

    calibrate_parser = commands.add_parser(
        "calibrate",
        help="is a model's grading usable? kappa against people, and a test of systematic disagreement.",
        description=_CALIBRATE_DESCRIPTION,
    )
    calibrate_parser.add_argument(
        "people", metavar="PEOPLE.csv", help="the sample people graded (reconciled)."
    )
    calibrate_parser.add_argument(
        "model", metavar="MODEL.csv", help="the model's graded sheet (embeval judge)."
    )
    calibrate_parser.add_argument(
        "--min-kappa",
        type=bounded_float(-1.0, 1.0, include_high=True),
        default=DEFAULT_MIN_KAPPA,
        metavar="K",
        help="the kappa the model must reach (default %(default)s; weighted on a scale of 3+ grades).",
    )
    calibrate_parser.add_argument(
        "--alpha",
        type=bounded_float(0.0, 1.0, include_high=False),
        default=DEFAULT_ALPHA,
        metavar="A",
        help="significance level of the systematic-disagreement tests (default %(default)s).",
    )
    add_scale(calibrate_parser)
    calibrate_parser.add_argument(
        "--record",
        default=None,
        metavar="CALIBRATION.json",
        help="write the result here, for embeval merge --calibration.",
    )
    calibrate_parser.add_argument(
        "--list",
        type=nonnegative_int,
        default=10,
        metavar="N",
        help="list up to N disagreements, largest gap first (default %(default)s).",
    )
    calibrate_parser.set_defaults(run=_calibrate)
