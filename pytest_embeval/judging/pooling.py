"""Pooled blind judging sheets: every arm's top documents per query, minus what is judged, on a sheet that
does not tell which arm retrieved what; and reading sheets back.

A golden set is fair only if every arm's results were judged: judging one model's top 10 alone scores the
other on how well it reproduces a competitor. So judgments are *pooled*: for each query, the union of every
arm's top ``depth`` documents, minus what is already judged. :func:`pool_from_rankings` -> :class:`Pool`
(:func:`sample_pool` for a calibration sample, :func:`split_pool` for one sheet per judge), written by
:func:`write_sheet`; :func:`read_sheet` -> :class:`Sheet`.

Sheets are CSV (UTF-8, comma-separated, one header row) with the columns :data:`SHEET_COLUMNS`. Row numbers in
messages count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path

import numpy as np

from pytest_embeval.core.stats import stable_seed
from pytest_embeval.core.text_table import table
from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.golden.data_files import Document, Query, first_repeated
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.rankings import Pair, Rankings, check_rankings

__all__ = [
    "DEFAULT_DEPTH",
    "REQUIRED_COLUMNS",
    "SEED_COLUMN",
    "SHEET_COLUMNS",
    "Pool",
    "PoolRow",
    "QueryPool",
    "Sheet",
    "SheetError",
    "SheetRecords",
    "SheetRow",
    "file_stamp",
    "pair_id",
    "pool_from_rankings",
    "pool_lines",
    "pool_row",
    "read_sheet",
    "read_sheet_records",
    "sample_pool",
    "sheet_cells",
    "sheet_of",
    "sheet_pairs",
    "sheet_text",
    "split_pool",
    "write_sheet",
]

#: The columns of a judging sheet, in the order `write_sheet` writes them.
SHEET_COLUMNS = (
    "pair_id",
    "query_id",
    "query_text",
    "doc_id",
    "doc_title",
    "doc_text",
    "grade",
    "judge",
    "notes",
)
#: The column that marks a seed's pairs (its source), written only on a sheet that holds seeds.
SEED_COLUMN = "seed"
#: Columns a sheet must have to be read back; the rest are for the judge's eyes and may be dropped.
REQUIRED_COLUMNS = ("query_id", "doc_id", "grade")
DEFAULT_DEPTH = 20


class SheetError(Exception):
    """A judging sheet that cannot be used; ``problems`` are one-line messages (``<sheet>: row <n>: ...``)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


