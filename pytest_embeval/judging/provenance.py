"""Where each judgment came from: a person or a judge model, and the calibration that let the model's
grades in (the records themselves: `calibration_records`).

The qrels file keeps its layout: three columns that every reader accepts. An extra column would not do:
our own reader refuses a BEIR qrels line with a fourth column and a TREC one with a fifth, and so do
pytrec_eval's ``parse_qrel`` and ir-measures' ``read_trec_qrels`` (BEIR's loader alone reads the first three
columns and ignores the rest). So the sources live in a **sidecar** beside it: ``qrels.tsv`` ->
``qrels.provenance.jsonl`` (``qrels/test.tsv`` -> ``qrels/test.provenance.jsonl``; not ``.tsv``, so that no
reader looking for splits takes it for one), one JSON object per judgment `embeval merge` appended:

    {"query_id": "q1", "doc_id": "d3", "grade": 2, "judge": "openai:gpt-4o-mini prompt:3f2a9c1b0d4e",
     "kind": "model",
     "calibration": {"file": "calibration.json", "sha256": "…", "verdict": "usable", "weighted_kappa": 0.81},
     "accepted_uncalibrated": false}

A person's line has ``"kind": "person"`` and no calibration. Judgments merged before provenance was
recorded (or written into the qrels by hand) have no line: they are counted as *unrecorded*, never as a
model's. A line must describe a judgment the qrels hold, with its grade: a qrels line revised by hand makes
its provenance line an error until that line is revised too.

Further keys, each only when it applies:

* ``"judged_on": "2026-11-30"``: the day the judgment was made (`embeval merge` writes it on every line it
  appends: the sheets' date or ``--judged-on``). Lines written before dates were recorded have none: their
  age is unknown, and a golden set with any undated judgment has no known median age (`judgments_age`).
* ``"seed": "ticket"``: the pair came from a seed file (`seeds`) with that source. With ``"kind": "seed"``
  the seed itself is the judgment (``embeval pool --trust-seeds``), nobody graded it; with ``person`` or
  ``model`` a judge confirmed the seed on a sheet.
* ``"previous": [{"grade": 1, "judge": "ana", "kind": "person", "judged_on": "2025-01-10"}, ...]``: the
  judgments of the pair that a refresh (``embeval merge --refresh``) replaced, oldest first.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pytest_embeval.files.atomic import write_atomic

# Loaded in every run (the report's judgments record): the judge's and the merge's modules are not.
from pytest_embeval.golden.data_files import GoldenError, json_object
from pytest_embeval.golden.qrels_files import PROVENANCE_SUFFIX, provenance_path
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.golden.shelf_life import DEFAULT_SHELF_LIFE, ShelfLife
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "PROVENANCE_SUFFIX",
    "Source",
    "append_provenance",
    "golden_judgments",
    "golden_sources",
    "judgments_age",
    "judgments_record",
    "parse_day",
    "provenance_line",
    "provenance_path",
    "read_provenance",
    "rewrite_provenance",
]

_KINDS = ("person", "model", "seed")
#: what a ``previous`` entry keeps of a replaced judgment
_PREVIOUS_KEYS = ("grade", "judge", "kind", "judged_on", "seed")


def parse_day(text: str, *, past: bool = False) -> date:
    """``YYYY-MM-DD`` -> date; ``ValueError`` (one line, quoting ``text``) otherwise, and with ``past`` for a
    day after today (UTC): a judgment, a seed or a sheet dated in the future would read as fresh for as long
    as one likes, and the judgments' age with it."""
    try:
        if len(text) != 10:
            raise ValueError
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"expected a date YYYY-MM-DD, got {text!r}") from None
    today = datetime.now(timezone.utc).date()
    if past and day > today:
        raise ValueError(f"{text} is in the future (today is {today.isoformat()}, UTC)")
    return day


