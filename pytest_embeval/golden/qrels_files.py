"""A golden set's judgments files: BEIR TSV (a header naming the query, document and grade columns) or TREC
qrels (``qid iter docid rel``, whitespace-separated, as trec_eval reads them).

The format is detected from the first non-blank line unless declared (``format: beir|trec``):

* ``beir`` when the line is a tab-separated header naming the three columns: BEIR's own
  ``query-id<TAB>corpus-id<TAB>score``, or the common spellings of each (`HEADER_NAMES`: ``qid``, ``docid``,
  ``rel``, ``query_id``, ``doc_id``, ``relevance``, ...), in any order. A header of other names is read with a
  ``columns: {query: NAME, document: NAME, grade: NAME}`` mapping (`QrelsColumns`), which the error for such
  a header suggests, written with the file's own names;
* ``trec`` when it has four whitespace-separated columns. A TREC file may start with a header row (a first
  line whose fourth column is not an integer).

A header-only or empty file is ``beir`` with no judgment (a golden set before its first judging session). A
negative grade is a judgment of "not relevant" (TREC's convention, e.g. Cranfield's -1) and is kept as 0,
which is how trec_eval scores it. Every problem is a `GoldenError` naming the file, the line and the column.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

import yaml

from pytest_embeval.golden.data_files import (
    GoldenError,
    first_line,
    first_repeated,
    is_integer,
    non_blank_lines,
    read_text,
)
from pytest_embeval.golden.schema import GoldenSet

__all__ = [
    "COLUMN_ROLES",
    "HEADER_NAMES",
    "PROVENANCE_SUFFIX",
    "QRELS_FORMATS",
    "QRELS_HEADER",
    "QrelsColumns",
    "QrelsRead",
    "detect_qrels_format",
    "judged_document_ids_in",
    "provenance_path",
    "read_qrels",
    "unjudged_problem",
    "yaml_scalar",
]

QRELS_HEADER = "query-id\tcorpus-id\tscore"
QRELS_FORMATS = ("beir", "trec")
#: The sidecar beside a qrels file where each judgment's source is recorded (`judging.provenance`): an
#: input of every run and command that reads the golden set, named here so that `golden.inputs` knows it.
PROVENANCE_SUFFIX = ".provenance.jsonl"
#: The keys of a ``columns:`` mapping, in the order of BEIR's header.
COLUMN_ROLES = ("query", "document", "grade")
#: Header names read as each role without a ``columns:`` mapping (compared in lower case).
HEADER_NAMES: Mapping[str, frozenset[str]] = {
    "query": frozenset({"query-id", "qid", "query_id", "queryid"}),
    "document": frozenset({"corpus-id", "docid", "doc_id", "doc-id", "corpus_id", "pid"}),
    "grade": frozenset({"score", "rel", "relevance", "grade", "label"}),
}

_ACCEPTED = (
    f"BEIR TSV (a header such as {QRELS_HEADER.replace(chr(9), '<TAB>')!r}) or TREC qrels "
    "('qid iter docid rel', whitespace-separated)"
)


@dataclass(frozen=True, slots=True)
class QrelsColumns:
    """The header names of a TSV qrels file's query, document and grade columns (``columns:``)."""

    query: str
    document: str
    grade: str

    def names(self) -> tuple[str, str, str]:
        return self.query, self.document, self.grade


@dataclass(frozen=True, slots=True)
class QrelsRead:
    """What reading a qrels file found: its format, its judgment rows, and whether it had a header."""

    format: str
    rows: int
    header: bool


def provenance_path(qrels: Path) -> Path:
    """The sidecar of a qrels file: ``qrels.tsv`` -> ``qrels.provenance.jsonl``."""
    return qrels.with_name(qrels.stem + PROVENANCE_SUFFIX)


