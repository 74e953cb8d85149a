"""Query logs at production scale: `embeval sample` with the columnar engine (DuckDB) over generated logs of
tens of millions of searches, Parquet and JSONL, against the engine's own ``GROUP BY`` of the same columns
over the same files, in the same run; and a counted table (one row per query and stratum values, with its
searches) sampled with ``--count``.

    python benchmarks/bench_logs.py [--rows 10000000 50000000] [--formats parquet jsonl] [--repeat 1]
                                    [--python] [--files 30] [--counted 5000000] [--corpus N]
                                    [--memory-limit SIZE] [--against CHECKOUT] [--statements] [--keep]

The logs: --rows searches each, written with DuckDB under $TMPDIR (the free space is checked first, and
everything is deleted at the end unless --keep). Queries are Zipfian: a fifth of the rows are distinct query
strings (ranks 0 to rows/5, each searched once), the rest draw a rank with P(rank >= k) ~ k^-0.1 (the heavy
head of a search log); a query's text is two or three pseudo-words of a vocabulary of 30,000, and one search
in twelve is respelt (upper case, doubled spaces, a full-width letter), so normalisation has work to do.
Three stratum fields: language (five values, by the query), intent (three, by the query) and device (three,
at random per search).

For each log and format, best of --repeat:
* the floor: the engine's ``CREATE TEMP TABLE ... AS SELECT query, language, intent, device, count(*) ...
  GROUP BY ALL`` over the file (the aggregation, its result kept), on a connection with the same memory
  limit and threads;
* ``embeval sample LOG --by language,intent,device --size 1000 --engine duckdb`` in a child process, its
  wall time and its peak resident memory (the kernel's VmHWM).
Each is timed twice: wall-clock, and CPU (every thread of the process, the engine's included), which a
machine whose cores other work shares does not stretch as it stretches the wall time; and each round's
ratio to the floor timed just before it is printed too. The 100,000,000-row time is extrapolated from the
two sizes (linear through them), and says so.

With --python, the smallest log's JSONL file is also sampled with ``--engine python`` (today's reader, a
row at a time), and its queries file compared byte for byte with the engine's. With --files N, the smallest
log is also written as N Parquet files of consecutive rows (a month of daily exports) and sampled through
the glob, against the engine's GROUP BY over the same glob, its queries file compared with the one file's.

With --statements, the smallest log is sampled once more in each format, every statement the engine runs
timed: where the sample's time goes, statement by statement, and Python's share between them.

With --against CHECKOUT (another checkout of the repository, the code before a change), every log and the
counted table are also sampled by that checkout's package, in turn with this one's, so that both meet the
same load.

The counted table: --counted distinct (query, language, intent, device) rows with a ``searches`` column,
Parquet, sampled with ``--count searches``.

The corpus (--corpus N): ``embeval corpus-sample`` to 200,000 documents, keeping 20,000 judged ones, over N
generated JSONL documents and the same rows in Parquet, with the engine and with the Python reader, against
reading the JSONL file once.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statement_times import REPORT, STATEMENT, TIMER, Statement, statements_of

from pytest_embeval.files.columnar import DEFAULT_MEMORY_LIMIT, engine, sql_string
from pytest_embeval.files.lines import HashedLines

ROOT = Path(__file__).resolve().parents[1]
BY = "language,intent,device"
#: The pieces of the pseudo-words: 40 syllables, two or three to a word.
SYLLABLES = [a + b for a in "kmrstnpdgb" for b in "aeio"]

#: A rank drawn from the heavy head, P(rank >= k) ~ k^-0.1, folded into the vocabulary of distinct queries.
LOG_SQL = """
COPY (
  WITH words AS (
    SELECT list(list_extract(s, 1 + i % 40) || list_extract(s, 1 + (i // 40) % 40)
                || CASE WHEN i % 3 = 0 THEN '' ELSE list_extract(s, 1 + (i // 1600) % 40) END ORDER BY i) AS w
    FROM range(30000) AS t(i), (SELECT ?::VARCHAR[] AS s)
  ),
  ranks AS (
    SELECT CASE WHEN i < {distinct} THEN i
                ELSE CAST((floor(pow(random(), -10.0)) - 1) % {distinct} AS BIGINT) END AS rank,
           random() AS spelling, random() AS device
    FROM range({rows}) AS t(i)
  ),
  texts AS (
    SELECT rank, spelling, device,
           list_extract(w, 1 + CAST(hash(rank, 1) % 30000 AS BIGINT)) || ' '
           || list_extract(w, 1 + CAST(hash(rank, 2) % 30000 AS BIGINT))
           || CASE WHEN rank % 4 = 0 THEN ''
                   ELSE ' ' || list_extract(w, 1 + CAST(hash(rank, 3) % 30000 AS BIGINT)) END AS text
    FROM ranks, words
  )
  SELECT CASE WHEN spelling < 0.04 THEN upper(text)
              WHEN spelling < 0.07 THEN replace(text, ' ', '  ') || ' '
              WHEN spelling < 0.08 THEN replace(text, 'a', chr(65345))
              ELSE text END AS query,
         ['en', 'en', 'en', 'de', 'de', 'fr', 'es', 'ja'][1 + CAST(hash(rank, 7) % 8 AS BIGINT)] AS language,
         ['keyword', 'question', 'navigational'][1 + CAST(hash(rank, 8) % 3 AS BIGINT)] AS intent,
         ['web', 'app', 'api'][1 + CAST(floor(device * 3) AS BIGINT)] AS device
  FROM texts
) TO {path} (FORMAT {format})
"""


def generate(folder: Path, rows: int, memory_limit: str, *, jsonl: bool = True) -> dict[str, Path]:
    """The log as Parquet and (``jsonl``) as JSONL (the same rows)."""
    paths = {"parquet": folder / f"log-{rows}.parquet", "jsonl": folder / f"log-{rows}.jsonl"}
    if not jsonl:
        del paths["jsonl"]
    start = time.perf_counter()
    with engine(memory_limit) as opened:
        opened.execute(
            LOG_SQL.format(
                distinct=rows // 5, rows=rows, path=sql_string(str(paths["parquet"])), format="parquet"
            ),
            [SYLLABLES],
        )
        if jsonl:
            opened.execute(
                f"COPY (SELECT * FROM read_parquet({sql_string(str(paths['parquet']))})) "
                f"TO {sql_string(str(paths['jsonl']))} (FORMAT json)"
            )
        ((distinct, normalised),) = opened.rows(
            "SELECT count(DISTINCT query), count(DISTINCT lower(query)) "
            f"FROM read_parquet({sql_string(str(paths['parquet']))})"
        )
    sizes = ", ".join(f"{kind} {path.stat().st_size / 2**20:,.0f} MiB" for kind, path in paths.items())
    print(
        f"log of {rows:,} searches: {distinct:,} distinct strings ({distinct / rows:.0%}), {normalised:,} in "
        f"lower case; {sizes}; written in {time.perf_counter() - start:.0f} s"
    )
    return paths


class Timing(NamedTuple):
    """Wall-clock seconds, and CPU seconds of every thread of the process (what a loaded machine's waits for
    a core do not change)."""

    wall: float
    cpu: float

    def __str__(self) -> str:
        return f"{self.wall:7.1f} s (CPU {self.cpu:6.1f} s)"


class Run(NamedTuple):
    """An ``embeval`` command run in a child process."""

    timing: Timing
    #: the peak resident memory (MiB)
    peak: float
    stdout: str
    #: each statement the engine ran, with --statements (`TIMER`)
    statements: tuple[Statement, ...] = ()


def floor_seconds(path: Path, kind: str, memory_limit: str) -> Timing:
    """The engine's own GROUP BY of the same columns over the same file, its result kept (a table)."""
    function = "read_parquet" if kind == "parquet" else "read_json"
    with engine(memory_limit) as opened:
        start, cpu = time.perf_counter(), time.process_time()
        opened.execute(
            f"CREATE TEMP TABLE grouped AS SELECT query, language, intent, device, count(*) AS searches "
            f"FROM {function}({sql_string(str(path))}) GROUP BY ALL"
        )
        return Timing(time.perf_counter() - start, time.process_time() - cpu)


CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
TIMER
from pytest_embeval.cli import embeval
start, cpu = time.perf_counter(), time.process_time()
status = embeval.main(sys.argv[2:])
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
print(f"{MARK} {status} {elapsed} {cpu} {int(peak) / 1024}", file=sys.stderr)
REPORT
"""
#: What starts the child's line of figures on its stderr (a progress line may come after it).
MARK = "bench_logs:"


def child(*args: str | Path, root: Path = ROOT, statements: bool = False) -> Run:
    """An ``embeval`` command in a child process (the package of the checkout at ``root``): its times, its
    peak resident memory, its stdout, and (``statements``) the time of each statement the engine ran."""
    code = CHILD.replace("TIMER", TIMER if statements else "").replace("REPORT", REPORT if statements else "")
    code = code.replace("STATEMENT", repr(STATEMENT)).replace("MARK", repr(MARK))
    done = subprocess.run(
        [sys.executable, "-c", code, str(root), *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )
    figures = [line for line in done.stderr.splitlines() if line.startswith(MARK)]
    if not figures:
        raise SystemExit(f"embeval failed:\n{done.stderr}")
    status, elapsed, cpu, peak = figures[-1].split()[1:]
    if status != "0":
        raise SystemExit(f"embeval failed:\n{done.stderr}")
    return Run(Timing(float(elapsed), float(cpu)), float(peak), done.stdout, statements_of(done.stderr))


def sample(
    log: Path, out: Path, memory_limit: str, *extra: str, root: Path = ROOT, statements: bool = False
) -> Run:
    """``embeval sample`` of the log with the engine (``extra`` options last) in a child process, by the
    checkout at ``root``, each statement timed with ``statements``."""
    return child(
        "sample",
        str(log),
        "--by",
        BY,
        "--size",
        "1000",
        "--engine",
        "duckdb",
        "--memory-limit",
        memory_limit,
        "--force",
        "--out",
        str(out),
        *extra,
        root=root,
        statements=statements,
    )


def split(log: Path, folder: Path, files: int, memory_limit: str) -> str:
    """The log's rows as ``files`` Parquet files of consecutive rows, in their order; the glob naming them."""
    folder.mkdir()
    with engine(memory_limit) as opened:
        ((rows,),) = opened.rows(f"SELECT count(*) FROM read_parquet({sql_string(str(log))})")
        per_file = -(-rows // files)
        for day in range(files):
            opened.execute(
                f"COPY (SELECT * EXCLUDE (file_row_number) FROM read_parquet({sql_string(str(log))}, "
                f"file_row_number = true) WHERE file_row_number >= {day * per_file} "
                f"AND file_row_number < {(day + 1) * per_file} ORDER BY file_row_number) "
                f"TO {sql_string(str(folder / f'day-{day + 1:03d}.parquet'))} (FORMAT parquet)"
            )
    return str(folder / "day-*.parquet")


def ratios(ours: Timing, floor: Timing) -> str:
    return f"= {ours.wall / floor.wall:4.2f} x wall, {ours.cpu / floor.cpu:4.2f} x CPU"


def rounds(runs: list[Run], floors: list[Timing]) -> str:
    """Each round's wall-time ratio to the floor timed just before it, in order, and their median: a
    machine whose speed drifts moves both alike, which the ratio of two bests does not allow for."""
    each = [run.timing.wall / floor.wall for run, floor in zip(runs, floors, strict=True)]
    return f"{' '.join(f'{ratio:4.2f}' for ratio in each)} x wall (median {statistics.median(each):4.2f} x)"


def measured(
    name: str,
    floor_of: Callable[[], Timing],
    sample_of: Callable[[Path], Run],
    repeat: int,
    against: Path | None = None,
) -> float:
    """The floor and ``embeval sample`` (``sample_of`` the checkout), best of ``repeat`` each (by wall time),
    and each round's ratio, printed: the sample's wall time. With ``against`` (another checkout), its
    ``embeval sample`` too, each round running the three in turn, so that they meet the same load."""
    runs: dict[str, list[Run]] = {"ours": [], "against": []}
    floors = []
    for _ in range(repeat):
        floors.append(floor_of())
        runs["ours"].append(sample_of(ROOT))
        if against is not None:
            runs["against"].append(sample_of(against))
    floor = min(floors, key=lambda timing: timing.wall)
    run = min(runs["ours"], key=lambda run: run.timing.wall)
    print(
        f"  {name:26} engine GROUP BY {floor}   embeval sample {run.timing} {ratios(run.timing, floor)}   "
        f"peak memory {run.peak:,.0f} MiB"
    )
    print(f"          {run.stdout.splitlines()[0]}")
    print(f"  {'':26} {'each round:':15} {rounds(runs['ours'], floors)}")
    if against is not None:
        before = min(runs["against"], key=lambda run: run.timing.wall)
        print(
            f"  {'':26} {against.name + ':':15} embeval sample {before.timing} "
            f"{ratios(before.timing, floor)}   peak memory {before.peak:,.0f} MiB"
        )
        print(f"  {'':26} {'each round:':15} {rounds(runs['against'], floors)}")
    return run.timing.wall


def bench_logs(
    folder: Path, rows_list: list[int], formats: list[str], repeat: int, memory_limit: str, extra: Extra
) -> None:
    times: dict[str, dict[int, float]] = {kind: {} for kind in formats}
    for rows in sorted(rows_list):
        paths = generate(folder, rows, memory_limit, jsonl="jsonl" in formats or extra.python)
        out = folder / "queries.jsonl"
        for kind in formats:
            path = paths[kind]

            def sample_by(root: Path, path: Path = path, out: Path = out) -> Run:
                return sample(path, out, memory_limit, root=root)

            times[kind][rows] = measured(
                f"{kind} {rows:,} rows:",
                functools.partial(floor_seconds, path, kind, memory_limit),
                sample_by,
                repeat,
                extra.against,
            )
        smallest = rows == min(rows_list)
        if smallest and extra.statements:
            for kind in formats:
                bench_statements(paths[kind], kind, rows, out, memory_limit)
        if smallest and extra.python:
            bench_python(paths["jsonl"], folder, memory_limit)
        if smallest and extra.files:
            bench_files(paths["parquet"], folder, extra.files, repeat, memory_limit)
        for path in paths.values():
            path.unlink()
    if len(rows_list) >= 2:
        low, high = sorted(rows_list)[:2]
        for kind in formats:
            per_row = (times[kind][high] - times[kind][low]) / (high - low)
            estimate = times[kind][high] + per_row * (100_000_000 - high)
            print(
                f"  {kind:7} 100,000,000 rows: about {estimate:.0f} s, EXTRAPOLATED (linear through the "
                f"{low:,} and {high:,}-row times), not measured"
            )


def bench_statements(log: Path, kind: str, rows: int, out: Path, memory_limit: str) -> None:
    """Where ``embeval sample``'s wall time goes, one more run: each statement of the engine's that takes a
    hundredth of it or more (its first words), the rest together, and Python's time between statements."""
    run = sample(log, out, memory_limit, statements=True)
    wall = run.timing.wall
    # The last line is no statement: the time after the last one (`REPORT`).
    *statements, (_, after, _) = run.statements
    print(f"  {kind} {rows:,} rows: where embeval sample's {wall:.2f} s go (wall time; one run)")
    shown = [statement for statement in statements if statement.seconds >= wall / 100]
    for statement in shown:
        sql = statement.sql if len(statement.sql) <= 96 else statement.sql[:93] + "..."
        print(f"    {statement.seconds:6.3f} s  {sql}")
    rest = [statement.seconds for statement in statements if statement not in shown]
    print(f"    {sum(rest):6.3f} s  the other {len(rest)} statements")
    python = after + sum(statement.before for statement in statements)
    print(
        f"    {python:6.3f} s  Python between statements ({statements[0].before:.3f} s before the first: "
        f"imports, options, the engine's start; {after:.3f} s after the last: the engine closed, the files "
        "written)"
    )


def bench_python(log: Path, folder: Path, memory_limit: str) -> None:
    """The same JSONL log sampled by the Python reader (a row at a time) and by the engine: both times, and
    whether the queries files are the same bytes."""
    outputs = {reader: folder / f"queries-{reader}.jsonl" for reader in ("duckdb", "python")}
    runs = {}
    for reader, out in outputs.items():
        runs[reader] = sample(log, out, memory_limit, "--engine", reader)
        print(
            f"  jsonl, --engine {reader:6}     embeval sample {runs[reader].timing}   "
            f"peak memory {runs[reader].peak:,.0f} MiB"
        )
    same = outputs["duckdb"].read_bytes() == outputs["python"].read_bytes()
    python, duckdb = runs["python"].timing, runs["duckdb"].timing
    print(
        f"  the Python reader takes {python.wall / duckdb.wall:.1f} x the engine's wall time on the same log "
        f"({python.cpu / duckdb.cpu:.1f} x its CPU); the two queries files are the same bytes: {same}"
    )


def bench_files(log: Path, folder: Path, files: int, repeat: int, memory_limit: str) -> None:
    """The log as ``files`` Parquet files sampled through a glob, against the GROUP BY over the same glob;
    the sample compared with the one file's."""
    pattern = split(log, folder / "days", files, memory_limit)
    outputs = {"one": folder / "queries-one.jsonl", "many": folder / "queries-many.jsonl"}
    sample(log, outputs["one"], memory_limit)
    measured(
        f"parquet, {files} files:",
        lambda: floor_seconds(Path(pattern), "parquet", memory_limit),
        lambda root: sample(Path(pattern), outputs["many"], memory_limit, root=root),
        repeat,
    )
    same = outputs["one"].read_bytes() == outputs["many"].read_bytes()
    print(f"          the glob's queries file is the one file's, byte for byte: {same}")
    shutil.rmtree(folder / "days")


COUNTED_SQL = """
COPY (
  SELECT * FROM (
    SELECT query, language, intent, device, count(*) AS searches FROM read_parquet({log}) GROUP BY ALL
  ) ORDER BY hash(query, language, intent, device) LIMIT {rows}
) TO {path} (FORMAT parquet)
"""


def bench_counted(folder: Path, rows: int, memory_limit: str, against: Path | None) -> None:
    """A warehouse's GROUP BY output: ``rows`` distinct (query, strata) rows with their searches (and the
    checkout ``against``'s time on it, after ours)."""
    paths = generate(folder, rows * 4, memory_limit, jsonl=False)
    table = folder / f"counted-{rows}.parquet"
    with engine(memory_limit) as opened:
        opened.execute(
            COUNTED_SQL.format(log=sql_string(str(paths["parquet"])), rows=rows, path=sql_string(str(table)))
        )
        ((count, searches),) = opened.rows(
            f"SELECT count(*), sum(searches) FROM read_parquet({sql_string(str(table))})"
        )
    for path in paths.values():
        path.unlink()
    floor = floor_seconds(table, "parquet", memory_limit)
    run = sample(table, folder / "queries.jsonl", memory_limit, "--count", "searches")
    before = (
        None
        if against is None
        else sample(table, folder / "b.jsonl", memory_limit, "--count", "searches", root=against)
    )
    ours = run.timing
    print(
        f"counted table: {count:,} rows (distinct query and stratum values) counting {searches:,} searches, "
        f"{table.stat().st_size / 2**20:,.0f} MiB Parquet"
    )
    print(
        f"  engine GROUP BY {floor}   embeval sample --count searches {ours} {ratios(ours, floor)} "
        f"({'under' if ours.wall < 10 else 'NOT under'} 10 s)   peak memory {run.peak:,.0f} MiB"
    )
    print(f"  {run.stdout.splitlines()[0]}")
    if against is not None and before is not None:
        print(
            f"  {against.name}: embeval sample --count searches {before.timing} "
            f"{ratios(before.timing, floor)}   peak memory {before.peak:,.0f} MiB"
        )


CORPUS_SQL = """
COPY (
  SELECT 'd' || i AS _id, 'chunk ' || i || ' of a production corpus: ' || md5(i::VARCHAR) AS text,
         'a' || (i % 7) AS area
  FROM range({documents}) AS t(i)
) TO {path} (FORMAT {format})
"""


def bench_corpus(folder: Path, documents: int, memory_limit: str) -> None:
    """``embeval corpus-sample`` to 200,000 documents keeping 20,000 judged ones (and 100 missing), over a
    JSONL corpus and the same rows in Parquet, with the engine and with the Python reader, against reading
    the JSONL file once (its lines and sha256)."""
    paths = {"jsonl": folder / "corpus.jsonl", "parquet": folder / "corpus.parquet"}
    with engine(memory_limit) as opened:
        for kind, path in paths.items():
            opened.execute(
                CORPUS_SQL.format(
                    documents=documents, path=sql_string(str(path)), format=kind.replace("jsonl", "json")
                )
            )
    qrels = folder / "qrels.tsv"
    judged = [f"d{i}" for i in range(0, documents, documents // 20_000)][:20_000] + [
        f"gone-{i}" for i in range(100)
    ]
    qrels.write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i % 500}\t{d}\t1\n" for i, d in enumerate(judged))
    )
    start, cpu = time.perf_counter(), time.process_time()
    for _ in HashedLines(paths["jsonl"]):
        pass
    once = Timing(time.perf_counter() - start, time.process_time() - cpu)
    size = paths["jsonl"].stat().st_size / 2**20
    print(
        f"corpus of {documents:,} documents: JSONL {size:,.0f} MiB; reading it once (lines, sha256): {once}"
    )
    outputs = {}
    for name, path, reader in (
        ("jsonl, engine", paths["jsonl"], "duckdb"),
        ("parquet, engine", paths["parquet"], "duckdb"),
        ("jsonl, python", paths["jsonl"], "python"),
    ):
        out = folder / f"sample-{reader}-{path.suffix[1:]}.jsonl"
        run = child(
            "corpus-sample",
            path,
            "--size",
            "200000",
            "--keep-judged",
            qrels,
            "--engine",
            reader,
            "--memory-limit",
            memory_limit,
            "--out",
            out,
        )
        outputs[name] = out
        print(
            f"  corpus-sample, {name:16} {run.timing} = {run.timing.wall / once.wall:5.1f} x reading once's "
            f"wall, {run.timing.cpu / once.cpu:5.1f} x its CPU   peak {run.peak:,.0f} MiB"
        )
    same = outputs["jsonl, engine"].read_bytes() == outputs["jsonl, python"].read_bytes()
    print(f"  the engine's JSONL sample is the Python reader's, byte for byte: {same}")


@dataclass(frozen=True)
class Extra:
    """What else is measured: on the smallest log, the Python reader and the log in many files; on every
    log, the sample by another checkout (the code before a change)."""

    python: bool
    files: int
    against: Path | None
    statements: bool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000, 50_000_000])
    parser.add_argument("--formats", nargs="+", default=["parquet", "jsonl"], choices=["parquet", "jsonl"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--counted", type=int, default=5_000_000, help="rows of the counted table (0: none)")
    parser.add_argument(
        "--memory-limit", default=DEFAULT_MEMORY_LIMIT, help="the engine's (default: half the RAM)"
    )
    parser.add_argument("--corpus", type=int, default=0, help="documents of a corpus to sample (0: none)")
    parser.add_argument(
        "--python", action="store_true", help="also sample the smallest JSONL log with --engine python"
    )
    parser.add_argument(
        "--files", type=int, default=0, help="also sample the smallest log as this many Parquet files"
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="also sample every log with this checkout's package (the code before a change), in turn",
    )
    parser.add_argument(
        "--statements",
        action="store_true",
        help="also time each statement of one more sample of the smallest log, in each format",
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="embeval-bench-logs-"))
    free = shutil.disk_usage(folder).free
    needed = max(args.rows) * 110  # JSONL ~ 90 bytes a row, Parquet ~ 13, and room to spare
    if free < needed:
        raise SystemExit(f"{folder}: {free / 2**30:.1f} GiB free, {needed / 2**30:.1f} GiB needed")
    load = os.getloadavg()[0]
    print(f"load average before: {load:.2f} ({os.cpu_count()} cores); memory limit {args.memory_limit}")
    try:
        against = None if args.against is None else args.against.resolve()
        extra = Extra(args.python, args.files, against, args.statements)
        bench_logs(folder, args.rows, args.formats, args.repeat, args.memory_limit, extra)
        if args.counted:
            bench_counted(folder, args.counted, args.memory_limit, against)
        if args.corpus:
            bench_corpus(folder, args.corpus, args.memory_limit)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
