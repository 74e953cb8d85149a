"""The judging workflow before a run: pooled blind sheets, merging grades, agreement, coverage, planning.

A golden set is fair only if every arm's results were judged: judging one model's top 10 alone scores the
other on how well it reproduces a competitor. So judgments are *pooled*: for each query, the union of every
arm's top ``depth`` documents, minus what is already judged, goes on a sheet that does not reveal which arm
retrieved what. The pieces, all pure functions of plain data (no pytest, no argparse; ``cli.py`` and the
plugin call them):

* :func:`pool_from_rankings` -> :class:`Pool` (:func:`sample_pool` for a calibration sample), written by
  :func:`write_sheet`;
* :func:`read_sheet` -> :class:`Sheet`; :func:`merge_sheets` validates graded sheets against the golden set
  and :func:`append_qrels` appends the new judgments to its qrels TSV file atomically;
* :func:`agreement` (percent agreement, Cohen's kappa, linearly weighted kappa, confusion matrix);
* :func:`coverage` / :func:`coverage_warnings`: each arm's judged@k per stratum, and a warning when one arm is
  much less judged than another (it was not pooled);
* :func:`plan`: per stratum, n, the minimum detectable effect and the queries needed to resolve the margin.

Sheets are CSV (UTF-8, comma-separated, one header row) with the columns :data:`SHEET_COLUMNS`. Row numbers in
messages count the header as row 1, as a spreadsheet shows them. Grades are integers on the scale
``0..max_grade`` (default 2: 0 not relevant, 1 partly, 2 fully relevant).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import warnings
from collections.abc import Collection, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml

from pytest_embeval.golden import QRELS_HEADER, GoldenSet
from pytest_embeval.metrics import NoRelevantDocumentsWarning, per_query, rank_documents
from pytest_embeval.output import table, write_atomic
from pytest_embeval.stats import minimum_detectable_effect, paired_n, stable_seed

__all__ = [
    "DEFAULT_COVERAGE_GAP",
    "DEFAULT_DEPTH",
    "DEFAULT_MAX_GRADE",
    "DEFAULT_POWER",
    "DEFAULT_SD",
    "REQUIRED_COLUMNS",
    "SHEET_COLUMNS",
    "Agreement",
    "CoverageRow",
    "Judgment",
    "MergeResult",
    "Pair",
    "PlanRow",
    "Pool",
    "PoolRow",
    "QueryPool",
    "Rankings",
    "ReportError",
    "Resolve",
    "Sheet",
    "SheetError",
    "SheetRow",
    "agreement",
    "agreement_lines",
    "append_qrels",
    "cohen_kappa",
    "coverage",
    "coverage_lines",
    "coverage_warnings",
    "find_golden_record",
    "load_report",
    "merge_sheets",
    "observed_sd",
    "pair_id",
    "plan",
    "plan_lines",
    "pool_command",
    "pool_from_rankings",
    "pool_lines",
    "qrels_file",
    "rankings_from_record",
    "read_sheet",
    "sample_pool",
    "sheet_grades",
    "sheet_pairs",
    "sheet_text",
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
#: Columns a sheet must have to be read back; the rest are for the judge's eyes and may be dropped.
REQUIRED_COLUMNS = ("query_id", "doc_id", "grade")
DEFAULT_DEPTH = 20
DEFAULT_MAX_GRADE = 2
#: Paired standard deviation assumed by `plan` when no run has measured one (a typical per-query spread of
#: recall/nDCG differences between two embedding models).
DEFAULT_SD = 0.15
DEFAULT_POWER = 0.8
#: An arm whose top k is judged this much less (as a share of k) than another arm's was not pooled.
DEFAULT_COVERAGE_GAP = 0.10

Resolve = Literal["max", "min", "first"]
#: (query id, document id)
Pair = tuple[str, str]
#: arm name -> query id -> document ids in rank order
Rankings = Mapping[str, Mapping[str, Sequence[str]]]

# Float slack for "more than 10 points": 0.95 - 0.85 must not count as a gap above 0.10.
_EPSILON = 1e-9


class SheetError(Exception):
    """A judging sheet that cannot be used; ``problems`` are one-line messages (``<sheet>: row <n>: ...``)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


class ReportError(Exception):
    """A JSON report that does not hold what is needed (the golden set, both arms' rankings)."""


# ------------------------------------------------------------------------------------------------- tables


def _percent(value: float) -> str:
    return f"{100 * value:.0f}%"


# ---------------------------------------------------------------------------------------------- reports


