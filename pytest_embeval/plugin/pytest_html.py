"""The forest plot and strata table in pytest-html's report, through its ``pytest_html_results_summary``
hook: one section per golden set after its summary, the same fragment as the HTML page's (`html_page`).

Registered by `session.start` only when pytest-html is installed and writing a report (``--html``), on the
controller only; pytest-html itself is never imported here (its hook passes the lists to extend).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_embeval.reports.html_page import STYLE, report_sections
from pytest_embeval.reports.json_report import build_report

if TYPE_CHECKING:
    from pytest_embeval.plugin.state import EmbevalState


class PytestHtmlSection:
    """Adds the embeval section to pytest-html's summary from the records the session collected so far
    (pytest-html asks at ``pytest_sessionfinish``, when every item has reported)."""

    def __init__(self, state: EmbevalState) -> None:
        self.state = state

    def pytest_html_results_summary(
        self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session
    ) -> None:
        state = self.state
        report = build_report(
            state.golden_records.values(),
            state.stratum_records.values(),
            decision_records=state.decision_records.values(),
        )
        if not report["golden_sets"]:
            return
        sections = "\n".join(section for _, _, section in report_sections(report, "embeval-golden-"))
        postfix.append(f'<div class="embeval"><style>{STYLE}</style>\n<h2>embeval</h2>\n{sections}\n</div>')
