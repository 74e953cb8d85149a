"""Seeds and the age of judgments on the command line: ``embeval pool --seeds`` (and ``--trust-seeds``),
the day a merged judgment was made (``--judged-on``, else its sheet's date), ``embeval merge --refresh``
(the drift of relevance, then the old grades replaced) and ``embeval refresh`` (the pairs to re-judge).
The work is in `seeds`, `refresh`, `merging` and `provenance`; this module reads arguments and files and
prints."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_embeval.cli.support import (
    EXIT_OK,
    MAY_HOLD_GRADES,
    CliError,
    add_scale,
    bounded_float,
    check_out,
    golden_reads,
    golden_set,
    nonnegative_int,
    print_lines,
)
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.agreement import agreement, agreement_lines
from pytest_embeval.judging.grade_scale import no_guidelines_note
from pytest_embeval.judging.merging import Judgment, MergeResult, append_qrels, qrels_file, replace_qrels
from pytest_embeval.judging.pooling import write_sheet
from pytest_embeval.judging.provenance import (
    Source,
    append_provenance,
    golden_sources,
    parse_day,
    provenance_line,
    provenance_path,
    rewrite_provenance,
)
from pytest_embeval.judging.rankings import Pair, Rankings
from pytest_embeval.judging.refresh import draw_refresh, refresh_lines
from pytest_embeval.judging.seeds import Seed, SeedError, read_seeds, trusted_seeds

__all__ = [
    "SeedPlan",
    "add_judged_on",
    "add_parsers",
    "add_seed_options",
    "drift_lines",
    "file_day",
    "judged_on",
    "plan_seeds",
    "seed_lines",
    "with_trusted",
    "write_merge",
    "write_trusted",
]

_UNRECORDED = Source(judge="", kind="unrecorded")


# ------------------------------------------------------------------------------------------------ dates


def _day_argument(text: str) -> str:
    try:
        return parse_day(text, past=True).isoformat()
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_judged_on(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--judged-on",
        type=_day_argument,
        default=None,
        metavar="YYYY-MM-DD",
        help=f"the day {what} were made (default: each file's modification date), recorded with each.",
    )


def file_day(path: Path) -> str:
    """The day a file was last saved (UTC): when the grades on a sheet were made, unless told otherwise;
    refused when it is in the future (a clock set wrong, a copy that kept a bad time), as --judged-on is."""
    day = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date().isoformat()
    try:
        parse_day(day, past=True)
    except ValueError as error:
        raise CliError(f"{path}: last modified on {error}; give the day with --judged-on") from None
    return day


def judged_on(args: argparse.Namespace, paths: Sequence[Path]) -> list[str]:
    """Each file's judgments' day: ``--judged-on``, else the file's modification date."""
    return [args.judged_on or file_day(path) for path in paths]


# ------------------------------------------------------------------------------------------------ seeds


def add_seed_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seeds",
        default=None,
        metavar="SEEDS.tsv",
        help="pairs production claims relevant (TSV with a header, or JSON lines: query_id, doc_id, source "
        "such as ticket or click, optionally grade and judged_on): pooled and marked with their source on "
        "the sheet, for the judges to confirm.",
    )
    parser.add_argument(
        "--trust-seeds",
        action="store_true",
        help="enter the seeds into the qrels directly, their source in the provenance, except a seed in "
        "only one arm's top --depth (what only that arm showed): that one still goes on the sheet.",
    )
    add_scale(parser)
    add_judged_on(parser, "trusted seeds without a judged_on")


@dataclass(frozen=True, slots=True)
class SeedPlan:
    #: the seeds read, in file order
    read: tuple[Seed, ...]
    #: pair -> source: the seeds to put on the sheet for the judges to confirm
    to_confirm: Mapping[Pair, str]
    #: the seeds to enter into the qrels (``--trust-seeds``), with their day
    trusted: tuple[tuple[Seed, str], ...]
    #: of ``to_confirm``, those ``--trust-seeds`` would have taken but only one arm ranked
    one_arm: int
    #: seeds the qrels already judge, or on an excluded sheet
    skipped: int