def detect_qrels_format(path: Path, text: str) -> str:
    """``beir`` or ``trec``, from the first non-blank line (a header-only or empty file is ``beir``)."""
    first = first_line(text)
    if first is None or ("\t" in first[1] and len(first[1].split("\t")) == 3):
        return "beir"  # the header is read (or refused, with the fix) by `_header_columns`
    if len(first[1].split()) == 4:
        return "trec"
    cells = first[1].split()
    fix = (
        "; a three-column file must be tab-separated, with a header line naming its columns, such as "
        f"{QRELS_HEADER.replace(chr(9), '<TAB>')!r}"
        if len(cells) == 3
        else ""
    )
    raise GoldenError(
        path, "format", first[0], f"unsupported format: expected {_ACCEPTED}, got {first[1]!r}{fix}"
    )


def read_qrels(
    path: Path,
    qrels: dict[str, dict[str, int]],
    document_ids: AbstractSet[str],
    declared: str | None = None,
    columns: QrelsColumns | None = None,
) -> QrelsRead:
    """Add a qrels file's judgments to ``qrels`` (keyed by every known query); returns what it found."""
    text = read_text(path)
    kind = declared or ("beir" if columns is not None else detect_qrels_format(path, text))
    rows, keys = _qrels_rows(path, text, kind, columns)
    count = 0
    for number, query_id, doc_id, score in rows:
        judged = qrels.get(query_id)
        if judged is None:
            raise GoldenError(path, keys[0], number, f"unknown query {query_id!r} (not in the queries)")
        if doc_id not in document_ids:
            raise GoldenError(path, keys[1], number, f"unknown document {doc_id!r} (not in the corpus)")
        if not is_integer(score):
            raise GoldenError(path, keys[2], number, f"{score!r} is not an integer grade")
        if doc_id in judged:  # each query's judgments start empty: judged before in this file
            again, _ = _qrels_rows(path, text, kind, columns)
            earlier = next(n for n, q, d, _ in again if (q, d) == (query_id, doc_id))
            problem = f"duplicate judgment of query {query_id!r} and document {doc_id!r}"
            raise GoldenError(path, keys[1], number, f"{problem} (first on line {earlier})")
        judged[doc_id] = max(int(score), 0)
        count += 1
    return QrelsRead(kind, count, header=kind == "beir" and first_line(text) is not None)


def judged_document_ids_in(path: Path) -> frozenset[str]:
    """Every document a qrels file (BEIR or TREC) judges, whatever its grade; `GoldenError` for a file the
    golden loader would refuse to read as qrels."""
    text = read_text(path)
    rows, _ = _qrels_rows(path, text, detect_qrels_format(path, text), None)
    return frozenset(doc_id for _, _, doc_id, _ in rows)


Rows = Iterator[tuple[int, str, str, str]]


def _qrels_rows(path: Path, text: str, kind: str, columns: QrelsColumns | None) -> tuple[Rows, Sequence[str]]:
    """Each judgment line of a qrels file as (line number, query id, document id, grade text), and the names
    errors give its query, document and grade columns; the BEIR header is read first (`GoldenError` for a
    header that names no column of a role) and a TREC file's header row is skipped."""
    if kind == "beir":
        lines = non_blank_lines(text)
        first = next(lines, None)
        if first is None:
            return iter(()), ("query-id", "corpus-id", "score")
        header = [cell.strip() for cell in first[1].split("\t")]
        positions = _header_columns(path, first[0], header, columns)
        return _tsv_rows(path, lines, header, positions), [header[i] for i in positions]
    if columns is not None:
        raise GoldenError(path, "columns", None, "only applies to a TSV file with a header (format beir)")
    return _trec_rows(path, non_blank_lines(text)), ("qid", "docid", "rel")


