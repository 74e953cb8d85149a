"""The declared decision as a record of the report, and what the JUnit XML file carries of each item.

`decision_record` is the decision item's record, plain Python types (it crosses to the xdist controller),
merged into its golden set as ``decision`` by `json_report.build_report`. `stratum_properties` and
`decision_properties` are the ``embeval_*`` JUnit properties of a stratum item and of the decision item
(pytest's ``user_properties``, which pytest-xdist carries in the reports): every value a string, a missing
number an empty one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.reports.json_report import Record
from pytest_embeval.reports.stratum_records import stratum_record
from pytest_embeval.run.decision import OUTCOME_WORDS, DecisionOutcome

__all__ = ["JUNIT_PROPERTIES", "decision_properties", "decision_record", "stratum_properties"]

_STRATUM = ("verdict", "metric", "delta", "ci_low", "ci_high", "n", "margin", "reason", "covered_by_routing")
_DECISION = ("decision", "owner", "routed", "traffic_share", "traffic_basis", "routed_to", "reason")
#: Every JUnit property a stratum item or the decision item can record.
JUNIT_PROPERTIES = tuple(dict.fromkeys(f"embeval_{name}" for name in (*_STRATUM, *_DECISION)))


def decision_record(golden: GoldenSet, path: str, decision: DecisionOutcome) -> Record:
    """The decision: its outcome (``proceed``, ``proceed-with-routing``, ``change-target``) and the word
    reports show, the owner, the routed strata and their share of the traffic (and what it is measured
    by), where they are routed to, the reasons, the one line every report prints, the decision as declared,
    and the routed system against the incumbent on every stratum (empty unless routing was tried)."""
    return {
        "golden": path,
        "outcome": decision.outcome,
        "word": OUTCOME_WORDS[decision.outcome],
        "owner": decision.spec.owner,
        "routed": list(decision.routed),
        "traffic_share": decision.traffic_share,
        "traffic_basis": decision.basis,
        "to": decision.to,
        "reasons": list(decision.reasons),
        "line": decision.line,
        "declared": decision.spec.as_dict(),
        "routed_system": [
            {
                k: v
                for k, v in stratum_record(golden, path, order, outcome).items()
                if k not in ("golden", "order")
            }
            for order, outcome in enumerate(decision.routed_strata)
        ],
    }


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def stratum_properties(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A stratum item's verdict as JUnit properties: verdict, metric, Δ, its interval, n, margin, reason."""
    low, high = record["ci"]
    values = {
        "verdict": record["verdict"],
        "metric": record["metric"],
        "delta": record["delta"],
        "ci_low": low,
        "ci_high": high,
        "n": record["n"],
        "margin": record["tie_margin"],
        "reason": record["reason"],
    }
    if record.get("covered_by_routing"):
        values["covered_by_routing"] = "true"
    return [(f"embeval_{name}", _text(value)) for name, value in values.items()]


def decision_properties(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The decision item's decision as JUnit properties: outcome, owner, routed strata, traffic share, and
    the decision line as its reason."""
    values = {
        "decision": record["outcome"],
        "owner": record["owner"],
        "routed": ",".join(record["routed"]),
        "traffic_share": record["traffic_share"],
        "traffic_basis": record["traffic_basis"],
        "routed_to": record["to"],
        "reason": record["line"],
    }
    return [(f"embeval_{name}", _text(value)) for name, value in values.items()]
