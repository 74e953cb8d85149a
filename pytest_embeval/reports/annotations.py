"""GitHub Actions workflow commands for a golden set of the merged report: an ``::error`` per WORSE stratum
at the line of the golden file that declares its stratum field (1 for ``overall``, or when the line is not
known), and a ``::notice`` with the decision at the ``decision:`` line, so the pull request's diff view
shows them. A WORSE stratum that a decision to proceed with routing covers is still an ``::error`` (the
candidate is worse there: that is why it is routed), its title saying it is routed. The plugin prints them
only under ``GITHUB_ACTIONS=true``.

Escaping is GitHub's (actions/toolkit ``command.ts``): in the message ``%``, ``\\r`` and ``\\n``; in a
property also ``:`` and ``,``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_embeval.reports.contents import golden_title

__all__ = ["GITHUB_ACTIONS", "escape_data", "escape_property", "workflow_commands"]

#: The variable GitHub Actions sets to ``true`` in every step.
GITHUB_ACTIONS = "GITHUB_ACTIONS"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, properties: Mapping[str, object], message: str) -> str:
    shown = ",".join(f"{name}={escape_property(str(value))}" for name, value in properties.items())
    return f"::{kind} {shown}::{escape_data(message)}"


def workflow_commands(golden: Mapping[str, Any], declared: Mapping[str, int]) -> list[str]:
    """The workflow commands of one golden set; ``declared``: `yaml_nodes.declared_lines` of its file."""
    commands = []
    for stratum in golden["strata"]:
        if stratum["verdict"] != "WORSE":
            continue
        name = stratum["stratum"]
        field, _, _ = name.partition("=")
        line = declared.get(f"strata.{field}", 1) if "=" in name else 1
        routed = " (routed)" if stratum.get("covered_by_routing") else ""
        properties = {
            "file": golden["path"],
            "line": line,
            "title": f"embeval {golden_title(golden)}: {name} WORSE{routed}",
        }
        commands.append(_command("error", properties, f"{name}: WORSE — {stratum['reason']}"))
    decision = golden.get("decision")
    if decision is not None:
        properties = {
            "file": golden["path"],
            "line": declared.get("decision", 1),
            "title": f"embeval {golden_title(golden)}: {decision['word']}",
        }
        commands.append(_command("notice", properties, decision["line"]))
    return commands