def _header_columns(path: Path, line: int, header: list[str], columns: QrelsColumns | None) -> list[int]:
    """Where the query, document and grade columns are in a BEIR file's header."""
    lowered = [cell.lower() for cell in header]
    duplicate = first_repeated(lowered)
    if duplicate is not None:
        raise GoldenError(path, "header", line, f"duplicate column {duplicate!r}")
    if columns is not None:
        missing = [name for name in columns.names() if name.lower() not in lowered]
        if missing:
            problem = f"no column {missing[0]!r} (the file's columns: {', '.join(header)}); see 'columns:'"
            raise GoldenError(path, "header", line, problem)
        return [lowered.index(name.lower()) for name in columns.names()]
    found = [[i for i, cell in enumerate(lowered) if cell in HEADER_NAMES[role]] for role in COLUMN_ROLES]
    if all(len(where) == 1 for where in found):
        return [where[0] for where in found]
    shown = "\t".join(header)
    if len(header) == 3 and is_integer(header[2]):
        problem = f"expected a header line naming the columns, such as {QRELS_HEADER!r}, got {shown!r}"
    else:
        fix = ""
        if len(header) >= 3:
            # The columns recognised keep their role; the others take the roles left, in the file's order.
            chosen = {
                role: where[0] for role, where in zip(COLUMN_ROLES, found, strict=True) if len(where) == 1
            }
            rest = [i for i in range(len(header)) if i not in chosen.values()]
            mapping = ", ".join(
                f"{role}: {yaml_scalar(header[chosen[role] if role in chosen else rest.pop(0)])}"
                for role in COLUMN_ROLES
            )
            fix = f"; name them under 'qrels:' with {{path: FILE, columns: {{{mapping}}}}}"
        problem = f"expected {QRELS_HEADER!r} or another spelling of its columns, got {shown!r}{fix}"
    raise GoldenError(path, "header", line, problem)


def yaml_scalar(text: str) -> str:
    """``text`` as a YAML flow mapping's value that reads back as it: bare when it can be (``qid``), else
    single-quoted (``'#query'``, ``'doc: id'``, ``'[rel]'``, ``'true'``), else double-quoted with escapes
    (a control character): a suggested mapping pastes as is."""
    for style in (None, "'", '"'):
        dumped: str = yaml.safe_dump(text, default_style=style, width=math.inf, allow_unicode=True)
        written = dumped.removesuffix("...\n").rstrip("\n")
        try:
            if yaml.safe_load(f"{{key: {written}}}") == {"key": text}:
                break
        except yaml.YAMLError:
            continue
    return written  # double quotes, which hold any text


def _tsv_rows(path: Path, lines: Iterator[tuple[int, str]], header: list[str], positions: list[int]) -> Rows:
    query, document, grade = positions
    width = len(header)
    wanted = f"{width} tab-separated columns ({', '.join(header)})"
    for number, line in lines:
        cells = line.split("\t")
        if len(cells) != width:
            raise GoldenError(path, None, number, f"expected {wanted}, got {len(cells)}")
        yield number, cells[query], cells[document], cells[grade]


def _trec_rows(path: Path, lines: Iterator[tuple[int, str]]) -> Rows:
    first_row = True
    for number, line in lines:
        columns = line.split()
        if len(columns) != 4:
            problem = f"expected 4 whitespace-separated columns (qid iter docid rel), got {len(columns)}"
            raise GoldenError(path, None, number, problem)
        if first_row and not is_integer(columns[3]):
            first_row = False
            continue  # a header row
        first_row = False
        yield number, columns[0], columns[2], columns[3]


def unjudged_problem(golden: GoldenSet) -> GoldenError | None:
    """The error for a golden set in which no query has a relevant judgment (a grade at the golden set's
    ``relevance_level``), naming where the judgments are and what they hold; None when some query has one.

    Such a set can decide nothing: every query scores NaN in both arms. It is still a golden set, before its
    first judging session, so only the plugin refuses it, and not when its run pools for judges.
    """
    level = golden.relevance_level
    if any(grade >= level for judged in golden.qrels.values() for grade in judged.values()):
        return None
    rows = sum(len(judged) for judged in golden.qrels.values())
    if golden.qrels_path is None:
        where, key, found = golden.path, "queries", f"{rows} judgments, none with grade >= {level}"
    else:
        where, key = golden.qrels_path, None
        if rows:
            found = f"{rows} rows, none with grade >= {level}"
        elif golden.qrels_format == "beir" and first_line(read_text(golden.qrels_path)) is not None:
            found = "its header only"
        else:
            found = "0 rows (the file is empty)"
    return GoldenError(where, key, None, f"no query has a relevant judgment (grade >= {level}): {found}")
