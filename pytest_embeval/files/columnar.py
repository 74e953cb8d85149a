"""A columnar engine for data too large to read a row at a time in Python: DuckDB (the ``[duckdb]`` extra),
embedded, imported only when a command uses it.

It reads JSONL, CSV/TSV and Parquet, compressed or not, many files at once; it aggregates out of core, so a
reader hands Python only what the aggregation leaves (the distinct rows), never the rows. An `Engine` is one
in-memory connection with a memory limit and its own temporary folder for what it spills, removed when the
engine closes (nothing is left in the user's folder, even on failure). A long statement reports its progress
through `core.step_progress` (the engine's own estimate of the share done, polled from a second thread); the
rows it stands for are the caller's to say (``total``).

Every engine error becomes an `EngineError` of one line (the engine's first line, the hints it appends
dropped); a missing DuckDB, an `EngineMissing` naming the extra to install.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_embeval.core.step_progress import step
from pytest_embeval.files.compressed import compression_of
from pytest_embeval.files.sources import Source, is_parquet

__all__ = [
    "AUTO_ENGINE_BYTES",
    "DEFAULT_MEMORY_LIMIT",
    "DUCKDB_EXTRA",
    "ENGINES",
    "Engine",
    "EngineError",
    "EngineMissing",
    "choose_engine",
    "default_memory_limit",
    "duckdb_installed",
    "engine",
    "free_name",
    "sql_list",
    "sql_string",
]

DUCKDB_EXTRA = "pip install 'pytest-embeval[duckdb]'"


def default_memory_limit() -> str:
    """The engine's memory limit unless a command is given one (what it holds beyond is spilled to disk):
    half of this machine's memory (DuckDB's own default is 80 %), or 2GB where that cannot be read."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return "2GB"
    return f"{total // 2 // 2**20}MiB"


DEFAULT_MEMORY_LIMIT = default_memory_limit()
#: ``--engine``'s choices: ``auto`` picks one of the others (`choose_engine`).
ENGINES = ("auto", "duckdb", "python")
#: Under ``auto``, text files of this many bytes or more are read by the engine: about 500,000 searches of a
#: JSONL log, which Python reads in some 10 s and the engine in about one.
AUTO_ENGINE_BYTES = 32 << 20
#: Seconds between two looks at a running statement's progress.
_POLL_SECONDS = 0.25


class EngineMissing(Exception):
    """DuckDB is needed and not installed. One line, naming the extra."""


class EngineError(Exception):
    """The engine refused a statement or a file. One line."""


def duckdb_installed() -> bool:
    return importlib.util.find_spec("duckdb") is not None


