"""What the plugin prints: the per-golden-set table, a failing stratum's report, and the session's notes
(embedding cache, coverage of the judgments), as pure functions of the report's plain records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.coverage import CoverageRow, coverage_warnings
from pytest_embeval.output import table
from pytest_embeval.report import ROLES
from pytest_embeval.verdict import ROUGH_BELOW, familywise_error


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
    """The per-golden-set table of DESIGN.md: one row per stratum that ran, then what the verdicts rest on
    (the family of strata, ties, queries both arms miss, intervals on few differing queries)."""
    # .get: reports written before these settings existed ran percentile intervals on trec_eval's ties.
    interval, ties = golden.get("interval", "percentile"), golden.get("ties", "docid")
    adjusted = golden.get("multiple_comparisons", "none")
    ci = f"{golden['confidence']:.0%} CI" if adjusted == "none" else f"CI ({adjusted})"
    level = "CI (" if adjusted == "none" else f"family-wise ({adjusted}, "
    title = (
        f"{golden['name']} ({golden['path']}): {golden['metric']}, margin {golden['tie_margin']}, "
        f"{golden['confidence']:.0%} {level}{interval} interval), ties {ties}; "
        f"incumbent {_arm_title(golden['incumbent'])} vs candidate {_arm_title(golden['candidate'])}"
    )
    header = [
        "stratum",
        "n",
        "differ",
        "incumbent",
        "candidate",
        "Δ",
        ci,
        "W/L sign",
        "MDE",
        "verdict",
    ]
    rows = []
    for s in strata:
        differ = s.get("effective_n")
        rows.append(
            [
                s["stratum"],
                str(s["n"]) + (f" (+{s['excluded']} excl.)" if s["excluded"] else ""),
                "—" if differ is None else str(differ) + ("†" if _rough(differ) else ""),
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
    if any(_rough(s.get("effective_n")) for s in strata):
        lines.append(
            f"† fewer than {ROUGH_BELOW} queries differ between the arms: the interval rests on few queries."
        )
    lines += family_lines(golden, strata)
    lines += tie_lines(strata)
    lines += consensus_lines(golden, strata)
    for role in ROLES:
        # .get: reports written before arms carried an index record are still rendered.
        index = golden[role].get("index")
        if index is not None and index["kind"] == "hnsw":
            lines.append(_hnsw_line(f"{role} index", index, golden["depth"]))
        for part in golden[role].get("components", ()):
            if part["index"] is not None and part["index"]["kind"] == "hnsw":
                lines.append(_hnsw_line(f"{role} part {part['spec']}", part["index"], golden["depth"]))
    if "recall_target" in golden:
        lines.append(_recall_target_line(golden))
    for role in ROLES:
        usage = golden[role].get("usage")
        if usage is not None:
            lines.append(usage_line(role, usage))
    lines += pipeline_lines(golden)
    if any("rerank" in s for s in strata):
        lines += rerank_lines(golden, strata)
    return [*lines, *slice_lines(golden, strata), *capacity_lines(golden)]


def _rough(differ: int | None) -> bool:
    """An interval on some, but fewer than `ROUGH_BELOW`, differing queries (none: all differences zero)."""
    return differ is not None and 0 < differ < ROUGH_BELOW


def family_lines(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """How the strata were decided together: with ``none``, the family size and the chance of a false
    verdict somewhere if nothing changed; with an adjustment, the level each stratum was decided at."""
    families = [s["family"] for s in strata if s.get("family") is not None]
    if not families or families[0]["size"] < 2:
        return []
    method, size = families[0]["method"], families[0]["size"]
    alpha = 1.0 - golden["confidence"]
    if method == "none":
        chance = familywise_error(alpha, size)
        return [
            f"{size} strata tested at {golden['confidence']:.0%} each: if nothing changed, the chance of at "
            f"least one false BETTER or WORSE among them is up to {chance:.0%} "
            f"(multiple_comparisons: holm keeps it within {alpha:.0%})."
        ]
    levels = ", ".join(
        f"{s['stratum']} {s['family']['level']:.3g}"
        for s in strata
        if s.get("family") is not None and s["family"]["level"] is not None
    )
    return [
        f"multiple comparisons: {method} over {size} strata, family-wise level {alpha:g}; levels: {levels}."
    ]


def tie_lines(strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per stratum with ties across the primary cutoff: how many queries tie in each arm, and a warning when
    some order of the tied documents gives another verdict."""
    lines = []
    for s in strata:
        tied = s.get("tied")
        if tied is None or not (tied["incumbent"] or tied["candidate"] or tied["could_change"]):
            continue
        counts = (
            f"{s['stratum']}: tied scores across {tied['metric']} in {tied['incumbent']} incumbent and "
            f"{tied['candidate']} candidate queries of {s['n']}"
        )
        if tied["could_change"]:
            others = ", ".join(f"{verdict} ({order})" for order, verdict in tied["verdicts"].items())
            lines.append(
                f"embeval: WARNING: {counts}: the tie order changes the verdict: {others}; ties: expected "
                "scores every order alike"
            )
        else:
            lines.append(f"ties: {counts}; no order of them changes the verdict")
    return lines


