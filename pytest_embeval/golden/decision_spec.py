"""The golden file's ``decision:`` block, declared before the run: who acts, what must hold to proceed, which
strata may be routed to a retained system instead of blocking, and what is done otherwise.

```yaml
decision:
  owner: search-platform             # who acts on the outcome
  proceed: {overall: [BETTER, TIE]}  # conditions on strata (a field name: each of its strata)
  route:                             # strata that may be served by another system instead of blocking
    strata: [language=de]
    max_traffic: 0.15                # at most this share of the traffic routed (default 1: any share
                                     # that leaves the candidate some traffic)
    to: bm25                         # default: the incumbent; any arm spec, INCUMBENT / CANDIDATE inside
  otherwise: change-target
```

`read_decision` validates it against the golden set's strata (so it runs after the data are read) and
returns a `DecisionSpec`; every problem is one `GoldenError` line naming ``decision.<key>``. The rule that
turns verdicts into an outcome is `run.decision`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from pytest_embeval.golden.yaml_nodes import NodeReader, describe_node, node_line

__all__ = [
    "CHANGE_TARGET",
    "DECISION_KEYS",
    "OUTCOMES",
    "PROCEED",
    "PROCEED_VERDICTS",
    "ROUTED",
    "ROUTE_KEYS",
    "ROUTE_PLACEHOLDERS",
    "DecisionSpec",
    "RouteSpec",
    "read_decision",
]

PROCEED = "proceed"
ROUTED = "proceed-with-routing"
CHANGE_TARGET = "change-target"
#: The outcomes a decision can reach, in the order they are tried.
OUTCOMES = (PROCEED, ROUTED, CHANGE_TARGET)

DECISION_KEYS = ("owner", "proceed", "route", "otherwise")
ROUTE_KEYS = ("strata", "max_traffic", "to")
#: What a ``proceed`` condition may ask of a stratum; WORSE blocks a decision wherever it is not routed.
PROCEED_VERDICTS = ("BETTER", "TIE")
#: Words of a ``route.to`` spec that stand for the run's own arms (``rrf:bm25,CANDIDATE``).
ROUTE_PLACEHOLDERS = ("INCUMBENT", "CANDIDATE")


@dataclass(frozen=True, slots=True)
class RouteSpec:
    #: the strata (``field=value``) that may be served by ``to`` instead of the candidate
    strata: tuple[str, ...]
    #: at most this share of the traffic (of ``overall``'s queries) may be routed; routing all of it never
    #: proceeds (`run.decision`), so the default is any share short of the whole
    max_traffic: float = 1.0
    #: the arm spec serving the routed queries; None: the incumbent
    to: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"strata": list(self.strata), "max_traffic": self.max_traffic, "to": self.to}


@dataclass(frozen=True, slots=True)
class DecisionSpec:
    owner: str | None
    #: stratum name -> the verdicts it must have to proceed, as declared (field names expanded)
    proceed: Mapping[str, tuple[str, ...]]
    route: RouteSpec | None
    otherwise: str = CHANGE_TARGET
    #: the line of the ``decision:`` key (where an annotation points); not part of the plan
    line: int = field(default=1, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "proceed": {name: list(verdicts) for name, verdicts in self.proceed.items()},
            "route": None if self.route is None else self.route.as_dict(),
            "otherwise": self.otherwise,
        }


def read_decision(
    reader: NodeReader, key_node: yaml.Node, node: yaml.Node, strata: Sequence[str], fields: Sequence[str]
) -> DecisionSpec:
    """The ``decision:`` block at ``node``; ``strata`` are the golden set's stratum names (``overall``
    first), ``fields`` its stratum fields."""
    entries = reader.entries(node, "decision")
    reader.check_keys(entries, DECISION_KEYS, "decision")
    owner = None
    if "owner" in entries:
        owner = reader.word(entries["owner"][1], "decision.owner", "who acts on the outcome")
    proceed: dict[str, tuple[str, ...]] = {}
    if "proceed" in entries:
        proceed = _proceed(reader, entries["proceed"][1], strata, fields)
    route = None if "route" not in entries else _route(reader, entries["route"][1], strata)
    otherwise = CHANGE_TARGET
    if "otherwise" in entries:
        value_node = entries["otherwise"][1]
        otherwise = reader.word(value_node, "decision.otherwise", "an outcome")
        if otherwise != CHANGE_TARGET:
            problem = (
                f"unknown outcome {otherwise!r}: when neither proceed nor route holds the outcome is "
                f"{CHANGE_TARGET}"
            )
            raise reader.error(value_node, "decision.otherwise", problem)
    return DecisionSpec(
        owner=owner, proceed=proceed, route=route, otherwise=otherwise, line=node_line(key_node)
    )


def _known(strata: Sequence[str]) -> str:
    return ", ".join(strata)


def _proceed(
    reader: NodeReader, node: yaml.Node, strata: Sequence[str], fields: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    conditions: dict[str, tuple[str, ...]] = {}
    for name, (key_node, value_node) in reader.entries(node, "decision.proceed").items():
        key = f"decision.proceed.{name}"
        if name in fields:
            named = [s for s in strata if s.startswith(f"{name}=")]
        elif name in strata:
            named = [name]
        else:
            problem = (
                f"unknown stratum {name!r} (the strata are {_known(strata)}, or a field: {_known(fields)})"
            )
            raise reader.error(key_node, key, problem)
        if not isinstance(value_node, yaml.SequenceNode) or not value_node.value:
            problem = f"must be a list of verdicts, e.g. [BETTER, TIE], got {describe_node(value_node)}"
            raise reader.error(value_node, key, problem)
        verdicts: list[str] = []
        for i, item in enumerate(value_node.value):
            verdict = reader.word(item, f"{key}[{i}]", "a verdict")
            if verdict == "WORSE":
                problem = "WORSE never lets a decision proceed (a WORSE stratum blocks it unless routed)"
                raise reader.error(item, f"{key}[{i}]", problem)
            if verdict not in PROCEED_VERDICTS:
                problem = f"unknown verdict {verdict!r} (a condition lists BETTER and/or TIE)"
                raise reader.error(item, f"{key}[{i}]", problem)
            if verdict not in verdicts:
                verdicts.append(verdict)
        for stratum in named:
            # A stratum named itself and through its field keeps the stricter condition.
            earlier = conditions.get(stratum)
            kept = tuple(v for v in PROCEED_VERDICTS if v in verdicts and (earlier is None or v in earlier))
            conditions[stratum] = kept
    return conditions


def _route(reader: NodeReader, node: yaml.Node, strata: Sequence[str]) -> RouteSpec:
    entries = reader.entries(node, "decision.route")
    reader.check_keys(entries, ROUTE_KEYS, "decision.route")
    if "strata" not in entries:
        problem = "missing required key (the strata that may be routed, e.g. [language=de])"
        raise reader.error(node, "decision.route.strata", problem)
    strata_node = entries["strata"][1]
    if not isinstance(strata_node, yaml.SequenceNode) or not strata_node.value:
        problem = f"must be a non-empty list of strata, got {describe_node(strata_node)}"
        raise reader.error(strata_node, "decision.route.strata", problem)
    routed: list[str] = []
    for i, item in enumerate(strata_node.value):
        key = f"decision.route.strata[{i}]"
        name = reader.word(item, key, "a stratum")
        if name == strata[0]:
            problem = f"{name!r} is the whole traffic: routing it is keeping the incumbent, not a decision"
            raise reader.error(item, key, problem)
        if name not in strata:
            raise reader.error(item, key, f"unknown stratum {name!r} (the strata are {_known(strata[1:])})")
        if name in routed:
            raise reader.error(item, key, f"duplicate stratum {name!r}")
        routed.append(name)
    max_traffic = 1.0
    if "max_traffic" in entries:
        value_node = entries["max_traffic"][1]
        value = reader.number(value_node, "decision.route.max_traffic")
        if value is None or not 0 < value <= 1:
            problem = f"must be a share of traffic in (0, 1], got {describe_node(value_node)}"
            raise reader.error(value_node, "decision.route.max_traffic", problem)
        max_traffic = value
    to = None
    if "to" in entries:
        to = reader.word(
            entries["to"][1], "decision.route.to", "an arm spec, e.g. bm25 or rrf:bm25,CANDIDATE"
        )
    return RouteSpec(strata=tuple(routed), max_traffic=max_traffic, to=to)
