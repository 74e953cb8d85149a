"""A corpus sample drawn with the columnar engine (`files.columnar`): JSONL (compressed or not) or Parquet,
one file or many, the same sample `corpus_draw.draw_corpus` draws from the same JSONL and seed.

The engine reads only the documents' ids, in one pass: it counts the documents, checks every id as the
loader would, and finds the judged ones and where they are. The draw needs nothing else: which of the other
documents the reservoir keeps depends on how many there are and on the seed (`corpus_draw.choose_documents`).
The sample's lines are then read from the files in one more pass, byte for byte (JSONL), or fetched from the
engine as JSON objects, one per row, its columns as keys (Parquet; the golden loader reads JSONL).

A bad id or a judged document on two lines found in JSONL is reported by `draw_corpus` itself, reading the
files (its message names the line); in Parquet, with the file and row.
"""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Set
from concurrent.futures import Future
from decimal import Decimal
from typing import Any

import numpy as np

from pytest_embeval.files.columnar import Engine, EngineError, free_name, sql_list
from pytest_embeval.files.digests import sha256_ahead
from pytest_embeval.files.sources import Source, source_sha256
from pytest_embeval.golden.columnar_log import estimated_rows, source_format
from pytest_embeval.golden.corpus_draw import (
    CorpusDraw,
    choose_documents,
    draw_corpus,
    duplicate_problem,
    picked_lines,
)
from pytest_embeval.golden.data_files import GoldenError, id_problem
from pytest_embeval.golden.parquet_rows import ParquetRows
from pytest_embeval.golden.query_log import missing_field, opened

__all__ = ["ID_FIELD", "draw_columnar_corpus"]