@dataclass(frozen=True, slots=True)
class Source:
    """Who made one judgment: a person, a model (its judge cell) or a trusted seed, for a model what let it
    in, and when it was made."""

    judge: str
    #: ``person``, ``model`` or ``seed`` (a seed taken as the judgment, never graded)
    kind: str
    #: the calibration record's file and verdict (models only; None: merged with --accept-uncalibrated)
    calibration: Mapping[str, Any] | None = None
    accepted_uncalibrated: bool = False
    #: the day the judgment was made, ``YYYY-MM-DD``; None: not recorded
    judged_on: str | None = None
    #: the source a seed file gave the pair (``ticket``, ``click``...); None: not a seed
    seed: str | None = None
    #: the judgments of the pair a refresh replaced, oldest first (`_PREVIOUS_KEYS` of each)
    previous: tuple[Mapping[str, Any], ...] = ()

    @property
    def by_model(self) -> bool:
        return self.kind == "model"

    @property
    def by_seed(self) -> bool:
        return self.kind == "seed"

    def replaced_by(self, grade: int, successor: Source) -> Source:
        """``successor`` with this judgment (of ``grade``) appended to its ``previous``."""
        # An unrecorded judgment (no sidecar line) is kept with its grade alone: who made it is not known.
        entry = {"grade": grade, "judge": self.judge or None, "kind": self.kind, "judged_on": self.judged_on}
        if self.seed is not None:
            entry["seed"] = self.seed
        return Source(
            successor.judge,
            successor.kind,
            successor.calibration,
            successor.accepted_uncalibrated,
            successor.judged_on,
            successor.seed if successor.seed is not None else self.seed,
            (*self.previous, entry),
        )


# --------------------------------------------------------------------------------------------- sidecar