def plan_seeds(
    args: argparse.Namespace, golden: GoldenSet, rankings: Rankings, exclude: set[Pair]
) -> SeedPlan | None:
    """Read ``--seeds`` and split them between the sheet and (``--trust-seeds``) the qrels; None without
    seeds. Everything is checked before anything is written."""
    if args.seeds is None:
        if args.trust_seeds:
            raise CliError("--trust-seeds needs --seeds SEEDS.tsv")
        return None
    if args.consensus_failures:
        raise CliError("--seeds cannot be combined with --consensus-failures (a re-judging sheet)")
    try:
        seeds = read_seeds(args.seeds, golden, max_grade=args.max_grade)
    except SeedError as error:
        raise CliError(str(error)) from None
    fresh = [s for s in seeds if s.doc_id not in golden.qrels.get(s.query_id, {}) and s.pair not in exclude]
    trusted: list[Seed] = []
    confirm = fresh
    if args.trust_seeds:
        qrels_file(golden)  # inline judgments have no file to enter them into: refused before any write
        trusted, confirm = trusted_seeds(fresh, rankings, depth=args.depth)
    day = args.judged_on or file_day(Path(args.seeds))
    return SeedPlan(
        read=seeds,
        to_confirm={s.pair: s.source for s in confirm},
        trusted=tuple((s, s.judged_on or day) for s in trusted),
        one_arm=len(confirm) if args.trust_seeds else 0,
        skipped=len(seeds) - len(fresh),
    )


def seed_lines(plan: SeedPlan, path: str, depth: int) -> list[str]:
    sources = Counter(seed.source for seed in plan.read)
    lines = [
        f"seeds from {path}: {len(plan.read)} ("
        + ", ".join(f"{source} {n}" for source, n in sorted(sources.items()))
        + f"); already judged or on an excluded sheet: {plan.skipped}"
    ]
    if plan.trusted or plan.one_arm:
        lines.append(
            f"trusted into the qrels: {len(plan.trusted)}; in only one arm's top {depth}, so on the sheet "
            f"to confirm all the same: {plan.one_arm} (a seed never stands in for a graded judgment of what "
            "only one arm showed)"
        )
    return lines


def with_trusted(golden: GoldenSet, plan: SeedPlan) -> GoldenSet:
    """The golden set as it is once the trusted seeds are in its qrels: what the pool leaves out as judged."""
    qrels = {query: dict(grades) for query, grades in golden.qrels.items()}
    for seed, _ in plan.trusted:
        qrels.setdefault(seed.query_id, {})[seed.doc_id] = seed.grade
    return replace(golden, qrels=qrels)


def write_trusted(golden: GoldenSet, plan: SeedPlan) -> list[str]:
    """Append the trusted seeds to the qrels and their provenance (``kind: seed``, their source, their
    day); the lines that say so."""
    if not plan.trusted:
        return []
    target = qrels_file(golden)
    judgments = [
        Judgment(s.query_id, s.doc_id, s.grade, f"seed:{s.source}", day, s.source) for s, day in plan.trusted
    ]
    position = {query.id: i for i, query in enumerate(golden.queries)}
    judgments.sort(key=lambda j: (position[j.query_id], j.doc_id))
    append_qrels(target, judgments, qrels_format=golden.qrels_format or "beir")
    sidecar = provenance_path(target)
    append_provenance(
        sidecar,
        [
            provenance_line(
                j.query_id, j.doc_id, j.grade, Source(j.judge, "seed", judged_on=j.judged_on, seed=j.seed)
            )
            for j in judgments
        ],
    )
    return [f"appended {len(judgments)} trusted seeds to {target} (their source in {sidecar})"]


# ------------------------------------------------------------------------------------------------ merge


def _source(judgment: Judgment, sources: Mapping[str, Source]) -> Source:
    return replace(sources[judgment.judge], judged_on=judgment.judged_on, seed=judgment.seed)


def drift_lines(result: MergeResult, golden: GoldenSet, max_grade: int) -> list[str]:
    """The agreement of the re-judged pairs' new grades with their old ones: the drift of relevance."""
    if not result.rejudged:
        return []
    old = {(r.new.query_id, r.new.doc_id): r.old for r in result.rejudged}
    new = {(r.new.query_id, r.new.doc_id): r.new.grade for r in result.rejudged}
    measured = agreement(old, new, max_grade=max_grade)
    up = sum(1 for pair in old if new[pair] > old[pair])
    down = sum(1 for pair in old if new[pair] < old[pair])
    name, kappa = measured.gate
    shown = "undefined" if kappa is None else f"{kappa:.3f}"
    return [
        f"re-judged {len(old)} pairs of {golden.name}: {up + down} grades changed ({up} up, {down} down); "
        f"{name} of the new grades with the old: {shown} (the drift of relevance)",
        *agreement_lines(measured, "old", "new"),
    ]


