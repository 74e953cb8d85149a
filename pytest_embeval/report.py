"""Records, tables and files: everything the plugin shows or writes, as pure functions of plain data.

Records are dicts of plain Python types (str, int, float, None, lists, dicts) because they cross process
boundaries under pytest-xdist; NaN becomes None so the JSON report is strict JSON.

The report is identical with and without pytest-xdist except for values under a ``timings`` key (wall-clock
latencies, which vary run to run): tools comparing reports drop every ``timings`` key first.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_embeval.golden import GoldenSet
from pytest_embeval.index import Latency
from pytest_embeval.output import table
from pytest_embeval.pipeline import (
    ArmResult,
    GoldenRun,
    IndexStats,
    Mover,
    StratumOutcome,
    ranked_depth,
    short_digest,
)
from pytest_embeval.stats import PairedComparison

SCHEMA_VERSION = 1
ROLES = ("incumbent", "candidate")

Record = dict[str, Any]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def comparison_record(comparison: PairedComparison) -> Record:
    return {
        "n": comparison.n,
        "excluded": comparison.excluded,
        "incumbent": _number(comparison.incumbent_mean),
        "candidate": _number(comparison.candidate_mean),
        "delta": _number(comparison.delta),
        "ci": [_number(comparison.ci_low), _number(comparison.ci_high)],
        "sd": _number(comparison.sd),
        "wins": comparison.wins,
        "losses": comparison.losses,
        "sign_p": _number(comparison.sign_p),
        "mde": _number(comparison.mde),
        "note": comparison.note,
    }


def _mover_record(mover: Mover) -> Record:
    return {
        "id": mover.query_id,
        "text": mover.text,
        "incumbent": mover.incumbent,
        "candidate": mover.candidate,
    }


def stratum_record(golden: GoldenSet, path: str, order: int, outcome: StratumOutcome) -> Record:
    """The record of one stratum item: the DESIGN.md per-stratum fields plus what the failure view needs."""
    primary = str(golden.metric)
    decision = outcome.decision
    return {
        "golden": path,
        "order": order,
        "stratum": outcome.stratum.name,
        "metric": primary,
        **comparison_record(outcome.comparisons[primary]),
        "verdict": decision.verdict.value,
        "primary_verdict": decision.primary.value,
        "reason": decision.reason,
        "queries_needed": decision.queries_needed,
        "sign_disagrees": decision.sign_disagrees,
        "tie_margin": golden.tie_margin,
        "confidence": golden.confidence,
        "guards": [
            {
                "metric": guard.metric,
                "margin": guard.margin,
                **comparison_record(guard.comparison),
                "verdict": guard.verdict.value,
                "reason": guard.reason,
                "failed": guard.failed,
            }
            for guard in decision.guards
        ],
        "metrics": {name: comparison_record(c) for name, c in outcome.comparisons.items()},
        "movers": [_mover_record(m) for m in outcome.movers],
        "drivers": [_mover_record(m) for m in outcome.drivers],
    }


def _latency_record(latency: Latency) -> Record:
    # Four significant digits: the timer's noise is larger than that from one run to the next.
    return {"p50": float(f"{latency.p50_ms:.4g}"), "p95": float(f"{latency.p95_ms:.4g}")}


def index_record(stats: IndexStats) -> Record:
    """One arm's index: kind, dimension, memory; for hnsw also its parameters as built, its ANN recall against
    exact search and, under ``timings``, its per-query latency and exact search's."""
    record: Record = {"kind": stats.kind, "dimension": stats.dimension, "memory_bytes": stats.memory_bytes}
    if stats.hnsw is not None:
        hnsw = stats.hnsw
        record.update(hnsw.parameters)
        record["ann_recall"] = hnsw.ann_recall
        record["sample"] = hnsw.sample
        record["timings"] = {
            "latency_ms": _latency_record(hnsw.latency),
            "exact_latency_ms": _latency_record(hnsw.exact_latency),
        }
    return record


def _arm_record(result: ArmResult) -> Record:
    return {
        "spec": result.arm.spec,
        "fingerprint": result.arm.fingerprint,
        "prompts": dict(result.arm.prompts),
        "index": index_record(result.index),
    }


