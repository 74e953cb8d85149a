"""A golden set's queries file (JSONL or TSV: `data_files` has what every data file reader shares): each
query's text, its stratum fields, its filters (JSONL) and the traffic it stands for.

A query's ``frequency`` (a JSON key or a TSV column) is how often it occurs in the traffic the golden set
stands for, a positive number, given for every query of the file or for none.
A query's ``inclusion`` (likewise) is the probability with which the sample it belongs to drew it from the
population of distinct queries (``embeval sample`` writes it), a number above 0 and at most 1, for every
query or none, and only beside a ``frequency``; the query then stands for frequency / inclusion of the
traffic (`Query.traffic_weight`). The inline ``queries:`` of a golden file are held to the same rules
(`data_sections`).
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

from pytest_embeval.golden.data_files import (
    GoldenError,
    Query,
    check_unique_id,
    checked_id,
    json_id,
    json_lines,
    json_string,
    json_text,
    read_text,
    text_format,
    tsv_rows,
)
from pytest_embeval.golden.filters import Filter, field_problem, filter_value

__all__ = [
    "FREQUENCY",
    "INCLUSION",
    "check_frequencies",
    "frequency_problem",
    "frequency_value",
    "inclusion_problem",
    "inclusion_value",
    "missing_stratum_problem",
    "read_queries",
    "stratum_type_problem",
    "stratum_value",
]

#: JSON keys of a query record that are not fields.
_NOT_FIELDS = frozenset({"_id", "id", "text", "title", "metadata", "filters"})


def missing_stratum_problem(query_id: str, name: str, present: Iterable[str]) -> str:
    """A query without the stratum field ``name``; a field of that query with a close name is suggested (a
    misspelt ``strata:`` entry is the usual cause)."""
    close = difflib.get_close_matches(name, [field for field in present if field not in _NOT_FIELDS], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"query {query_id!r} has no stratum field {name!r}{hint}"


def stratum_type_problem(query_id: str, name: str, got: str) -> str:
    return f"query {query_id!r}: stratum field {name!r} must be a string or number, got {got}"


def stratum_value(path: Path, key: str, line: int, query_id: str, name: str, value: str) -> str:
    if not value.strip():
        problem = f"query {query_id!r} has an empty value for stratum field {name!r}"
        raise GoldenError(path, key, line, problem)
    return value


FREQUENCY = "frequency"
INCLUSION = "inclusion"
TOO_MUCH_TRAFFIC = "more traffic than a number holds (above 1.8e308); give frequencies on a smaller scale"


def _number(value: object) -> float | None:
    """A JSON number or a TSV/YAML cell as a float; None when it is neither (a boolean is not a number)."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            return float(value.strip())
    except ValueError:
        return None
    except OverflowError:  # an integer of more digits than a float holds
        return math.inf
    return None


def _shown(value: object) -> str:
    return repr(value) if isinstance(value, str) else json_text(value)


def frequency_value(path: Path, key: str, line: int, query_id: str, value: object) -> float:
    """A query's frequency as written: a finite number above 0 (a JSON number or a TSV/YAML cell)."""
    number = _number(value)
    if number == math.inf and not isinstance(value, float):  # written as digits, too many for a number
        problem = f"query {query_id!r}: frequency {_shown(value)} is {TOO_MUCH_TRAFFIC}"
        raise GoldenError(path, key, line, problem)
    if number is None or not math.isfinite(number) or number <= 0:
        raise GoldenError(path, key, line, frequency_problem(query_id, _shown(value)))
    return number


def frequency_problem(query_id: str, shown: str) -> str:
    return f"query {query_id!r}: frequency must be a number above 0, got {shown}"


def inclusion_value(path: Path, key: str, line: int, query_id: str, value: object) -> float:
    """A query's inclusion probability as written: a number above 0 and at most 1."""
    number = _number(value)
    if number is None or not 0 < number <= 1:  # NaN fails the comparison too
        raise GoldenError(path, key, line, inclusion_problem(query_id, _shown(value)))
    return number


def inclusion_problem(query_id: str, shown: str) -> str:
    return f"query {query_id!r}: inclusion must be a probability above 0 and at most 1, got {shown}"