def write_merge(
    golden: GoldenSet,
    result: MergeResult,
    sources: Mapping[str, Source],
    earlier: Mapping[Pair, Source],
    *,
    dry_run: bool,
) -> list[str]:
    """Append the new judgments and replace the re-judged ones in the qrels, with their provenance (dated,
    the replaced judgment, from ``earlier``'s sources, kept under ``previous``); the lines that say what was
    done."""
    target = qrels_file(golden)
    sidecar = provenance_path(target)
    rejudged = result.rejudged
    lines = []
    if not result.new and not rejudged:
        return [f"nothing new to merge into {target}"]
    if dry_run:
        if result.new:
            lines.append(f"would append {len(result.new)} judgments to {target} (--dry-run: nothing written)")
        if rejudged:
            lines.append(f"would replace {len(rejudged)} grades in {target} (--dry-run: nothing written)")
        return lines
    fmt = golden.qrels_format or "beir"
    appended = [provenance_line(j.query_id, j.doc_id, j.grade, _source(j, sources)) for j in result.new]
    if rejudged:
        # Replaced first: it is the step that can refuse (a pair the file does not hold as loaded).
        try:
            replace_qrels(target, [r.new for r in rejudged], qrels_format=fmt)
        except ValueError as error:
            raise CliError(f"{error}; nothing was merged") from None
    if result.new:
        append_qrels(target, result.new, qrels_format=fmt)
        lines.append(f"appended {len(result.new)} judgments to {target}")
    if not rejudged:
        append_provenance(sidecar, appended)
    else:
        replaced: list[dict[str, Any]] = []
        for r in rejudged:
            pair = (r.new.query_id, r.new.doc_id)
            source = earlier.get(pair, _UNRECORDED).replaced_by(r.old, _source(r.new, sources))
            replaced.append(provenance_line(*pair, r.new.grade, source))
        rewrite_provenance(
            sidecar, [(r.new.query_id, r.new.doc_id) for r in rejudged], [*appended, *replaced]
        )
        lines.append(f"replaced {len(rejudged)} grades in {target}; the old ones are kept under 'previous'")
    lines.append(f"where each came from: {sidecar}")
    return lines


# ---------------------------------------------------------------------------------------------- refresh


def _refresh(args: argparse.Namespace) -> int:
    files, folders = golden_reads(args.golden)
    out = check_out(
        args.out, example="refresh.csv", reads=files, folders=folders, force=args.force, holds=MAY_HOLD_GRADES
    )
    golden = golden_set(args.golden)
    try:
        drawn = draw_refresh(
            golden, golden_sources(golden), fraction=args.fraction, order=args.order, seed=args.seed
        )
    except ValueError as error:
        raise CliError(str(error)) from None
    write_sheet(out, drawn.pool)
    print_lines(refresh_lines(golden, drawn))
    print(f"sheet written to {out} ({len(drawn.pool.rows)} pairs, blind: the old grades are not on it)")
    print(f"grade every row, then: embeval merge {args.golden} {out} --refresh")
    note = no_guidelines_note(golden)
    if note is not None:
        print(note)
    return EXIT_OK


def add_parsers(commands: Any) -> None:
    """Add ``refresh`` to the ``embeval`` parser's subcommands."""
    parser = commands.add_parser(
        "refresh",
        help="draw a share of the judged pairs to re-judge (judgments age), stratified like the set.",
        description="Judgments age: relevance drifts. Draws --fraction of the golden set's judged pairs, in "
        "proportion over the combinations of its stratum fields, the oldest first (pairs without a recorded "
        "date first of all) or at random, onto a blind sheet. Grade it and merge it with embeval merge "
        "--refresh: it reports the agreement of the new grades with the old (the drift), then replaces "
        "them, the old grade kept in the provenance.",
    )
    parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden-set file.")
    parser.add_argument(
        "--fraction",
        type=bounded_float(0.0, 1.0, include_low=False, include_high=True),
        default=0.1,
        metavar="F",
        help="the share of the judged pairs to draw, in (0, 1] (default %(default)s; at least one pair).",
    )
    order = parser.add_mutually_exclusive_group()
    order.add_argument(
        "--oldest",
        dest="order",
        action="store_const",
        const="oldest",
        help="the oldest judgments of each group first (the default).",
    )
    order.add_argument(
        "--random", dest="order", action="store_const", const="random", help="a seeded uniform draw."
    )
    parser.set_defaults(order="oldest")
    parser.add_argument(
        "--seed",
        type=nonnegative_int,
        default=None,
        metavar="N",
        help="the draw's seed (default: the golden set's seed).",
    )
    parser.add_argument("--out", required=True, metavar="SHEET.csv", help="the sheet to write (CSV, UTF-8).")
    parser.add_argument("--force", action="store_true", help="overwrite --out if it exists.")
    parser.set_defaults(run=_refresh)