def golden_record(run: GoldenRun, path: str) -> Record:
    """The golden-set part of the report: settings, models, fingerprints and every query under both arms."""
    golden = run.golden
    arms = {"incumbent": run.incumbent, "candidate": run.candidate}
    queries = []
    for i, query in enumerate(golden.queries):
        queries.append(
            {
                "id": query.id,
                "text": query.text,
                "strata": dict(query.fields),
                "scores": {
                    role: {name: _number(float(values[i])) for name, values in arm.per_query.items()}
                    for role, arm in arms.items()
                },
                "ranked": {role: list(arm.ranked[i]) for role, arm in arms.items()},
                "similarities": {role: list(arm.similarities[i]) for role, arm in arms.items()},
            }
        )
    return {
        "name": golden.name,
        "path": path,
        "fingerprint": golden.fingerprint(),
        "plan_fingerprint": golden.plan_fingerprint(),
        "control": {"fingerprint": run.control.fingerprint, "components": run.control.components()},
        "metric": str(golden.metric),
        "guards": dict(golden.guards),
        "report": [str(m) for m in golden.report_metrics],
        "tie_margin": golden.tie_margin,
        "confidence": golden.confidence,
        "min_queries": golden.min_queries,
        "bootstrap": golden.bootstrap,
        "seed": golden.seed,
        "relevance_level": golden.relevance_level,
        "index": _index_record(golden),
        "depth": ranked_depth(golden),
        "documents": len(golden.documents),
        "incumbent": _arm_record(run.incumbent),
        "candidate": _arm_record(run.candidate),
        "queries": queries,
    }


def _index_record(golden: GoldenSet) -> Record | str:
    index = golden.index
    if index.kind == "exact":
        return "exact"
    return {"hnsw": {"M": index.M, "ef_construction": index.ef_construction, "ef_search": index.ef_search}}


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


def build_report(golden_records: Iterable[Record], stratum_records: Iterable[Record]) -> Record:
    """Merge golden-set and stratum records (from any number of workers) into the JSON report.

    Order is by golden-set path and the golden file's stratum order, never by arrival, so a run with
    pytest-xdist writes the same report as a serial one.
    """
    by_path: dict[str, list[Record]] = {}
    for record in stratum_records:
        by_path.setdefault(record["golden"], []).append(record)
    golden_sets = []
    for golden in sorted(golden_records, key=lambda r: r["path"]):
        strata = sorted(by_path.get(golden["path"], []), key=lambda r: r["order"])
        golden_sets.append(
            {
                **golden,
                "strata": [{k: v for k, v in s.items() if k not in ("golden", "order")} for s in strata],
            }
        )
    return {"schema_version": SCHEMA_VERSION, "golden_sets": golden_sets}


# ---------------------------------------------------------------- terminal


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _fmt_ci(ci: Sequence[float | None]) -> str:
    return f"[{_fmt(ci[0], True)}, {_fmt(ci[1], True)}]"


def _fmt_sign(record: Mapping[str, Any]) -> str:
    p = record["sign_p"]
    return f"{record['wins']}/{record['losses']} p={p:.2g}" if p is not None else "—"


def _arm_title(arm: Mapping[str, Any]) -> str:
    """The arm's spec, and the prompts its model applies when it has any (the JSON report always has them)."""
    prompts = {kind: text for kind, text in arm.get("prompts", {}).items() if text}
    if not prompts:
        return str(arm["spec"])
    return f"{arm['spec']} (prompts: " + ", ".join(f"{kind} {text!r}" for kind, text in prompts.items()) + ")"


