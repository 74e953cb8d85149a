"""``embeval pool``, ``merge``, ``agreement``, ``coverage`` and ``plan``: the judging afternoon's commands,
each implementation beside its parser (`add_parsers`). The work is done by pure functions, one module per
step in `pytest_embeval.judging`: `rankings` (reading a run's report or TREC run files), `pooling` (blind
sheets), `merging` (grades into qrels), `agreement` (kappa), `coverage` (judged@k per arm) and `planning` (the
queries needed); this module only reads arguments and files and prints.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_embeval.cli import seeds_and_refresh
from pytest_embeval.cli.support import (
    EXIT_FAILED,
    EXIT_OK,
    MAY_HOLD_GRADES,
    CliError,
    check_out,
    check_outputs,
    golden_reads,
    model_folders,
    sheet_grades_of,
)
from pytest_embeval.cli.support import add_scale as _add_scale
from pytest_embeval.cli.support import bounded_float as _bounded_float
from pytest_embeval.cli.support import golden_set as _golden
from pytest_embeval.cli.support import nonnegative_int as _nonnegative_int
from pytest_embeval.cli.support import positive_int as _positive_int
from pytest_embeval.cli.support import print_lines as _print
from pytest_embeval.cli.support import sheets as _sheets
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.agreement import agreement, agreement_lines
from pytest_embeval.judging.calibration_records import calibration_sources, model_lines, read_calibration
from pytest_embeval.judging.coverage import DEFAULT_COVERAGE_GAP, coverage, coverage_lines, coverage_warnings
from pytest_embeval.judging.grade_scale import no_guidelines_note
from pytest_embeval.judging.merging import merge_sheets, qrels_file
from pytest_embeval.judging.planning import DEFAULT_SD, observed_sd, plan, plan_lines
from pytest_embeval.judging.pooling import (
    DEFAULT_DEPTH,
    SheetError,
    pool_from_rankings,
    pool_lines,
    sample_pool,
    sheet_pairs,
    split_pool,
    write_sheet,
)
from pytest_embeval.judging.provenance import golden_sources
from pytest_embeval.judging.rankings import (
    ReportError,
    find_golden_records,
    load_report,
    rankings_from_records,
    read_trec_run,
)
from pytest_embeval.judging.seeds import one_arm_seeds

# ------------------------------------------------------------------------------------------------ helpers


def _report_records(path: str, golden: GoldenSet) -> list[Mapping[str, Any]]:
    """The report's entries of ``golden``: one, or a shortlist's one per candidate."""
    try:
        return find_golden_records(load_report(path), golden, path)
    except ReportError as error:
        raise CliError(str(error)) from None


def _report_rankings(paths: Sequence[str], golden: GoldenSet) -> dict[str, dict[str, list[str]]]:
    """Every arm of every report; arms are named by role (a shortlist's candidates by name), prefixed with
    the report when there are several."""
    rankings: dict[str, dict[str, list[str]]] = {}
    for path in paths:
        try:
            arms = rankings_from_records(_report_records(path, golden), path)
        except ReportError as error:
            raise CliError(str(error)) from None
        for role, by_query in arms.items():
            rankings[role if len(paths) == 1 else f"{path}:{role}"] = by_query
    return rankings


def _consensus_failures(paths: Sequence[str], golden: GoldenSet) -> set[str]:
    """The queries the reports list as consensus failures (neither arm finds a relevant document within
    the primary cutoff), in any stratum."""
    if not paths:
        raise CliError("--consensus-failures needs --from-report REPORT.json: the report lists them")
    failures: set[str] = set()
    for path in paths:
        for record in _report_records(path, golden):
            strata = record.get("strata")
            if not isinstance(strata, list) or any("consensus_failures" not in s for s in strata):
                raise CliError(f"{path}: no consensus_failures in the report (written by an older embeval?)")
            failures.update(qid for stratum in strata for qid in stratum["consensus_failures"])
    return failures


def _model_rankings(specs: Sequence[str], golden: GoldenSet, depth: int) -> dict[str, dict[str, list[str]]]:
    """Each model's exact top ``depth`` per query: pooling asks what a model ranks highest, whatever index
    the run uses. Imported here because it loads numpy-heavy code and, for real models, torch."""
    from pytest_embeval.arms.embedding import EncoderError, embed
    from pytest_embeval.arms.model_specs import resolve_model
    from pytest_embeval.search.exact import exact_search

    doc_ids = [doc.id for doc in golden.documents]
    doc_texts = [doc.embed_text for doc in golden.documents]
    query_texts = [query.text for query in golden.queries]
    rankings: dict[str, dict[str, list[str]]] = {}
    for spec in specs:
        try:
            arm = resolve_model(spec)
            documents = embed(arm, doc_texts, "document")
            queries = embed(arm, query_texts, "query")
        except EncoderError as error:
            raise CliError(str(error)) from None
        if queries.shape[1] != documents.shape[1]:
            raise CliError(
                f"encoder {spec!r} returned {queries.shape[1]}-dimensional query vectors but "
                f"{documents.shape[1]}-dimensional document vectors: they cannot be compared"
            )
        positions, _ = exact_search(queries, documents, min(depth, len(doc_ids)), doc_ids=doc_ids)
        rankings[spec] = {
            query.id: [doc_ids[p] for p in row]
            for query, row in zip(golden.queries, positions.tolist(), strict=True)
        }
    return rankings


# ----------------------------------------------------------------------------------------------- commands


def _pool(args: argparse.Namespace) -> int:
    if not args.from_report and not args.model:
        raise CliError("give the arms to pool: --from-report REPORT.json (no model needed) or --model SPEC")
    files, folders = golden_reads(args.golden)
    reads = {
        **files,
        **{Path(path): "a report pooled (--from-report)" for path in args.from_report},
        **{Path(path): "a run pooled (--from-run)" for path in args.from_run},
        **{Path(path): "a sheet left out (--exclude)" for path in args.exclude},
        **({} if args.seeds is None else {Path(args.seeds): "the seeds (--seeds)"}),
    }
    folders = {**folders, **model_folders(args.model)}
    # Split, the sheets are named after --out (SHEET.1-of-N.csv), which is not written itself.
    first = Path(args.out).with_name(f"{Path(args.out).stem}.1-of-{args.split}{Path(args.out).suffix}")
    split = {"its split sheets": first} if args.split is not None else None
    out = check_out(
        args.out,
        example="sheet.csv",
        reads=reads,
        folders=folders,
        force=args.force or split is not None,
        holds=MAY_HOLD_GRADES,
        beside=split,
    )
    golden = _golden(args.golden)
    exclude = sheet_pairs(_sheets(args.exclude))
    rejudge = _consensus_failures(args.from_report, golden) if args.consensus_failures else None
    if rejudge is not None and not rejudge:
        print(
            "no consensus failures in the report: every judged query has a relevant document in some "
            "arm's top k; no sheet written"
        )
        return EXIT_OK
    rankings = _report_rankings(args.from_report, golden)
    rankings.update(_model_rankings(args.model, golden, args.depth))
    try:
        runs = {path: read_trec_run(path, golden) for path in args.from_run}
    except ReportError as error:
        raise CliError(str(error)) from None
    try:
        seeds = seeds_and_refresh.plan_seeds(args, golden, rankings, exclude)
        pool = pool_from_rankings(
            golden if seeds is None else seeds_and_refresh.with_trusted(golden, seeds),
            rankings,
            depth=args.depth,
            seed=args.seed,
            exclude=exclude,
            runs=runs,
            rejudge=rejudge,
            seeds=None if seeds is None else seeds.to_confirm,
        )
    except ValueError as error:
        raise CliError(str(error)) from None
    if args.sample is not None:
        pool = sample_pool(pool, args.sample)
    sheets = {out: pool}
    if args.split is not None:
        try:
            parts = split_pool(pool, args.split)
        except ValueError as error:
            raise CliError(str(error)) from None
        sheets = {
            out.with_name(f"{out.stem}.{i}-of-{len(parts)}{out.suffix}"): part
            for i, part in enumerate(parts, 1)
        }
        check_outputs(
            {f"--out {args.out}: sheet {path}": path for path in sheets},
            reads=reads,
            folders=folders,
            force=args.force,
            holds=MAY_HOLD_GRADES,
        )
    # The sheets first: they are the product, and must not depend on stdout staying open.
    if pool.rows:
        for path, sheet in sheets.items():
            write_sheet(path, sheet)
    written = [] if seeds is None else seeds_and_refresh.write_trusted(golden, seeds)
    if seeds is not None:
        _print(seeds_and_refresh.seed_lines(seeds, args.seeds, args.depth))
    _print(pool_lines(pool, per_query=args.per_query))
    if pool.rows:
        for path, sheet in sheets.items():
            queries = sum(1 for query in sheet.queries if query.rows)
            print(f"sheet written to {path} ({len(sheet.rows)} pairs, {queries} queries)")
        print("grade every row in the 'grade' column and write your name in 'judge'")
        note = no_guidelines_note(golden)
        if note is not None:
            print(note)
        if rejudge is not None:
            print(
                "judged pairs are on the sheet again, blind: where a new grade differs from the qrels, "
                "revise the qrels by hand (embeval merge never overwrites a judgment)"
            )
    else:
        print("nothing new to judge: every pooled pair is judged or on an excluded sheet; no sheet written")
    _print(written)
    return EXIT_OK


def _merge(args: argparse.Namespace) -> int:
    golden = _golden(args.golden)
    try:
        qrels_file(golden)  # inline judgments have no file to merge into: refused before the sheets
        calibrations = [read_calibration(Path(path)) for path in args.calibration]
        earlier = golden_sources(golden)
    except (ValueError, GoldenError) as error:
        raise CliError(str(error)) from None
    sheets = _sheets(args.sheets)
    days = seeds_and_refresh.judged_on(args, [sheet.path for sheet in sheets])
    try:
        result = merge_sheets(
            golden,
            sheets,
            max_grade=args.max_grade,
            resolve=args.resolve,
            judged_on=days,
            refresh=args.refresh,
        )
        sources = calibration_sources(
            Counter(j.judge for j in [*result.new, *(r.new for r in result.rejudged)]),
            calibrations,
            query_ids={query.id for query in golden.queries},
            doc_ids={doc.id for doc in golden.documents},
            golden_name=golden.name,
            accept_uncalibrated=args.accept_uncalibrated,
        )
    except SheetError as error:
        raise CliError("\n".join([*error.problems, "nothing was merged"])) from None
    except ValueError as error:
        raise CliError("\n".join([*str(error).splitlines(), "nothing was merged"])) from None
    judges = ", ".join(f"{judge} ({rows} rows)" for judge, rows in result.judges.items())
    print(f"{len(sheets)} sheet(s), judges: {judges or 'none'}")
    print(f"already in the qrels with the same grade: {result.unchanged}")
    if result.resolved:
        print(f"judges disagreed on {result.resolved} pair(s), resolved by --resolve {args.resolve}")
    if result.set_aside:
        print(
            f"a model's grades set aside (people graded the pair, or the qrels judge it): {result.set_aside}"
        )
    _print(model_lines(result.new, sources))
    if result.new or result.rejudged:
        shown = sorted(set(days))
        given = "--judged-on" if args.judged_on else "the sheets' dates"
        print(f"judged on {', '.join(shown)} ({given})")
    _print(seeds_and_refresh.drift_lines(result, golden, args.max_grade))
    _print(seeds_and_refresh.write_merge(golden, result, sources, earlier, dry_run=args.dry_run))
    return EXIT_OK


def _agreement(args: argparse.Namespace) -> int:
    grades = sheet_grades_of(_sheets([args.first, args.second]), args.max_grade)
    try:
        result = agreement(grades[0], grades[1], max_grade=args.max_grade)
    except ValueError as error:
        raise CliError(f"{args.first} and {args.second}: {error}") from None
    _print(agreement_lines(result, args.first, args.second, listed=args.list))
    if args.min_kappa is None:
        return EXIT_OK
    name, value = result.gate
    if value is None:
        print(
            f"FAIL: {name} is undefined, so agreement above {args.min_kappa} cannot be shown", file=sys.stderr
        )
        return EXIT_FAILED
    if not value >= args.min_kappa:  # a kappa that is not a number is below any bar
        print(f"FAIL: {name} {value:.3f} is below --min-kappa {args.min_kappa}", file=sys.stderr)
        return EXIT_FAILED
    print(f"OK: {name} {value:.3f} >= --min-kappa {args.min_kappa}")
    return EXIT_OK


def _coverage(args: argparse.Namespace) -> int:
    golden = _golden(args.golden)
    rankings = _report_rankings([args.from_report], golden)
    k = args.k or golden.metric.k
    try:
        sources = golden_sources(golden)
    except GoldenError as error:
        raise CliError(str(error)) from None
    try:
        rows = coverage(golden, rankings, k=k, seeded={pair for pair, s in sources.items() if s.by_seed})
    except ValueError as error:
        raise CliError(f"{args.from_report}: {error}") from None
    _print(coverage_lines(rows))
    warnings = coverage_warnings(
        rows, golden_path=args.golden, report_path=args.from_report, threshold=args.threshold
    )
    for warning in warnings:
        print(f"WARNING: {warning}", file=sys.stderr)
    # A heuristic about where the seeds came from, not a measured gap: it warns, and never fails the check.
    seeded = one_arm_seeds({pair: s.seed for pair, s in sources.items() if s.seed is not None}, rankings)
    if seeded is not None:
        print(f"WARNING: {seeded}", file=sys.stderr)
    return EXIT_FAILED if warnings else EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    golden = _golden(args.golden)
    observed: dict[str, float] = {}
    if args.from_report:
        # A shortlist's report: the first candidate's comparison (the sd of a difference is the pair's own).
        record = _report_records(args.from_report, golden)[0]
        if record.get("metric") != str(golden.metric):
            raise CliError(
                f"{args.from_report}: the report measured {record.get('metric')!r}, the golden set's metric "
                f"is {str(golden.metric)!r}; its standard deviations do not apply"
            )
        # Under a design, the MDE comes from the variance of the draw with one query's sd (`planning`).
        observed = observed_sd(record, per_query=golden.design is not None and golden.weights is not None)
    rows = plan(golden, sd=args.sd, observed=observed)
    _print(plan_lines(golden, rows))
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- parser


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The judging subcommands' parsers, each calling its implementation above."""
    pool_parser = commands.add_parser(
        "pool",
        help="write a blind judging sheet: every arm's top documents per query, minus what is judged.",
        description="For each query, the union of every arm's top --depth documents, minus the pairs already "
        "judged (and those on --exclude sheets), shuffled with a seed so that neither a column nor the order "
        "tells which model retrieved a document. Give the arms as a JSON report of `pytest --embeval "
        "--embeval-json REPORT.json` (both arms, no model needed) and/or as model specs.",
    )
    pool_parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden-set file.")
    pool_parser.add_argument(
        "--out", required=True, metavar="SHEET.csv", help="the sheet to write (CSV, UTF-8)."
    )
    pool_parser.add_argument(
        "--from-report",
        action="append",
        default=[],
        metavar="REPORT.json",
        help="pool both arms of this embeval JSON report (repeatable).",
    )
    pool_parser.add_argument(
        "--from-run",
        action="append",
        default=[],
        metavar="RUN",
        help="also pool this TREC run file (qid Q0 docid rank score tag), e.g. the answers the set's authors "
        "know of, or BM25; it may cover only some queries and rank fewer documents (repeatable).",
    )
    pool_parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="SPEC",
        help="pool this model's exact top documents: a sentence-transformers name or path, or module:attr "
        "(repeatable).",
    )
    pool_parser.add_argument(
        "--depth",
        type=_positive_int,
        default=DEFAULT_DEPTH,
        metavar="K",
        help="documents per arm and query (default %(default)s).",
    )
    pool_parser.add_argument(
        "--seed",
        type=_nonnegative_int,
        default=None,
        metavar="N",
        help="shuffle seed (default: the golden set's seed).",
    )
    pool_parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="SHEET.csv",
        help="leave out the pairs on this sheet, handed out but not merged yet (repeatable).",
    )
    pool_parser.add_argument(
        "--sample",
        type=_positive_int,
        default=None,
        metavar="N",
        help="write a seeded sample of N of the pairs, drawn evenly over the best rank any arm gave them: "
        "the calibration sheet people grade first.",
    )
    pool_parser.add_argument(
        "--split",
        type=_positive_int,
        default=None,
        metavar="N",
        help="write N sheets of about equal size (SHEET.1-of-N.csv ...), one per judge; a query's pairs stay "
        "on one sheet.",
    )
    pool_parser.add_argument(
        "--consensus-failures",
        action="store_true",
        help="pool only the queries where neither arm of the --from-report report finds a relevant document "
        "within the metric's cutoff, judged pairs included: a blind sheet to re-judge them.",
    )
    seeds_and_refresh.add_seed_options(pool_parser)
    pool_parser.add_argument("--force", action="store_true", help="overwrite --out if it exists.")
    pool_parser.add_argument("--per-query", action="store_true", help="print the pool size of every query.")
    pool_parser.set_defaults(run=_pool)

    merge_parser = commands.add_parser(
        "merge",
        help="validate graded sheets and append their grades to the golden set's qrels file.",
        description="Every row needs a known query and document and a grade on the scale; an empty grade, a "
        "pair graded twice differently by one judge, judges who disagree (unless --resolve) and a pair "
        "already judged differently are errors, each with its row number (the header is row 1). On any "
        "error nothing is written; otherwise the new judgments are appended to the qrels file, in its "
        "format, atomically, existing lines untouched. The judge is the 'judge' cell, or the sheet's file "
        "name.",
    )
    merge_parser.add_argument(
        "golden", metavar="GOLDEN.yaml", help="the golden-set file (its qrels must be a TSV)."
    )
    merge_parser.add_argument("sheets", nargs="+", metavar="SHEET.csv", help="graded sheets.")
    _add_scale(merge_parser)
    merge_parser.add_argument(
        "--resolve",
        choices=("max", "min", "first"),
        default=None,
        help="when different judges graded a pair differently, keep the highest, the lowest, or the first "
        "grade (sheets in the order given, then rows); default: it is an error.",
    )
    merge_parser.add_argument(
        "--calibration",
        action="append",
        default=[],
        metavar="CALIBRATION.json",
        help="the record of embeval calibrate --record for a model judge on the sheets (repeatable); a "
        "model's grades are merged only when its calibration found it usable.",
    )
    merge_parser.add_argument(
        "--accept-uncalibrated",
        action="store_true",
        help="merge a model's grades without a passed calibration; recorded with each such judgment.",
    )
    merge_parser.add_argument(
        "--refresh",
        action="store_true",
        help="the sheets re-judge pairs the qrels hold (embeval refresh): report the agreement of the new "
        "grades with the old, then replace them, the old grade kept in the provenance.",
    )
    seeds_and_refresh.add_judged_on(merge_parser, "the sheets' grades")
    merge_parser.add_argument("--dry-run", action="store_true", help="validate and report, write nothing.")
    merge_parser.set_defaults(run=_merge)

    agreement_parser = commands.add_parser(
        "agreement",
        help="how well two judges agree on the pairs both graded (kappa); calibrate judges and LLM judges.",
        description="Matches rows by query_id and doc_id and reports percent agreement, Cohen's kappa, "
        "linearly weighted kappa and the confusion matrix. With --min-kappa, exits 1 when the kappa is below "
        "it: the weighted kappa on a graded scale (3+ grades), plain kappa on a binary one.",
    )
    agreement_parser.add_argument("first", metavar="A.csv", help="the first judge's sheet.")
    agreement_parser.add_argument("second", metavar="B.csv", help="the second judge's sheet.")
    agreement_parser.add_argument(
        "--min-kappa",
        type=_bounded_float(-1.0, 1.0, include_high=True),
        default=None,
        metavar="K",
        help="exit 1 below this kappa (0.6 is a common bar for substantial agreement).",
    )
    _add_scale(agreement_parser)
    agreement_parser.add_argument(
        "--list",
        type=_nonnegative_int,
        default=10,
        metavar="N",
        help="list up to N disagreements, largest gap first (default %(default)s; 0: none).",
    )
    agreement_parser.set_defaults(run=_agreement)

    coverage_parser = commands.add_parser(
        "coverage",
        help="each arm's judged@k per stratum; exit 1 when one arm is much less judged (not pooled).",
        description="An unjudged document counts as not relevant, so an arm whose results were never "
        "pooled is scored down. Exits 1 when an arm's judged@k trails another's by more than --threshold "
        "in any stratum, and names the command that fixes it.",
    )
    coverage_parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden-set file.")
    coverage_parser.add_argument(
        "--from-report", required=True, metavar="REPORT.json", help="the embeval JSON report of the run."
    )
    coverage_parser.add_argument(
        "--k", type=_positive_int, default=None, metavar="K", help="cutoff (default: the primary metric's k)."
    )
    coverage_parser.add_argument(
        "--threshold",
        type=_bounded_float(0.0, 1.0, include_high=False),
        default=DEFAULT_COVERAGE_GAP,
        metavar="GAP",
        help="largest tolerated gap in judged@k, as a share (default %(default)s = 10 points).",
    )
    coverage_parser.set_defaults(run=_coverage)

    plan_parser = commands.add_parser(
        "plan",
        help="per stratum: n, the minimum detectable effect and the queries needed to resolve the margin.",
        description="At the golden set's confidence and 80% power: the minimum detectable effect with the "
        "current n (queries with a relevant judgment), and the queries needed to detect a difference of "
        "tie_margin. The paired standard deviation is --sd, or each stratum's observed one from a report.",
    )
    plan_parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden-set file.")
    plan_parser.add_argument(
        "--sd",
        type=_bounded_float(0.0, 1.0, include_high=True),
        default=DEFAULT_SD,
        metavar="SD",
        help="assumed paired standard deviation of the metric (default %(default)s).",
    )
    plan_parser.add_argument(
        "--from-report",
        default=None,
        metavar="REPORT.json",
        help="use each stratum's observed paired standard deviation from this embeval JSON report.",
    )
    plan_parser.set_defaults(run=_plan)
