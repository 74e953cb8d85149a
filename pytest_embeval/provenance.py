"""Where each judgment came from: a person or a judge model, and the calibration that let the model's
grades in; and the calibration records `embeval calibrate --record` writes and `embeval merge` checks.

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

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_embeval.disagreement import Calibration, Verdict
from pytest_embeval.golden import GoldenError, GoldenSet
from pytest_embeval.judge import is_model_judge
from pytest_embeval.merging import Judgment, qrels_file
from pytest_embeval.output import write_atomic
from pytest_embeval.rankings import Pair

__all__ = [
    "CALIBRATION_KIND",
    "PROVENANCE_SUFFIX",
    "CalibrationRecord",
    "Source",
    "append_provenance",
    "calibration_record",
    "calibration_sources",
    "golden_judgments",
    "judgments_record",
    "model_lines",
    "provenance_line",
    "provenance_path",
    "read_calibration",
    "read_provenance",
]

PROVENANCE_SUFFIX = ".provenance.jsonl"
CALIBRATION_KIND = "embeval calibration"
CALIBRATION_VERSION = 1
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


# ------------------------------------------------------------------------------------ calibration records


@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    path: Path
    sha256: str
    judge: str
    verdict: str
    weighted_kappa: float | None
    kappa: float | None
    pairs: tuple[Pair, ...]

    def reference(self) -> dict[str, Any]:
        """What a provenance line says of the calibration that let a model's grade in."""
        return {
            "file": str(self.path),
            "sha256": self.sha256,
            "verdict": self.verdict,
            "kappa": self.kappa,
            "weighted_kappa": self.weighted_kappa,
        }


def calibration_record(
    calibration: Calibration,
    *,
    judge: str,
    people: Sequence[str],
    human: str,
    model: str,
    pairs: Sequence[Pair],
) -> dict[str, Any]:
    """The JSON record of a calibration, for ``embeval merge --calibration``."""
    agreement = calibration.agreement

    def test(value: Any) -> dict[str, Any] | None:
        return None if value is None else {"statistic": value.statistic, "df": value.df, "p": value.p}

    return {
        "kind": CALIBRATION_KIND,
        "version": CALIBRATION_VERSION,
        "judge": judge,
        "people": list(people),
        "human_sheet": human,
        "model_sheet": model,
        "verdict": calibration.verdict.value,
        "n": agreement.n,
        "percent": agreement.percent,
        "kappa": agreement.kappa,
        "weighted_kappa": agreement.weighted_kappa,
        "min_kappa": calibration.min_kappa,
        "alpha": calibration.alpha,
        "homogeneity": test(calibration.homogeneity),
        "symmetry": test(calibration.symmetry),
        "mean_difference": calibration.mean_difference,
        "interval": None if calibration.interval is None else list(calibration.interval),
        "shifts": [shift.line() for shift in calibration.shifted],
        "labels": list(agreement.labels),
        "matrix": [list(row) for row in agreement.matrix],
        "pairs": [list(pair) for pair in pairs],
    }


def read_calibration(path: Path) -> CalibrationRecord:
    """A calibration record written by ``embeval calibrate --record``; ``ValueError`` (one line) otherwise."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path}: file not found") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        record = json.loads(data)
    except ValueError:
        record = None
    if not isinstance(record, dict) or record.get("kind") != CALIBRATION_KIND:
        raise ValueError(f"{path}: not a calibration record (written by embeval calibrate --record)")
    if record.get("version") != CALIBRATION_VERSION:
        raise ValueError(
            f"{path}: calibration record version {record.get('version')!r}, not {CALIBRATION_VERSION}"
        )
    judge, verdict, pairs = record.get("judge"), record.get("verdict"), record.get("pairs")
    if (
        not isinstance(judge, str)
        or verdict not in {v.value for v in Verdict}
        or not isinstance(pairs, list)
        or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs)
    ):
        raise ValueError(f"{path}: a calibration record needs 'judge', 'verdict' and 'pairs'; was it edited?")
    return CalibrationRecord(
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        judge=judge,
        verdict=str(verdict),
        weighted_kappa=_number(record.get("weighted_kappa")),
        kappa=_number(record.get("kappa")),
        pairs=tuple((p[0], p[1]) for p in pairs),
    )


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def calibration_sources(
    judges: Mapping[str, int],
    records: Sequence[CalibrationRecord],
    *,
    query_ids: Collection[str],
    doc_ids: Collection[str],
    golden_name: str,
    accept_uncalibrated: bool,
) -> dict[str, Source]:
    """The source of every judge of the sheets being merged (``judges``: judge -> rows); ``ValueError``
    listing, one line each, the model judges that have not passed calibration, unless
    ``accept_uncalibrated`` (then their source says so)."""
    sources: dict[str, Source] = {}
    problems = []
    for record in records:
        strays = [pair for pair in record.pairs if pair[0] not in query_ids or pair[1] not in doc_ids]
        if strays:
            problems.append(
                f"{record.path}: calibrated on pairs that are not in {golden_name!r} (query "
                f"{strays[0][0]!r}, document {strays[0][1]!r}): a calibration holds for its own golden set"
            )
    for judge, rows in judges.items():
        if not is_model_judge(judge):
            sources[judge] = Source(judge, "person")
            continue
        passed = [r for r in records if r.judge == judge and r.verdict == Verdict.USABLE.value]
        failed = [r for r in records if r.judge == judge and r.verdict != Verdict.USABLE.value]
        if passed:
            sources[judge] = Source(judge, "model", calibration=passed[0].reference())
            continue
        if accept_uncalibrated:
            sources[judge] = Source(judge, "model", accepted_uncalibrated=True)
            continue
        why = (
            f"its calibration {failed[0].path} found {failed[0].verdict}"
            if failed
            else "no --calibration record is for it"
        )
        problems.append(
            f"model judge {judge!r} ({rows} rows) has not passed calibration: {why}; calibrate it "
            "(embeval calibrate PEOPLE.csv MODEL.csv --record CALIBRATION.json, then --calibration "
            "CALIBRATION.json) or pass --accept-uncalibrated, which is recorded with every such judgment"
        )
    if problems:
        raise ValueError("\n".join(problems))
    return sources


def model_lines(new: Sequence[Judgment], sources: Mapping[str, Source]) -> list[str]:
    """What ``embeval merge`` says of the judgments a model made, per model judge."""
    made = Counter(judgment.judge for judgment in new)
    lines = []
    for judge, count in made.items():
        source = sources[judge]
        if not source.by_model:
            continue
        if source.calibration is None:
            how = "UNCALIBRATED (--accept-uncalibrated, recorded with each)"
        else:
            kappa = source.calibration.get("weighted_kappa")
            shown = "" if kappa is None else f", weighted kappa {kappa:.3f}"
            how = f"calibrated: {source.calibration['file']} ({source.calibration['verdict']}{shown})"
        lines.append(f"judgments by model {judge}: {count} of {len(new)}, {how}")
    return lines


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
    try:
        qrels = qrels_file(golden)
    except ValueError:
        return judgments_record({}, golden.qrels)
    return judgments_record(read_provenance(provenance_path(qrels), golden.qrels), golden.qrels)
