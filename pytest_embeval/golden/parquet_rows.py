"""Where a row of a set of Parquet files is, for the columnar engine: its place among all their rows (from 0,
the first file's rows first), and back from a place to its file and row there.

DuckDB's Parquet reader numbers each file's rows itself (its virtual columns ``file_index`` and
``file_row_number``), on every thread: a row's place is the rows of the files before it, from their
metadata, plus its number. A file's own column of either name hides the reader's (and the reader's options
that add such a column refuse the file): files holding one are numbered by ``row_number() OVER ()``, in file
order on one thread, slower and the same places. Nothing here asks the reader for a column of its own, so a
file may hold any column (``filename`` included).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from pytest_embeval.files.columnar import Engine, sql_list, sql_string

__all__ = ["READER_COLUMNS", "ParquetRows"]

#: The reader's virtual columns a row's place is computed from.
READER_COLUMNS = frozenset({"file_index", "file_row_number"})


@dataclass(frozen=True, slots=True)
class ParquetRows:
    """Parquet files' columns and rows: each file's column types (``DESCRIBE``) and rows (its metadata)."""

    files: tuple[Path, ...]
    types: tuple[dict[str, str], ...]
    rows: tuple[int, ...]

    @classmethod
    def of(cls, engine: Engine, files: tuple[Path, ...]) -> ParquetRows:
        types = []
        for path in files:
            described = engine.rows(f"DESCRIBE SELECT * FROM read_parquet({sql_string(str(path))})")
            types.append({str(name): str(kind) for name, kind, *_ in described})
        counted = dict(
            engine.rows(
                f"SELECT file_name, num_rows FROM parquet_file_metadata({sql_list([str(p) for p in files])})"
            )
        )
        return cls(files, tuple(types), tuple(int(counted[str(path)]) for path in files))

    @property
    def columns(self) -> frozenset[str]:
        """Every column of every file."""
        return frozenset(name for file_types in self.types for name in file_types)

    @property
    def numbered_by_reader(self) -> bool:
        """Whether the reader's row numbers can be read: no file has a column of their names."""
        return not READER_COLUMNS & self.columns

    def position(self) -> str:
        """SQL of a row's place, in a ``SELECT`` from the files (a window function where the reader's
        numbers are hidden: not for a ``WHERE``)."""
        if not self.numbered_by_reader:
            return "(row_number() OVER () - 1)"
        if len(self.files) == 1:
            # The reader's number is the place (no list of starts indexed on every row).
            return "file_row_number"
        starts = ", ".join(map(str, itertools.accumulate(self.rows[:-1], initial=0)))
        return f"(CAST([{starts}] AS BIGINT[])[CAST(file_index AS BIGINT) + 1] + file_row_number)"

    def located(self, position: int) -> tuple[Path, int]:
        """The file holding the row at ``position``, and its row there (from 1)."""
        for path, rows in zip(self.files, self.rows, strict=True):
            if position < rows:
                return path, position + 1
            position -= rows
        raise ValueError(f"no row at {position}: the files hold {sum(self.rows)}")
