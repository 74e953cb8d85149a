"""Records and the report made of them: the JSON report (the TREC runs: `trec_runs`), as pure functions of
plain data.

A worker turns what it ran into records (`golden_record` per golden set, `stratum_records.stratum_record` per
stratum item); the controller merges every worker's records with `build_report`, and every output (the files
here, the terminal lines of `reports/terminal.py`) is a function of that merged report alone.

Records are dicts of plain Python types (str, int, float, None, lists, dicts) because they cross process
boundaries under pytest-xdist; NaN becomes None so the JSON report is strict JSON.

The report is identical with and without pytest-xdist except for values under a ``timings`` key (wall-clock
latencies, which vary run to run) and an arm's ``usage`` (the tokens an endpoint billed this run, which
depend on what the embedding cache already held, and so on which worker got to a shared text first): tools
comparing reports drop every ``timings`` and ``usage`` key first. An in-process arm's ``usage`` is None.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_embeval.core.sample_design import NO_DESIGN
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.coverage import coverage

# Record is every record's type, re-exported: the report's users import it from here.
from pytest_embeval.reports.arm_records import Record as Record
from pytest_embeval.reports.arm_records import arm_record, device_record, number
from pytest_embeval.reports.frontier_records import frontier_record, shown_rows
from pytest_embeval.reports.shortlist import CANDIDATE_NAME, CANDIDATE_ORDER, shortlist_record
from pytest_embeval.run.control import short_digest
from pytest_embeval.run.pipeline import ArmResult, GoldenRun, ranked_depth

SCHEMA_VERSION = 1
ROLES = ("incumbent", "candidate")
RECALL_TARGET_HELD = (
    "held constant is the recall target, not the ef: each arm's quality is measured at the ef its own "
    "vectors need to reach it"
)


def _pipeline_record(run: GoldenRun) -> Record:
    """What the golden set's pipeline adds to plain retrieval: filters, folding, a reranker."""
    golden, held = run.golden, run.held
    record: Record = {}
    if held is None:
        return record
    if held.filters is not None:
        plan = held.filters
        counts = plan.allowed_counts()
        record["filters"] = {
            "queries": sum(1 for query in golden.queries if query.filters),
            "distinct": sum(1 for one in plan.filters if one),
            "matching_nothing": [
                query.id for query, n in zip(golden.queries, counts.tolist(), strict=True) if n == 0
            ],
        }
    if golden.fold is not None and held.chunks is not None:
        record["fold"] = {
            **golden.fold.as_dict(),
            "chunks": held.chunks.chunks,
            "documents": len(held.chunks.doc_ids),
        }
    if golden.rerank is not None and run.reranker is not None:
        record["rerank"] = {
            **golden.rerank.as_dict(),
            "spec": run.reranker["spec"],
            "fingerprint": run.reranker["fingerprint"],
            "queries": int(held.rerank_rows.size),
            # What this run had to score varies run to run (a rerun is served from the cache).
            "timings": {"pairs_scored": run.reranker["scored"], "pairs_from_cache": run.reranker["cached"]},
        }
    return record


