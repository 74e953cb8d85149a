"""LanceDB, embedded: a folder of Lance tables, searched in process.

``index: {lancedb: {path, index_type, metric, num_partitions, num_sub_vectors, nprobes, refine_factor}}``:
each collection is a table of the records in corpus order (``id``, ``vector``, and one ``list<string>``
column per filterable field, ``field_0``, ``field_1``, … in sorted field order: a column name Lance's
SQL cannot quote is never made). ``index_type: ivf_pq`` (the default) trains LanceDB's IVF-PQ index on it with
``num_partitions`` and ``num_sub_vectors`` (LanceDB's defaults when not declared) and searches ``nprobes``
partitions, reranking ``refine_factor`` times the depth by the stored vectors when declared;
``index_type: flat`` builds no index, so every search is exhaustive: exact.

A filter becomes SQL (`lance_where`): ``array_has_any(field_i, ['v1', 'v2'])`` per field (a record matches
when its list holds one of the values; a record without the field has a null list and never matches), joined
by ``AND``; values are written as SQL string literals with each ``'`` doubled, so no value can end the string
early. Searches filter first (``prefilter``), as production restricts a search.

Without a ``path`` the tables live in a temporary folder removed when the run closes the engine. LanceDB's
IVF training takes no seed, so two builds over the same vectors may differ slightly; the report records the
recall each arm reached against exact search.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytest_embeval.golden.filters import Filter
from pytest_embeval.search.vector_index import Found, Records, SearchParameter

__all__ = ["ADAPTER", "LanceIndex", "lance_where", "sql_string"]

#: The table's schema metadata keys besides the marker's: the field each ``field_i`` column holds.
FIELDS_KEY = "embeval_fields"


def sql_string(value: str) -> str:
    """A SQL string literal of ``value``: in single quotes, each quote inside doubled."""
    return "'" + value.replace("'", "''") + "'"


def lance_where(wanted: Filter | None, columns: Mapping[str, str]) -> str | None:
    """A golden-set filter as a LanceDB ``where``, ``columns`` naming each field's column; None for no
    filter. A field no record has (no column) matches nothing."""
    if not wanted:
        return None
    clauses = []
    for name, values in wanted.items():
        if name not in columns:
            return "false"
        listed = ", ".join(sql_string(value) for value in values)
        clauses.append(f"array_has_any({columns[name]}, [{listed}])")
    return " AND ".join(clauses)


class LanceIndex:
    """A LanceDB database folder (see the module docstring)."""

    engine = "lancedb"

    def __init__(
        self,
        path: str | None = None,
        index_type: str = "ivf_pq",
        metric: str = "dot",
        num_partitions: int | None = None,
        num_sub_vectors: int | None = None,
        nprobes: int = 20,
        refine_factor: int | None = None,
    ) -> None:
        import lancedb

        self._temporary = path is None
        folder = Path(tempfile.mkdtemp(prefix="embeval-lancedb-")) if path is None else Path(path)
        self.address = str(folder)
        self.version = f"lancedb {lancedb.__version__}"
        self.index_type = index_type
        self.metric = metric
        self.num_partitions = num_partitions
        self.num_sub_vectors = num_sub_vectors
        self.refine_factor = refine_factor
        self.db = lancedb.connect(folder)
        self._nprobes: dict[str, int] = {}
        self._default_nprobes = nprobes
        self._columns: dict[str, dict[str, str]] = {}

    def create(self, name: str, records: Records, marker: Mapping[str, str]) -> None:
        import pyarrow as pa

        names = sorted({field for fields in records.fields for field in fields})
        columns = {field: f"field_{i}" for i, field in enumerate(names)}
        dimension = records.vectors.shape[1]
        metadata = {**marker, FIELDS_KEY: json.dumps(columns, ensure_ascii=False)}
        schema = pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dimension)),
                *(pa.field(column, pa.list_(pa.string())) for column in columns.values()),
            ],
            metadata=metadata,
        )
        values = pa.array(np.ascontiguousarray(records.vectors, dtype=np.float32).reshape(-1))
        table = pa.table(
            {
                "id": list(records.ids),
                "vector": pa.FixedSizeListArray.from_arrays(values, dimension),
                **{
                    column: [list(fields[field]) if field in fields else None for fields in records.fields]
                    for field, column in columns.items()
                },
            },
            schema=schema,
        )
        created = self.db.create_table(name, table)
        self._columns[name] = columns
        if self.index_type == "ivf_pq":
            from lancedb.index import IvfPq

            options: dict[str, Any] = {
                "distance_type": self.metric,
                "num_partitions": self.num_partitions,
                "num_sub_vectors": self.num_sub_vectors,
            }
            config = IvfPq(**{key: value for key, value in options.items() if value is not None})
            created.create_index("vector", config=config)
            self._nprobes[name] = self._default_nprobes

    def _table(self, name: str) -> Any:
        return self.db.open_table(name)

    def search(self, name: str, queries: np.ndarray, k: int, where: Filter | None) -> Sequence[Found]:
        rows = np.ascontiguousarray(queries, dtype=np.float32)
        query = self._table(name).search(rows).distance_type(self.metric).limit(k)
        if self.index_type == "ivf_pq":
            query = query.nprobes(self._nprobes[name])
            if self.refine_factor is not None:
                query = query.refine_factor(self.refine_factor)
        sql = lance_where(where, self._columns[name])
        if sql is not None:
            query = query.where(sql, prefilter=True)
        answer = query.select(["id", "_distance"]).to_arrow()
        ids, distances = answer["id"].to_pylist(), answer["_distance"].to_pylist()
        # One query answers without the query_index column.
        which = answer["query_index"].to_pylist() if "query_index" in answer.column_names else [0] * len(ids)
        found: list[tuple[list[str], list[float]]] = [([], []) for _ in range(rows.shape[0])]
        for row, doc_id, distance in zip(which, ids, distances, strict=True):
            found[row][0].append(doc_id)
            found[row][1].append(self._similarity(float(distance)))
        return [Found(tuple(one), tuple(scores)) for one, scores in found]

    def _similarity(self, distance: float) -> float:
        """LanceDB's distance as a similarity: ``1 - d`` for dot and cosine, ``1 - d / 2`` for squared l2
        (all three the cosine of unit vectors)."""
        return 1.0 - distance / 2.0 if self.metric == "l2" else 1.0 - distance

    def parameters(self, name: str) -> dict[str, Any]:
        described: dict[str, Any] = {"index_type": self.index_type, "metric": self.metric}
        if self.index_type != "ivf_pq":
            return described
        table = self._table(name)
        index = next(iter(table.list_indices()), None)
        details = {} if index is None else dict(getattr(index, "index_details", {}) or {})
        compression = details.get("compression") or {}
        stats = table.index_stats(index.name) if index is not None else None
        described.update(
            num_partitions=self.num_partitions,
            num_sub_vectors=compression.get("num_sub_vectors", self.num_sub_vectors),
            nprobes=self._nprobes[name],
            refine_factor=self.refine_factor,
            indexed_rows=None if stats is None else int(stats.num_indexed_rows),
            unindexed_rows=None if stats is None else int(stats.num_unindexed_rows),
        )
        return described

    def search_parameter(self, name: str, k: int) -> SearchParameter | None:
        if self.index_type != "ivf_pq":
            return None  # a flat table is searched exhaustively
        # nprobes past the number of partitions searches them all; LanceDB's default partition count is the
        # square root of the rows.
        rows = self._table(name).count_rows()
        partitions = self.num_partitions or max(1, int(np.sqrt(rows)))
        return SearchParameter("nprobes", self._nprobes[name], low=1, high=max(1, partitions))

    def set_search_parameter(self, name: str, value: int) -> None:
        self._nprobes[name] = value

    def drop(self, name: str) -> None:
        self.db.drop_table(name)
        self._columns.pop(name, None)
        self._nprobes.pop(name, None)

    def markers(self, prefix: str) -> dict[str, Mapping[str, str]]:
        found: dict[str, Mapping[str, str]] = {}
        names: list[str] = []
        page = self.db.list_tables()
        while True:
            names.extend(page.tables)
            if not page.page_token:
                break
            page = self.db.list_tables(page_token=page.page_token)
        for name in names:
            if not name.startswith(prefix):
                continue
            metadata = self._table(name).schema.metadata or {}
            found[name] = {
                key.decode("utf-8"): value.decode("utf-8")
                for key, value in metadata.items()
                if key.decode("utf-8") != FIELDS_KEY
            }
        return found

    def close(self) -> None:
        if self._temporary:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.address)


#: What `vector_index.open_index` calls with the golden file's keys.
ADAPTER = LanceIndex
