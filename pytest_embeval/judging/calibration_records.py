"""The calibration records `embeval calibrate --record` writes and `embeval merge` checks before a judge
model's grades go into the qrels, and what the merge says of the judgments a model made."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_embeval.judging.disagreement import Calibration, Verdict
from pytest_embeval.judging.llm_judge import is_model_judge
from pytest_embeval.judging.merging import Judgment
from pytest_embeval.judging.provenance import Source
from pytest_embeval.judging.rankings import Pair

__all__ = [
    "CALIBRATION_KIND",
    "CalibrationRecord",
    "calibration_record",
    "calibration_sources",
    "model_lines",
    "read_calibration",
]

CALIBRATION_KIND = "embeval calibration"
CALIBRATION_VERSION = 1


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
