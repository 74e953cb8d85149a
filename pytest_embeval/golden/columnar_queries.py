"""The distinct queries of a log the columnar engine aggregated (`columnar_log`), kept in the engine: the
raw aggregation's spellings normalised and merged into a table of distinct queries, and a query at a rank
found there without sorting them all (`QueriesInEngine`, the `query_log.DistinctQueries` of the engine).

The engine's tables, from the first to the last: ``strata`` (`columnar_log`: each raw combination's
stratum), ``raw`` (`columnar_log`: one row per raw text and raw stratum values, its stratum, its searches,
the position of its first row, whether its text is in normal form and, for an ASCII text that is not, its
normal form: `ascii_key`), ``changed`` (each distinct raw text not in normal form and not ASCII, and its
normal form), ``merged`` and the view ``distinct_queries`` (`merge_spellings`), and ``prefixes``
(`count_prefixes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_embeval.core.sampling import NORMAL_ASCII, normalise_query
from pytest_embeval.core.step_progress import step
from pytest_embeval.files.columnar import Engine, sql_string
from pytest_embeval.golden.query_log import Level

__all__ = ["QueriesInEngine", "ascii_key", "count_prefixes", "merge_spellings", "normalise_spellings"]

#: What Python's ``str.split()`` takes for whitespace in an ASCII text (tab to carriage return, the four
#: separators U+001C to U+001F, space), in RE2's syntax: a run of it is one space in a normal form.
_ASCII_WHITESPACE = r"[\x09-\x0d\x1c-\x1f ]+"
#: Distinct raw spellings normalised in one batch.
_NORMALISED_AT_ONCE = 100_000
#: The most rows of one prefix `QueriesInEngine` ranks (the engine sorts them); a larger bucket is split by a
#: longer prefix.
_BUCKET_ROWS = 4096
#: The prefix lengths tried in turn, in characters.
_PREFIXES = (3, 6, 10, 16, 32, 64, 128, 256, 1024)


def ascii_key(text: str) -> str:
    """SQL of the normal form of ``text`` (SQL of a string) that is ASCII and not in normal form already:
    `normalise_query`'s ASCII rule (``lower``, and a run of what ``str.split`` takes for whitespace one
    space, none at either end); NULL for a text that is not ASCII (`normalise_spellings` takes it). Most
    respelt texts differ in case alone: their lower case in normal form is theirs, without the slower
    replacement of whitespace."""
    lower = f"lower({text})"
    return (
        f"CASE WHEN strlen({text}) <> length({text}) THEN NULL "
        f"WHEN regexp_full_match({lower}, {sql_string(NORMAL_ASCII)}) THEN {lower} "
        f"ELSE trim(regexp_replace({lower}, {sql_string(_ASCII_WHITESPACE)}, ' ', 'g'), ' ') END"
    )


def normalise_spellings(engine: Engine) -> None:
    """A table ``changed`` from each distinct raw text not in normal form and not ASCII (its ``key`` in
    ``raw`` is NULL: `ascii_key`) to its normal form, `normalise_query`'s own, a batch of them at a time
    (memory holds one batch): fetched as one array, handed back as two."""
    engine.execute("CREATE TEMP TABLE changed (c0 VARCHAR, key VARCHAR)")
    engine.execute(
        "CREATE TEMP TABLE spellings AS SELECT DISTINCT c0 FROM raw WHERE NOT normal AND key IS NULL"
    )
    ((total,),) = engine.rows("SELECT count(*) FROM spellings")
    with step("normalising distinct spellings", total) as advance:
        for start in range(0, total, _NORMALISED_AT_ONCE):
            read = engine.arrays(
                "SELECT c0 FROM spellings WHERE rowid >= ? AND rowid < ?",
                [start, start + _NORMALISED_AT_ONCE],
            )["c0"]
            keys = [normalise_query(text) for text in read]
            engine.insert("changed", {"c0": read, "key": np.array(keys, dtype=object)})
            advance(min(total, start + _NORMALISED_AT_ONCE))


def merge_spellings(engine: Engine) -> None:
    """``distinct_queries`` (key, stratum, frequency, first: the position of its first row), a view of the
    log's distinct queries and of the searches whose text is empty once normalised (key ``''``, one row per
    stratum). A raw row whose text is in normal form, is no other text's normal form in its stratum and has
    a stratum of its own is a distinct query already: most are, and they stay where they are, in ``raw``. The
    rest (``merging``: a respelt text, the normal form of one in its stratum, a stratum several raw
    combinations share) are merged by key and stratum into a table ``merged``."""
    # A respelt row's normal form is where it is: ``key`` for an ASCII respelling, ``changed`` for another
    # (``changed`` holds exactly those), the text itself for a row in normal form.
    normal_form = "coalesce(raw.key, changed.key, raw.c0)"
    spellings = "raw LEFT JOIN changed ON raw.c0 = changed.c0"
    with step("merging spellings"):
        # A text in normal form merges with the respellings whose normal form it is in its own stratum (a
        # query is a normal form and a stratum): only then is it no distinct query on its own.
        engine.execute(
            f"UPDATE raw SET merging = true FROM (SELECT DISTINCT {normal_form} AS key, stratum "
            f"FROM {spellings} WHERE NOT raw.normal) AS respelt "
            "WHERE NOT raw.merging AND raw.c0 = respelt.key AND raw.stratum = respelt.stratum"
        )
        engine.execute(
            f"CREATE TEMP TABLE merged AS SELECT {normal_form} AS key, stratum, "
            "CAST(sum(searches) AS BIGINT) AS frequency, min(first) AS first "
            f"FROM {spellings} WHERE raw.merging GROUP BY ALL"
        )
        engine.execute(
            "CREATE TEMP VIEW distinct_queries AS SELECT c0 AS key, stratum, "
            "CAST(searches AS BIGINT) AS frequency, first FROM raw "
            "WHERE NOT merging UNION ALL SELECT key, stratum, frequency, first FROM merged"
        )


def count_prefixes(engine: Engine) -> list[tuple[int, int, bool, int]]:
    """The distinct queries counted by frequency and stratum: (frequency, stratum, whether the key is empty,
    queries). Counted by the first characters of their key as well, into a table ``prefixes`` that
    `QueriesInEngine` reads its first round from (the empty key's prefix is ``''``, and no other's)."""
    engine.execute(
        "CREATE TEMP TABLE prefixes AS SELECT frequency, stratum, "
        f"substr(key, 1, {_PREFIXES[0]}) AS prefix, count(*) AS queries FROM distinct_queries GROUP BY ALL"
    )
    rows = engine.rows(
        "SELECT frequency, stratum, prefix = '' AS empty, sum(queries) FROM prefixes GROUP BY ALL"
    )
    return [(int(f), int(s), bool(empty), int(queries)) for f, s, empty, queries in rows]


#: The requests as a table (their index, frequency, stratum or -1, prefix, rank), `_request_columns`.
_REQUESTS = (
    "SELECT unnest(?::BIGINT[]) AS i, unnest(?::BIGINT[]) AS f, unnest(?::BIGINT[]) AS s, "
    "unnest(?::VARCHAR[]) AS p, unnest(?::BIGINT[]) AS rank"
)


def _request_columns(requests: Mapping[int, tuple[int, int | None, int, str]]) -> list[list[object]]:
    """The parameters of `_REQUESTS`."""
    rows = [(i, f, -1 if s is None else s, prefix, rank) for i, (f, s, rank, prefix) in requests.items()]
    return [[row[column] for row in rows] for column in range(5)]


@dataclass(frozen=True, slots=True)
class QueriesInEngine:
    """`query_log.DistinctQueries` left in the engine: the counts by frequency and stratum fetched once, a
    query at a rank found by prefix counts (no sort of them all): the queries of a frequency (and stratum)
    counted by the first characters of their normal form, the count of each prefix in order telling which
    prefix holds the rank, and that prefix's few rows ranked by the engine (UTF-8 strings order by code
    point in both)."""

    engine: Engine
    values: tuple[tuple[str, ...], ...]
    counts: dict[Level, int]

    def __len__(self) -> int:
        return sum(self.counts.values())

    def levels(self) -> dict[Level, int]:
        return dict(self.counts)

    def split(self, frequency: int, count: int) -> dict[int, int]:
        ((key, stratum, _),) = self._ranked([(frequency, None, count)])
        return dict(
            self.engine.rows(
                "SELECT stratum, count(*) FROM distinct_queries WHERE frequency = ? AND key <> '' "
                "AND (key < ? OR (key = ? AND stratum < ?)) GROUP BY stratum",
                [frequency, key, key, stratum],
            )
        )

    def pick(self, wanted: Mapping[Level, Sequence[int]]) -> dict[Level, list[tuple[str, str]]]:
        requests = [
            (frequency, stratum, rank) for (frequency, stratum), ranks in wanted.items() for rank in ranks
        ]
        with step("finding the queries drawn"):
            found = self._ranked(requests)
            spellings = dict(
                self.engine.rows(
                    "SELECT first, c0 FROM raw WHERE first IN (SELECT unnest(?::BIGINT[]))",
                    [[first for _, _, first in found]],
                )
            )
        drawn = iter(found)
        picked: dict[Level, list[tuple[str, str]]] = {}
        for level, ranks in wanted.items():
            for _ in ranks:
                key, _, first = next(drawn)
                picked.setdefault(level, []).append((key, " ".join(spellings[first].split())))
        return picked

    def _ranked(self, requests: Sequence[tuple[int, int | None, int]]) -> list[tuple[str, int, int]]:
        """(key, stratum, first) of the query at each (frequency, stratum or None for all, rank), in the
        order (by key, then stratum)."""
        # Each request narrowed to a bucket: (frequency, stratum, rank within it, its prefix), the prefix of
        # the length of the round before (all the same, so the join is on equal values, not a filter).
        pending = {i: (f, s, rank, "") for i, (f, s, rank) in enumerate(requests)}
        found: dict[int, tuple[str, int, int]] = {}
        before = 0
        for length in _PREFIXES:
            if not pending:
                break
            fetch: dict[int, tuple[int, int | None, int, str]] = {}
            for i, (bucket, rank, size) in self._buckets(pending, before, length).items():
                f, s, _, _ = pending[i]
                narrowed = (f, s, rank, bucket)
                if size <= _BUCKET_ROWS or len(bucket) < length or length == _PREFIXES[-1]:
                    fetch[i] = narrowed
                else:
                    pending[i] = narrowed
            for i in fetch:
                del pending[i]
            found.update(self._fetched(fetch, length))
            before = length
        return [found[i] for i in range(len(requests))]

    def _join(
        self, narrowed: Iterable[tuple[int, int | None, int, str]], length: int, counted: bool = False
    ) -> tuple[str, list[object]]:
        """``distinct_queries`` (``counted``: ``prefixes``, its counts by prefix) joined with the buckets
        (their prefixes of ``length`` characters), and the parameters."""
        groups = sorted({(f, -1 if s is None else s, prefix) for f, s, _, prefix in narrowed})
        by_stratum = any(s != -1 for _, s, _ in groups)
        on = "d.frequency = g.f" + (" AND d.stratum = g.s" if by_stratum else "")
        if length:
            on += f" AND substr(d.key, 1, {length}) = g.p"
        return (
            f"{'prefixes' if counted else 'distinct_queries'} AS d JOIN (SELECT unnest(?::BIGINT[]) AS f, "
            "unnest(?::BIGINT[]) AS s, unnest(?::VARCHAR[]) AS p) AS g "
            f"ON {on} AND d.{'prefix' if counted else 'key'} <> ''",
            [[g[i] for g in groups] for i in range(3)],
        )

    def _buckets(
        self, narrowed: Mapping[int, tuple[int, int | None, int, str]], before: int, length: int
    ) -> dict[int, tuple[str, int, int]]:
        """For each request (narrowed to a prefix of ``before`` characters), the prefix of ``length`` that
        holds its rank, its rank there and the queries there: the prefixes of its bucket counted and summed
        in order by the engine, only the one chosen coming back."""
        if before:
            join, parameters = self._join(narrowed.values(), before)
            counted = f"substr(d.key, 1, {length}) AS bucket, count(*) AS queries FROM {join}"
        else:
            # The first round's counts were taken with the levels' (`count_prefixes`).
            join, parameters = self._join(narrowed.values(), 0, counted=True)
            counted = f"d.prefix AS bucket, sum(d.queries) AS queries FROM {join}"
        rows = self.engine.rows(
            "SELECT r.i, c.bucket, r.rank - c.before, c.queries FROM ("
            "SELECT f, s, p, bucket, queries, sum(queries) OVER (PARTITION BY f, s, p ORDER BY bucket "
            "ROWS UNBOUNDED PRECEDING) - queries AS before FROM ("
            f"SELECT g.f, g.s, g.p, {counted} "
            f"GROUP BY ALL)) AS c JOIN ({_REQUESTS}) AS r ON c.f = r.f AND c.s = r.s AND c.p = r.p "
            "AND r.rank >= c.before AND r.rank < c.before + c.queries",
            [*parameters, *_request_columns(narrowed)],
        )
        return {int(i): (bucket, int(rank), int(queries)) for i, bucket, rank, queries in rows}

    def _fetched(
        self, fetch: Mapping[int, tuple[int, int | None, int, str]], length: int
    ) -> dict[int, tuple[str, int, int]]:
        """The queries at the requests' ranks within their buckets (prefixes of ``length``), ranked by the
        engine: only the queries asked for come back."""
        if not fetch:
            return {}
        join, parameters = self._join(fetch.values(), length)
        rows = self.engine.rows(
            "SELECT r.i, q.key, q.stratum, q.first FROM ("
            "SELECT g.f, g.s, g.p, d.key, d.stratum, d.first, "
            "row_number() OVER (PARTITION BY g.f, g.s, g.p ORDER BY d.key, d.stratum) - 1 AS rank "
            f"FROM {join}) AS q JOIN ({_REQUESTS}) AS r "
            "ON q.f = r.f AND q.s = r.s AND q.p = r.p AND q.rank = r.rank",
            [*parameters, *_request_columns(fetch)],
        )
        return {int(i): (key, int(stratum), int(first)) for i, key, stratum, first in rows}