def golden_table(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """The per-golden-set table of DESIGN.md: one row per stratum that ran."""
    title = (
        f"{golden['name']} ({golden['path']}): {golden['metric']}, margin {golden['tie_margin']}, "
        f"{golden['confidence']:.0%} CI; incumbent {_arm_title(golden['incumbent'])} vs candidate "
        f"{_arm_title(golden['candidate'])}"
    )
    header = [
        "stratum",
        "n",
        "incumbent",
        "candidate",
        "Δ",
        f"{golden['confidence']:.0%} CI",
        "W/L sign",
        "MDE",
        "verdict",
    ]
    rows = []
    for s in strata:
        rows.append(
            [
                s["stratum"],
                str(s["n"]) + (f" (+{s['excluded']} excl.)" if s["excluded"] else ""),
                _fmt(s["incumbent"]),
                _fmt(s["candidate"]),
                _fmt(s["delta"], True),
                _fmt_ci(s["ci"]),
                _fmt_sign(s),
                _fmt(s["mde"]),
                s["verdict"] + ("*" if s["sign_disagrees"] else ""),
            ]
        )
    lines = [title, *table(header, rows)]
    if any(s["sign_disagrees"] for s in strata):
        lines.append("* the sign test disagrees with the mean: a few queries drive the difference.")
    for role in ROLES:
        # .get: reports written before arms carried an index record are still rendered.
        index = golden[role].get("index")
        if index is not None and index["kind"] == "hnsw":
            lines.append(_hnsw_line(role, index, golden["depth"]))
    return lines


def _hnsw_line(role: str, index: Mapping[str, Any], depth: int) -> str:
    timings = index["timings"]
    latency, exact = timings["latency_ms"], timings["exact_latency_ms"]
    return (
        f"{role} index: hnsw M={index['M']} ef_construction={index['ef_construction']} ef={index['ef']}, "
        f"ANN recall@{depth} {index['ann_recall']:.3f} ({index['sample']} queries), "
        f"{_fmt_bytes(index['memory_bytes'])}, latency p50 {_fmt_ms(latency['p50'])} / "
        f"p95 {_fmt_ms(latency['p95'])} (exact {_fmt_ms(exact['p50'])} / {_fmt_ms(exact['p95'])})"
    )


def _fmt_ms(value: float) -> str:
    return f"{value:.3g} ms"


def _fmt_bytes(value: int) -> str:
    """Binary units, one decimal: 1536 -> '1.5 KiB'."""
    units = ("B", "KiB", "MiB", "GiB")
    exponent = 0
    while exponent < len(units) - 1 and value >= 1024 ** (exponent + 1):
        exponent += 1
    return f"{value} B" if exponent == 0 else f"{value / 1024**exponent:.1f} {units[exponent]}"


def _mover_lines(title: str, movers: Sequence[Mapping[str, Any]], metric: str) -> list[str]:
    if not movers:
        return []
    rows = [
        [
            m["id"],
            _fmt(m["incumbent"]),
            _fmt(m["candidate"]),
            _fmt(m["candidate"] - m["incumbent"], True),
            m["text"],
        ]
        for m in movers
    ]
    return [
        "",
        title,
        *table(["query", f"incumbent {metric}", "candidate", "Δ", "text"], rows, text_last=True),
    ]


def stratum_failure(record: Mapping[str, Any]) -> str:
    """What a WORSE stratum prints: the compact table, guards, and the queries that moved most."""
    metric = record["metric"]
    rows = [
        [
            name + (" (primary)" if name == metric else ""),
            _fmt(m["incumbent"]),
            _fmt(m["candidate"]),
            _fmt(m["delta"], True),
            _fmt_ci(m["ci"]),
            str(m["n"]),
            _fmt_sign(m),
        ]
        for name, m in record["metrics"].items()
    ]
    lines = [
        f"{record['stratum']}: {record['verdict']} — {record['reason']}",
        f"margin {record['tie_margin']}, confidence {record['confidence']}",
        "",
        *table(["metric", "incumbent", "candidate", "Δ", "CI", "n", "W/L sign"], rows),
    ]
    lines += _mover_lines("queries that moved most:", record["movers"], metric)
    if record["sign_disagrees"]:
        lines += _mover_lines(
            "the sign test disagrees; the queries that drive the mean:", record["drivers"], metric
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- files


def trec_run(golden: Mapping[str, Any], role: str) -> str:
    """A TREC run file (`qid Q0 docid rank score tag`) of one arm, with the similarity scores searched on."""
    tag = f"embeval-{role}"
    lines = []
    for query in golden["queries"]:
        for rank, (doc_id, score) in enumerate(
            zip(query["ranked"][role], query["similarities"][role], strict=True), start=1
        ):
            lines.append(f"{query['id']} Q0 {doc_id} {rank} {score!r} {tag}")
    return "\n".join(lines) + "\n"


def file_stem(golden: Mapping[str, Any]) -> str:
    """A file name for what is written per golden set: its path, flattened, without the extension."""
    return str(golden["path"]).replace("/", "__").rsplit(".", 1)[0]


def run_file_name(golden: Mapping[str, Any], role: str) -> str:
    return f"{file_stem(golden)}.{role}.run"


def report_json(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