def check_frequencies(
    path: Path, queries: Sequence[Query], lines: Mapping[str, int], key: str | None = None
) -> None:
    """Every query has a frequency or none has, and likewise an inclusion: a traffic share computed from some
    queries' frequencies and others' counts would mean nothing. An inclusion needs a frequency: it corrects
    the frequency weights of a drawn sample, and without them the run has no use for it. The error names
    ``key``, or (None: a data file) the column or JSON key at fault."""
    for name in (FREQUENCY, INCLUSION):
        given = [query for query in queries if getattr(query, name) is not None]
        if not given or len(given) == len(queries):
            continue
        missing = next(query for query in queries if getattr(query, name) is None)
        problem = (
            f"query {missing.id!r} has no {name} while {given[0].id!r} (line {lines[given[0].id]}) has one; "
            f"give every query {'a' if name == FREQUENCY else 'an'} {name} or none"
        )
        raise GoldenError(path, key or name, lines[missing.id], problem)
    if queries and queries[0].inclusion is not None and queries[0].frequency is None:
        problem = (
            f"query {queries[0].id!r} has an inclusion but no frequency: an inclusion probability corrects "
            "the frequency weights of a drawn sample (frequency / inclusion); give every query its frequency"
        )
        raise GoldenError(path, key or INCLUSION, lines[queries[0].id], problem)
    # Each is finite, but their ratio may not be: the traffic a query stands for must be a number.
    for query in queries:
        weight = query.traffic_weight
        if weight is not None and not math.isfinite(weight):
            problem = (
                f"query {query.id!r}: frequency {query.frequency:g} / inclusion {query.inclusion:g} is "
                f"{TOO_MUCH_TRAFFIC}"
            )
            raise GoldenError(path, key or INCLUSION, lines[query.id], problem)


def read_queries(
    path: Path,
    strata: Sequence[str],
    declared: str | None = None,
    document_fields: AbstractSet[str] = frozenset(),
) -> list[Query]:
    """Every query of a queries file, with its stratum fields and (JSONL) its filters, which may name only
    the ``document_fields``."""
    text = read_text(path)
    queries: list[Query] = []
    first_line: dict[str, int] = {}
    if text_format(path, text, declared, "id<TAB>text, or a header row naming the columns") == "jsonl":
        for line, record in json_lines(path, text):
            query_id = json_id(path, line, record)
            check_unique_id(path, "query", query_id, line, first_line)
            query_text = json_string(path, line, record, "text")
            _check_query_text(path, line, query_id, query_text)
            fields: dict[str, str] = {}
            for name in strata:
                if name not in record:
                    raise GoldenError(path, name, line, missing_stratum_problem(query_id, name, record))
                value = record[name]
                if value is None or isinstance(value, (dict, list)):
                    raise GoldenError(
                        path, name, line, stratum_type_problem(query_id, name, json_text(value))
                    )
                text_value = value if isinstance(value, str) else json.dumps(value)
                fields[name] = stratum_value(path, name, line, query_id, name, text_value)
            filters: Filter = {}
            if "filters" in record:
                filters = _json_filter(path, line, record["filters"], query_id, document_fields)
            frequency = inclusion = None
            if FREQUENCY in record:
                frequency = frequency_value(path, FREQUENCY, line, query_id, record[FREQUENCY])
            if INCLUSION in record:
                inclusion = inclusion_value(path, INCLUSION, line, query_id, record[INCLUSION])
            queries.append(Query(query_id, query_text, fields, filters, frequency, inclusion))
        check_frequencies(path, queries, first_line)
        return queries
    for line, row, columns in tsv_rows(path, text, documents=False):
        query_id = checked_id(path, "id", line, row[columns.id])
        check_unique_id(path, "query", query_id, line, first_line)
        query_text = row[columns.text]
        _check_query_text(path, line, query_id, query_text)
        fields = {}
        for name in strata:
            if name not in columns.fields:
                problem = missing_stratum_problem(query_id, name, columns.fields)
                if not columns.fields:
                    problem += " (a TSV file needs a header row naming its stratum columns)"
                raise GoldenError(path, name, line, problem)
            fields[name] = stratum_value(path, name, line, query_id, name, row[columns.fields[name]])
        frequency = inclusion = None
        if FREQUENCY in columns.fields:
            frequency = frequency_value(path, FREQUENCY, line, query_id, row[columns.fields[FREQUENCY]])
        if INCLUSION in columns.fields:
            inclusion = inclusion_value(path, INCLUSION, line, query_id, row[columns.fields[INCLUSION]])
        queries.append(Query(query_id, query_text, fields, frequency=frequency, inclusion=inclusion))
    check_frequencies(path, queries, first_line)
    return queries


def _json_filter(
    path: Path, line: int, raw: object, query_id: str, document_fields: AbstractSet[str]
) -> Filter:
    if not isinstance(raw, dict) or not raw:
        raise GoldenError(
            path, "filters", line, f"must be a non-empty object {{field: value}}, got {json_text(raw)}"
        )
    result: dict[str, tuple[str, ...]] = {}
    for name, value in raw.items():
        key = f"filters.{name}"
        items = value if isinstance(value, list) else [value]
        values = [filter_value(item) for item in items]
        if not items or any(item is None for item in values):
            problem = (
                f"must be a string, number or boolean, or a non-empty list of them, got {json_text(value)}"
            )
            raise GoldenError(path, key, line, problem)
        unknown = field_problem(name, document_fields)
        if unknown is not None:
            raise GoldenError(path, key, line, f"query {query_id!r}: {unknown}")
        result[name] = tuple(dict.fromkeys(item for item in values if item is not None))
    return result


def _check_query_text(path: Path, line: int, query_id: str, text: str) -> None:
    if not text.strip():
        raise GoldenError(path, "text", line, f"query {query_id!r} has an empty text")