#: The id of a document: the JSONL key, the Parquet column.
ID_FIELD = "_id"
#: Characters Python's ``\s`` matches in a string (`data_files.id_problem` refuses an id holding one).
_WHITESPACE = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)
_ID_TYPES = frozenset(
    {"VARCHAR", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
)


def _function(source: Source, kind: str) -> str:
    files = sql_list([str(path) for path in source.files])
    if kind == "jsonl":
        return f"read_json({files}, columns = {{'{ID_FIELD}': 'JSON'}}, format = 'newline_delimited')"
    return f"read_parquet({files}, union_by_name = true)"


def _check_parquet(parquet: ParquetRows) -> None:
    for path, types in zip(parquet.files, parquet.types, strict=True):
        if ID_FIELD not in types:
            raise missing_field(path, None, ID_FIELD, list(types), "the file")
        if types[ID_FIELD] not in _ID_TYPES:
            raise GoldenError(path, ID_FIELD, None, f"must be a string, got a column of {types[ID_FIELD]}")


def draw_columnar_corpus(
    engine: Engine,
    source: Source,
    *,
    size: int,
    judged: Set[str],
    seed: int,
    digests: Future[list[str]] | None = None,
) -> CorpusDraw:
    """Every judged document and a uniform draw of the rest (see the module); `GoldenError` as `draw_corpus`
    gives it, and for a TSV corpus (which `draw_corpus` reads). A Parquet corpus's sha256 are ``digests``
    (`digests.sha256_ahead` of its files, started before the engine opened), else computed beside the
    engine's work; a JSONL corpus's are taken as its kept lines are read."""
    for path in source.files:
        opened(path)  # a missing or unreadable file: the Python reader's error
    kind = source_format(source, "JSONL (one object per line) or Parquet")
    if kind == "tsv":
        raise GoldenError(source.files[0], "format", None, "a TSV corpus is read by --engine python")
    if kind == "parquet" and digests is None:
        digests = sha256_ahead(source.files)
    try:
        parquet = ParquetRows.of(engine, source.files) if kind == "parquet" else None
        if parquet is not None:
            _check_parquet(parquet)
        draw = _draw(engine, source, parquet, size=size, judged=judged, seed=seed)
    except EngineError as error:
        raise GoldenError(source.given, None, None, f"the engine cannot read it: {error}") from None
    positions, kept = draw
    if parquet is None:
        lines, files = picked_lines(source, positions)
    else:
        lines = _parquet_lines(engine, source, parquet, positions)
        assert digests is not None
        files = list(zip(source.files, digests.result(), strict=True))
    documents, found, ids = kept
    return CorpusDraw(
        kind,
        documents,
        source_sha256([digest for _, digest in files]),
        len(found),
        tuple(sorted(judged - ids)),
        tuple(lines),
        len(positions),
        tuple(files),
    )


def _draw(
    engine: Engine, source: Source, parquet: ParquetRows | None, *, size: int, judged: Set[str], seed: int
) -> tuple[list[int], tuple[int, list[int], set[str]]]:
    """The positions of the sample's documents, and (documents, positions of the judged ones, their ids)."""
    kind = "jsonl" if parquet is None else "parquet"
    reading, total = f"reading {source.given}", estimated_rows(source, parquet)
    if parquet is None:
        id_text = (
            f"CASE WHEN json_type({ID_FIELD}) = 'VARCHAR' THEN json_extract_string({ID_FIELD}, '$') "
            f"ELSE {ID_FIELD}::VARCHAR END"
        )
        # An id the loader refuses, or one it would read as another text (a JSON -0 is Python's 0).
        bad = (
            f"CASE json_type({ID_FIELD}) WHEN 'VARCHAR' THEN id = '' OR regexp_matches(id, '{_WHITESPACE}') "
            f"WHEN 'UBIGINT' THEN NOT regexp_full_match(id, '0|[1-9][0-9]*') "
            f"WHEN 'BIGINT' THEN NOT regexp_full_match(id, '-[1-9][0-9]*') ELSE true END"
        )
    else:
        id_text = f"{ID_FIELD}::VARCHAR"
        bad = f"id = '' OR regexp_matches(id, '{_WHITESPACE}')"
    if parquet is None:
        # The ids copied in file order (the engine keeps insertion order on all its threads) and numbered by
        # their rowid there: ``row_number() OVER ()`` would hold the whole read to one thread.
        engine.execute(
            f"CREATE TEMP TABLE corpus_rows AS SELECT {ID_FIELD} FROM {_function(source, kind)}",
            what=reading,
            total=total,
        )
        rows, place, reading = "corpus_rows", "rowid", "checking the ids"
    else:
        rows, place = _function(source, kind), parquet.position()
    engine.execute("CREATE TEMP TABLE judged AS SELECT unnest(?::VARCHAR[]) AS id", [sorted(judged)])
    engine.execute(
        "CREATE TEMP TABLE corpus_ids AS SELECT count(*) AS documents, "
        "min(position) FILTER (WHERE bad) AS first_bad, "
        "list(struct_pack(position := position, id := documents_read.id) ORDER BY position) "
        "FILTER (WHERE judged.id IS NOT NULL) AS kept FROM (SELECT position, id, "
        f"coalesce({bad}, true) AS bad FROM (SELECT {place} AS position, {id_text} AS id, "
        f"{ID_FIELD} FROM {rows})) AS documents_read "
        "LEFT JOIN judged ON documents_read.id = judged.id",
        what=reading,
        total=total,
    )
    ((documents, first_bad, kept),) = engine.rows("SELECT documents, first_bad, kept FROM corpus_ids")
    if first_bad is not None:
        raise _bad_id(engine, source, parquet, int(first_bad), size, judged, seed)
    if not documents:
        raise GoldenError(source.given, None, None, "the corpus is empty: no documents")
    found: dict[str, int] = {}
    for entry in kept or []:
        position, doc_id = int(entry["position"]), str(entry["id"])
        if doc_id in found:
            raise _duplicate(source, parquet, doc_id, found[doc_id], position, size, judged, seed)
        found[doc_id] = position
    judged_positions = np.array(sorted(found.values()), dtype=np.int64)
    offered = choose_documents(int(documents) - len(found), size=size, keep=len(found), seed=seed)
    # The i-th document not kept is document i + (the kept ones at or before it).
    shifted = judged_positions - np.arange(len(judged_positions))
    drawn = np.asarray(offered, dtype=np.int64)
    drawn += np.searchsorted(shifted, drawn, side="right")
    positions = sorted([*judged_positions.tolist(), *drawn.tolist()])
    return positions, (int(documents), judged_positions.tolist(), set(found))


def _python_error(
    source: Source, size: int, judged: Set[str], seed: int, otherwise: GoldenError
) -> GoldenError:
    """`draw_corpus`'s error for the files, or ``otherwise`` when it finds none."""
    try:
        draw_corpus(source, size=size, judged=judged, seed=seed)
    except GoldenError as error:
        return error
    return otherwise


def _bad_id(
    engine: Engine,
    source: Source,
    parquet: ParquetRows | None,
    position: int,
    size: int,
    judged: Set[str],
    seed: int,
) -> GoldenError:
    if parquet is None:
        return _python_error(
            source, size, judged, seed, GoldenError(source.given, ID_FIELD, None, "the engine refused an id")
        )
    ((value,),) = engine.rows(
        f"SELECT {ID_FIELD}::VARCHAR FROM (SELECT {ID_FIELD}, {parquet.position()} AS embeval_position FROM "
        f"{_function(source, 'parquet')}) WHERE embeval_position = ?",
        [position],
    )
    problem = "missing required key" if value is None else id_problem(value) or "the engine refused it"
    path, row = parquet.located(position)
    return GoldenError(path, ID_FIELD, row, problem)


def _duplicate(
    source: Source,
    parquet: ParquetRows | None,
    doc_id: str,
    first: int,
    again: int,
    size: int,
    judged: Set[str],
    seed: int,
) -> GoldenError:
    if parquet is None:
        problem = f"duplicate document id {doc_id!r}"
        return _python_error(source, size, judged, seed, GoldenError(source.given, ID_FIELD, None, problem))
    where = parquet.located(first)
    path, row = parquet.located(again)
    return GoldenError(path, ID_FIELD, row, duplicate_problem(doc_id, where, path))


def _json_value(value: object) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, datetime.timedelta)):
        return str(value)
    raise TypeError(type(value).__name__)


def _parquet_lines(engine: Engine, source: Source, parquet: ParquetRows, positions: list[int]) -> list[str]:
    """The rows at ``positions`` as JSON objects, in order."""
    place = free_name("embeval_position", parquet.columns)
    query = (
        f"SELECT * FROM (SELECT *, {parquet.position()} AS {place} FROM {_function(source, 'parquet')}) "
        f"WHERE {place} IN (SELECT unnest(?::BIGINT[])) ORDER BY {place}"
    )
    names, rows = engine.named_rows(query, [positions])
    lines = []
    for row in rows:
        record = dict(zip(names[:-1], row[:-1], strict=True))
        try:
            lines.append(json.dumps(record, ensure_ascii=False, default=_json_value))
        except TypeError as error:
            path, number = parquet.located(int(row[-1]))
            raise GoldenError(
                path, None, number, f"a value of type {error} cannot be written as JSON"
            ) from None
    return lines
