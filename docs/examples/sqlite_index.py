"""A complete vector-database adapter for pytest-embeval: collections in one SQLite file, searched exactly.

Declared in a golden file as ``index: {service: sqlite_index:SqliteIndex, path: vectors.sqlite}``, with this
file importable (beside the conftest.py, or installed). It is the protocol `pytest_embeval.VectorIndex` and
nothing more: build a collection from ids, vectors and filterable fields, search
it with query vectors, a depth and one filter, describe it, drop it, and list the collections that carry a
marker. Its search scans every vector, so its top k is exact search's; the filter becomes SQL with
placeholders (never a value spliced into the text).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pytest_embeval import Found, Records


class SqliteIndex:
    """Collections as tables of one SQLite database (``path``; ``:memory:`` keeps them in this process)."""

    engine = "sqlite"

    def __init__(self, path: str = ":memory:") -> None:
        self.address = path
        self.version = f"sqlite {sqlite3.sqlite_version}"
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS collections (name TEXT PRIMARY KEY, marker TEXT)")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS records (collection TEXT, row INTEGER, id TEXT, vector BLOB)"
        )
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS fields (collection TEXT, row INTEGER, field TEXT, value TEXT)"
        )

    def create(self, name: str, records: Records, marker: Mapping[str, str]) -> None:
        with self.db:
            self.db.execute("INSERT INTO collections VALUES (?, ?)", (name, json.dumps(dict(marker))))
            self.db.executemany(
                "INSERT INTO records VALUES (?, ?, ?, ?)",
                (
                    (name, row, doc_id, vector.astype(np.float32).tobytes())
                    for row, (doc_id, vector) in enumerate(zip(records.ids, records.vectors, strict=True))
                ),
            )
            self.db.executemany(
                "INSERT INTO fields VALUES (?, ?, ?, ?)",
                (
                    (name, row, field, value)
                    for row, fields in enumerate(records.fields)
                    for field, values in fields.items()
                    for value in values
                ),
            )

    def search(
        self, name: str, queries: np.ndarray, k: int, where: Mapping[str, Sequence[str]] | None
    ) -> list[Found]:
        # A record is allowed when, for every field of the filter, it holds one of the field's values.
        sql = "SELECT row, id, vector FROM records WHERE collection = ?"
        arguments: list[Any] = [name]
        for field, values in (where or {}).items():
            marks = ", ".join("?" * len(values))
            sql += (
                " AND row IN (SELECT row FROM fields WHERE collection = ? AND field = ? "
                f"AND value IN ({marks}))"
            )
            arguments += [name, field, *values]
        rows = self.db.execute(sql + " ORDER BY row", arguments).fetchall()
        if not rows:
            return [Found((), ()) for _ in queries]
        ids = [doc_id for _, doc_id, _ in rows]
        vectors = np.stack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
        scores = queries.astype(np.float64) @ vectors.astype(np.float64).T
        found = []
        for row_scores in scores:
            best = np.argsort(-row_scores, kind="stable")[:k]
            found.append(Found(tuple(ids[i] for i in best), tuple(float(row_scores[i]) for i in best)))
        return found

    def parameters(self, name: str) -> dict[str, Any]:
        return {"scan": "exhaustive"}

    def drop(self, name: str) -> None:
        with self.db:
            for table in ("collections", "records", "fields"):
                column = "name" if table == "collections" else "collection"
                self.db.execute(f"DELETE FROM {table} WHERE {column} = ?", (name,))

    def markers(self, prefix: str) -> dict[str, Mapping[str, str]]:
        listed = self.db.execute("SELECT name, marker FROM collections").fetchall()
        return {name: json.loads(marker) for name, marker in listed if name.startswith(prefix)}

    def close(self) -> None:
        self.db.close()