def golden_record(run: GoldenRun, path: str) -> Record:
    """The golden-set part of the report: settings, models, fingerprints, every query under both arms, and
    each arm's judged@k per stratum (``coverage``), computed here where the judgments are at hand."""
    golden = run.golden
    arms = {"incumbent": run.incumbent, "candidate": run.candidate}
    rankings = {
        role: {query.id: list(ranked) for query, ranked in zip(golden.queries, arm.ranked, strict=True)}
        for role, arm in arms.items()
    }
    queries = []
    reranked = set() if run.held is None else set(run.held.rerank_rows.tolist())
    for i, query in enumerate(golden.queries):
        record: Record = {
            "id": query.id,
            "text": query.text,
            "strata": dict(query.fields),
            **({} if golden.weights is None else {"frequency": query.frequency}),
            **({} if golden.weights is None or query.inclusion is None else {"inclusion": query.inclusion}),
            "scores": {
                role: {name: number(float(values[i])) for name, values in arm.per_query.items()}
                for role, arm in arms.items()
            },
            "ranked": {role: list(arm.ranked[i]) for role, arm in arms.items()},
            "similarities": {role: list(arm.similarities[i]) for role, arm in arms.items()},
            **_exact_scores(arms, i),
        }
        if query.filters:
            record["filters"] = {name: list(values) for name, values in query.filters.items()}
        if i in reranked:
            record["after_rerank"] = _after_rerank(arms, i)
        queries.append(record)
    return {
        "name": golden.name,
        "path": path,
        "fingerprint": golden.fingerprint(
            run.held.documents if run.held is not None and run.held.golden is golden else None
        ),
        "plan_fingerprint": golden.plan_fingerprint(),
        "control": {
            "fingerprint": run.control.fingerprint,
            "components": run.control.components(),
            # How the corpus and queries were drawn from production (their draw sidecars), when they were.
            **({"draws": {key: dict(draw) for key, draw in golden.draws.items()}} if golden.draws else {}),
            # Where each arm's model ran: not held constant (vectors agree across devices to float32
            # rounding, and share cache entries), so, like a timing, it may differ between runs that agree.
            "timings": {"devices": {role: device_record(getattr(run, role).arm) for role in ROLES}},
        },
        "metric": str(golden.metric),
        "guards": dict(golden.guards),
        "report": [str(m) for m in golden.report_metrics],
        "tie_margin": golden.tie_margin,
        "confidence": golden.confidence,
        "min_queries": golden.min_queries,
        "bootstrap": golden.bootstrap,
        "seed": golden.seed,
        "relevance_level": golden.relevance_level,
        "interval": golden.interval,
        "ties": golden.ties,
        "multiple_comparisons": golden.multiple_comparisons,
        # Only when declared, so that a report without weights keeps its shape; ``traffic_weight``: what a
        # query weighs, ``frequency`` or (a drawn sample's queries) ``frequency / inclusion``; ``design``:
        # the draw whose variance the intervals use, or none (the with-replacement interval).
        **(
            {
                "weights": golden.weights,
                "traffic_weight": golden.traffic_weighting,
                "design": NO_DESIGN if golden.design is None else golden.design.record(),
            }
            if golden.weights is not None
            else {}
        ),
        "index": _index_record(golden),
        "depth": ranked_depth(golden),
        "split": golden.split,
        # Searched: with corpus_sample, the largest slice's (the verdicts' corpus).
        "documents": run.documents,
        "documents_without_text": list(golden.textless),
        **_sample_record(golden),
        **_recall_target_record(run),
        **_pipeline_record(run),
        "incumbent": arm_record(run.incumbent, golden.production),
        "candidate": arm_record(run.candidate, golden.production),
        "queries": queries,
        "coverage": [dataclasses.asdict(row) for row in coverage(golden, rankings, k=golden.metric.k)],
    }


def _exact_scores(arms: Mapping[str, ArmResult], row: int) -> Record:
    """With a vector database as the index: one query's scores under each arm's exact twin (the same
    vectors searched exactly); nothing otherwise."""
    exact = {role: arm.exact for role, arm in arms.items() if arm.exact is not None}
    if not exact:
        return {}
    return {
        "exact_scores": {
            role: {name: number(float(values[row])) for name, values in twin.per_query.items()}
            for role, twin in exact.items()
        }
    }


def _after_rerank(arms: Mapping[str, ArmResult], row: int) -> Record:
    """One reranked query under both arms after the reranker: scores, ranking, the reranker's scores."""
    after = {role: arm.reranked for role, arm in arms.items() if arm.reranked is not None}
    return {
        "scores": {
            role: {name: number(float(values[row])) for name, values in one.per_query.items()}
            for role, one in after.items()
        },
        "ranked": {role: list(one.ranked[row]) for role, one in after.items()},
        "reranker_scores": {role: list(one.scores[row]) for role, one in after.items()},
    }


