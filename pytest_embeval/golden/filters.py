"""Per-query filters: which corpus records a query may retrieve, as production search restricts it.

A query's ``filters: {field: value | [values]}`` is matched against the corpus records' own fields: a record
matches when, for every field named, one of its values is among the filter's values (values of one field
are alternatives, fields are all required). A record without the field never matches.

Values are compared as text. A JSON string is itself; a JSON number or boolean is its JSON text (``2020``,
``1.5``, ``true``); a list of those is a multi-valued field (tags, tenants), matching when any element
matches. Inline YAML filter values are taken as written (``year: 2020`` is ``"2020"``), as stratum values are.
Nested objects and null are not values a filter can name.

What the filter means for the metrics: a document the product could never return for the query is not
counted against either arm. Its judgments are dropped before scoring (`allowed_qrels`), so recall divides by
the relevant documents the filter allows, and nDCG's ideal ranking is built from the judged documents the
filter allows. A query whose every relevant document is filtered out scores NaN and is excluded from both
arms, like a query without judgments.

Both arms search with one `FilterPlan`: the distinct filters of the golden set, each as a boolean mask over
the corpus (``n_filters x n_documents`` bytes), and for every query the row of its mask. Queries without a
filter share an all-true row.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Allowed",
    "EmptyFilterWarning",
    "FieldReader",
    "Filter",
    "FilterPlan",
    "allowed_qrels",
    "field_names",
    "field_problem",
    "filter_value",
    "matches",
    "plan_filters",
]

#: field -> the values any one of which a record's field must hold
Filter = Mapping[str, tuple[str, ...]]

#: Keys of a corpus record that are the record itself, not fields a filter can name.
_RECORD_KEYS = frozenset({"_id", "text", "title"})
_NO_FIELDS: Mapping[str, tuple[str, ...]] = {}


class EmptyFilterWarning(UserWarning):
    """A query's filter allows no document of the corpus: the query scores NaN and is excluded."""


def filter_value(value: object) -> str | None:
    """A JSON scalar as the text filters compare: strings as they are, numbers and booleans as JSON text;
    None for anything else (null, objects, lists)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    return None


def _field_values(value: object) -> tuple[str, ...] | None:
    scalar = filter_value(value)
    if scalar is not None:
        return (scalar,)
    if isinstance(value, list) and value:
        values = [filter_value(item) for item in value]
        if all(item is not None for item in values):
            return tuple(dict.fromkeys(item for item in values if item is not None))
    return None


class FieldReader:
    """The fields a filter can name of one corpus record after another: every top-level key but ``_id``,
    ``text`` and ``title`` whose value is a string, number, boolean or a list of them.

    Records with equal fields share one mapping, so a corpus of a million records with a language and a
    tenant field holds one small mapping per distinct (language, tenant), not one per record.
    """

    __slots__ = ("_shared",)

    def __init__(self) -> None:
        self._shared: dict[tuple[tuple[str, tuple[str, ...]], ...], Mapping[str, tuple[str, ...]]] = {}

    def read(self, record: Mapping[str, object]) -> Mapping[str, tuple[str, ...]]:
        if record.keys() <= _RECORD_KEYS:  # a record of id, text and title only: no loop in Python
            return _NO_FIELDS
        items = []
        for name, value in record.items():
            if name in _RECORD_KEYS:
                continue
            values = _field_values(value)
            if values is not None:
                items.append((name, values))
        if not items:
            return _NO_FIELDS
        key = tuple(items)
        shared = self._shared.get(key)
        if shared is None:
            shared = self._shared[key] = dict(items)
        return shared


def field_problem(name: str, document_fields: AbstractSet[str]) -> str | None:
    """Why a filter cannot name this field, if it cannot: no corpus record has it."""
    if name in document_fields:
        return None
    listed = ", ".join(sorted(document_fields)) if document_fields else "none"
    return f"no document has a field {name!r} to filter on (document fields: {listed})"


def field_names(fields_of_records: Iterable[Mapping[str, object]]) -> frozenset[str]:
    """Every field name of the records' fields (shared mappings, `FieldReader`, looked at once each)."""
    distinct = {id(fields): fields for fields in fields_of_records}
    return frozenset(name for fields in distinct.values() for name in fields)


def matches(fields: Mapping[str, Sequence[str]], wanted: Filter) -> bool:
    """Whether a record with these fields satisfies the filter."""
    return all(name in fields and not set(fields[name]).isdisjoint(values) for name, values in wanted.items())


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True, eq=False)
class FilterPlan:
    """The golden set's distinct filters, their masks over the corpus and each query's mask row."""

    #: the distinct filters in order of first use; () is "no filter"
    filters: tuple[Filter, ...]
    #: (n_filters, n_documents) bool: which records each filter allows
    masks: np.ndarray
    #: (n_queries,) intp: each query's row of ``masks``
    rows: np.ndarray

    @property
    def allowed(self) -> Allowed:
        """What the searches take: the masks and each query's row."""
        return Allowed(masks=self.masks, rows=self.rows)

    def allowed_counts(self) -> np.ndarray:
        """Records each query may retrieve."""
        counts: np.ndarray = self.masks.sum(axis=1)[self.rows]
        return counts

    def digest_parts(self, query_ids: Sequence[str]) -> list[object]:
        """What the control digest of the filters hashes: each query's filter, and each mask's bytes."""
        masks = [hashlib.sha256(np.packbits(mask).tobytes()).hexdigest() for mask in self.masks]
        queries = [
            [query_id, {name: list(values) for name, values in self.filters[row].items()}]
            for query_id, row in zip(query_ids, self.rows.tolist(), strict=True)
        ]
        return [int(self.masks.shape[1]), masks, queries]


