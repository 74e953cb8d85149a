"""The session's state and what the items leave for the session: the `EmbevalState` in
``config.stash[STATE]``, each stratum item's records (`ItemRecords`, plain Python types that pytest-xdist
carries to the controller), the error of a golden set that could not be run, and the cache counts an item
reports as user properties.

The items (`items`) and the session hooks (`session`) both read it, so it lives apart from both.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_embeval.arms.candidates import NamedCandidate
from pytest_embeval.arms.retriever import Retriever
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.plugin.golden_runs import GoldenArms
from pytest_embeval.plugin.options import Settings
from pytest_embeval.reports.json_report import Record

__all__ = [
    "CACHE_PROPERTIES",
    "FIXTURE_CANDIDATE",
    "ITEM_ERROR",
    "ITEM_RECORDS",
    "STATE",
    "EmbevalState",
    "GoldenSetError",
    "ItemRecords",
]


#: The item that ran a golden set carries what the embedding cache did meanwhile as user properties with
#: these names (ints, or a str for the write error), so the xdist controller can sum them over workers.
CACHE_PROPERTIES = {
    "read": "embeval_cache_read",
    "embedded": "embeval_cache_embedded",
    "corrupt": "embeval_cache_corrupt",
    "unreadable": "embeval_cache_unreadable_packs",
    "write_error": "embeval_cache_write_error",
}


@dataclasses.dataclass(frozen=True, slots=True)
class ItemRecords:
    """What an item leaves for its report: its stratum's record (or the decision item's decision record),
    and its golden set's record when it is the first item of the set this process ran."""

    stratum: Record | None = None
    golden: Record | None = None
    decision: Record | None = None


#: A stratum item's records, in its stash once it has been checked.
ITEM_RECORDS: pytest.StashKey[ItemRecords] = pytest.StashKey()


#: The error record of the item that ran a golden set which could not be run (see `json_report.error_record`).
ITEM_ERROR: pytest.StashKey[Record] = pytest.StashKey()


class GoldenSetError(Exception):
    """A golden set that could not be run (a model that cannot be resolved, an encoder fault, arms that did
    not hold their inputs constant): an error of its items, never a failure. Raised in the items' setup, so
    pytest counts it as an error; the message is one line, shown without a traceback."""


@dataclasses.dataclass
class EmbevalState:
    """Per-process state of one session, kept in `config.stash`."""

    settings: Settings
    #: the embedding cache (None with --embeval-no-cache); it touches the disk only when first used
    cache: EmbeddingCache | None = dataclasses.field(init=False)
    #: resolved models, by spec (the command line's and the ini file's are resolved at the start)
    arms: dict[Any, Retriever] = dataclasses.field(default_factory=dict)
    #: on an xdist worker, command-line or ini specs that did not resolve there, with the reason
    unresolved: dict[str, str] = dataclasses.field(default_factory=dict)
    #: the candidates of the run, in order: the command line's or ini file's, the
    #: ``pytest_embeval_candidates`` hook's, or the ``embeval_candidate`` fixture's one (`FIXTURE_CANDIDATE`)
    candidates: tuple[NamedCandidate, ...] = ()
    #: each golden set's arms in this process, by resolved path
    runs: dict[str, GoldenArms] = dataclasses.field(default_factory=dict)
    #: (golden path, candidate name) whose golden record this process has already attached to a report
    sent_golden: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    #: what the controller received, from its own items or from xdist workers: golden, decision and error
    #: records by (golden path, candidate name: "" but in a shortlist), stratum records by node id
    golden_records: dict[tuple[str, str], Record] = dataclasses.field(default_factory=dict)
    stratum_records: dict[str, Record] = dataclasses.field(default_factory=dict)
    decision_records: dict[tuple[str, str], Record] = dataclasses.field(default_factory=dict)
    error_records: dict[tuple[str, str], Record] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        cache_dir = self.settings.cache_dir
        self.cache = EmbeddingCache(cache_dir) if cache_dir is not None else None


#: The candidate when no option, ini key or hook names one: the ``embeval_candidate`` fixture's model.
FIXTURE_CANDIDATE = NamedCandidate("candidate", None)


#: The session's embeval state; present only when --embeval is given.
STATE: pytest.StashKey[EmbevalState] = pytest.StashKey()
