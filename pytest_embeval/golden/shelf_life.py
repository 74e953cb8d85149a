"""How long a golden set's judgments stay usable (the ``shelf_life:`` key): relevance drifts as the corpus,
the product and the users change, so a judgment set is refreshed in part every so often (`judging.refresh`).

``shelf_life`` is a count and a calendar unit: ``12 months`` (the default), ``1 year``, ``18 months``,
``26 weeks``, ``365 days``, or the short forms ``365d``, ``26w``, ``18mo``, ``1y``. Months and years are
calendar months (12 months after 2025-03-31 is 2026-03-31; a month after 01-31 is the last day of February),
so ``12 months`` and ``1 year`` are the same shelf life and ``365d`` is one day shorter in a leap year.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = ["DEFAULT_SHELF_LIFE", "ShelfLife", "parse_shelf_life"]

_UNITS = {
    "d": "days",
    "day": "days",
    "days": "days",
    "w": "weeks",
    "week": "weeks",
    "weeks": "weeks",
    "mo": "months",
    "month": "months",
    "months": "months",
    "y": "years",
    "year": "years",
    "years": "years",
}
_DURATION = re.compile(r"(\d+)\s*([a-z]+)")


@dataclass(frozen=True, slots=True)
class ShelfLife:
    count: int
    #: ``days``, ``weeks``, ``months`` or ``years``
    unit: str

    def __str__(self) -> str:
        return f"{self.count} {self.unit[:-1] if self.count == 1 else self.unit}"

    def expires(self, made: date) -> date:
        """The first day a judgment made on ``made`` is past its shelf life."""
        if self.unit == "days":
            return made + timedelta(days=self.count)
        if self.unit == "weeks":
            return made + timedelta(weeks=self.count)
        months = self.count * (12 if self.unit == "years" else 1)
        year, month = divmod(made.month - 1 + months, 12)
        year += made.year
        day = min(made.day, calendar.monthrange(year, month + 1)[1])
        return date(year, month + 1, day)


DEFAULT_SHELF_LIFE = ShelfLife(12, "months")


def parse_shelf_life(text: str) -> ShelfLife:
    """``12 months``, ``365d``, ... -> `ShelfLife`; ``ValueError`` (one line, quoting ``text``) otherwise."""
    match = _DURATION.fullmatch(text.strip().lower())
    unit = _UNITS.get(match.group(2)) if match else None
    if match is None or unit is None or int(match.group(1)) < 1:
        raise ValueError(
            f"must be a positive duration such as '12 months', '1 year', '26 weeks' or '365d', got {text!r}"
        )
    return ShelfLife(int(match.group(1)), unit)