def append_provenance(path: Path, lines: Sequence[Mapping[str, Any]]) -> None:
    """Append provenance lines to the sidecar (created when missing), atomically."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if text and not text.endswith("\n"):
        text += "\n"
    text += "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    write_atomic(path, text)


def provenance_line(query_id: str, doc_id: str, grade: int, source: Source) -> dict[str, Any]:
    """The sidecar line of one merged judgment."""
    line: dict[str, Any] = {
        "query_id": query_id,
        "doc_id": doc_id,
        "grade": grade,
        "judge": source.judge,
        "kind": source.kind,
    }
    if source.by_model:
        line["calibration"] = None if source.calibration is None else dict(source.calibration)
        line["accepted_uncalibrated"] = source.accepted_uncalibrated
    if source.judged_on is not None:
        line["judged_on"] = source.judged_on
    if source.seed is not None:
        line["seed"] = source.seed
    if source.previous:
        line["previous"] = [dict(entry) for entry in source.previous]
    return line


def rewrite_provenance(path: Path, replaced: Collection[Pair], lines: Sequence[Mapping[str, Any]]) -> None:
    """The sidecar without its lines of the ``replaced`` pairs, then ``lines``, atomically: a refresh
    replaces judgments (their old grades live on in each new line's ``previous``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    gone = set(replaced)
    kept = []
    for line in text.splitlines():
        if line.strip():
            record = json.loads(line)  # checked by `read_provenance` when the golden set was loaded
            if (record["query_id"], record["doc_id"]) not in gone:
                kept.append(line + "\n")
    kept += [json.dumps(line, ensure_ascii=False) + "\n" for line in lines]
    write_atomic(path, "".join(kept))


def read_provenance(path: Path, qrels: Mapping[str, Mapping[str, int]]) -> dict[Pair, Source]:
    """The sources the sidecar ``path`` records (none when it does not exist), checked against ``qrels``;
    `GoldenError` naming the sidecar, the line and the key."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise GoldenError(
            path, None, None, f"cannot read: {getattr(error, 'strerror', None) or error}"
        ) from None
    sources: dict[Pair, Source] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = json_object(path, number, line)  # the golden files' JSON lines, checked alike
        for key, kind in (("query_id", str), ("doc_id", str), ("judge", str), ("grade", int)):
            value = record.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise GoldenError(
                    path, key, number, "missing or not a " + ("string" if kind is str else "grade")
                )
        if record.get("kind") not in _KINDS:
            raise GoldenError(
                path, "kind", number, f"must be 'person', 'model' or 'seed', got {record.get('kind')!r}"
            )
        judged_on = record.get("judged_on")
        if judged_on is not None:
            try:
                parse_day(judged_on if isinstance(judged_on, str) else repr(judged_on), past=True)
            except ValueError as error:
                raise GoldenError(path, "judged_on", number, str(error)) from None
        seed = record.get("seed")
        if seed is not None and (not isinstance(seed, str) or not seed):
            raise GoldenError(path, "seed", number, f"must be the seed's source, got {seed!r}")
        previous = record.get("previous", [])
        if not isinstance(previous, list) or not all(isinstance(entry, dict) for entry in previous):
            raise GoldenError(path, "previous", number, "must be a list of the judgments a refresh replaced")
        pair = (record["query_id"], record["doc_id"])
        held = qrels.get(pair[0], {}).get(pair[1])
        if held is None:
            problem = f"query {pair[0]!r} and document {pair[1]!r} are not judged in the qrels"
            raise GoldenError(path, "doc_id", number, f"{problem}; delete this line or restore the judgment")
        if held != record["grade"]:
            problem = (
                f"records grade {record['grade']} by {record['judge']!r}, the qrels hold {held} (revised by "
                "hand?); revise this line too"
            )
            raise GoldenError(path, "grade", number, problem)
        calibration = record.get("calibration")
        sources[pair] = Source(
            judge=record["judge"],
            kind=record["kind"],
            calibration=calibration if isinstance(calibration, dict) else None,
            accepted_uncalibrated=record.get("accepted_uncalibrated") is True,
            judged_on=judged_on,
            seed=seed,
            previous=tuple(
                {key: entry.get(key) for key in _PREVIOUS_KEYS if key in entry} for entry in previous
            ),
        )
    return sources


# ------------------------------------------------------------------------------------------ in a run


def judgments_age(days: Sequence[str | None], *, today: date, shelf_life: ShelfLife) -> dict[str, Any]:
    """How old the judgments are, from the day each was made (None: not recorded), for the report.

    The median is the middle judgment's day (the earlier of the two middle ones for an even count), known
    only when every judgment is dated: an undated judgment could be of any age, so with one the median age,
    the day it expires and ``stale`` are None (unknown, never guessed). ``stale``: the median judgment is
    past ``shelf_life`` on ``today`` (the day of the run).
    """
    dated = sorted(day for day in days if day is not None)
    undated = len(days) - len(dated)
    median = dated[(len(dated) - 1) // 2] if dated and not undated else None
    expires = None if median is None else shelf_life.expires(parse_day(median))
    return {
        "today": today.isoformat(),
        "dated": len(dated),
        "undated": undated,
        "oldest": dated[0] if dated else None,
        "median": median,
        "newest": dated[-1] if dated else None,
        "median_age_days": None if median is None else (today - parse_day(median)).days,
        "shelf_life": str(shelf_life),
        "expires": None if expires is None else expires.isoformat(),
        "stale": None if expires is None else today >= expires,
    }


def judgments_record(
    sources: Mapping[Pair, Source],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    today: date,
    shelf_life: ShelfLife = DEFAULT_SHELF_LIFE,
) -> dict[str, Any]:
    """Where the judgments a run used came from, for its JSON report: how many ``qrels`` holds, how many a
    person, a model, a trusted seed or nobody on record (merged before provenance was recorded, or typed in)
    made, ``model_fraction`` (None without judgments), per model judge its count and what let it in, and
    their ``age`` (`judgments_age`)."""
    used = [sources.get((query, doc)) for query, grades in qrels.items() for doc in grades]
    models: dict[str, dict[str, Any]] = {}
    for source in used:
        if source is not None and source.by_model:
            entry = models.setdefault(
                source.judge,
                {
                    "judgments": 0,
                    "calibration": None if source.calibration is None else dict(source.calibration),
                    "accepted_uncalibrated": source.accepted_uncalibrated,
                },
            )
            entry["judgments"] += 1
    by_model = sum(entry["judgments"] for entry in models.values())
    by_seed = sum(1 for source in used if source is not None and source.by_seed)
    by_person = sum(1 for source in used if source is not None and source.kind == "person")
    return {
        "total": len(used),
        "by_person": by_person,
        "by_model": by_model,
        "unrecorded": len(used) - by_person - by_model - by_seed,
        "model_fraction": by_model / len(used) if used else None,
        "models": models,
        "by_seed": by_seed,
        "age": judgments_age(
            [None if source is None else source.judged_on for source in used],
            today=today,
            shelf_life=shelf_life,
        ),
    }


def golden_sources(golden: GoldenSet) -> dict[Pair, Source]:
    """The sources the sidecar beside a loaded golden set's qrels file records (inline judgments have none);
    `GoldenError` for a sidecar that does not match the qrels."""
    if golden.qrels_path is None:  # inline judgments (`merging.qrels_file`)
        return {}
    return read_provenance(provenance_path(golden.qrels_path), golden.qrels)


def golden_judgments(golden: GoldenSet, *, today: date) -> dict[str, Any]:
    """`judgments_record` of a loaded golden set on ``today``, against its ``shelf_life``."""
    return judgments_record(golden_sources(golden), golden.qrels, today=today, shelf_life=golden.shelf_life)
