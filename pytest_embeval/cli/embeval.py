"""``embeval``: the command and its subcommands, each parser beside its implementation: the judging
afternoon before ``pytest --embeval`` (pool, merge, agreement, coverage, plan: `judging_commands`; the LLM
judge: `llm_judge_commands`; the judging page: `judge_page_command`; seeds, dated merges and refresh:
`seeds_and_refresh`), filling the embedding cache at scale (embed, import: `cache_commands`), and drawing a
golden set's queries and corpus from production (sample, corpus-sample: `sample_commands`).

Every command prints its result to stdout and one-line errors to stderr; the exit status is 0 on success,
1 when a check fails its threshold (agreement below ``--min-kappa``, an arm under-judged in coverage) and 2
for bad input (missing or malformed files, invalid sheets, bad options).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_embeval.cli import (
    cache_commands,
    judge_page_command,
    judging_commands,
    llm_judge_commands,
    sample_commands,
    seeds_and_refresh,
)
from pytest_embeval.cli.support import EXIT_USAGE, CliError
from pytest_embeval.files.atomic import error_line
from pytest_embeval.golden.data_files import GoldenError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="embeval",
        description="Judge a golden set fairly before `pytest --embeval`: pool both models' results into a "
        "blind sheet, check that judges agree, merge the grades, check coverage, plan the size. Fill the "
        "embedding cache at scale: embed in shards, import vectors computed elsewhere. Draw a golden set's "
        "queries and corpus from production: sample a query log, and a corpus keeping its judged documents.",
        epilog="Exit status: 0 success, 1 a check below its threshold (or a model that failed while "
        "embedding), 2 bad input.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    judging_commands.add_parsers(commands)
    llm_judge_commands.add_parsers(commands)
    judge_page_command.add_parser(commands)
    seeds_and_refresh.add_parsers(commands)
    cache_commands.add_commands(commands)
    sample_commands.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``embeval`` with ``argv`` (default: the command line); return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2), already printed by argparse
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        status: int = args.run(args)
    except (CliError, GoldenError) as error:  # a golden set's file read anywhere: one line naming it
        for line in str(error).splitlines():
            print(f"embeval {args.command}: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:  # writing the sheet or the qrels file
        print(f"embeval {args.command}: error: {error_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    return status
