"""A golden set's documents file (JSONL or TSV), and what every data file reader shares: the `GoldenError`,
the `Document` and `Query` records, reading a file's text (`read_text`), its lines, its format, JSON records,
TSV rows and ids. The queries files are read by `query_files`, the judgments' by `qrels_files`.

Every problem is a `GoldenError`, one line ``<path>[:<line>]: <key>: <problem>`` naming the data file, the
line and the field or column. The YAML schema (`golden/loader.py`) decides which files to read and in which
format; this module reads them. Formats are detected from the first non-blank line unless declared:
``jsonl`` (one JSON object per line: ``{"_id": ..., "text": ..., "title": ...}``) when the line starts with
``{``; ``tsv`` when it holds a tab. A TSV file is ``id<TAB>text`` (documents may add ``<TAB>title``), or has a
header row naming its columns (``id``/``_id``, ``text``, ``title``; other columns of a query file are fields
usable as strata).

Blank lines are skipped; a UTF-8 byte order mark is accepted; lines may end in CRLF. A file whose name ends in
``.gz``, ``.bz2``, ``.xz`` or ``.zst`` is decompressed first (`files.compressed`): line numbers are those of
the decompressed text.
"""

from __future__ import annotations

import itertools
import json
import json.scanner
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from pytest_embeval.files.compressed import (
    COMPRESSIONS,
    CompressedFileError,
    compression_of,
    compression_of_bytes,
    read_bytes,
)
from pytest_embeval.files.unicode import unicode_problem
from pytest_embeval.golden.filters import FieldReader, Filter

__all__ = [
    "TEXT_FORMATS",
    "Document",
    "GoldenError",
    "Query",
    "check_unique_id",
    "checked_id",
    "first_line",
    "first_repeated",
    "id_problem",
    "is_integer",
    "is_tsv_header",
    "json_id",
    "json_lines",
    "json_object",
    "json_string",
    "json_text",
    "non_blank_lines",
    "read_documents",
    "read_text",
    "record_id",
    "text_format",
    "tsv_rows",
]

#: Formats of document and query files.
TEXT_FORMATS = ("jsonl", "tsv")

_ACCEPTED_TEXT = 'JSONL (one {{"_id": ..., "text": ...}} object per line) or TSV ({columns})'
#: Header names of the id column of a TSV file (compared in lower case).
_ID_COLUMNS = frozenset({"_id", "id", "docid", "doc_id", "pid", "qid", "query_id", "query-id", "corpus-id"})

_WHITESPACE = re.compile(r"\s")
_NEWLINES = re.compile(r"\s*[\r\n]+\s*")


def _one_line(text: str) -> str:
    return _NEWLINES.sub(" ", text)


class GoldenError(Exception):
    """A malformed golden set. ``str(error)`` is one line: ``<path>[:<line>]: <key>: <problem>``."""

    def __init__(self, path: str | PathLike[str], key: str | None, line: int | None, problem: str) -> None:
        self.path = Path(path)
        self.key = None if key is None else _one_line(key)
        self.line = line
        self.problem = _one_line(problem)
        super().__init__(str(self))

    def __str__(self) -> str:
        location = str(self.path) if self.line is None else f"{self.path}:{self.line}"
        return ": ".join(part for part in (location, self.key, self.problem) if part is not None)

    def __reduce__(self) -> tuple[type[GoldenError], tuple[Path, str | None, int | None, str]]:
        # Exception pickles its args, which here are the formatted message, not the constructor's arguments.
        return GoldenError, (self.path, self.key, self.line, self.problem)


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str
    title: str = ""
    #: the record's other fields, as filters and folding read them (see `filters.FieldReader`)
    fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def embed_text(self) -> str:
        """Exactly the text both arms embed for this document."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    @property
    def has_text(self) -> bool:
        """False for a document whose title and text are both empty or whitespace: it cannot be embedded."""
        # Without strip()'s copy of every text: 200,000 documents are read once per run.
        text, title = self.text, self.title
        return (bool(text) and not text.isspace()) or (bool(title) and not title.isspace())


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    #: stratum field -> value (always strings), for the fields named in the golden set's ``strata``
    fields: Mapping[str, str] = field(default_factory=dict)
    #: the query's own filters (see `filters`): field -> values a document's field must hold one of
    filters: Filter = field(default_factory=dict)
    #: how often the query occurs in the traffic (e.g. its count in the log it came from); None: not given
    frequency: float | None = None
    #: the probability the sample it belongs to drew it with (``embeval sample``'s ``inclusion``, in (0, 1]);
    #: None: not drawn by a known design, it stands for itself
    inclusion: float | None = None

    @property
    def traffic_weight(self) -> float | None:
        """The traffic the query stands for: its frequency over its inclusion probability (the Hájek
        weight, so a sample's weighted mean estimates the traffic-weighted mean of the population it was
        drawn from), its frequency when it has no inclusion; None without a frequency."""
        if self.frequency is None:
            return None
        return self.frequency if self.inclusion is None else self.frequency / self.inclusion


# ----------------------------------------------------------------------------------------------- helpers


def read_text(path: Path) -> str:
    """The file's text (UTF-8), decompressed first when its name says it is compressed (`compressed`): line
    numbers and offsets in errors are those of the decompressed text."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        raise GoldenError(path, None, None, f"file not found: {path.resolve()}") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise GoldenError(path, None, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except CompressedFileError as exc:
        raise GoldenError(path, None, None, str(exc)) from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        problem = "is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"
        raise GoldenError(path, None, 1, problem)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        compression = compression_of_bytes(data) if compression_of(path) is None else None
        if compression is not None:
            name = COMPRESSIONS[compression]
            problem = f"is {name}-compressed: name it {path.name}{compression} to have it decompressed"
            raise GoldenError(path, None, None, problem) from None
        line = data.count(b"\n", 0, exc.start) + 1
        problem = f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        raise GoldenError(path, None, line, problem) from None
    return text.removeprefix("\ufeff")