def plan_filters(
    record_fields: Sequence[Mapping[str, Sequence[str]]],
    query_filters: Sequence[Filter],
    query_ids: Sequence[str],
) -> FilterPlan | None:
    """The `FilterPlan` of these queries over these records; None when no query has a filter.

    Each distinct filter is matched once, value by value over the records' distinct field mappings (shared
    by `FieldReader`), not record by record. Emits one `EmptyFilterWarning` per distinct filter that
    allows no record, naming its queries.
    """
    if not any(query_filters):
        return None
    keys: dict[str, int] = {}
    filters: list[Filter] = []
    rows = np.empty(len(query_filters), dtype=np.intp)
    for position, wanted in enumerate(query_filters):
        key = _canonical({name: sorted(values) for name, values in wanted.items()})
        if key not in keys:
            keys[key] = len(filters)
            filters.append(wanted)
        rows[position] = keys[key]
    # Records sharing a mapping share the answer: match each distinct mapping once per filter.
    distinct: dict[int, int] = {}
    mapping_of = np.empty(len(record_fields), dtype=np.intp)
    representatives: list[Mapping[str, Sequence[str]]] = []
    for position, fields in enumerate(record_fields):
        index = distinct.setdefault(id(fields), len(representatives))
        if index == len(representatives):
            representatives.append(fields)
        mapping_of[position] = index
    masks = np.empty((len(filters), len(record_fields)), dtype=bool)
    for row, wanted in enumerate(filters):
        answers = np.fromiter((matches(fields, wanted) for fields in representatives), dtype=bool)
        masks[row] = answers[mapping_of] if len(representatives) else False
    for row in np.flatnonzero(~masks.any(axis=1)).tolist():
        named = [query_ids[i] for i in np.flatnonzero(rows == row).tolist()]
        shown = _canonical({name: list(values) for name, values in filters[row].items()})
        warnings.warn(
            EmptyFilterWarning(
                f"the filter {shown} of {_queries(named)} matches no document: "
                f"{'it scores' if len(named) == 1 else 'they score'} NaN, excluded from both arms"
            ),
            stacklevel=2,
        )
    return FilterPlan(filters=tuple(filters), masks=masks, rows=rows)


def _queries(ids: Sequence[str]) -> str:
    if len(ids) == 1:
        return f"query {ids[0]!r}"
    return f"{len(ids)} queries (" + ", ".join(repr(query_id) for query_id in ids) + ")"


def allowed_qrels(
    qrels: Mapping[str, Mapping[str, int]],
    query_ids: Sequence[str],
    plan: FilterPlan | None,
    records_of: Mapping[str, np.ndarray],
) -> dict[str, dict[str, int]]:
    """The judgments each query's filter allows: a judged document counts when some record it is made of
    (itself, or with folding its chunks; ``records_of`` maps a judged id to those record rows) passes the
    query's filter. Without a plan, the judgments as they are."""
    if plan is None:
        return {query_id: dict(qrels.get(query_id, {})) for query_id in query_ids}
    result: dict[str, dict[str, int]] = {}
    for query_id, row in zip(query_ids, plan.rows.tolist(), strict=True):
        mask = plan.masks[row]
        # A judged document without text is no record (never embedded nor retrievable): no filter can be
        # matched against it, so its judgment counts as it does unfiltered, against both arms alike.
        result[query_id] = {
            doc_id: grade
            for doc_id, grade in qrels.get(query_id, {}).items()
            if doc_id not in records_of or bool(mask[records_of[doc_id]].any())
        }
    return result


@dataclass(frozen=True, slots=True, eq=False)
class Allowed:
    """Which documents each query may return: ``masks`` is (n_masks, n_documents) bool, ``rows`` gives each
    query's mask row (n_queries,)."""

    masks: np.ndarray
    rows: np.ndarray

    def select(self, queries: np.ndarray) -> Allowed:
        """The same masks for a subset of the queries (their row numbers)."""
        return Allowed(masks=self.masks, rows=self.rows[queries])

    def check(self, n_queries: int, n_documents: int) -> None:
        masks, rows = np.asarray(self.masks), np.asarray(self.rows)
        if masks.dtype != np.bool_ or masks.ndim != 2 or masks.shape[1] != n_documents:
            raise ValueError(
                f"allowed.masks must be a bool array of shape (n_masks, {n_documents}), got "
                f"{masks.dtype} {masks.shape}"
            )
        if rows.shape != (n_queries,) or rows.dtype.kind not in "iu":
            raise ValueError(
                f"allowed.rows must be {n_queries} integer mask rows, got {rows.dtype} {rows.shape}"
            )
        if n_queries and (rows.min() < 0 or rows.max() >= masks.shape[0]):
            raise ValueError(
                f"allowed.rows must lie in [0, {masks.shape[0]}), got {rows.min()}..{rows.max()}"
            )
