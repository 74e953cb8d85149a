"""The grades a judge gives and what each means: ``0..max_grade``, each with a short label, taken from the
golden set's written guidelines where they name them, else the usual names of the scale.

Guidelines name a grade's label in a list item that opens with the grade in bold and ends the label with a
colon, as the shipped ``golden/support/judging.md`` does::

    - **2** answers it: the document on its own answers the query, ...
    - **1** partly relevant: answers part of the query, ...
    - **0** not relevant: does not help with what the query asks, ...

The labels are taken only when the guidelines name every grade ``0..N`` once; that ``N`` is then the
scale's top grade unless one is given (``--max-grade``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_embeval.golden.schema import GoldenSet

__all__ = [
    "DEFAULT_LABELS",
    "GradeScale",
    "grade_scale",
    "guideline_labels",
    "no_guidelines_note",
]

#: The usual names of a scale's grades, by its top grade: binary, the default 0..2 (docs/judging.md), and
#: TREC's four-point scale.
DEFAULT_LABELS = {
    1: ("not relevant", "relevant"),
    2: ("not relevant", "partly relevant", "relevant"),
    3: ("not relevant", "related", "highly relevant", "perfectly relevant"),
}
#: A list item naming a grade: ``- **2** answers it: ...`` (the label is what stands before the colon).
_LABEL_ITEM = re.compile(r"^\s*[-*+]\s+\*\*(\d+)\*\*\s*(?:[-\u2013\u2014]\s*)?([^:\n]{1,60}):", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class GradeScale:
    #: the label of each grade, grade 0 first ("" where the scale has no name for it)
    labels: tuple[str, ...]
    #: where the labels come from: ``guidelines`` (the golden set's file) or ``default``
    source: str

    @property
    def max_grade(self) -> int:
        return len(self.labels) - 1


def guideline_labels(text: str) -> tuple[str, ...] | None:
    """The labels the guidelines' list items name for the grades ``0..N`` (see the module's docstring), or
    None when they do not name each grade from 0 to their highest exactly once."""
    named: dict[int, list[str]] = {}
    for match in _LABEL_ITEM.finditer(text):
        named.setdefault(int(match[1]), []).append(" ".join(match[2].split()))
    if not named or sorted(named) != list(range(max(named) + 1)) or max(named) < 1:
        return None
    if any(len(labels) != 1 for labels in named.values()):
        return None
    return tuple(named[grade][0] for grade in range(len(named)))


def grade_scale(golden: GoldenSet | None, max_grade: int | None, *, default_max_grade: int) -> GradeScale:
    """The scale a judge grades ``golden``'s pairs on: the labels the guidelines name (their top grade
    unless ``max_grade`` is given, and only if it agrees), else the usual names of ``0..max_grade``
    (``default_max_grade`` when None). Raises ``ValueError`` for a top grade under 1."""
    text = golden.guidelines.text if golden is not None and golden.guidelines is not None else None
    named = guideline_labels(text) if text is not None else None
    if named is not None and (max_grade is None or max_grade == len(named) - 1):
        return GradeScale(named, "guidelines")
    top = default_max_grade if max_grade is None else max_grade
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"max_grade must be an integer >= 1, got {top!r}")
    return GradeScale(DEFAULT_LABELS.get(top, ("not relevant", *[""] * top)), "default")


def no_guidelines_note(golden: GoldenSet) -> str | None:
    """What a command that writes a sheet says when the golden set names no written relevance definition
    (its ``guidelines`` key); None when it names one."""
    if golden.guidelines is not None:
        return None
    return (
        f"no guidelines: {golden.path} names no written relevance definition, so each judge grades by their "
        "own; write one (a sentence per grade, with an example) and name it under 'guidelines:'"
    )
