"""Free seeds: (query, document, source) pairs that production already claims relevant, a support ticket
resolved with a link to a document or a click in a search log, read from a seed file (`read_seeds`) and
brought into the pool (`pooling.pool_from_rankings`) or, trusted, into the qrels (`trusted_seeds`).

A seed is a claim, and a biased one: a click log records what the **current** system surfaced, so its
seeds are documents the incumbent showed. Taken for judgments they give the incumbent's top k relevant
documents for free while what only the candidate surfaced stays unjudged (and counts as not relevant). So
a seed never stands in for a graded judgment of what only one arm showed: with ``--trust-seeds`` a seed in
exactly one arm's top ``depth`` still goes on the sheet for a judge to confirm (`trusted_seeds`), every seed
pair joins the pool beside both arms' results (never instead of them), and coverage reports the seeded
share of each arm's top k apart from the judged one, with a warning when the seeds lie in one arm's rankings
only (`one_arm_seeds`).

A seed file is TSV with a header row or JSON lines, one seed per line, with the keys (columns)
``query_id``, ``doc_id``, ``source`` and optionally ``grade`` (an integer >= 1, the grade a trusted seed
enters with; default: the golden set's ``relevance_level``, the least grade that counts as relevant: a seed
says relevant, not how much) and ``judged_on`` (``YYYY-MM-DD``, the day the ticket was resolved or the
click made; default: the seed file's date).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from pytest_embeval.golden.data_files import GoldenError, json_object
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.provenance import parse_day
from pytest_embeval.judging.rankings import Pair, Rankings

__all__ = [
    "SEED_COLUMNS",
    "Seed",
    "SeedError",
    "one_arm_seeds",
    "read_seeds",
    "trusted_seeds",
]

#: The columns (JSON keys) a seed file must have; ``grade`` and ``judged_on`` may follow.
SEED_COLUMNS = ("query_id", "doc_id", "source")
_OPTIONAL = ("grade", "judged_on")


class SeedError(ValueError):
    """A seed file that cannot be used: one line naming the file (and line)."""


@dataclass(frozen=True, slots=True)
class Seed:
    query_id: str
    doc_id: str
    #: where the claim comes from: ``ticket``, ``click``, ...
    source: str
    #: the grade a trusted seed enters the qrels with
    grade: int
    #: ``YYYY-MM-DD``; None: the seed file's date applies
    judged_on: str | None

    @property
    def pair(self) -> Pair:
        return (self.query_id, self.doc_id)


def read_seeds(path: str | PathLike[str], golden: GoldenSet, *, max_grade: int) -> tuple[Seed, ...]:
    """The seeds of a seed file (TSV with a header, or JSON lines: a first line that opens ``{``), in file
    order, one per pair (a pair listed again keeps its first line). Raises `SeedError` with one line for
    the first problem: a missing file or column, an empty file, an unknown query or document, an empty
    source, a grade that is not an integer in ``1..max_grade`` or a bad date."""
    location = Path(path)
    try:
        text = location.read_text(encoding="utf-8").removeprefix("\ufeff")
    except FileNotFoundError:
        raise SeedError(f"{location}: file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SeedError(f"{location}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    expected = "\t".join(SEED_COLUMNS)
    if not text.strip():
        raise SeedError(f"{location}: empty seed file (expected a TSV header {expected!r}, or JSON lines)")
    records = _json_lines(location, text) if text.lstrip().startswith("{") else _tsv_rows(location, text)
    if not records:
        raise SeedError(f"{location}: no seeds, only a header")
    query_ids = {query.id for query in golden.queries}
    doc_ids = {doc.id for doc in golden.documents}
    seeds: dict[Pair, Seed] = {}
    for number, record in records:
        where = f"{location}:{number}"
        cells = {key: _cell(record.get(key), integer=key != "source") for key in SEED_COLUMNS}
        missing = [key for key, cell in cells.items() if not cell]
        if missing:
            raise SeedError(f"{where}: missing or empty {', '.join(repr(key) for key in missing)}")
        query_id, doc_id, source = cells.values()
        if query_id not in query_ids:
            raise SeedError(f"{where}: unknown query {query_id!r} (not in golden set {golden.name!r})")
        if doc_id not in doc_ids:
            raise SeedError(f"{where}: unknown document {doc_id!r} (not in the corpus of {golden.name!r})")
        grade = _grade(where, record.get("grade"), golden.relevance_level, max_grade)
        judged_on = record.get("judged_on") or None
        if judged_on is not None:
            try:
                parse_day(str(judged_on), past=True)
            except ValueError as error:
                raise SeedError(f"{where}: judged_on: {error}") from None
        seeds.setdefault((query_id, doc_id), Seed(query_id, doc_id, source, grade, judged_on))
    return tuple(seeds.values())


def _cell(value: object, *, integer: bool) -> str:
    """A seed's id or source as text: a string, or for an id a JSON integer as the golden loader reads
    one (``"_id": 7`` is the id ``"7"``); "" for anything else."""
    if isinstance(value, str):
        return value.strip()
    if integer and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


def _grade(where: str, value: Any, default: int, max_grade: int) -> int:
    if value is None or value == "":
        return default
    try:
        grade = int(value) if isinstance(value, str) else value
    except ValueError:
        grade = None
    if not isinstance(grade, int) or isinstance(grade, bool) or not 1 <= grade <= max_grade:
        raise SeedError(
            f"{where}: grade {value!r} is not an integer in 1..{max_grade} (a seed claims relevance)"
        )
    return grade


def _tsv_rows(location: Path, text: str) -> list[tuple[int, dict[str, str]]]:
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter="\t"))
    header = [cell.strip() for cell in rows[0]]
    missing = [key for key in SEED_COLUMNS if key not in header]
    if missing:
        columns = ", ".join(repr(key) for key in missing)
        raise SeedError(
            f"{location}:1: missing column(s) {columns} (a seed file's header is "
            f"{'<TAB>'.join(SEED_COLUMNS)}, optionally with grade and judged_on)"
        )
    records = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header):
            raise SeedError(f"{location}:{number}: {len(row)} cells, but the header has {len(header)}")
        records.append((number, {name: cell.strip() for name, cell in zip(header, row, strict=False)}))
    return records


def _json_lines(location: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json_object(location, number, line)  # the golden files' JSON lines, checked alike
        except GoldenError as error:
            raise SeedError(str(error)) from None
        unknown = sorted(set(record) - set(SEED_COLUMNS) - set(_OPTIONAL))
        if unknown:
            raise SeedError(f"{location}:{number}: unknown key {unknown[0]!r}")
        records.append((number, record))
    return records


def _ranking_arms(rankings: Rankings, pair: Pair, depth: int | None) -> list[str]:
    """The arms whose top ``depth`` (None: whole ranking) holds the pair's document."""
    query_id, doc_id = pair
    return [arm for arm, ranked in rankings.items() if doc_id in ranked.get(query_id, ())[:depth]]


def trusted_seeds(seeds: Sequence[Seed], rankings: Rankings, *, depth: int) -> tuple[list[Seed], list[Seed]]:
    """The seeds ``--trust-seeds`` may enter into the qrels directly, and those that must still be
    confirmed on the sheet: a seed in the top ``depth`` of exactly one of two or more arms (what only that
    arm showed, which is where a click log's seeds come from), or of the only arm pooled."""
    trusted: list[Seed] = []
    to_confirm: list[Seed] = []
    for seed in seeds:
        arms = _ranking_arms(rankings, seed.pair, depth)
        (to_confirm if len(arms) == 1 else trusted).append(seed)
    return trusted, to_confirm


def one_arm_seeds(seeded: Mapping[Pair, str], rankings: Rankings) -> str | None:
    """A warning when the seeds lie in one arm's rankings only: every seed pair some arm ranks (anywhere in
    its ranking) is ranked by the same arm, and another arm misses some of them. That is the trace of seeds
    taken from what one system surfaced (a click log of the incumbent): they favour that arm. None
    otherwise, or with fewer than two arms."""
    if len(rankings) < 2:
        return None
    ranked = {pair: _ranking_arms(rankings, pair, None) for pair in seeded}
    found = [arms for arms in ranked.values() if arms]
    for arm in rankings:
        if found and all(arm in arms for arms in found) and any(len(arms) < len(rankings) for arms in found):
            missed = {
                other: sum(1 for arms in found if other not in arms) for other in rankings if other != arm
            }
            others = ", ".join(f"{other} ranks {len(found) - n}" for other, n in missed.items())
            sources = ", ".join(sorted(set(seeded.values())))
            return (
                f"the seeds ({sources}) lie in {arm}'s rankings only: of the {len(found)} seeded pairs "
                f"an arm ranks, {arm} ranks all and {others}; seeds taken from what one system surfaced "
                "(a click log) favour it, so judge the other arms' results too (embeval pool) and read "
                "judged@k apart from seeded@k"
            )
    return None