def _index_record(golden: GoldenSet) -> Record | str:
    index = golden.index
    if index.kind == "exact":
        return "exact"
    if index.engine is not None:
        declared = index.engine.as_dict()
        return {str(declared.pop("kind")): declared}
    if index.kind == "faiss":
        return {key: value for key, value in index.as_dict().items() if key != "kind"}
    return {"hnsw": {key: value for key, value in index.as_dict().items() if key != "kind"}}


# ---------------------------------------------------------------- capacity and corpus slices


def _sample_record(golden: GoldenSet) -> Record:
    """The declared production size and corpus sample, with the corpus size, when the golden set has them."""
    record: Record = {}
    if golden.production is not None:
        record["production"] = golden.production.as_dict()
    if golden.corpus_sample is not None:
        record["corpus_sample"] = {
            **golden.corpus_sample.as_dict(),
            "corpus_documents": len(golden.documents),
        }
    return record


def _recall_target_record(run: GoldenRun) -> Record:
    """With a recall target: the ef each arm needed to reach it, and which arm needs more."""
    # An arm without its own vector index (BM25, a fusion) has no ef of its own to report.
    arms = {
        role: None if result.index is None else result.index.hnsw
        for role, result in (("incumbent", run.incumbent), ("candidate", run.candidate))
    }
    target = run.golden.index.recall_target
    if target is None or arms["incumbent"] is None or arms["candidate"] is None:
        return {}
    ef = {role: hnsw.parameters["ef"] for role, hnsw in arms.items() if hnsw is not None}
    more = None if ef["incumbent"] == ef["candidate"] else max(ef, key=ef.__getitem__)
    return {
        "recall_target": {
            "target": target,
            "ef": ef,
            "needs_more": more,
            "held_constant": RECALL_TARGET_HELD,
        }
    }


def control_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What two JSON reports did not hold equal: one line per golden set (matched by path) and differing
    control component, e.g. ``support.yaml: corpus (sha256:ab12… vs sha256:cd34…)``.

    An empty list means every golden set of either report was run on the same corpus, queries, judgments,
    index, depth and plan in both, so their results differ only by the models. A golden set in one report
    only, or one without a ``control`` record (a report from before it existed), gets a line saying so.
    """
    first = {golden["path"]: golden for golden in a["golden_sets"]}
    second = {golden["path"]: golden for golden in b["golden_sets"]}
    lines: list[str] = []
    for path in sorted(first.keys() | second.keys()):
        if path not in second or path not in first:
            lines.append(f"{path}: only in the {'first' if path in first else 'second'} report")
            continue
        controls = first[path].get("control"), second[path].get("control")
        if controls[0] is None or controls[1] is None:
            which = "first" if controls[0] is None else "second"
            lines.append(f"{path}: no control fingerprint in the {which} report")
            continue
        components = controls[0]["components"], controls[1]["components"]
        for name in dict.fromkeys([*components[0], *components[1]]):
            digests = components[0].get(name), components[1].get(name)
            if digests[0] != digests[1]:
                shown = [short_digest(d) if d is not None else "absent" for d in digests]
                lines.append(f"{path}: {name} ({shown[0]} vs {shown[1]})")
    return lines


def error_record(golden: GoldenSet, path: str, error: Exception) -> Record:
    """A golden set that could not be run: which arm (``role``, ``spec``; None when the arms' inputs differed,
    or ``spec`` when no model was given) and what was wrong (``message``, one line)."""
    return {
        "path": path,
        "name": golden.name,
        "role": getattr(error, "role", None),
        "spec": getattr(error, "spec", None),
        "message": str(error),
    }


def _entry(record: Mapping[str, Any], path_key: str = "golden") -> tuple[str, str]:
    """Which golden-set entry of the report a record belongs to: its golden file's path and, in a
    shortlist, its candidate's name."""
    return str(record[path_key]), str(record.get(CANDIDATE_NAME, ""))