def load_report(path: str | PathLike[str]) -> dict[str, Any]:
    """Read the plugin's JSON report (``--embeval-json``); raises `ReportError` with a one-line reason."""
    location = Path(path)
    try:
        report = json.loads(location.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{location}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{location}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{location}: not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(report, dict) or not isinstance(report.get("golden_sets"), list):
        raise ReportError(f"{location}: not an embeval JSON report (no 'golden_sets' list)")
    if report.get("schema_version") != 1:
        raise ReportError(f"{location}: unsupported schema_version {report.get('schema_version')!r}")
    return report


def find_golden_record(report: Mapping[str, Any], golden: GoldenSet, source: str) -> Mapping[str, Any]:
    """The report's entry for ``golden``, by name; among entries of the same name, the one whose ``path``
    (rootdir-relative) ends the golden file's path. ``source`` names the report in messages."""
    records = [r for r in report["golden_sets"] if isinstance(r, dict) and r.get("name") == golden.name]
    if len(records) > 1:
        here = golden.path.resolve().as_posix()
        records = [r for r in records if here.endswith("/" + str(r.get("path", "")).lstrip("/"))]
    if len(records) != 1:
        names = ", ".join(repr(r.get("name")) for r in report["golden_sets"] if isinstance(r, dict))
        found = "none" if not records else "several"
        raise ReportError(
            f"{source}: {found} of the report's golden sets is {golden.name!r} (it holds: {names or 'none'})"
        )
    return records[0]


def rankings_from_record(
    record: Mapping[str, Any], source: str = "report"
) -> dict[str, dict[str, list[str]]]:
    """Both arms' ranked document ids per query from one golden-set entry of the report.

    The arms are named by role (``incumbent``, ``candidate``), the keys of each query's ``ranked``. This is
    the shape `build_report` writes, so the plugin can call it on its own records.
    """
    queries = record.get("queries")
    if not isinstance(queries, list):
        raise ReportError(f"{source}: golden set {record.get('name')!r} has no 'queries' list")
    rankings: dict[str, dict[str, list[str]]] = {}
    for query in queries:
        ranked = query.get("ranked") if isinstance(query, dict) else None
        if not isinstance(ranked, dict) or not ranked:
            raise ReportError(f"{source}: a query of {record.get('name')!r} has no 'ranked' documents")
        for arm, doc_ids in ranked.items():
            if not isinstance(doc_ids, list) or not all(isinstance(doc, str) for doc in doc_ids):
                raise ReportError(f"{source}: query {query.get('id')!r}: ranked.{arm} is not a list of ids")
            rankings.setdefault(str(arm), {})[str(query.get("id"))] = doc_ids
    return rankings


def read_trec_run(path: str | PathLike[str], golden: GoldenSet) -> dict[str, list[str]]:
    """A TREC run file (``qid Q0 docid rank score tag``) as ranked document ids per query, ordered by score
    the way trec_eval orders it (the rank column is ignored, as trec_eval ignores it).

    A run may cover only some queries and rank any number of documents: it is how hand-picked candidates
    (what the golden set's authors know answers a query) or another system (BM25) join a pool. Raises
    `ReportError` naming the line for malformed lines and unknown queries or documents.
    """
    location = Path(path)
    try:
        lines = location.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ReportError(f"{location}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{location}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    scores: dict[str, dict[str, float]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split()
        where = f"{location}:{number}"
        if len(fields) != 6:
            raise ReportError(f"{where}: expected 'qid Q0 docid rank score tag', got {len(fields)} fields")
        query_id, _, doc_id, _, score, _ = fields
        if query_id not in query_ids:
            raise ReportError(f"{where}: unknown query {query_id!r} (not in golden set {golden.name!r})")
        if doc_id not in doc_ids:
            raise ReportError(f"{where}: unknown document {doc_id!r} (not in the corpus of {golden.name!r})")
        try:
            value = float(score)
        except ValueError:
            raise ReportError(f"{where}: score {score!r} is not a number") from None
        if doc_id in scores.setdefault(query_id, {}):
            raise ReportError(f"{where}: document {doc_id!r} listed twice for query {query_id!r}")
        scores[query_id][doc_id] = value
    return {query_id: rank_documents(by_doc) for query_id, by_doc in scores.items()}


def _check_rankings(golden: GoldenSet, rankings: Rankings, depth: int | None) -> None:
    """Every arm ranks known documents for every golden query, at least ``depth`` deep (or the corpus)."""
    if not rankings:
        raise ValueError("no arms: give at least one arm's rankings")
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    need = None if depth is None else min(depth, len(golden.documents))
    for arm, by_query in rankings.items():
        unknown = next((qid for qid in by_query if qid not in query_ids), None)
        if unknown is not None:
            raise ValueError(
                f"arm {arm!r} ranks query {unknown!r}, which is not in golden set {golden.name!r}"
            )
        for query in golden.queries:
            ranked = by_query.get(query.id)
            if ranked is None:
                raise ValueError(f"arm {arm!r} has no ranking for query {query.id!r}")
            stray = next((doc for doc in ranked if doc not in doc_ids), None)
            if stray is not None:
                raise ValueError(
                    f"arm {arm!r} ranks document {stray!r} for query {query.id!r}, "
                    f"which is not in the corpus of {golden.name!r}"
                )
            if need is not None and len(ranked) < need:
                raise ValueError(
                    f"arm {arm!r} ranks only {len(ranked)} documents for query {query.id!r}, "
                    f"fewer than the pool depth {need}"
                )


# ------------------------------------------------------------------------------------------------- pool


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


def pool_from_rankings(
    golden: GoldenSet,
    rankings: Rankings,
    *,
    depth: int = DEFAULT_DEPTH,
    seed: int | None = None,
    exclude: Collection[Pair] = (),
    runs: Rankings | None = None,
) -> Pool:
    """Pool every arm's top ``depth`` documents per query into the pairs still to judge.

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
    _check_rankings(golden, rankings, depth)
    extra = runs or {}
    base_seed = golden.seed if seed is None else seed
    documents = {doc.id: doc for doc in golden.documents}
    excluded = set(exclude)
    queries = []
    for query in golden.queries:
        union = sorted(
            {doc for ranked in rankings.values() for doc in ranked[query.id][:depth]}
            | {doc for ranked in extra.values() for doc in ranked.get(query.id, ())[:depth]}
        )
        judged = golden.qrels.get(query.id, {})
        pending = [doc for doc in union if doc not in judged and (query.id, doc) in excluded]
        fresh = [doc for doc in union if doc not in judged and (query.id, doc) not in excluded]
        order = np.random.default_rng(stable_seed("embeval pool", base_seed, query.id)).permutation(
            len(fresh)
        )
        rows = tuple(
            PoolRow(
                pair_id=pair_id(golden.name, query.id, doc_id),
                query_id=query.id,
                query_text=query.text,
                doc_id=doc_id,
                doc_title=documents[doc_id].title,
                doc_text=documents[doc_id].text,
            )
            for doc_id in (fresh[i] for i in order.tolist())
        )
        queries.append(
            QueryPool(
                query_id=query.id,
                union=len(union),
                judged=sum(1 for doc in union if doc in judged),
                pending=len(pending),
                rows=rows,
            )
        )
    return Pool(golden.name, depth, base_seed, tuple(sorted([*rankings, *extra])), tuple(queries))


def sample_pool(pool: Pool, size: int) -> Pool:
    """A seeded uniform sample of ``size`` of the pool's pairs (all, if it has fewer), in sheet order.

    This is the calibration sheet: two judges grade the same sample first, and `agreement` tells whether
    the guidelines are clear enough for one judge (or an LLM) to carry the rest. Sampling pairs, not queries,
    keeps the mix of easy and hard documents the full sheet has. The seed is derived from the pool's.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    total = len(pool.rows)
    rng = np.random.default_rng(stable_seed("embeval sample", pool.seed))
    chosen = set(rng.choice(total, size=min(size, total), replace=False).tolist())
    queries = []
    start = 0
    for query in pool.queries:
        kept = tuple(row for i, row in enumerate(query.rows, start=start) if i in chosen)
        start += len(query.rows)
        queries.append(replace(query, rows=kept))
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
    """The pool as a judging sheet: CSV with the `SHEET_COLUMNS` header and empty grade/judge/notes cells."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(SHEET_COLUMNS)
    for row in pool.rows:
        texts = [row.pair_id, row.query_id, row.query_text, row.doc_id, row.doc_title, row.doc_text]
        writer.writerow([*texts, "", "", ""])  # grade, judge, notes: for the judge to fill in
    return buffer.getvalue()


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
    if pool.sampled_from is not None:
        lines.append(f"a random sample of {sum(to_judge)} of the {pool.sampled_from} pairs to judge")
    if per_query:
        rows = [
            [q.query_id, str(q.union), str(q.judged), str(q.pending), str(len(q.rows))] for q in pool.queries
        ]
        lines += ["", *table(["query", "union", "judged", "pending", "to judge"], rows)]
    return lines


# ------------------------------------------------------------------------------------------------ sheets


@dataclass(frozen=True, slots=True)
class SheetRow:
    """A non-blank row of a sheet, cells stripped of surrounding whitespace; ``grade`` is still the text."""

    row: int
    query_id: str
    doc_id: str
    grade: str
    judge: str
    pair_id: str


@dataclass(frozen=True, slots=True)
class Sheet:
    path: Path
    rows: tuple[SheetRow, ...]

    @property
    def name(self) -> str:
        return str(self.path)


def read_sheet(path: str | PathLike[str]) -> Sheet:
    """Read a judging sheet. Raises `SheetError` for an unreadable file or a bad header.

    The header must name at least :data:`REQUIRED_COLUMNS`; other columns may be dropped or added (a
    spreadsheet adds its own). Blank rows are skipped; a UTF-8 byte order mark (Excel's "CSV UTF-8") is
    accepted. Cell values are checked by the caller, which knows the golden set and the scale.
    """
    location = Path(path)
    where = str(location)
    try:
        data = location.read_bytes()
    except FileNotFoundError:
        raise SheetError([f"{where}: file not found"]) from None
    except OSError as exc:
        raise SheetError([f"{where}: cannot read: {exc.strerror or exc}"]) from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        problem = (
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); save the sheet as CSV UTF-8"
        )
        raise SheetError([f"{where}: {problem}"]) from None
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise SheetError([f"{where}: not a CSV file: {exc}"]) from None
    if not records:
        raise SheetError([f"{where}: empty file (expected a header row: {','.join(SHEET_COLUMNS)})"])
    header = [cell.strip() for cell in records[0]]
    _check_header(where, header)
    column = {name: i for i, name in enumerate(header)}
    rows = []
    problems = []
    for number, record in enumerate(records[1:], start=2):
        if not any(cell.strip() for cell in record):
            continue
        if len(record) > len(header):
            problems.append(f"{where}: row {number}: {len(record)} cells, but the header has {len(header)}")
            continue
        cells = [
            _cell(record, column.get(name)) for name in ("query_id", "doc_id", "grade", "judge", "pair_id")
        ]
        rows.append(SheetRow(number, *cells))
    if problems:
        raise SheetError(problems)
    return Sheet(location, tuple(rows))


def _cell(record: Sequence[str], index: int | None) -> str:
    """A stripped cell; a column the sheet lacks, or a cell past the end of a short row, is empty
    (spreadsheets drop trailing empty cells)."""
    return record[index].strip() if index is not None and index < len(record) else ""


def _check_header(where: str, header: Sequence[str]) -> None:
    expected = ",".join(SHEET_COLUMNS)
    if len(header) == 1 and ";" in header[0]:
        problem = "the header is separated by ';', not ','; save the sheet as CSV (comma delimited)"
        raise SheetError([f"{where}: row 1: {problem}"])
    duplicate = next((name for i, name in enumerate(header) if name and name in header[:i]), None)
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


class _CellError(Exception):
    """A bad cell; the message is prefixed with the sheet and row by the caller."""


def _grade(text: str, max_grade: int) -> int:
    scale = f"0..{max_grade}"
    if not text:
        raise _CellError(f"empty grade: grade the pair ({scale}) or delete the row")
    try:
        grade = int(text, 10)
    except ValueError:
        raise _CellError(f"grade {text!r} is not an integer (the scale is {scale})") from None
    if not 0 <= grade <= max_grade:
        raise _CellError(f"grade {grade} is outside the scale {scale}")
    return grade


def _check_max_grade(max_grade: int) -> None:
    if isinstance(max_grade, bool) or not isinstance(max_grade, int) or max_grade < 1:
        raise ValueError(f"max_grade must be an integer >= 1, got {max_grade!r}")


def _describe_pair(pair: Pair) -> str:
    return f"query {pair[0]!r} and document {pair[1]!r}"


def sheet_grades(sheet: Sheet, *, max_grade: int = DEFAULT_MAX_GRADE) -> dict[Pair, int]:
    """The graded pairs of one sheet (rows with an empty grade are not graded yet and are left out).

    Raises `SheetError` for a missing id, a grade that is not an integer on the scale, or a pair graded twice
    with different grades; a pair graded twice alike counts once.
    """
    _check_max_grade(max_grade)
    grades: dict[Pair, tuple[int, int]] = {}
    problems = []
    for row in sheet.rows:
        where = f"{sheet.name}: row {row.row}"
        if not row.query_id or not row.doc_id:
            problems.append(f"{where}: empty {'query_id' if not row.query_id else 'doc_id'}")
            continue
        if not row.grade:
            continue
        try:
            grade = _grade(row.grade, max_grade)
        except _CellError as exc:
            problems.append(f"{where}: {exc}")
            continue
        pair = (row.query_id, row.doc_id)
        if pair in grades and grades[pair][0] != grade:
            first, line = grades[pair]
            problems.append(f"{where}: {_describe_pair(pair)} graded {grade} here and {first} on row {line}")
            continue
        grades.setdefault(pair, (grade, row.row))
    if problems:
        raise SheetError(problems)
    return {pair: grade for pair, (grade, _) in grades.items()}


# ------------------------------------------------------------------------------------------------- merge


@dataclass(frozen=True, slots=True)
class Judgment:
    query_id: str
    doc_id: str
    grade: int


@dataclass(frozen=True, slots=True)
class MergeResult:
    #: judgments to append, in golden query order, then document id order
    new: tuple[Judgment, ...]
    #: graded pairs the qrels already hold with the same grade (nothing to do)
    unchanged: int
    #: judge -> graded rows, in order of first appearance
    judges: Mapping[str, int]
    #: pairs on which judges disagreed and ``resolve`` chose the grade
    resolved: int


@dataclass(frozen=True, slots=True)
class _Graded:
    sheet: int  # index into the sheets: messages are ordered by sheet, then row
    row: int
    judge: str
    grade: int


def _check_ids(golden: GoldenSet, query_ids: Set[str], doc_ids: Set[str], row: SheetRow) -> None:
    if not row.query_id or not row.doc_id:
        raise _CellError(f"empty {'query_id' if not row.query_id else 'doc_id'}")
    if row.query_id not in query_ids:
        raise _CellError(f"unknown query {row.query_id!r} (not in golden set {golden.name!r})")
    if row.doc_id not in doc_ids:
        raise _CellError(f"unknown document {row.doc_id!r} (not in the corpus of {golden.name!r})")
    if row.pair_id and row.pair_id != pair_id(golden.name, row.query_id, row.doc_id):
        raise _CellError(
            f"pair_id {row.pair_id!r} does not belong to {_describe_pair((row.query_id, row.doc_id))} "
            "(were cells moved, e.g. by sorting one column only?)"
        )


def merge_sheets(
    golden: GoldenSet,
    sheets: Sequence[Sheet],
    *,
    max_grade: int = DEFAULT_MAX_GRADE,
    resolve: Resolve | None = None,
) -> MergeResult:
    """Validate graded sheets against ``golden`` and return the judgments to add to its qrels.

    Every row must name a query and a document of the golden set and carry an integer grade in
    ``0..max_grade``; an empty grade is an error (grade the pair or delete the row: a silently skipped row
    would leave the pool unjudged). A non-empty ``pair_id`` must be the pair's (a mismatch means cells were
    moved, e.g. by sorting one column only). The judge is the ``judge`` cell, or the sheet's file name when
    that is blank. One judge grading a pair twice differently is an error; two judges grading it differently
    are an error too unless ``resolve`` says which grade to keep (``max``, ``min``, or ``first`` in sheet and
    row order). A pair the qrels already hold with a different grade is an error (qrels are revised by hand,
    on purpose); with the same grade it is counted as unchanged. Raises `SheetError` listing every problem,
    one line each, in sheet and row order.
    """
    _check_max_grade(max_grade)
    if resolve not in (None, "max", "min", "first"):
        raise ValueError(f"resolve must be 'max', 'min', 'first' or None, got {resolve!r}")
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    problems: list[tuple[int, int, str]] = []
    by_pair: dict[Pair, list[_Graded]] = {}
    judges: dict[str, int] = {}

    def refer(graded: _Graded, here: _Graded) -> str:
        """How a message about ``here`` names the row of ``graded``."""
        if graded.sheet == here.sheet:
            return f"row {graded.row}"
        return f"{sheets[graded.sheet].name} row {graded.row}"

    for index, sheet in enumerate(sheets):
        for row in sheet.rows:
            pair = (row.query_id, row.doc_id)
            try:
                _check_ids(golden, query_ids, doc_ids, row)
                grade = _grade(row.grade, max_grade)
            except _CellError as exc:
                problems.append((index, row.row, str(exc)))
                continue
            judge = row.judge or sheet.name
            judges[judge] = judges.get(judge, 0) + 1
            graded = _Graded(index, row.row, judge, grade)
            earlier = by_pair.setdefault(pair, [])
            same_judge = next((g for g in earlier if g.judge == judge), None)
            if same_judge is None:
                earlier.append(graded)
            elif same_judge.grade != grade:
                problems.append(
                    (
                        index,
                        row.row,
                        f"judge {judge!r} graded {_describe_pair(pair)} {grade} here and "
                        f"{same_judge.grade} on {refer(same_judge, graded)}",
                    )
                )

    new: list[Judgment] = []
    unchanged = resolved = 0
    for pair, grades in by_pair.items():
        chosen = grades[0]
        if len({g.grade for g in grades}) > 1:
            if resolve is None:
                other = next(g for g in grades if g.grade != chosen.grade)
                problems.append(
                    (
                        other.sheet,
                        other.row,
                        f"judges {chosen.judge!r} ({chosen.grade} on {refer(chosen, other)}) and "
                        f"{other.judge!r} ({other.grade} here) disagree on {_describe_pair(pair)}; "
                        "reconcile the grades or pass --resolve max|min|first",
                    )
                )
                continue
            resolved += 1
            if resolve == "max":
                chosen = max(grades, key=lambda g: g.grade)
            elif resolve == "min":
                chosen = min(grades, key=lambda g: g.grade)
        existing = golden.qrels.get(pair[0], {}).get(pair[1])
        if existing is None:
            new.append(Judgment(pair[0], pair[1], chosen.grade))
        elif existing == chosen.grade:
            unchanged += 1
        else:
            problems.append(
                (
                    chosen.sheet,
                    chosen.row,
                    f"{_describe_pair(pair)} are already judged {existing} in the qrels, this row grades "
                    f"{chosen.grade} (to revise a judgment, edit the qrels file)",
                )
            )
    if problems:
        raise SheetError([f"{sheets[i].name}: row {row}: {text}" for i, row, text in sorted(problems)])
    position = {query.id: i for i, query in enumerate(golden.queries)}
    new.sort(key=lambda j: (position[j.query_id], j.doc_id))
    return MergeResult(tuple(new), unchanged, judges, resolved)


def qrels_file(golden_path: str | PathLike[str]) -> Path:
    """The qrels TSV file of a golden-set YAML file (its ``qrels`` key, or the ``beir`` folder's).

    Raises ``ValueError`` when the judgments are inline (``relevant:`` on each query): there is no file to
    append to. Call it after `load_golden` succeeded, which has validated the keys.
    """
    path = Path(golden_path)
    settings = yaml.safe_load(path.read_text(encoding="utf-8").removeprefix("\ufeff"))
    if "beir" in settings:
        folder = Path(str(settings["beir"]))
        folder = folder if folder.is_absolute() else path.parent / folder
        nested = folder / "qrels" / "test.tsv"
        return nested if nested.is_file() else folder / "qrels.tsv"
    if "qrels" not in settings:
        raise ValueError(
            f"{path}: the judgments are inline ('relevant:' on each query), so there is no qrels file to "
            f"append to; move them to a TSV file with the header {QRELS_HEADER!r} and name it under 'qrels:'"
        )
    qrels = Path(str(settings["qrels"]))
    return qrels if qrels.is_absolute() else path.parent / qrels


def append_qrels(path: str | PathLike[str], judgments: Sequence[Judgment]) -> None:
    """Append judgments to a qrels TSV file, keeping every existing byte and its line endings; atomic."""
    location = Path(path)
    with location.open(encoding="utf-8", newline="") as handle:
        text = handle.read()
    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    text += "".join(f"{j.query_id}\t{j.doc_id}\t{j.grade}{newline}" for j in judgments)
    write_atomic(location, text)


# --------------------------------------------------------------------------------------------- agreement


def _confusion(first: Sequence[int], second: Sequence[int], labels: Sequence[int]) -> np.ndarray:
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(first, second, strict=True):
        if a not in index or b not in index:
            raise ValueError(f"grade {a if a not in index else b!r} is not one of the labels {list(labels)}")
        matrix[index[a], index[b]] += 1
    return matrix


def _kappa(matrix: np.ndarray, labels: Sequence[int], linear: bool) -> float | None:
    n = matrix.sum()
    observed = matrix / n
    expected = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)) / (n * n)
    values = np.asarray(labels, dtype=np.float64)
    # Disagreement weights: 0/1 for plain kappa; the distance between grades for linear weights (the
    # common scale factor cancels in the ratio).
    if linear:
        weights = np.abs(values[:, None] - values[None, :])
    else:
        weights = (values[:, None] != values[None, :]).astype(np.float64)
    chance = float((weights * expected).sum())
    if chance == 0.0:
        return None  # both judges gave every pair one and the same grade: agreement by chance is total
    return 1.0 - float((weights * observed).sum()) / chance


def cohen_kappa(
    first: Sequence[int],
    second: Sequence[int],
    labels: Sequence[int],
    *,
    weights: Literal["linear"] | None = None,
) -> float | None:
    """Cohen's kappa of two judges' grades of the same items, plain or linearly weighted.

    ``labels`` is the grade scale (all possible grades, so an unused grade still counts for the weights).
    Linear weights penalise a disagreement by the distance between the grades, as
    ``sklearn.metrics.cohen_kappa_score(first, second, labels=labels, weights="linear")`` does for labels
    ``0..N``. Returns None when kappa is undefined: both judges gave every item one and the same grade.
    Raises ``ValueError`` for empty or unequal-length input, or a grade outside ``labels``.
    """
    if len(first) != len(second):
        raise ValueError(f"the judges graded different numbers of items: {len(first)} and {len(second)}")
    if not first:
        raise ValueError("no items graded by both judges")
    return _kappa(_confusion(first, second, labels), labels, weights == "linear")


@dataclass(frozen=True, slots=True)
class Agreement:
    labels: tuple[int, ...]
    #: confusion matrix: rows are the first judge's grades, columns the second's, in ``labels`` order
    matrix: tuple[tuple[int, ...], ...]
    #: graded pairs only one of the judges graded
    only_first: int
    only_second: int
    percent: float
    kappa: float | None
    weighted_kappa: float | None
    #: pairs graded differently, (query id, document id, first grade, second grade), largest gap first
    disagreements: tuple[tuple[str, str, int, int], ...]

    @property
    def n(self) -> int:
        return sum(map(sum, self.matrix))

    @property
    def gate(self) -> tuple[str, float | None]:
        """The kappa a threshold applies to: weighted on a graded scale (three or more grades), where a 0/1
        disagreement should cost less than 0/2; plain on a binary one (where the two are equal anyway)."""
        if len(self.labels) > 2:
            return "weighted kappa", self.weighted_kappa
        return "kappa", self.kappa


def agreement(
    first: Mapping[Pair, int], second: Mapping[Pair, int], *, max_grade: int = DEFAULT_MAX_GRADE
) -> Agreement:
    """Agreement of two judges on the pairs both graded (matched by query id and document id).

    Raises ``ValueError`` when no pair was graded by both.
    """
    _check_max_grade(max_grade)
    common = [pair for pair in first if pair in second]
    if not common:
        raise ValueError("no pair was graded by both judges (pairs are matched by query_id and doc_id)")
    labels = tuple(range(max_grade + 1))
    a = [first[pair] for pair in common]
    b = [second[pair] for pair in common]
    matrix = _confusion(a, b, labels)
    differ = sorted(
        ((pair[0], pair[1], first[pair], second[pair]) for pair in common if first[pair] != second[pair]),
        key=lambda d: (-abs(d[2] - d[3]), d[0], d[1]),
    )
    return Agreement(
        labels=labels,
        matrix=tuple(tuple(int(v) for v in row) for row in matrix.tolist()),
        only_first=len(first) - len(common),
        only_second=len(second) - len(common),
        percent=float(np.trace(matrix)) / len(common),
        kappa=_kappa(matrix, labels, linear=False),
        weighted_kappa=_kappa(matrix, labels, linear=True),
        disagreements=tuple(differ),
    )


def _kappa_text(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def agreement_lines(result: Agreement, first: str, second: str, *, listed: int = 0) -> list[str]:
    """The agreement summary, the confusion matrix (rows ``first``, columns ``second``) and up to ``listed``
    disagreements, largest gap first."""
    lines = [
        f"pairs graded by both: {result.n} (only {first}: {result.only_first}, only {second}: "
        f"{result.only_second})",
        f"percent agreement: {100 * result.percent:.1f}%",
        f"Cohen's kappa: {_kappa_text(result.kappa)}",
        f"linearly weighted kappa: {_kappa_text(result.weighted_kappa)}",
    ]
    if result.kappa is None:
        grade = next(label for label, row in zip(result.labels, result.matrix, strict=True) if any(row))
        lines.append(
            f"kappa is undefined: both judges graded every pair {grade}; judge a sample with varied grades"
        )
    header = [f"{first} \\ {second}", *map(str, result.labels), "total"]
    rows = [
        [str(label), *map(str, row), str(sum(row))]
        for label, row in zip(result.labels, result.matrix, strict=True)
    ]
    columns = [sum(column) for column in zip(*result.matrix, strict=True)]
    rows.append(["total", *map(str, columns), str(result.n)])
    lines += ["", *table(header, rows)]
    if listed and result.disagreements:
        shown = result.disagreements[:listed]
        lines += ["", f"disagreements ({len(shown)} of {len(result.disagreements)}):"]
        lines += table(
            ["query", "document", first, second], [[q, d, str(a), str(b)] for q, d, a, b in shown], names=2
        )
    return lines


# ---------------------------------------------------------------------------------------------- coverage


@dataclass(frozen=True, slots=True)
class CoverageRow:
    stratum: str
    arm: str
    k: int
    #: queries in the stratum
    n: int
    #: mean judged@k: the share of the arm's top k that carries a judgment (any grade)
    judged: float


def coverage(golden: GoldenSet, rankings: Rankings, *, k: int) -> tuple[CoverageRow, ...]:
    """Each arm's mean judged@k per stratum (strata in golden order, arms in the given order).

    Every query of the stratum counts, those without a relevant judgment too: they are the ones a missing
    pool hurts most. Raises ``ValueError`` as `pool_from_rankings` does for bad rankings.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    _check_rankings(golden, rankings, None)
    query_ids = [query.id for query in golden.queries]
    position = {qid: i for i, qid in enumerate(query_ids)}
    judged: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        # judged@k is defined for queries without a relevant document; the warning is about other metrics.
        warnings.simplefilter("ignore", NoRelevantDocumentsWarning)
        for arm in rankings:
            judged[arm] = per_query(
                f"judged@{k}", rankings[arm], golden.qrels, query_ids, relevance_level=golden.relevance_level
            )
    rows = []
    for stratum in golden.strata():
        index = [position[qid] for qid in stratum.query_ids]
        for arm, values in judged.items():
            rows.append(CoverageRow(stratum.name, arm, k, len(index), float(np.mean(values[index]))))
    return tuple(rows)


def coverage_lines(rows: Sequence[CoverageRow]) -> list[str]:
    """A table: one row per stratum, one judged@k column per arm."""
    arms = list(dict.fromkeys(row.arm for row in rows))
    strata: dict[str, dict[str, CoverageRow]] = {}
    for row in rows:
        strata.setdefault(row.stratum, {})[row.arm] = row
    k = rows[0].k
    cells = [
        [name, str(next(iter(by_arm.values())).n), *(_percent(by_arm[arm].judged) for arm in arms)]
        for name, by_arm in strata.items()
    ]
    return table(["stratum", "n", *(f"{arm} judged@{k}" for arm in arms)], cells)


def pool_command(golden_path: str, report_path: str | None) -> str:
    """The command that pools a run's arms into a sheet for the judges: from its JSON report when there is
    one, else a rerun with the plugin's ``--embeval-pool``."""
    if report_path is None:
        return "pytest --embeval --embeval-pool DIR (writes the sheet into DIR)"
    return f"embeval pool {golden_path} --from-report {report_path} --out SHEET.csv"


def coverage_warnings(
    rows: Sequence[CoverageRow],
    *,
    golden_path: str,
    report_path: str | None,
    threshold: float = DEFAULT_COVERAGE_GAP,
) -> list[str]:
    """One warning per arm whose judged@k trails the best-judged arm by more than ``threshold`` (a share of
    k, 0.10 = 10 points) in some stratum: its results were not pooled, so its score is biased down (an
    unjudged document counts as non-relevant). The warning lists the strata and the commands that fix it
    (`pool_command`, then ``embeval merge``).
    """
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold!r}")
    strata: dict[str, list[CoverageRow]] = {}
    for row in rows:
        strata.setdefault(row.stratum, []).append(row)
    behind: dict[str, list[str]] = {}
    for name, arms in strata.items():
        best = max(arms, key=lambda row: row.judged)
        for row in arms:
            if best.judged - row.judged > threshold + _EPSILON:
                behind.setdefault(row.arm, []).append(
                    f"{name}: {_percent(row.judged)} vs {best.arm} {_percent(best.judged)}"
                )
    fix = (
        f"{pool_command(golden_path, report_path)}, grade the sheet, "
        f"then embeval merge {golden_path} SHEET.csv"
    )
    return [
        f"{arm}'s top {rows[0].k} is less judged than another arm's by more than "
        f"{100 * threshold:.0f} points ({'; '.join(where)}): {arm} has not been pooled, so its scores "
        f"are biased down. Fix: {fix}"
        for arm, where in behind.items()
    ]


# -------------------------------------------------------------------------------------------------- plan


@dataclass(frozen=True, slots=True)
class PlanRow:
    stratum: str
    #: queries with at least one relevant judgment (the others are excluded from the comparison)
    n: int
    sd: float
    #: whether ``sd`` was observed in a run (else assumed)
    observed: bool
    #: minimum detectable effect at the declared confidence and the power; None with no query
    mde: float | None
    #: queries needed to detect a difference of ``tie_margin``; None when the margin is 0
    needed: int | None

    @property
    def to_add(self) -> int | None:
        return None if self.needed is None else max(0, self.needed - self.n)


def observed_sd(record: Mapping[str, Any]) -> dict[str, float]:
    """Stratum -> paired standard deviation of the primary metric, from a golden-set entry of the report
    (strata whose sd is unknown, n < 2, are left out)."""
    strata = record.get("strata")
    if not isinstance(strata, list):
        return {}
    return {
        str(s["stratum"]): float(s["sd"])
        for s in strata
        if isinstance(s, dict) and isinstance(s.get("sd"), (int, float)) and math.isfinite(s["sd"])
    }


def plan(
    golden: GoldenSet,
    *,
    sd: float = DEFAULT_SD,
    observed: Mapping[str, float] | None = None,
    power: float = DEFAULT_POWER,
) -> tuple[PlanRow, ...]:
    """Per stratum: n, the minimum detectable effect and the queries needed to resolve ``tie_margin``, at
    the golden set's confidence (alpha = 1 - confidence) and ``power``. A stratum's sd is the ``observed``
    one when given (see `observed_sd`), else ``sd``."""
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or not 0 <= sd < math.inf:
        raise ValueError(f"sd must be a finite number >= 0, got {sd!r}")
    alpha = 1.0 - golden.confidence
    level = golden.relevance_level
    relevant = {qid for qid, docs in golden.qrels.items() if any(grade >= level for grade in docs.values())}
    measured = observed or {}
    rows = []
    for stratum in golden.strata():
        n = sum(1 for qid in stratum.query_ids if qid in relevant)
        spread = measured.get(stratum.name, sd)
        rows.append(
            PlanRow(
                stratum=stratum.name,
                n=n,
                sd=spread,
                observed=stratum.name in measured,
                mde=minimum_detectable_effect(spread, n, alpha=alpha, power=power) if n else None,
                needed=paired_n(golden.tie_margin, spread, alpha=alpha, power=power)
                if golden.tie_margin
                else None,
            )
        )
    return tuple(rows)


def plan_lines(golden: GoldenSet, rows: Sequence[PlanRow], *, power: float = DEFAULT_POWER) -> list[str]:
    lines = [
        f"{golden.name}: {golden.metric}, tie margin {golden.tie_margin}, "
        f"confidence {golden.confidence:.0%}, power {power:.0%}, min_queries {golden.min_queries}"
    ]
    cells = []
    for row in rows:
        cells.append(
            [
                row.stratum,
                str(row.n),
                f"{row.sd:.3f} {'observed' if row.observed else 'assumed'}",
                "—" if row.mde is None else f"{row.mde:.3f}",
                "—" if row.needed is None else str(row.needed),
                "—" if row.to_add is None else str(row.to_add),
            ]
        )
    lines += table(["stratum", "n", "sd", "MDE", "needed", "to add"], cells)
    lines.append(
        "MDE: the smallest true difference detected with that power; needed: queries with a relevant "
        "judgment to detect a difference of the tie margin."
    )
    if golden.tie_margin == 0:
        lines.append("tie_margin is 0: there is no margin to resolve, so no query count is given.")
    if any(row.n < golden.min_queries for row in rows):
        lines.append(f"strata with n < {golden.min_queries} (min_queries) always end as TIE (below floor).")
    return lines
