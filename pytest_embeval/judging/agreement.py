"""How well two judges agree on the pairs both graded: percent agreement, Cohen's kappa (plain and linearly
weighted) and the confusion matrix; the calibration step before one judge (or an LLM) grades the rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pytest_embeval.core.text_table import table
from pytest_embeval.judging.merging import DEFAULT_MAX_GRADE, check_max_grade
from pytest_embeval.judging.rankings import Pair

__all__ = ["Agreement", "agreement", "agreement_lines", "cohen_kappa"]


def _confusion(first: Sequence[int], second: Sequence[int], labels: Sequence[int]) -> np.ndarray:
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(first, second, strict=True):
        if a not in index or b not in index:
            raise ValueError(f"grade {a if a not in index else b!r} is not one of the labels {list(labels)}")
        matrix[index[a], index[b]] += 1
    return matrix


def _kappa(matrix: np.ndarray, labels: Sequence[int], linear: bool) -> float | None:
    n = matrix.sum()
    observed = matrix / n
    expected = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)) / (n * n)
    values = np.asarray(labels, dtype=np.float64)
    # Disagreement weights: 0/1 for plain kappa; the distance between grades for linear weights (the
    # common scale factor cancels in the ratio).
    if linear:
        weights = np.abs(values[:, None] - values[None, :])
    else:
        weights = (values[:, None] != values[None, :]).astype(np.float64)
    chance = float((weights * expected).sum())
    if chance == 0.0:
        return None  # both judges gave every pair one and the same grade: agreement by chance is total
    return 1.0 - float((weights * observed).sum()) / chance


def cohen_kappa(
    first: Sequence[int],
    second: Sequence[int],
    labels: Sequence[int],
    *,
    weights: Literal["linear"] | None = None,
) -> float | None:
    """Cohen's kappa of two judges' grades of the same items, plain or linearly weighted.

    ``labels`` is the grade scale (all possible grades, so an unused grade still counts for the weights).
    Linear weights penalise a disagreement by the distance between the grades, as
    ``sklearn.metrics.cohen_kappa_score(first, second, labels=labels, weights="linear")`` does for labels
    ``0..N``. Returns None when kappa is undefined: both judges gave every item one and the same grade.
    Raises ``ValueError`` for empty or unequal-length input, or a grade outside ``labels``.
    """
    if len(first) != len(second):
        raise ValueError(f"the judges graded different numbers of items: {len(first)} and {len(second)}")
    if not first:
        raise ValueError("no items graded by both judges")
    return _kappa(_confusion(first, second, labels), labels, weights == "linear")


@dataclass(frozen=True, slots=True)
class Agreement:
    labels: tuple[int, ...]
    #: confusion matrix: rows are the first judge's grades, columns the second's, in ``labels`` order
    matrix: tuple[tuple[int, ...], ...]
    #: graded pairs only one of the judges graded
    only_first: int
    only_second: int
    percent: float
    kappa: float | None
    weighted_kappa: float | None
    #: pairs graded differently, (query id, document id, first grade, second grade), largest gap first
    disagreements: tuple[tuple[str, str, int, int], ...]

    @property
    def n(self) -> int:
        return sum(map(sum, self.matrix))

    @property
    def gate(self) -> tuple[str, float | None]:
        """The kappa a threshold applies to: weighted on a graded scale (three or more grades), where a 0/1
        disagreement should cost less than 0/2; plain on a binary one (where the two are equal anyway)."""
        if len(self.labels) > 2:
            return "weighted kappa", self.weighted_kappa
        return "kappa", self.kappa


def agreement(
    first: Mapping[Pair, int], second: Mapping[Pair, int], *, max_grade: int = DEFAULT_MAX_GRADE
) -> Agreement:
    """Agreement of two judges on the pairs both graded (matched by query id and document id).

    Raises ``ValueError`` when no pair was graded by both.
    """
    check_max_grade(max_grade)
    common = [pair for pair in first if pair in second]
    if not common:
        raise ValueError("no pair was graded by both judges (pairs are matched by query_id and doc_id)")
    labels = tuple(range(max_grade + 1))
    a = [first[pair] for pair in common]
    b = [second[pair] for pair in common]
    matrix = _confusion(a, b, labels)
    differ = sorted(
        ((pair[0], pair[1], first[pair], second[pair]) for pair in common if first[pair] != second[pair]),
        key=lambda d: (-abs(d[2] - d[3]), d[0], d[1]),
    )
    return Agreement(
        labels=labels,
        matrix=tuple(tuple(int(v) for v in row) for row in matrix.tolist()),
        only_first=len(first) - len(common),
        only_second=len(second) - len(common),
        percent=float(np.trace(matrix)) / len(common),
        kappa=_kappa(matrix, labels, linear=False),
        weighted_kappa=_kappa(matrix, labels, linear=True),
        disagreements=tuple(differ),
    )


def _kappa_text(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def agreement_lines(result: Agreement, first: str, second: str, *, listed: int = 0) -> list[str]:
    """The agreement summary, the confusion matrix (rows ``first``, columns ``second``) and up to ``listed``
    disagreements, largest gap first."""
    lines = [
        f"pairs graded by both: {result.n} (only {first}: {result.only_first}, only {second}: "
        f"{result.only_second})",
        f"percent agreement: {100 * result.percent:.1f}%",
        f"Cohen's kappa: {_kappa_text(result.kappa)}",
        f"linearly weighted kappa: {_kappa_text(result.weighted_kappa)}",
    ]
    if result.kappa is None:
        grade = next(label for label, row in zip(result.labels, result.matrix, strict=True) if any(row))
        lines.append(
            f"kappa is undefined: both judges graded every pair {grade}; judge a sample with varied grades"
        )
    header = [f"{first} \\ {second}", *map(str, result.labels), "total"]
    rows = [
        [str(label), *map(str, row), str(sum(row))]
        for label, row in zip(result.labels, result.matrix, strict=True)
    ]
    columns = [sum(column) for column in zip(*result.matrix, strict=True)]
    rows.append(["total", *map(str, columns), str(result.n)])
    lines += ["", *table(header, rows)]
    if listed and result.disagreements:
        shown = result.disagreements[:listed]
        lines += ["", f"disagreements ({len(shown)} of {len(result.disagreements)}):"]
        lines += table(
            ["query", "document", first, second], [[q, d, str(a), str(b)] for q, d, a, b in shown], names=2
        )
    return lines