def build_report(
    golden_records: Iterable[Record],
    stratum_records: Iterable[Record],
    error_records: Iterable[Record] = (),
    decision_records: Iterable[Record] = (),
) -> Record:
    """Merge golden-set, stratum, error and decision records (from any number of workers) into the JSON
    report.

    Order is by golden-set path, the candidates' order (a shortlist's, where each candidate's comparison
    with the incumbent is a golden-set entry of its own) and the golden file's stratum order, never by
    arrival, so a run with pytest-xdist writes the same report as a serial one. In each golden set, the
    strata come after the queries, the declared decision (when there is one:
    `decision_report.decision_record`) after them, and the coverage of the judgments comes last. A run of
    several candidates adds the ``shortlist`` of each golden file (`shortlist.shortlist_record`).
    """
    by_entry: dict[tuple[str, str], list[Record]] = {}
    for record in stratum_records:
        by_entry.setdefault(_entry(record), []).append(record)
    decisions = {_entry(record): record for record in decision_records}
    golden_sets = []
    for golden in sorted(golden_records, key=lambda r: (r["path"], r.get(CANDIDATE_ORDER, 0))):
        entry = _entry(golden, "path")
        strata = sorted(by_entry.get(entry, []), key=lambda r: r["order"])
        decision = decisions.get(entry)
        # With variants or a FAISS index: every arm's quality against its bill (`frontier_records`); a
        # shortlist's comparisons are on the shortlist's frontier instead.
        rows = None if CANDIDATE_NAME in golden else shown_rows(golden, strata)
        frontier = {} if rows is None else {"frontier": frontier_record(golden, rows)}
        golden_sets.append(
            {
                **{key: value for key, value in golden.items() if key not in ("coverage", CANDIDATE_ORDER)},
                "strata": [{k: v for k, v in s.items() if k not in ("golden", "order")} for s in strata],
                **frontier,
                **(
                    {}
                    if decision is None
                    else {"decision": {k: v for k, v in decision.items() if k != "golden"}}
                ),
                "coverage": golden["coverage"],
            }
        )
    ordered = sorted(error_records, key=lambda r: (r["path"], r.get(CANDIDATE_ORDER, -1)))
    shortlists = _shortlists(golden_sets, ordered)
    errors = [{k: v for k, v in error.items() if k != CANDIDATE_ORDER} for error in ordered]
    return {
        "schema_version": SCHEMA_VERSION,
        "golden_sets": golden_sets,
        **({"shortlist": shortlists} if shortlists else {}),
        "errors": errors,
    }


def _shortlists(golden_sets: Sequence[Record], errors: Sequence[Record]) -> list[Record]:
    """The shortlist of each golden file whose candidates were compared together."""
    paths = dict.fromkeys(
        [g["path"] for g in golden_sets if CANDIDATE_NAME in g]
        + [e["path"] for e in errors if CANDIDATE_NAME in e]
    )
    return [
        shortlist_record(
            [g for g in golden_sets if g["path"] == path and CANDIDATE_NAME in g],
            [e for e in errors if e["path"] == path and CANDIDATE_NAME in e],
        )
        for path in sorted(paths)
    ]


#: Containers this deep (the report is at depth 0, a golden set at 2, a query's, a stratum's or an arm's
#: record at 4) are written on one line each, by the C encoder, which json.dumps uses only when it does not
#: indent: a report of 1,500 queries is written in a third of the time, and diffs one line per query.
_ONE_LINE_DEPTH = 4


def without_timings(value: Any) -> Any:
    """A JSON report without its ``timings`` values: what must be equal between runs."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key != "timings"}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value


def report_json(report: Mapping[str, Any]) -> str:
    """The JSON report's text: indented by one space per level down to `_ONE_LINE_DEPTH`, one line below."""
    return _layered(report, 0) + "\n"


def _layered(value: object, depth: int) -> str:
    if depth >= _ONE_LINE_DEPTH or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, dict):
        # A key that is not a string is written as json.dumps writes it (True as "true").
        items = [
            f"{json.dumps(key if isinstance(key, str) else json.dumps(key), ensure_ascii=False)}: "
            f"{_layered(item, depth + 1)}"
            for key, item in value.items()
        ]
        opening, closing = "{", "}"
    else:
        items = [_layered(item, depth + 1) for item in value]
        opening, closing = "[", "]"
    return opening + pad + ("," + pad).join(items) + "\n" + " " * depth + closing
