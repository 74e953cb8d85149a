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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_embeval.files.atomic import write_atomic

# Loaded in every run (the report's judgments record): the judge's and the merge's modules are not.
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "PROVENANCE_SUFFIX",
    "Source",
    "append_provenance",
    "golden_judgments",
    "judgments_record",
    "provenance_line",
    "provenance_path",
    "read_provenance",
]

PROVENANCE_SUFFIX = ".provenance.jsonl"
_KINDS = ("person", "model")


def provenance_path(qrels: Path) -> Path:
    """The sidecar of a qrels file: ``qrels.tsv`` -> ``qrels.provenance.jsonl``."""
    return qrels.with_name(qrels.stem + PROVENANCE_SUFFIX)


@dataclass(frozen=True, slots=True)
class Source:
    """Who made one judgment: a person or a model (its judge cell), and for a model what let it in."""

    judge: str
    kind: str
    #: the calibration record's file and verdict (models only; None: merged with --accept-uncalibrated)
    calibration: Mapping[str, Any] | None = None
    accepted_uncalibrated: bool = False

    @property
    def by_model(self) -> bool:
        return self.kind == "model"


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
    return line


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
        try:
            record = json.loads(line)
        except ValueError as error:
            raise GoldenError(path, None, number, f"invalid JSON: {error}") from None
        if not isinstance(record, dict):
            raise GoldenError(path, None, number, "expected a JSON object")
        for key, kind in (("query_id", str), ("doc_id", str), ("judge", str), ("grade", int)):
            value = record.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise GoldenError(
                    path, key, number, "missing or not a " + ("string" if kind is str else "grade")
                )
        if record.get("kind") not in _KINDS:
            raise GoldenError(
                path, "kind", number, f"must be 'person' or 'model', got {record.get('kind')!r}"
            )
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
        )
    return sources


# ------------------------------------------------------------------------------------------ in a run


def judgments_record(
    sources: Mapping[Pair, Source], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    """Where the judgments a run used came from, for its JSON report: how many ``qrels`` holds, how many a
    person, a model or nobody on record (merged before provenance was recorded, or typed in) made,
    ``model_fraction`` (None without judgments), and per model judge its count and what let it in."""
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
    by_person = sum(1 for source in used if source is not None and not source.by_model)
    return {
        "total": len(used),
        "by_person": by_person,
        "by_model": by_model,
        "unrecorded": len(used) - by_person - by_model,
        "model_fraction": by_model / len(used) if used else None,
        "models": models,
    }


def golden_judgments(golden: GoldenSet) -> dict[str, Any]:
    """`judgments_record` of a loaded golden set, from the sidecar beside its qrels file (inline judgments
    have neither: all unrecorded); `GoldenError` for a sidecar that does not match the qrels."""
    if golden.qrels_path is None:  # inline judgments (`merging.qrels_file`)
        return judgments_record({}, golden.qrels)
    return judgments_record(read_provenance(provenance_path(golden.qrels_path), golden.qrels), golden.qrels)
