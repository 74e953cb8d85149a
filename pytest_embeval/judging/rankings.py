"""Arms' rankings for the judging workflow, read from the plugin's JSON report or from TREC run files.

Pooling and coverage take rankings as plain mappings (arm name -> query id -> document ids in rank order);
this module reads them from what a run leaves behind and checks them against the golden set.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from pytest_embeval.core.metrics import rank_documents
from pytest_embeval.golden.schema import GoldenSet

__all__ = [
    "Pair",
    "Rankings",
    "ReportError",
    "check_rankings",
    "find_golden_record",
    "find_golden_records",
    "load_report",
    "rankings_from_record",
    "rankings_from_records",
    "read_trec_run",
]

#: (query id, document id)
Pair = tuple[str, str]
#: arm name -> query id -> document ids in rank order
Rankings = Mapping[str, Mapping[str, Sequence[str]]]


class ReportError(Exception):
    """A JSON report that does not hold what is needed (the golden set, both arms' rankings)."""


def load_report(path: str | PathLike[str]) -> dict[str, Any]:
    """Read the plugin's JSON report (``--embeval-json``); raises `ReportError` with a one-line reason."""
    location = Path(path)
    try:
        report = json.loads(location.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{location}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{location}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{location}: not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(report, dict) or not isinstance(report.get("golden_sets"), list):
        raise ReportError(f"{location}: not an embeval JSON report (no 'golden_sets' list)")
    if report.get("schema_version") != 1:
        raise ReportError(f"{location}: unsupported schema_version {report.get('schema_version')!r}")
    return report


#: The key a shortlist's golden-set entries carry: each is one candidate's comparison with the incumbent
#: (the report's ``candidate_name``, `reports.shortlist.CANDIDATE_NAME`).
CANDIDATE_NAME = "candidate_name"


def find_golden_records(report: Mapping[str, Any], golden: GoldenSet, source: str) -> list[Mapping[str, Any]]:
    """The report's entries for ``golden``, by name: one, or a shortlist's one per candidate; among entries
    of the same name, those whose ``path`` (rootdir-relative, its leading ``..`` segments aside) ends the
    golden file's path. ``source`` names the report in messages."""
    records: list[Mapping[str, Any]] = [
        r for r in report["golden_sets"] if isinstance(r, dict) and r.get("name") == golden.name
    ]
    if len(records) > 1:
        here = Path(os.path.abspath(golden.path)).as_posix()
        records = [r for r in records if here.endswith("/" + _below_parents(str(r.get("path", ""))))]
    one_file = len({str(r.get("path")) for r in records}) == 1
    if not records or (len(records) > 1 and not (one_file and all(CANDIDATE_NAME in r for r in records))):
        names = ", ".join(repr(r.get("name")) for r in report["golden_sets"] if isinstance(r, dict))
        found = "none" if not records else "several"
        raise ReportError(
            f"{source}: {found} of the report's golden sets is {golden.name!r} (it holds: {names or 'none'})"
        )
    return records


def find_golden_record(report: Mapping[str, Any], golden: GoldenSet, source: str) -> Mapping[str, Any]:
    """The report's one entry for ``golden`` (`find_golden_records`); a shortlist's first candidate's."""
    return find_golden_records(report, golden, source)[0]


def _below_parents(path: str) -> str:
    """A report path without leading ``/`` and ``..`` segments: ``../shared/a.yaml`` -> ``shared/a.yaml``."""
    parts = path.lstrip("/").split("/")
    while parts and parts[0] == "..":
        parts.pop(0)
    return "/".join(parts)


def rankings_from_record(
    record: Mapping[str, Any], source: str = "report"
) -> dict[str, dict[str, list[str]]]:
    """Both arms' ranked document ids per query from one golden-set entry of the report.

    The arms are named by role (``incumbent``, ``candidate``), the keys of each query's ``ranked``. This is
    the shape `build_report` writes, so the plugin can call it on its own records.
    """
    queries = record.get("queries")
    if not isinstance(queries, list):
        raise ReportError(f"{source}: golden set {record.get('name')!r} has no 'queries' list")
    rankings: dict[str, dict[str, list[str]]] = {}
    for query in queries:
        ranked = query.get("ranked") if isinstance(query, dict) else None
        if not isinstance(ranked, dict) or not ranked:
            raise ReportError(f"{source}: a query of {record.get('name')!r} has no 'ranked' documents")
        for arm, doc_ids in ranked.items():
            if not isinstance(doc_ids, list) or not all(isinstance(doc, str) for doc in doc_ids):
                raise ReportError(f"{source}: query {query.get('id')!r}: ranked.{arm} is not a list of ids")
            rankings.setdefault(str(arm), {})[str(query.get("id"))] = doc_ids
    return rankings


def rankings_from_records(
    records: Sequence[Mapping[str, Any]], source: str = "report"
) -> dict[str, dict[str, list[str]]]:
    """Every arm's ranked document ids per query from a golden file's entries of the report: one entry's
    arms named by role (`rankings_from_record`), a shortlist's the incumbent once and each candidate by its
    name (what pools every arm of a shortlist together)."""
    if len(records) == 1 and CANDIDATE_NAME not in records[0]:
        return rankings_from_record(records[0], source)
    rankings: dict[str, dict[str, list[str]]] = {}
    for record in records:
        arms = rankings_from_record(record, source)
        rankings.setdefault("incumbent", arms["incumbent"])
        rankings[str(record[CANDIDATE_NAME])] = arms["candidate"]
    return rankings


def read_trec_run(path: str | PathLike[str], golden: GoldenSet) -> dict[str, list[str]]:
    """A TREC run file (``qid Q0 docid rank score tag``) as ranked document ids per query, ordered by score
    the way trec_eval orders it (the rank column is ignored, as trec_eval ignores it).

    A run may cover only some queries and rank any number of documents: it is how hand-picked candidates
    (what the golden set's authors know answers a query) or another system (BM25) join a pool. Raises
    `ReportError` naming the line for malformed lines and unknown queries or documents.
    """
    location = Path(path)
    try:
        lines = location.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ReportError(f"{location}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{location}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    scores: dict[str, dict[str, float]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split()
        where = f"{location}:{number}"
        if len(fields) != 6:
            raise ReportError(f"{where}: expected 'qid Q0 docid rank score tag', got {len(fields)} fields")
        query_id, _, doc_id, _, score, _ = fields
        if query_id not in query_ids:
            raise ReportError(f"{where}: unknown query {query_id!r} (not in golden set {golden.name!r})")
        if doc_id not in doc_ids:
            raise ReportError(f"{where}: unknown document {doc_id!r} (not in the corpus of {golden.name!r})")
        try:
            value = float(score)
        except ValueError:
            raise ReportError(f"{where}: score {score!r} is not a number") from None
        if doc_id in scores.setdefault(query_id, {}):
            raise ReportError(f"{where}: document {doc_id!r} listed twice for query {query_id!r}")
        scores[query_id][doc_id] = value
    return {query_id: rank_documents(by_doc) for query_id, by_doc in scores.items()}


def check_rankings(golden: GoldenSet, rankings: Rankings, depth: int | None) -> None:
    """Every arm ranks known documents for every golden query, at least ``depth`` deep (or the corpus)."""
    if not rankings:
        raise ValueError("no arms: give at least one arm's rankings")
    query_ids = {query.id for query in golden.queries}
    # What rankings hold: the corpus records, or with folding the documents their chunks fold to.
    doc_ids = golden.judged_ids()
    need = None if depth is None else min(depth, len(doc_ids))
    for arm, by_query in rankings.items():
        unknown = next((qid for qid in by_query if qid not in query_ids), None)
        if unknown is not None:
            raise ValueError(
                f"arm {arm!r} ranks query {unknown!r}, which is not in golden set {golden.name!r}"
            )
        for query in golden.queries:
            ranked = by_query.get(query.id)
            if ranked is None:
                raise ValueError(f"arm {arm!r} has no ranking for query {query.id!r}")
            # One C-level subset test per ranking; the stray document is looked for only when there is one.
            if not doc_ids.issuperset(ranked):
                stray = next(doc for doc in ranked if doc not in doc_ids)
                raise ValueError(
                    f"arm {arm!r} ranks document {stray!r} for query {query.id!r}, "
                    f"which is not in the corpus of {golden.name!r}"
                )
            # A filtered query may have fewer documents to rank than the depth.
            if need is not None and len(ranked) < need and not query.filters:
                raise ValueError(
                    f"arm {arm!r} ranks only {len(ranked)} documents for query {query.id!r}, "
                    f"fewer than the pool depth {need}"
                )
