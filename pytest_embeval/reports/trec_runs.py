"""TREC run files of each arm (``--embeval-runs``), so trec_eval, ranx or ir-measures can audit any number:
pure functions of one golden set's merged record, named by the golden set and the arm (a shortlist's
candidate by its name: ``support.small.run`` beside ``support.incumbent.run``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_embeval.reports.shortlist import CANDIDATE_NAME

__all__ = ["file_stem", "rerank_run", "run_file_name", "trec_run"]


def _arm_name(golden: Mapping[str, Any], role: str) -> str:
    """The arm's name in file names and tags: its role, or a shortlist's candidate's name."""
    return str(golden[CANDIDATE_NAME]) if role == "candidate" and CANDIDATE_NAME in golden else role


def trec_run(golden: Mapping[str, Any], role: str) -> str:
    """A TREC run file (`qid Q0 docid rank score tag`) of one arm, with the similarity scores searched on."""
    tag = f"embeval-{_arm_name(golden, role)}"
    lines = []
    for query in golden["queries"]:
        for rank, (doc_id, score) in enumerate(
            zip(query["ranked"][role], query["similarities"][role], strict=True), start=1
        ):
            lines.append(f"{query['id']} Q0 {doc_id} {rank} {score!r} {tag}")
    return "\n".join(lines) + "\n"


def file_stem(golden: Mapping[str, Any]) -> str:
    """A file name for what is written per golden set: its path, flattened, without the extension; a ``..``
    segment (a golden file outside the rootdir) becomes ``up``, so the name does not start with a dot:
    ``../shared/a.yaml`` -> ``up__shared__a``."""
    parts = ["up" if part == ".." else part for part in str(golden["path"]).split("/")]
    return "__".join(parts).rsplit(".", 1)[0]


def run_file_name(golden: Mapping[str, Any], role: str, stage: str = "") -> str:
    """``<stem>.<role>.run`` (a shortlist's candidate: ``<stem>.<name>.run``); after the reranker
    (``stage="rerank"``) ``<stem>.<role>.rerank.run``."""
    return f"{file_stem(golden)}.{_arm_name(golden, role)}{'.' + stage if stage else ''}.run"


def rerank_run(golden: Mapping[str, Any], role: str) -> str | None:
    """A TREC run file of one arm after the reranker, with the reranker's scores, over the reranked queries;
    None when the golden set has no reranker."""
    if "rerank" not in golden:
        return None
    tag = f"embeval-{_arm_name(golden, role)}-rerank"
    lines = []
    for query in golden["queries"]:
        after = query.get("after_rerank")
        if after is None:
            continue
        for rank, (doc_id, score) in enumerate(
            zip(after["ranked"][role], after["reranker_scores"][role], strict=True), start=1
        ):
            lines.append(f"{query['id']} Q0 {doc_id} {rank} {score!r} {tag}")
    return "\n".join(lines) + "\n"
