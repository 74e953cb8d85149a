"""``embeval sample`` and ``embeval corpus-sample``: drawing a golden set's queries from a query log and its
corpus from a production corpus, each with a draw sidecar saying how (`golden.draws`).

``sample`` reads the log (one file or a glob pattern of many) into its distinct queries, in Python
(`golden.query_log`) or with the columnar engine (`golden.columnar_log`; ``--engine``, `files.columnar`'s
rule under ``auto``), draws from them (`golden.query_draw`), prints the allocation table and writes the
queries file; ``corpus-sample`` makes one pass over the corpus keeping every judged document and a
uniform draw of the rest (`golden.corpus_draw`). Both give the same output, byte for byte, whichever reads
the input. Every option is checked before a file is read, and every problem found in the inputs stops the
command before anything is written: one line on stderr, exit 2. A long read shows its progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, NoReturn

from pytest_embeval.cli.support import EXIT_OK, EXIT_USAGE, CliError, check_out
from pytest_embeval.cli.support import nonnegative_int as _nonnegative_int
from pytest_embeval.cli.support import positive_int as _positive_int
from pytest_embeval.cli.support import print_lines as _print
from pytest_embeval.core.sampling import TAIL, band_names, parse_bands
from pytest_embeval.core.step_progress import reporting
from pytest_embeval.core.text_table import table
from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.files.columnar import (
    DEFAULT_MEMORY_LIMIT,
    ENGINES,
    EngineError,
    EngineMissing,
    choose_engine,
    engine,
)
from pytest_embeval.files.compressed import compression_of
from pytest_embeval.files.digests import sha256_ahead
from pytest_embeval.files.sources import Source, SourceError, is_parquet, resolve_source
from pytest_embeval.golden.columnar_corpus import draw_columnar_corpus
from pytest_embeval.golden.columnar_log import read_columnar_log
from pytest_embeval.golden.corpus_draw import draw_corpus
from pytest_embeval.golden.data_files import GoldenError, first_repeated
from pytest_embeval.golden.data_sections import RESERVED_FIELDS
from pytest_embeval.golden.draws import draw_path, draw_text
from pytest_embeval.golden.qrels_files import judged_document_ids_in
from pytest_embeval.golden.query_draw import QueryDraw, draw_queries
from pytest_embeval.golden.query_log import DEFAULT_TEXT_FIELD, QueryLog, read_query_log
from pytest_embeval.reports.progress_lines import StepLine, StreamTerminal

__all__ = ["add_commands"]

DEFAULT_FLOOR = 20
DEFAULT_BANDS = "head=0.33,torso=0.33"
NORMALISATION = "Unicode NFKC with case folding (NFKC_Casefold), whitespace runs as one space, trimmed"


def _bands(text: str) -> tuple[tuple[str, float], ...]:
    try:
        return parse_bands(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _fields(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    if any(not name for name in names):
        raise argparse.ArgumentTypeError(f"expected FIELD[,FIELD...], got {text!r}")
    repeated = first_repeated(names)
    if repeated is not None:
        raise argparse.ArgumentTypeError(f"field {repeated!r} named twice in {text!r}")
    return names


def _boost(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 1 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text!r}")
    return value


_SIZE = re.compile(r"\d+(\.\d+)?\s*([KMGT]i?B|B)", re.IGNORECASE)


def _memory(text: str) -> str:
    if not _SIZE.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"expected a size such as 2GB or 500MB, got {text!r}")
    return text.strip()


def _outputs(args: argparse.Namespace, reads: Mapping[Path, str], example: str) -> tuple[Path, Path]:
    """``--out`` and its draw sidecar, once both can be written (before any work)."""
    sidecar = draw_path(Path(args.out))
    out = check_out(
        args.out, example=example, reads=reads, force=args.force, beside={"its draw record": sidecar}
    )
    return out, sidecar


def _source(
    path: Path, sha256: str, rows: int, kind: str, files: Sequence[tuple[Path, str]] = ()
) -> dict[str, Any]:
    """The sidecar's ``source``; a glob's files, in the order read, under ``files``."""
    record: dict[str, Any] = {"path": str(path), "sha256": f"sha256:{sha256}", "format": kind, "rows": rows}
    if files:
        record["files"] = [{"path": str(file), "sha256": f"sha256:{digest}"} for file, digest in files]
    return record


def _resolved(given: str) -> Source:
    try:
        return resolve_source(given)
    except SourceError as error:
        raise CliError(str(error)) from None


@contextlib.contextmanager
def _progress(command: str) -> Iterator[None]:
    """A progress line on stderr for the steps the command takes (shown once one lasts a second)."""
    with StepLine(command, StreamTerminal(sys.stderr)) as line, reporting(line):
        yield


@contextlib.contextmanager
def _reader(
    command: str, requested: str, source: Source, memory_limit: str, hashed: Sequence[Path]
) -> Iterator[tuple[Any, Future[list[str]] | None]]:
    """The open engine when ``--engine`` (or its rule) picks DuckDB, else None, with the sha256 of the files
    ``hashed`` (those the engine's reader hashes, not reading them line by line), computed from before the
    engine loads (`sha256_ahead`); a progress line either way, and `CliError` for everything that goes wrong
    reading or drawing."""
    try:
        kind, note = choose_engine(requested, source)
    except EngineMissing as error:
        raise CliError(str(error)) from None
    if note is not None:
        print(f"embeval {command}: {note}", file=sys.stderr)
    digests = sha256_ahead(hashed) if kind == "duckdb" and hashed else None
    try:
        with (
            _progress(command),
            engine(memory_limit) if kind == "duckdb" else contextlib.nullcontext() as opened,
        ):
            yield opened, digests
    except (GoldenError, ValueError, EngineError) as error:
        raise CliError(str(error)) from None


def _jsonl(records: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def _queries(n: int) -> str:
    return f"{n:,} distinct {'query' if n == 1 else 'queries'}"


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


# --------------------------------------------------------------------------------------------------- sample


def _allocation_lines(draw: QueryDraw, bands: Sequence[str], floor: int) -> list[str]:
    rows = [
        [
            stratum.name,
            _percent(stratum.traffic_share),
            f"{stratum.distinct:,}",
            str(stratum.floor),
            str(stratum.sampled),
            *(str(stratum.bands[band][1]) for band in bands),
        ]
        for stratum in draw.strata
    ]
    total = [
        "total",
        "100.0%",
        f"{sum(s.distinct for s in draw.strata):,}",
        "",
        str(len(draw.queries)),
        *(str(sum(s.bands[band][1] for s in draw.strata)) for band in bands),
    ]
    header = ["stratum", "traffic", "distinct", "floor", "sampled", *(f"{band} drawn" for band in bands)]
    lines = table(header, [*rows, total])
    for stratum in draw.strata:
        if stratum.below_floor:
            lines.append(
                f"{stratum.name}: {_queries(stratum.distinct)}, fewer than the floor of {floor}: "
                f"all {stratum.distinct} drawn"
            )
    return lines


def _sample(args: argparse.Namespace) -> int:
    if args.floor > args.size:
        raise CliError(f"--floor {args.floor} is larger than --size {args.size}")
    if args.text in args.by:
        raise CliError(f"--text {args.text!r} is also in --by: the query's text cannot be a stratum field")
    if args.count is not None and args.count in (args.text, *args.by):
        raise CliError(
            f"--count {args.count!r} is also --text or in --by: name the field holding the searches"
        )
    reserved = next((name for name in args.by if name in RESERVED_FIELDS), None)
    if reserved is not None:
        raise CliError(f"--by {reserved!r}: a key of the queries file written, not a stratum field")
    source = _resolved(args.log)
    reads = {path: "the query log" for path in source.files}
    out, sidecar = _outputs(args, reads, "sample.jsonl")
    with _reader("sample", args.engine, source, args.memory_limit, source.files) as (opened, digests):
        if opened is None:
            log = read_query_log(source, args.text, args.by, args.count)
        else:
            log = read_columnar_log(opened, source, args.text, args.by, args.count, digests)
        draw = draw_queries(
            log,
            args.by,
            size=args.size,
            floor=args.floor,
            bands=args.bands,
            head_boost=args.head_boost,
            seed=args.seed,
        )
    _write_sample(args, log, draw, out, sidecar, source)
    return EXIT_OK


def _write_sample(
    args: argparse.Namespace, log: QueryLog, draw: QueryDraw, out: Path, sidecar: Path, source: Source
) -> None:
    names = band_names(args.bands)
    queries = _jsonl([query.record() for query in draw.queries])
    empty = f" ({log.empty:,} with an empty {args.text!r} skipped)" if log.empty else ""
    files = [(file.path, file.sha256) for file in log.files] if source.pattern else []
    record: dict[str, Any] = {
        "command": "sample",
        "source": _source(log.path, log.sha256, log.rows, log.format, files),
        "text_field": args.text,
        **({"count_field": args.count, "table_rows": log.table_rows} if args.count else {}),
        "by": list(args.by),
        "normalisation": NORMALISATION,
        "size": args.size,
        "floor": args.floor,
        "bands": {name: share for name, share in args.bands},
        "head_boost": args.head_boost,
        "seed": args.seed,
        "empty_rows": log.empty,
        "distinct": len(log.distinct),
        "band_traffic": {
            band: {"distinct": distinct, "traffic_share": round(rows / log.rows, 6)}
            for band, (distinct, rows) in draw.bands.items()
        },
        "inclusion": (
            "each query's inclusion probability: its (stratum, band) cell's sampled / distinct queries; "
            "weights: frequency weighs it by frequency / inclusion"
        ),
        "strata": [stratum.record() for stratum in draw.strata],
        "traffic_covered": round(draw.traffic_covered, 6),
        "output": {"sha256": f"sha256:{_sha256(queries)}", "rows": len(draw.queries)},
    }
    write_atomic(out, queries)
    write_atomic(sidecar, draw_text(record))
    read = f" ({len(log.files):,} files)" if source.pattern else ""
    counted = f"{log.table_rows:,} rows counting " if args.count else ""
    print(
        f"{log.path}{read}: {counted}{log.rows:,} searches{empty}, {len(log.distinct):,} distinct queries "
        "(case, whitespace and Unicode compatibility forms normalised)"
    )
    shares = ", ".join(f"{name} ({_percent(share)})" for name, share in args.bands)
    print(f"bands by cumulative share of traffic, most frequent first: {shares}, {TAIL} (the rest)")
    for band, (distinct, rows) in draw.bands.items():
        print(f"  {band}: {_queries(distinct)}, {_percent(rows / log.rows)} of the traffic")
    _print(_allocation_lines(draw, names, args.floor))
    print(
        f"the {len(draw.queries):,} queries drawn are {len(draw.queries):,} distinct strings, "
        f"{_percent(draw.traffic_covered)} of the traffic"
    )
    print(f"wrote {len(draw.queries):,} queries to {out}; how they were drawn: {sidecar}")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -------------------------------------------------------------------------------------------- corpus-sample


def _is_tsv(source: Source) -> bool:
    """Whether the corpus's first file is an uncompressed TSV file (its first line holds a tab, not a JSON
    object); a file that cannot be read is not: its reader says why."""
    path = source.files[0]
    if is_parquet(path) or compression_of(path) is not None:
        return False
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 16).decode("utf-8", "replace").lstrip("\ufeff \r\n")
    except OSError:
        return False
    return not first.startswith("{") and "\t" in first


def _corpus_sample(args: argparse.Namespace) -> int:
    source = _resolved(args.corpus)
    corpus = Path(args.corpus)
    qrels = Path(args.keep_judged)
    reads = {**{path: "the corpus" for path in source.files}, qrels: "the judgments"}
    out, sidecar = _outputs(args, reads, "sample.jsonl")
    try:
        judged = judged_document_ids_in(qrels)
    except GoldenError as error:
        raise CliError(str(error)) from None
    if args.size < len(judged):
        raise CliError(
            f"--size {args.size} is smaller than the {len(judged):,} documents {qrels} judges, "
            "which the sample keeps"
        )
    # A TSV corpus is the Python reader's under auto, however large: the engine reads JSONL and Parquet.
    requested = "python" if args.engine == "auto" and _is_tsv(source) else args.engine
    # A JSONL corpus's files are hashed as its kept lines are read; a Parquet corpus's, apart.
    parquet = source.files if all(is_parquet(path) for path in source.files) else ()
    with _reader("corpus-sample", requested, source, args.memory_limit, parquet) as (opened, digests):
        if opened is None:
            draw = draw_corpus(source, size=args.size, judged=judged, seed=args.seed)
        else:
            draw = draw_columnar_corpus(
                opened, source, size=args.size, judged=judged, seed=args.seed, digests=digests
            )
    text = "".join(line + "\n" for line in draw.lines)
    files = list(draw.files) if source.pattern else []
    record: dict[str, Any] = {
        "command": "corpus-sample",
        "source": _source(corpus, draw.sha256, draw.documents, draw.format, files),
        "size": args.size,
        "seed": args.seed,
        "judged": {
            "qrels": str(qrels),
            "documents": len(judged),
            "found": draw.judged_found,
            "missing": len(draw.missing),
        },
        "output": {"sha256": f"sha256:{_sha256(text)}", "rows": draw.sampled},
    }
    write_atomic(out, text)
    write_atomic(sidecar, draw_text(record))
    read = f" ({len(draw.files):,} files)" if source.pattern else ""
    print(f"{corpus}{read}: {draw.documents:,} documents")
    print(f"{qrels}: {len(judged):,} judged documents, {draw.judged_found:,} in the corpus, all kept")
    if draw.missing:
        shown = ", ".join(draw.missing[:5]) + (", ..." if len(draw.missing) > 5 else "")
        print(f"WARNING: {len(draw.missing):,} judged documents are not in the corpus: {shown}")
    others = draw.sampled - draw.judged_found
    if draw.sampled < args.size:
        print(f"the corpus has only {draw.documents:,} documents: all {draw.sampled:,} are in the sample")
    else:
        print(
            f"{others:,} of the other {draw.documents - draw.judged_found:,} documents drawn uniformly "
            f"(seed {args.seed})"
        )
    print(f"wrote {draw.sampled:,} documents to {out}; how they were drawn: {sidecar}")
    return EXIT_OK


# ------------------------------------------------------------------------------------------------- parsers


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """argparse prints its usage (three lines here) before a bad option's error; these commands print the
    error alone, as every other bad input of theirs: one line, exit 2 (``-h`` shows the usage)."""

    def error(message: str) -> NoReturn:
        parser.exit(EXIT_USAGE, f"{parser.prog}: error: {message}\n")

    parser.error = error  # type: ignore[method-assign]


def _engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="what reads the input: duckdb (the columnar engine, the [duckdb] extra), python, or auto "
        "(default): duckdb for Parquet, compressed files and inputs of 32 MiB or more. The output is the "
        "same, byte for byte.",
    )
    parser.add_argument(
        "--memory-limit",
        type=_memory,
        default=DEFAULT_MEMORY_LIMIT,
        metavar="SIZE",
        help="the engine's memory; it spills the rest to a temporary folder (default: half of this machine's "
        "memory, %(default)s).",
    )


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sample_parser = commands.add_parser(
        "sample",
        help="draw a golden set's queries from a query log: stratified, distinct, with a floor per stratum.",
        description="Reads a query log (JSONL, TSV with a header or Parquet; one row per search, or one "
        "per query and stratum values with --count; a file or a glob pattern of many), normalises the query "
        "strings (Unicode NFKC, case, whitespace) and counts each distinct query, splits the traffic into "
        "frequency bands, allocates --size across the strata (every combination of the --by fields) in "
        "proportion to their traffic with --floor queries at least, and within a stratum across the bands by "
        "traffic, the head's multiplied by --head-boost, then draws distinct queries without replacement. "
        "Large, compressed and Parquet logs are read by the columnar engine (--engine; the [duckdb] extra), "
        "with the same result. Writes the queries file (with stratum fields, band, frequency, the inclusion "
        "probability it was drawn with and a stable id) and its .draw.json sidecar with the allocation "
        "table.",
    )
    sample_parser.add_argument(
        "log",
        metavar="LOG",
        help="the query log: JSONL, TSV or Parquet, a file or a quoted glob pattern of many "
        "('logs/2026-11-*.parquet').",
    )
    sample_parser.add_argument(
        "--by",
        required=True,
        type=_fields,
        metavar="FIELD[,FIELD...]",
        help="the stratum fields of a row; 'band' is the frequency band embeval computes.",
    )
    sample_parser.add_argument(
        "--size", required=True, type=_positive_int, metavar="N", help="queries to draw."
    )
    sample_parser.add_argument(
        "--floor",
        type=_nonnegative_int,
        default=DEFAULT_FLOOR,
        metavar="N",
        help="queries at least per stratum, or all its distinct queries if it has fewer "
        "(default %(default)s).",
    )
    sample_parser.add_argument(
        "--bands",
        type=_bands,
        default=parse_bands(DEFAULT_BANDS),
        metavar="NAME=SHARE,...",
        help=f"the frequency bands by cumulative share of traffic, most frequent first; the rest is "
        f"{TAIL!r} (default {DEFAULT_BANDS}).",
    )
    sample_parser.add_argument(
        "--head-boost",
        type=_boost,
        default=1.0,
        metavar="X",
        help="multiply the first band's traffic by X when a stratum's queries are split across the bands "
        "(default %(default)s: in proportion to traffic).",
    )
    sample_parser.add_argument(
        "--text",
        default=DEFAULT_TEXT_FIELD,
        metavar="FIELD",
        help="the field (JSONL key, TSV or Parquet column) holding the query's text (default %(default)s).",
    )
    sample_parser.add_argument(
        "--count",
        metavar="FIELD",
        help="the field holding the searches each row stands for, in a log already counted (a warehouse's or "
        "Spark's GROUP BY of the query and the stratum fields): a whole number of at least 1.",
    )
    sample_parser.add_argument(
        "--seed", type=_nonnegative_int, default=0, metavar="S", help="the draw's seed (default %(default)s)."
    )
    _engine_options(sample_parser)
    sample_parser.add_argument(
        "--out", required=True, metavar="QUERIES.jsonl", help="the queries file to write (JSONL)."
    )
    sample_parser.add_argument("--force", action="store_true", help="overwrite --out and its sidecar.")
    sample_parser.set_defaults(run=_sample)
    _one_line_errors(sample_parser)

    corpus_parser = commands.add_parser(
        "corpus-sample",
        help="draw a corpus sample in one pass: every judged document, and a uniform draw of the rest.",
        description="One streaming pass over a corpus of any size (JSONL or TSV, as a golden set's corpus, "
        "or Parquet with an _id column; a file or a glob pattern of many): "
        "every document the --keep-judged qrels judge is kept, and the others are a uniform random draw "
        "(reservoir sampling) up to --size documents in all, in corpus order. Refuses a size smaller than "
        "the judged set, and reports judged documents missing from the corpus. Writes the sample and its "
        ".draw.json sidecar (the corpus's sha256, the size, the seed), which the golden loader reads.",
    )
    corpus_parser.add_argument(
        "corpus",
        metavar="CORPUS",
        help="the corpus: JSONL, TSV or Parquet (an _id column; the sample is written as JSONL), a file or a "
        "quoted glob pattern of many.",
    )
    corpus_parser.add_argument(
        "--size", required=True, type=_positive_int, metavar="N", help="documents in the sample."
    )
    corpus_parser.add_argument(
        "--keep-judged",
        required=True,
        metavar="QRELS",
        help="the judgments (BEIR TSV or TREC qrels) whose documents the sample must hold.",
    )
    corpus_parser.add_argument(
        "--seed", type=_nonnegative_int, default=0, metavar="S", help="the draw's seed (default %(default)s)."
    )
    _engine_options(corpus_parser)
    corpus_parser.add_argument(
        "--out",
        required=True,
        metavar="SAMPLE.jsonl",
        help="the sample to write, in the corpus's format (JSONL for a Parquet corpus).",
    )
    corpus_parser.add_argument("--force", action="store_true", help="overwrite --out and its sidecar.")
    corpus_parser.set_defaults(run=_corpus_sample)
    _one_line_errors(corpus_parser)
