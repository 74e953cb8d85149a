"""How pytest-xdist hands out a run's items when the user left the choice to it: each golden file's items as
one unit of work (as ``--dist loadfile`` does), except a shortlist's, whose items are one unit per golden file
and candidate (``golden/support.yaml::overall[small]`` goes with the other ``[small]`` items of its file). So
the candidates' work spreads over the workers, and a golden file's strata stay together for each candidate.

xdist's own ``loadgroup`` would do that by marks, but it renames every marked item (``…::overall@group``), so
``--lf`` and the report's ids would differ from a serial run's; a scope is the unit `LoadScopeScheduling`
defines for its subclasses (xdist's ``loadfile`` is one), and it leaves the ids alone.
"""

from __future__ import annotations

import re

from xdist.scheduler import LoadScopeScheduling

__all__ = ["CandidateScheduling", "scope_of"]

#: A shortlist's item: its name ends with its candidate's name in brackets (`candidates.NAME`).
_SHORTLIST_ITEM = re.compile(r".*\[(?P<candidate>[A-Za-z0-9][A-Za-z0-9._-]*)\]")


def scope_of(nodeid: str) -> str:
    """The unit of work of an item: ``golden.yaml[candidate]`` for a shortlist's item, else its file."""
    path, _, name = nodeid.partition("::")
    found = _SHORTLIST_ITEM.fullmatch(name) if path.endswith((".yaml", ".yml")) else None
    return path if found is None else f"{path}[{found['candidate']}]"


class CandidateScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is not typed
    """`LoadScopeScheduling` by file, and by candidate within a shortlist's golden file (`scope_of`)."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)