def choose_engine(requested: str, source: Source) -> tuple[str, str | None]:
    """The reader of ``source`` (``duckdb`` or ``python``) for ``--engine requested``, and a note to print
    when ``auto`` falls back to Python for a large input because DuckDB is not installed. Under ``auto`` the
    engine reads Parquet, compressed files and inputs of `AUTO_ENGINE_BYTES` or more, Python the rest (no
    import, no start-up: a small log's sample is as quick). `EngineMissing`, naming the file, when the
    input needs the engine (Parquet, compressed) or it was asked for, and DuckDB is not installed."""
    if requested == "python":
        return "python", None
    needs = next(
        (path for path in source.files if is_parquet(path) or compression_of(path) is not None), None
    )
    if requested == "duckdb" or needs is not None or source.bytes >= AUTO_ENGINE_BYTES:
        if duckdb_installed():
            return "duckdb", None
        if requested == "duckdb":
            raise EngineMissing(f"--engine duckdb needs DuckDB: {DUCKDB_EXTRA}")
        if needs is not None:
            what = "is Parquet" if is_parquet(needs) else "is compressed"
            raise EngineMissing(f"{needs}: {what}: reading it needs DuckDB: {DUCKDB_EXTRA}")
        size = source.bytes / (1 << 20)
        return (
            "python",
            f"{source.given} is {size:,.0f} MiB: read in Python, slowly ({DUCKDB_EXTRA} reads it faster)",
        )
    return "python", None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def sql_string(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def free_name(base: str, taken: Collection[str]) -> str:
    """``base``, else ``base`` with the first number from 1 after it, that names none of ``taken``: a column
    a query adds beside an input's own columns, which may hold any name."""
    names = itertools.chain([base], (f"{base}{i}" for i in itertools.count(1)))
    return next(name for name in names if name not in taken)


def sql_list(texts: Sequence[str]) -> str:
    """A list of SQL string literals: the files a table function reads."""
    return "[" + ", ".join(sql_string(text) for text in texts) + "]"


@dataclass(slots=True)
class Engine:
    """One DuckDB connection (see the module)."""

    connection: Any
    #: the engine's module, for its error classes
    duckdb: Any

    def execute(
        self,
        sql: str,
        parameters: Sequence[object] = (),
        *,
        what: str | None = None,
        total: int | None = None,
    ) -> None:
        """Run a statement; with ``what``, as a progress step counting to ``total`` (the engine's share
        done times ``total``), or counting nothing when ``total`` is None."""
        if what is None:
            self._run(lambda: self.connection.execute(sql, list(parameters)))
            return
        with step(what, total) as advance:
            stop = threading.Event()

            def poll() -> None:
                while not stop.wait(_POLL_SECONDS):
                    share = self.connection.query_progress()
                    if total is not None and share >= 0:
                        advance(min(total, round(total * share / 100)))

            watcher = threading.Thread(target=poll, name="embeval-engine-progress", daemon=True)
            watcher.start()
            try:
                self._run(lambda: self.connection.execute(sql, list(parameters)))
            finally:
                stop.set()
                watcher.join()
            if total is not None:
                advance(total)

    def rows(self, sql: str, parameters: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        result: list[tuple[Any, ...]] = self._run(
            lambda: self.connection.execute(sql, list(parameters)).fetchall()
        )
        return result

    def named_rows(
        self, sql: str, parameters: Sequence[object] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A query's column names and rows."""

        def run() -> tuple[list[str], list[tuple[Any, ...]]]:
            result = self.connection.execute(sql, list(parameters))
            return [column[0] for column in result.description], result.fetchall()

        named: tuple[list[str], list[tuple[Any, ...]]] = self._run(run)
        return named

    def arrays(self, sql: str, parameters: Sequence[object] = ()) -> dict[str, npt.NDArray[Any]]:
        """A query's columns as numpy arrays (a column of millions of numbers has no Python object for each;
        one of texts, a `str` for each, made in one call)."""
        fetched = self._run(lambda: self.connection.execute(sql, list(parameters)).fetchnumpy())
        return {name: np.asarray(values) for name, values in fetched.items()}

    def insert(self, table: str, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        """Append numpy arrays of equal length to ``table`` as its columns, in order: the engine reads them
        where they are, not a parameter at a time."""
        view = "embeval_inserted"
        self._run(lambda: self.connection.register(view, dict(columns)))
        try:
            self.execute(f"INSERT INTO {table} SELECT * FROM {view}")
        finally:
            self._run(lambda: self.connection.unregister(view))

    def function(self, name: str, function: Callable[[str], str | None]) -> None:
        """Register a Python function of one text, called once per row it is applied to (the engine's
        threads take turns with Python's lock)."""
        varchar = self.duckdb.sqltype("VARCHAR")
        self._run(
            lambda: self.connection.create_function(
                name, function, [varchar], varchar, null_handling="special", side_effects=False
            )
        )

    def _run(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except self.duckdb.Error as error:
            raise EngineError(_first_line(error)) from None


@contextlib.contextmanager
def engine(memory_limit: str = DEFAULT_MEMORY_LIMIT, threads: int | None = None) -> Iterator[Engine]:
    """An `Engine` with ``memory_limit`` (DuckDB's syntax: ``2GB``, ``500MB``) and a temporary folder of its
    own for what it spills, removed on leaving. `EngineMissing` when DuckDB is not installed; `EngineError`
    for a memory limit DuckDB refuses."""
    try:
        duckdb = importlib.import_module("duckdb")
    except ImportError:
        raise EngineMissing(f"needs DuckDB: {DUCKDB_EXTRA}") from None
    spill = tempfile.mkdtemp(prefix="embeval-engine-")
    try:
        connection = duckdb.connect(":memory:")
        try:
            opened = Engine(connection, duckdb)
            opened.execute(f"SET memory_limit = {sql_string(memory_limit)}")
            opened.execute(f"SET temp_directory = {sql_string(spill)}")
            # The share done, for the progress line; printed by nobody but us.
            opened.execute("SET enable_progress_bar = true")
            opened.execute("SET enable_progress_bar_print = false")
            # Rows come out of a scan in file order: "the first row" is the same on every path.
            opened.execute("SET preserve_insertion_order = true")
            if threads is not None:
                opened.execute(f"SET threads = {int(threads)}")
            yield opened
        finally:
            connection.close()
    finally:
        shutil.rmtree(spill, ignore_errors=True)