def consensus_lines(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """Queries where neither arm finds a relevant document within the cutoff: counted per stratum, with the
    command that writes a sheet to re-judge them."""
    counted = [(s["stratum"], len(s.get("consensus_failures", ()))) for s in strata]
    counted = [(name, count) for name, count in counted if count]
    if not counted:
        return []
    k = str(golden["metric"]).split("@")[-1]
    per_stratum = ", ".join(f"{name} {count}" for name, count in counted)
    return [
        f"check the labels: queries where neither arm finds a relevant document in the top {k}: "
        f"{per_stratum} (listed under consensus_failures in the JSON report; `embeval pool "
        f"{golden['path']} --from-report REPORT.json --consensus-failures` writes a sheet to re-judge them)"
    ]


def usage_line(role: str, usage: Mapping[str, Any]) -> str:
    """What an endpoint arm spent on a golden set, e.g. ``candidate usage: 12,480 tokens in 42 requests
    ($0.0002 at $0.02 per million); 1,200 tokens ($2.4e-05) not spent: served from the embedding cache``."""
    requests = usage["requests"]
    line = f"{role} usage: {usage['tokens']:,} tokens in {requests:,} request{'' if requests == 1 else 's'}"
    if usage["cost"] is not None and requests:
        line += f" (${usage['cost']:.4g} at ${usage['price_per_million_tokens']:g} per million)"
    if usage["cached_tokens"]:
        saved = "" if usage["cached_cost"] is None else f" (${usage['cached_cost']:.4g})"
        line += f"; {usage['cached_tokens']:,} tokens{saved} not spent: served from the embedding cache"
    return line


def pipeline_lines(golden: Mapping[str, Any]) -> list[str]:
    """What the golden set's pipeline did besides retrieval: filters and chunk folding."""
    lines = []
    filters = golden.get("filters")
    if filters is not None:
        line = (
            f"filters: {filters['queries']} of {len(golden['queries'])} queries search only the documents "
            f"their filters allow ({filters['distinct']} distinct filters)"
        )
        empty = filters["matching_nothing"]
        if empty:
            line += f"; {len(empty)} match no document: " + ", ".join(empty)
        lines.append(line)
    fold = golden.get("fold")
    if fold is not None:
        lines.append(
            f"folded {fold['chunks']:,} chunks into {fold['documents']:,} documents by {fold['field']!r} "
            f"(a document ranks by its best chunk; {golden['depth']} documents per query)"
        )
    return lines


def rerank_lines(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each stratum's first-stage and after-rerank comparison side by side, on the queries reranked for it,
    and which one the verdict rests on."""
    rerank = golden["rerank"]
    metric = golden["metric"]
    where = "all queries" if rerank["sample"] is None else f"{rerank['sample']} queries per stratum"
    decides = "the after-rerank ranking" if rerank["decides"] else "the first stage"
    header = ["stratum", "n", "first stage Δ", "CI", "verdict", "after rerank Δ", "CI", "verdict", ""]
    rows = []
    for s in strata:
        if "rerank" not in s:
            continue
        first, after = s["rerank"]["first_stage"], s["rerank"]["after_rerank"]
        before_m, after_m = first["metrics"][metric], after["metrics"][metric]
        absorbed = s["rerank"]["absorbed"]
        rows.append(
            [
                s["stratum"],
                str(after_m["n"]),
                _fmt(before_m["delta"], True),
                _fmt_ci(before_m["ci"]),
                first["verdict"],
                _fmt(after_m["delta"], True),
                _fmt_ci(after_m["ci"]),
                after["verdict"],
                "" if absorbed is None else f"the first-stage {absorbed} vanishes after reranking",
            ]
        )
    timings = rerank.get("timings", {})
    return [
        f"reranked by {rerank['spec']} (top {rerank['depth']}, {where}, {metric}); "
        f"the verdict rests on {decides}",
        *table(header, rows),
        f"reranker: {timings.get('pairs_scored', 0):,} pairs scored, {timings.get('pairs_from_cache', 0):,} "
        "from the cache",
    ]


def _hnsw_line(what: str, index: Mapping[str, Any], depth: int) -> str:
    timings = index["timings"]
    latency, exact = timings["latency_ms"], timings["exact_latency_ms"]
    reached = f" (smallest to reach recall {index['recall_target']:g})" if "recall_target" in index else ""
    filtered = ", filtered as the queries are" if index.get("filtered") else ""
    return (
        f"{what}: hnsw M={index['M']} ef_construction={index['ef_construction']} ef={index['ef']}"
        f"{reached}, ANN recall@{depth} {_fmt(index['ann_recall'])} ({index['sample']} queries{filtered}), "
        f"{_fmt_bytes(index['memory_bytes'])}, latency p50 {_fmt_ms(latency['p50'])} / "
        f"p95 {_fmt_ms(latency['p95'])} (exact {_fmt_ms(exact['p50'])} / {_fmt_ms(exact['p95'])})"
    )


def _recall_target_line(golden: Mapping[str, Any]) -> str:
    target = golden["recall_target"]
    ef = target["ef"]
    more = target["needs_more"]
    if more is None:
        needs = f"both arms reach it at ef {ef['incumbent']}"
    else:
        other = "incumbent" if more == "candidate" else "candidate"
        needs = f"the {more} needs more: ef {ef[more]} against the {other}'s {ef[other]}"
    return f"recall target {target['target']:g}: {needs}; {target['held_constant']}"


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
    ]
    if record.get("decided_by") == "rerank":
        first = record["rerank"]["first_stage"]
        lines.append(
            f"decided after the reranker, on {record['n']} reranked queries (first stage on them: "
            f"Δ {_fmt(first['metrics'][metric]['delta'], True)}, {first['verdict']})"
        )
    lines += [
        "",
        *table(["metric", "incumbent", "candidate", "Δ", "CI", "n", "W/L sign"], rows),
    ]
    if record.get("gap_moving"):
        moved = ", ".join(f"{one['fraction']:.0%} {_fmt(one['delta'], True)}" for one in record["slices"])
        lines += ["", f"Δ by corpus size: {moved}; {record['slices_note']}"]
    lines += _mover_lines("queries that moved most:", record["movers"], metric)
    if record["sign_disagrees"]:
        lines += _mover_lines(
            "the sign test disagrees; the queries that drive the mean:", record["drivers"], metric
        )
    return "\n".join(lines)


def coverage_warning_lines(golden: Mapping[str, Any], report_path: str | None) -> list[str]:
    """A warning for each arm of the golden set whose top k was judged much less than another's (see
    `coverage.coverage_warnings`), from the report's ``coverage`` records."""
    rows = [CoverageRow(**row) for row in golden["coverage"]]
    warnings = coverage_warnings(rows, golden_path=golden["path"], report_path=report_path)
    return [f"embeval: WARNING: {warning}" for warning in warnings]


def cache_lines(read: int, embedded: int, corrupt: int, write_error: str | None, where: str) -> list[str]:
    """One line on what the embedding cache in ``where`` served and took over the session, and one each for
    corrupt entries and for a cache that could not be written; nothing when the cache was not used."""
    if not (read or embedded or corrupt or write_error):
        return []
    lines = [f"embeval: embedding cache {where}: {read:,} texts read, {embedded:,} embedded"]
    if corrupt:
        entries = "entry was" if corrupt == 1 else "entries were"
        lines.append(
            f"embeval: {corrupt:,} corrupt cache {entries} found in {where}, discarded and recomputed"
        )
    if write_error:
        lines.append(f"embeval: new embeddings could not be stored in {where}: {write_error}")
    return lines


# ---------------------------------------------------------------- capacity and corpus slices


def slice_lines(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per stratum, the primary Δ, CI and verdict at each corpus size, and the strata whose gap still
    moved between the two largest sizes; nothing without ``corpus_sample``."""
    ran = [s for s in strata if s.get("slices")]
    if not ran:
        return []
    sample = golden["corpus_sample"]
    sizes = ran[0]["slices"]
    header = ["stratum", *(f"{one['fraction']:.0%} ({one['documents']:,} documents)" for one in sizes)]
    rows = [
        [
            s["stratum"],
            *(f"{_fmt(one['delta'], True)} {_fmt_ci(one['ci'])} {one['verdict']}" for one in s["slices"]),
        ]
        for s in ran
    ]
    lines = [
        "",
        f"{golden['metric']} Δ by corpus size, of {sample['corpus_documents']:,} documents (every judged one "
        f"in each slice, the rest a draw seeded {sample['seed']}); the verdicts are the largest slice's:",
        *table(header, rows),
    ]
    for s in ran:
        if s["gap_moving"]:
            lines.append(f"{s['stratum']}: {s['slices_note']}")
    return lines


def capacity_lines(golden: Mapping[str, Any]) -> list[str]:
    """Each arm's capacity, measured here and projected to ``production``, with what every projected figure
    assumes; nothing when the golden set declares no production size."""
    arms = [(role, golden[role]["capacity"]) for role in ROLES if "capacity" in golden[role]]
    if not arms:
        return []
    measured = arms[0][1]["measured"]
    documents = arms[0][1]["production"]["documents"]
    header = [
        "arm",
        "vector",
        "tokens/doc",
        "encoding here",
        "latency p50/p95",
        "index memory",
        "embedding tokens",
        "embedding cost",
        "memory/month",
    ]
    rows = []
    for role, capacity in arms:
        here, there = capacity["measured"], capacity["production"]
        tokens = here["document_tokens"]
        latency = here["timings"]["latency_ms"]
        rows.append(
            [
                role,
                f"{here['dimension']} x {here['dtype']} ({here['bytes_per_vector']:,} B)",
                "—" if tokens is None else f"{tokens['per_text']:.1f}",
                _fmt_encoding(here["timings"]["encoding"]),
                f"{latency['p50']:.3g} / {latency['p95']:.3g} ms",
                _fmt_estimate(there["index_bytes"], lambda value: f"{value / 1e9:,.2f} GB"),
                _fmt_estimate(there["embedding_tokens"], _fmt_count),
                _fmt_estimate(there["embedding_cost"], lambda value: f"{value:,.2f}"),
                _fmt_estimate(there["memory_cost_per_month"], lambda value: f"{value:,.2f}"),
            ]
        )
    lines = [
        "",
        f"capacity at {documents:,} documents (production.documents), measured on the "
        f"{measured['documents']:,} searched here ({measured['index']} index; latency measured here, not "
        "projected):",
        *table(header, rows),
    ]
    if any(capacity["measured"]["timings"]["encoding"] is None for _, capacity in arms):
        lines.append(
            "encoding not measured: every document vector of that arm came from the embedding cache "
            "(--embeval-no-cache measures it)"
        )
    queries = golden["production"].get("queries_per_month")
    if queries is not None:
        rows = [
            [
                role,
                _fmt_estimate(capacity["production"]["query_tokens_per_month"], _fmt_count),
                _fmt_estimate(capacity["production"]["query_cost_per_month"], lambda value: f"{value:,.2f}"),
                _fmt_estimate(
                    capacity["production"]["timings"]["search_core_hours_per_month"],
                    lambda value: f"{value:,.1f}",
                ),
            ]
            for role, capacity in arms
        ]
        header = ["arm", "query tokens", "query embedding cost", "search core-hours"]
        lines += [
            "",
            f"per month at {queries:,} queries (production.queries_per_month):",
            *table(header, rows),
        ]
    lines.append("assumptions:")
    for name, key in _ASSUMED:
        said = [(role, _assumption(capacity["production"], key)) for role, capacity in arms]
        said = [(role, text) for role, text in said if text is not None]
        if len({text for _, text in said}) == 1:
            lines.append(f"  {name}: {said[0][1]}")
        else:
            lines += [f"  {name}, {role}: {text}" for role, text in said]
    return lines


_ASSUMED = (
    ("index memory", "index_bytes"),
    ("embedding tokens", "embedding_tokens"),
    ("embedding cost", "embedding_cost"),
    ("memory/month", "memory_cost_per_month"),
    ("query tokens", "query_tokens_per_month"),
    ("query embedding cost", "query_cost_per_month"),
    ("search core-hours", "search_core_hours_per_month"),
)


def _assumption(projected: Mapping[str, Any], key: str) -> str | None:
    estimate = projected.get(key) or projected.get("timings", {}).get(key)
    return None if estimate is None else str(estimate["assumes"])


def _fmt_estimate(estimate: Mapping[str, Any], shown: Any) -> str:
    return "—" if estimate["value"] is None else str(shown(estimate["value"]))


def _fmt_count(value: float) -> str:
    for size, word in ((1e9, "billion"), (1e6, "million")):
        if value >= size:
            return f"{value / size:.3g} {word}"
    return f"{value:,.0f}"


def _fmt_encoding(encoding: Mapping[str, Any] | None) -> str:
    if encoding is None:
        return "not measured (all cached)"
    tokens = encoding["tokens_per_second"]
    rate = f"{encoding['texts_per_second']:,.0f} texts/s"
    return rate if tokens is None else f"{rate}, {tokens:,.0f} tokens/s"