def text_lines(text: str) -> Iterator[str]:
    """``text.split("\\n")``, a line at a time: a corpus's lines are parsed and dropped as they come, not held
    as a list beside the text. Loading a golden set of 200,000 documents (a 100 MB corpus) peaked at 277 MiB
    this way against 386 MiB with the list, in the same time."""
    start, end = 0, text.find("\n")
    while end != -1:
        yield text[start:end]
        start, end = end + 1, text.find("\n", end + 1)
    yield text[start:]


def non_blank_lines(text: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their numbers, without a trailing CR."""
    for number, line in enumerate(text_lines(text), start=1):
        if line and not line.isspace():
            yield number, line.removesuffix("\r")


def first_line(text: str) -> tuple[int, str] | None:
    """The first non-blank line and its number, found without splitting the whole text."""
    return next(non_blank_lines(text), None)


def id_problem(value: str) -> str | None:
    if not value:
        return "must not be empty"
    if _WHITESPACE.search(value):
        return f"{value!r} contains whitespace (ids must be single tokens, as in TREC run files)"
    return None


def checked_id(path: Path, key: str, line: int, value: str) -> str:
    problem = id_problem(value)
    if problem is not None:
        raise GoldenError(path, key, line, problem)
    return value


def check_unique_id(path: Path, kind: str, item_id: str, line: int, first_line: dict[str, int]) -> None:
    if item_id in first_line:
        problem = f"duplicate {kind} id {item_id!r} (first on line {first_line[item_id]})"
        raise GoldenError(path, "_id", line, problem)
    first_line[item_id] = line


def text_format(path: Path, text: str, declared: str | None, columns: str) -> str:
    if declared is not None:
        return declared
    first = first_line(text)
    if first is None or first[1].lstrip().startswith("{"):
        return "jsonl"
    if "\t" in first[1]:
        return "tsv"
    problem = (
        f"unsupported format: expected {_ACCEPTED_TEXT.format(columns=columns)}; "
        "declare it as {path: FILE, format: jsonl|tsv}"
    )
    raise GoldenError(path, "format", first[0], problem)


# ------------------------------------------------------------------------------------------------- JSONL


def json_lines(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(text_lines(text), start=1):
        if line and not line.isspace():
            yield number, _json_record(path, number, line)


#: json.loads's own scanner (the C one), called directly on a line: the same object json.loads returns for a
#: line with no whitespace around its value, in half of json.loads's time per line of a corpus (the wrapper
#: around the scanner costs more than the scanning).
_SCAN_ONCE = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _json_record(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record, end = _SCAN_ONCE(line, 0)
    except (StopIteration, ValueError):  # not a value at column 1, or not valid: json.loads says which
        end = -1
    if end != len(line) or type(record) is not dict:
        # Whitespace around the value, or anything json.loads refuses or the caller must: the exact message.
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldenError(path, None, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise GoldenError(path, None, number, f"invalid JSON: {exc}") from None
        if type(record) is not dict:
            raise GoldenError(path, None, number, f"expected a JSON object, got {json_text(record)}")
    # Only a \u escape makes a surrogate (UTF-8 cannot): the one text check, on the lines that have one.
    if "\\u" in line:
        problem = unicode_problem(record)
        if problem is not None:
            raise GoldenError(path, None, number, problem)
    return record


def json_object(path: Path, number: int, line: str) -> dict[str, Any]:
    """One JSONL line as the readers parse it (fast for a line that is one object), `GoldenError` for one
    that is not a JSON object: for passes over files too large to read whole (a query log, a corpus)."""
    return _json_record(path, number, line)


def record_id(path: Path, number: int, line: str) -> str:
    """The ``_id`` of one JSONL line of documents or queries, checked as the readers check it."""
    return json_id(path, number, _json_record(path, number, line))


def json_text(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return json.dumps(value, ensure_ascii=False)


def json_id(path: Path, line: int, record: Mapping[str, Any]) -> str:
    if "_id" not in record:
        raise GoldenError(path, "_id", line, "missing required key")
    value = record["_id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise GoldenError(path, "_id", line, f"must be a string, got {json_text(value)}")
    return checked_id(path, "_id", line, str(value))


def json_string(path: Path, line: int, record: Mapping[str, Any], key: str) -> str:
    if key not in record:
        raise GoldenError(path, key, line, "missing required key")
    value = record[key]
    if not isinstance(value, str):
        raise GoldenError(path, key, line, f"must be a string, got {json_text(value)}")
    return value


# --------------------------------------------------------------------------------------------------- TSV


def first_repeated(names: Iterable[str]) -> str | None:
    """The first name that an earlier one repeats (a header's column named twice), or None."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def is_tsv_header(line: str) -> bool:
    """Whether a TSV file's first line is a header row naming its columns (an id column, then ``text``)."""
    names = [cell.strip().lower() for cell in line.split("\t")]
    return names[0] in _ID_COLUMNS and "text" in names[1:]


@dataclass(frozen=True, slots=True)
class _Columns:
    """Where a TSV file keeps each field; ``fields`` are the other named columns (header files only: a
    query file's strata, a corpus file's fields for filters and folding)."""

    id: int
    text: int
    title: int | None
    fields: Mapping[str, int]
    #: columns every row must have (None: a headerless file of documents, 2 or 3)
    width: int | None


def tsv_rows(path: Path, text: str, *, documents: bool) -> Iterator[tuple[int, list[str], _Columns]]:
    lines = non_blank_lines(text)
    first = next(lines, None)
    if first is None:
        return
    cells = first[1].split("\t")
    names = [cell.strip().lower() for cell in cells]
    if is_tsv_header(first[1]):
        named = {name: i for i, name in enumerate(names)}
        duplicate = first_repeated(names)
        if duplicate is not None:
            raise GoldenError(path, "header", first[0], f"duplicate column {duplicate!r}")
        title = named.get("title")
        others = {cells[i].strip(): i for i, name in enumerate(names) if i and name not in ("text", "title")}
        columns = _Columns(0, named["text"], title, others, len(cells))
        rows: Iterator[tuple[int, str]] = lines
        header = True
    else:
        header = False
        columns = _Columns(0, 1, 2 if documents else None, {}, None if documents else 2)
        rows = itertools.chain([first], lines)  # one line at a time, as `text_lines` gives them
    if columns.width is not None:
        wanted = f"{columns.width} tab-separated columns ({'as the header' if header else 'id<TAB>text'})"
    else:
        wanted = "2 or 3 tab-separated columns (id<TAB>text[<TAB>title])"
    for number, line in rows:
        row = line.split("\t")
        if len(row) != columns.width if columns.width is not None else len(row) not in (2, 3):
            raise GoldenError(path, None, number, f"expected {wanted}, got {len(row)}")
        yield number, row, columns


# ----------------------------------------------------------------------------------------- the readers


def read_documents(path: Path, declared: str | None = None, required: Sequence[str] = ()) -> list[Document]:
    """Every document of a corpus file, those without text included (see `Document.has_text`), with its
    fields; each must have one value in every ``required`` field (the fold field)."""
    text = read_text(path)
    documents: list[Document] = []
    first_line: dict[str, int] = {}
    reader = FieldReader()
    if text_format(path, text, declared, "id<TAB>text[<TAB>title]") == "jsonl":
        # The common case is checked inline (this loop runs once per document of corpora of millions); the
        # helpers, called otherwise, raise the error or accept the rarer forms (an integer id).
        for line, raw in enumerate(text_lines(text), start=1):
            if not raw or raw.isspace():
                continue
            record = _json_record(path, line, raw)
            doc_id = record.get("_id")
            if type(doc_id) is not str or not doc_id or _WHITESPACE.search(doc_id):
                doc_id = json_id(path, line, record)
            if doc_id in first_line:
                check_unique_id(path, "document", doc_id, line, first_line)
            first_line[doc_id] = line
            body = record.get("text")
            if type(body) is not str:
                body = json_string(path, line, record, "text")
            title = record.get("title")
            if title is None:
                title = ""
            elif type(title) is not str:
                title = json_string(path, line, record, "title")
            fields = _required(path, line, doc_id, reader.read(record), required)
            documents.append(Document(doc_id, body, title, fields))
        return documents
    for line, row, columns in tsv_rows(path, text, documents=True):
        doc_id = checked_id(path, "id", line, row[columns.id])
        check_unique_id(path, "document", doc_id, line, first_line)
        title = row[columns.title] if columns.title is not None and columns.title < len(row) else ""
        fields = reader.read({name: row[i] for name, i in columns.fields.items()})
        fields = _required(path, line, doc_id, fields, required)
        documents.append(Document(doc_id, row[columns.text], title, fields))
    return documents


def _required(
    path: Path, line: int, doc_id: str, fields: Mapping[str, tuple[str, ...]], required: Sequence[str]
) -> Mapping[str, tuple[str, ...]]:
    for name in required:
        if len(fields.get(name, ())) != 1:
            problem = f"document {doc_id!r} needs one string or number in field {name!r} (fold.field)"
            raise GoldenError(path, name, line, problem)
    return fields


def is_integer(text: str) -> bool:
    """Whether ``text`` is an optional sign and ASCII digits (``[+-]?[0-9]+``), without a regular expression:
    a qrels file is checked once per line."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    return digits.isdigit() and digits.isascii()