def pair_id(golden_name: str, query_id: str, doc_id: str) -> str:
    """A stable, opaque id of a (query, document) pair, so sheet rows can be re-sorted and still matched."""
    encoded = json.dumps([golden_name, query_id, doc_id], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class PoolRow:
    """One (query, document) pair to judge, with the texts the judge reads."""

    pair_id: str
    query_id: str
    query_text: str
    doc_id: str
    doc_title: str
    doc_text: str
    #: the source a seed file gave the pair (``ticket``, ``click``...), for the judge to confirm; "" if none
    seed: str = ""


@dataclass(frozen=True, slots=True)
class QueryPool:
    query_id: str
    #: documents in the union of every arm's top depth
    union: int
    #: of those, already judged in the golden set's qrels
    judged: int
    #: of those, not judged yet but already on an excluded (not yet merged) sheet
    pending: int
    #: the rest, to judge, in a seeded shuffled order
    rows: tuple[PoolRow, ...]
    #: for each row, the best (lowest, 1-based) rank any arm or run gave its document; never on the sheet
    best_ranks: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Pool:
    golden: str
    depth: int
    seed: int
    #: the arms pooled, sorted (shown in the summary only, never on the sheet)
    arms: tuple[str, ...]
    queries: tuple[QueryPool, ...]
    #: pairs to judge before `sample_pool` kept a sample of them; None when not sampled
    sampled_from: int | None = None

    @property
    def rows(self) -> tuple[PoolRow, ...]:
        return tuple(row for query in self.queries for row in query.rows)


def pool_row(golden_name: str, query: Query, document: Document, seed: str = "") -> PoolRow:
    """The sheet row of a pair, with the texts the golden set holds."""
    return PoolRow(
        pair_id=pair_id(golden_name, query.id, document.id),
        query_id=query.id,
        query_text=query.text,
        doc_id=document.id,
        doc_title=document.title,
        doc_text=document.text,
        seed=seed,
    )


def pool_from_rankings(
    golden: GoldenSet,
    rankings: Rankings,
    *,
    depth: int = DEFAULT_DEPTH,
    seed: int | None = None,
    exclude: Collection[Pair] = (),
    runs: Rankings | None = None,
    rejudge: Collection[str] | None = None,
    seeds: Mapping[Pair, str] | None = None,
) -> Pool:
    """Pool every arm's top ``depth`` documents per query into the pairs still to judge.

    ``rejudge`` names queries to pool again for a second look (consensus failures: neither arm finds a
    relevant document, so the labels may be wrong): only those queries, their judged pairs included.

    ``seeds`` (pair -> source, from `seeds.read_seeds`) are pairs a ticket or a click claims relevant: they
    join their query's union whether or not an arm ranked them, marked with their source on the sheet so
    that a judge confirms them (unless judged or excluded, like any pair).

    ``runs`` are further rankings (from `read_trec_run`) that may skip queries and rank fewer than ``depth``
    documents: a model arm must cover everything, so a truncated report is caught, but a hand-made list of
    known answers need not.

    For each query (in golden-file order): the union of the arms' top ``depth``, minus pairs already in the
    qrels (any grade, 0 included) and pairs in ``exclude`` (pairs on sheets handed out but not merged yet).
    So pooling a third candidate after the first two were merged yields only what it newly retrieves.

    The sheet must not tell a judge which arm retrieved a document, or at which rank: the union is sorted by
    document id and then shuffled by a generator seeded from ``seed`` (default: the golden set's) and the
    query id through `stable_seed`. The result depends on neither the order nor the names of the arms, and
    is the same on every machine. Raises ``ValueError`` for rankings naming unknown queries or documents,
    an arm missing a query, or a ranking shorter than ``depth`` (and than the corpus).
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    check_rankings(golden, rankings, depth)
    extra = runs or {}
    seeded = seeds or {}
    seed_docs: dict[str, set[str]] = {}
    for query_id, doc_id in seeded:
        seed_docs.setdefault(query_id, set()).add(doc_id)
    base_seed = golden.seed if seed is None else seed
    documents = golden.judged_documents()
    excluded = set(exclude)
    queries = []
    for query in golden.queries:
        if rejudge is not None and query.id not in rejudge:
            continue
        union = sorted(
            {doc for ranked in rankings.values() for doc in ranked[query.id][:depth]}
            | {doc for ranked in extra.values() for doc in ranked.get(query.id, ())[:depth]}
            | seed_docs.get(query.id, set())
        )
        judged = golden.qrels.get(query.id, {})
        skipped = {} if rejudge is not None else judged  # a second look shows the judged pairs again
        pending = [doc for doc in union if doc not in skipped and (query.id, doc) in excluded]
        fresh = [doc for doc in union if doc not in skipped and (query.id, doc) not in excluded]
        order = (
            np.random.default_rng(stable_seed("embeval pool", base_seed, query.id))
            .permutation(len(fresh))
            .tolist()
        )
        rows = tuple(
            pool_row(golden.name, query, documents[fresh[i]], seeded.get((query.id, fresh[i]), ""))
            for i in order
        )
        best = _best_ranks(
            [*(r[query.id] for r in rankings.values()), *(r.get(query.id, ()) for r in extra.values())], depth
        )
        queries.append(
            QueryPool(
                query_id=query.id,
                union=len(union),
                judged=sum(1 for doc in union if doc in judged),
                pending=len(pending),
                rows=rows,
                # A seed no arm ranked within depth is past every ranking's depth.
                best_ranks=tuple(best.get(fresh[i], depth + 1) for i in order),
            )
        )
    return Pool(golden.name, depth, base_seed, tuple(sorted([*rankings, *extra])), tuple(queries))


def _best_ranks(ranked: Sequence[Sequence[str]], depth: int) -> dict[str, int]:
    """Each pooled document's best (lowest, 1-based) rank within the top ``depth`` of any ranking."""
    best: dict[str, int] = {}
    for ranking in ranked:
        for rank, doc in enumerate(ranking[:depth], start=1):
            best[doc] = min(rank, best.get(doc, rank))
    return best


def sample_pool(pool: Pool, size: int) -> Pool:
    """A seeded sample of ``size`` of the pool's pairs (all, if it has fewer), stratified over the rankings,
    in sheet order.

    This is the calibration sheet: people grade it first, and `agreement` (two people) or
    `disagreement.calibrate` (people and an LLM judge) tells whether one judge can carry the rest. The strata
    are the best rank any arm gave a pair; the sample takes one pair from each rank in turn (rank 1 first,
    each a seeded uniform draw) until it holds ``size``, so every rank is equally represented and a rank with
    fewer pairs than its share leaves the rest to the others. A uniform sample of a pool is mostly deep,
    mostly irrelevant pairs: it measures agreement on the easy noes and holds few of the top-ranked,
    relevant pairs whose grades move the metric. The seed is derived from the pool's.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    total = len(pool.rows)
    best = [rank for query in pool.queries for rank in query.best_ranks]
    rng = np.random.default_rng(stable_seed("embeval sample", pool.seed))
    # The j-th draw of every rank before the (j+1)-th of any: equal shares, the top ranks first.
    turns = []
    for rank in sorted(set(best)):
        members = [i for i, r in enumerate(best) if r == rank]
        turns += [(turn, rank, members[i]) for turn, i in enumerate(rng.permutation(len(members)).tolist())]
    chosen = {index for _, _, index in sorted(turns)[:size]}
    queries = []
    start = 0
    for query in pool.queries:
        kept = [i for i in range(len(query.rows)) if start + i in chosen]
        start += len(query.rows)
        queries.append(
            replace(
                query,
                rows=tuple(query.rows[i] for i in kept),
                best_ranks=tuple(query.best_ranks[i] for i in kept),
            )
        )
    return replace(pool, queries=tuple(queries), sampled_from=total)


def split_pool(pool: Pool, parts: int) -> tuple[Pool, ...]:
    """The pool cut into ``parts`` sheets of about equal size, one per judge, never splitting a query.

    A judge sees all of a query's candidates together, because some grades depend on the others (an
    other-language document is judged only when nothing in the query's language answers it). Queries stay
    in golden-file order; each sheet takes whole queries until it holds its share of the remaining rows.
    """
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"parts must be a positive integer, got {parts!r}")
    queries = [query for query in pool.queries if query.rows]
    if parts > len(queries):
        raise ValueError(f"cannot split {len(queries)} queries with pairs to judge into {parts} sheets")
    sheets: list[Pool] = []
    remaining = len(pool.rows)
    start = 0
    for part in range(parts, 0, -1):
        share = remaining / part
        taken: list[QueryPool] = []
        # Leave at least one query for each sheet still to fill.
        while start < len(queries) - (part - 1) and (not taken or sum(len(q.rows) for q in taken) < share):
            taken.append(queries[start])
            start += 1
        remaining -= sum(len(q.rows) for q in taken)
        sheets.append(replace(pool, queries=tuple(taken)))
    return tuple(sheets)


def sheet_text(pool: Pool) -> str:
    """The pool as a judging sheet: CSV with the `SHEET_COLUMNS` header and empty grade/judge/notes cells,
    and a last column `SEED_COLUMN` when some pair is a seed (its source: for the judge to confirm)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    rows = pool.rows
    seeded = any(row.seed for row in rows)
    writer.writerow([*SHEET_COLUMNS, SEED_COLUMN] if seeded else SHEET_COLUMNS)
    for row in rows:
        # grade, judge, notes empty: for the judge to fill in
        writer.writerow([*sheet_cells(row), row.seed] if seeded else sheet_cells(row))
    return buffer.getvalue()


def sheet_cells(row: PoolRow, grade: str = "", judge: str = "", notes: str = "") -> list[str]:
    """A sheet row's cells, in `SHEET_COLUMNS` order."""
    return [
        row.pair_id,
        row.query_id,
        row.query_text,
        row.doc_id,
        row.doc_title,
        row.doc_text,
        grade,
        judge,
        notes,
    ]


def write_sheet(path: str | PathLike[str], pool: Pool) -> None:
    """Write the judging sheet atomically (the folder must exist)."""
    write_atomic(Path(path), sheet_text(pool))


def pool_lines(pool: Pool, *, per_query: bool = False) -> list[str]:
    """The pool's size and the per-query union size (min / mean / max, or one row per query)."""
    unions = [query.union for query in pool.queries]
    to_judge = [len(query.rows) for query in pool.queries]
    judged = sum(query.judged for query in pool.queries)
    pending = sum(query.pending for query in pool.queries)
    arms = "arm" if len(pool.arms) == 1 else "arms"
    lines = [
        f"pooled {len(pool.arms)} {arms} at depth {pool.depth} over {len(unions)} queries of {pool.golden}",
        f"union per query: mean {np.mean(unions):.1f}, min {min(unions)}, max {max(unions)} "
        f"({sum(unions)} pairs)",
        f"already judged: {judged}; on excluded sheets: {pending}",
        f"to judge: {sum(to_judge)} pairs ({sum(1 for n in to_judge if n)} queries; "
        f"mean {np.mean(to_judge):.1f}, max {max(to_judge)} per query)",
    ]
    seeds = Counter(row.seed for row in pool.rows if row.seed)
    if seeds:
        lines.append(
            f"seeds on the sheet, marked for the judges to confirm: {sum(seeds.values())} ("
            + ", ".join(f"{source} {count}" for source, count in sorted(seeds.items()))
            + ")"
        )
    if pool.sampled_from is not None:
        ranks = Counter(rank for query in pool.queries for rank in query.best_ranks)
        lines.append(
            f"a calibration sample of {sum(to_judge)} of the {pool.sampled_from} pairs to judge, "
            "drawn evenly over the best rank any arm gave them: "
            + ", ".join(f"rank {rank}: {ranks[rank]}" for rank in sorted(ranks))
        )
    if per_query:
        rows = [
            [q.query_id, str(q.union), str(q.judged), str(q.pending), str(len(q.rows))] for q in pool.queries
        ]
        lines += ["", *table(["query", "union", "judged", "pending", "to judge"], rows)]
    return lines


@dataclass(frozen=True, slots=True)
class SheetRow:
    """A non-blank row of a sheet, cells stripped of surrounding whitespace; ``grade`` is still the text."""

    row: int
    query_id: str
    doc_id: str
    grade: str
    judge: str
    pair_id: str
    #: the seed column (the seed's source), "" when the sheet has none or the pair is not a seed
    seed: str = ""


@dataclass(frozen=True, slots=True)
class Sheet:
    path: Path
    rows: tuple[SheetRow, ...]

    @property
    def name(self) -> str:
        return str(self.path)


@dataclass(frozen=True, slots=True)
class SheetRecords:
    """A sheet file's records as read, cells untouched: what `read_sheet` checks, and what an edit of some
    cells (`sheet_edits`) writes back with every other byte the same."""

    path: Path
    #: the header first, then every record, blank ones included
    records: tuple[tuple[str, ...], ...]
    #: the file began with a UTF-8 byte order mark (Excel's "CSV UTF-8")
    bom: bool
    #: what the file ends a record with: ``\r\n`` (as `write_sheet` and spreadsheets write) or ``\n``
    newline: str
    #: the file read (`file_stamp`): while the file at the path has the same, it holds these records
    stamp: tuple[int, ...] = ()

    @property
    def header(self) -> tuple[str, ...]:
        return tuple(cell.strip() for cell in self.records[0])


def file_stamp(status: os.stat_result) -> tuple[int, ...]:
    """What tells one version of a file from another: its device, inode, size and modification time (a
    file replaced atomically is a new inode; one rewritten in place has a new time)."""
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def read_sheet_records(path: str | PathLike[str]) -> SheetRecords:
    """A sheet's records, its header checked. Raises `SheetError` for an unreadable file or a bad header."""
    location = Path(path)
    where = str(location)
    try:
        with location.open("rb") as handle:
            stamp = file_stamp(os.fstat(handle.fileno()))
            data = handle.read()
    except FileNotFoundError:
        raise SheetError([f"{where}: file not found"]) from None
    except OSError as exc:
        raise SheetError([f"{where}: cannot read: {exc.strerror or exc}"]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = (
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the sheet as CSV UTF-8"
        )
        raise SheetError([f"{where}: {problem}"]) from None
    bom = text.startswith("\ufeff")
    text = text.removeprefix("\ufeff")
    try:
        records = tuple(tuple(record) for record in csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise SheetError([f"{where}: not a CSV file: {exc}"]) from None
    if not records:
        raise SheetError([f"{where}: empty file (expected a header row: {','.join(SHEET_COLUMNS)})"])
    newline = "\r\n" if "\r\n" in text or "\n" not in text else "\n"
    read = SheetRecords(location, records, bom, newline, stamp)
    _check_header(where, read.header)
    return read


def read_sheet(path: str | PathLike[str]) -> Sheet:
    """Read a judging sheet. Raises `SheetError` for an unreadable file or a bad header.

    The header must name at least :data:`REQUIRED_COLUMNS`; other columns may be dropped or added (a
    spreadsheet adds its own). Blank rows are skipped; a UTF-8 byte order mark (Excel's "CSV UTF-8") is
    accepted. Cell values are checked by the caller, which knows the golden set and the scale.
    """
    return sheet_of(read_sheet_records(path))


def sheet_of(read: SheetRecords) -> Sheet:
    """The sheet's non-blank rows (`read_sheet`). Raises `SheetError` for a row with more cells than the
    header."""
    where = str(read.path)
    header = read.header
    column = {name: i for i, name in enumerate(header)}
    rows = []
    problems = []
    for number, record in enumerate(read.records[1:], start=2):
        if not any(cell.strip() for cell in record):
            continue
        if len(record) > len(header):
            problems.append(f"{where}: row {number}: {len(record)} cells, but the header has {len(header)}")
            continue
        cells = [
            _cell(record, column.get(name))
            for name in ("query_id", "doc_id", "grade", "judge", "pair_id", SEED_COLUMN)
        ]
        rows.append(SheetRow(number, *cells))
    if problems:
        raise SheetError(problems)
    return Sheet(read.path, tuple(rows))


def _cell(record: Sequence[str], index: int | None) -> str:
    """A stripped cell; a column the sheet lacks, or a cell past the end of a short row, is empty
    (spreadsheets drop trailing empty cells)."""
    return record[index].strip() if index is not None and index < len(record) else ""


def _check_header(where: str, header: Sequence[str]) -> None:
    expected = ",".join(SHEET_COLUMNS)
    if len(header) == 1 and ";" in header[0]:
        problem = "the header is separated by ';', not ','; save the sheet as CSV (comma delimited)"
        raise SheetError([f"{where}: row 1: {problem}"])
    duplicate = first_repeated(name for name in header if name)
    if duplicate is not None:
        raise SheetError([f"{where}: row 1: duplicate column {duplicate!r}"])
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        names = ", ".join(repr(name) for name in missing)
        raise SheetError(
            [f"{where}: row 1: missing column(s) {names} (a judging sheet's header is {expected})"]
        )


def sheet_pairs(sheets: Sequence[Sheet]) -> set[Pair]:
    """Every (query id, document id) on the sheets, graded or not: what a new pool must leave out."""
    return {(row.query_id, row.doc_id) for sheet in sheets for row in sheet.rows}
