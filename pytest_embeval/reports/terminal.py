"""What the plugin prints: the per-golden-set table, a failing stratum's report, and the session's notes
(embedding cache, coverage of the judgments), as pure functions of the report's plain records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_embeval.core.sample_design import design_words
from pytest_embeval.core.text_table import table
from pytest_embeval.reports.capacity_contents import (
    Block,
    capacity_assumptions,
    capacity_blocks,
    recall_target_note,
    slices_block,
    usage_lines,
)
from pytest_embeval.reports.contents import (
    COMPARISON,
    arm_title,
    engine_words,
    fmt_bytes,
    fmt_interval,
    fmt_number,
    fmt_sign,
    golden_title,
    interval_words,
    routed_caption,
    strata_table,
    unweighted_row,
)
from pytest_embeval.reports.frontier import frontier_block
from pytest_embeval.reports.frontier_records import faiss_text
from pytest_embeval.reports.json_report import ROLES
from pytest_embeval.reports.pipeline_contents import index_split_block, pipeline_notes, rerank_block
from pytest_embeval.reports.shortlist_contents import shortlist_caption, shortlist_notes, shortlist_table
from pytest_embeval.reports.stratum_notes import coverage_notes, strata_notes

#: The terminal's strata table: golden-file order, with the MDE; the reasons, too long for a column, follow
#: it on lines of their own (`reason_lines`).
TERMINAL_COLUMNS = ("stratum", "n", "differ", *COMPARISON, "MDE", "verdict")
#: The verdicts whose reason the terminal prints under the table: why a stratum failed, or did not resolve.
REASONS_SHOWN = ("WORSE", "TIE")


def golden_table(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """The per-golden-set table of DESIGN.md: one row per stratum that ran, each TIE's and WORSE's reason,
    then what the verdicts rest on (the family of strata, ties, queries both arms miss, intervals on few
    differing queries)."""
    # .get: reports written before the split was recorded had none.
    split = golden.get("split")
    where = golden["path"] if split is None else f"{golden['path']}, split {split}"
    title = (
        f"{golden_title(golden)} ({where}): {golden['metric']}, margin {golden['tie_margin']}, "
        f"{_guard_words(golden)}{interval_words(golden)}; "
        f"incumbent {arm_title(golden['incumbent'])} vs candidate {arm_title(golden['candidate'])}"
    )
    shown = strata_table(golden, strata, columns=TERMINAL_COLUMNS, reading_order=False)
    rows: list[tuple[str, ...]] = []
    for row, stratum in zip(shown.rows, strata, strict=True):
        # Under weights, each stratum's second line: the same numbers with every query counted once.
        second = unweighted_row(stratum, TERMINAL_COLUMNS)
        rows += [row] if second is None else [row, second]
    # No rows when only the decision item ran (``-k decision``): its line follows the title.
    lines = [title, *(table(shown.header, rows) if rows else []), *reason_lines(strata)]
    lines += [("embeval: WARNING: " if n.warning else "") + n.text for n in strata_notes(golden, strata)]
    for role in ROLES:
        # .get: reports written before arms carried an index record are still rendered.
        index = golden[role].get("index")
        if index is not None and "ann_recall" in index:
            lines.append(_index_line(f"{role} index", index, golden["depth"]))
        for part in golden[role].get("components", ()):
            if part["index"] is not None and "ann_recall" in part["index"]:
                lines.append(_index_line(f"{role} part {part['spec']}", part["index"], golden["depth"]))
    if "recall_target" in golden:
        lines.append(str(recall_target_note(golden)))
    lines += usage_lines(golden)
    lines += pipeline_notes(golden)
    for block in (index_split_block(golden, strata), rerank_block(golden, strata)):
        if block is not None:
            lines += _block_lines(block)
    return [
        *lines,
        *slice_lines(golden, strata),
        *capacity_lines(golden),
        *(frontier_lines(golden["frontier"]) if "frontier" in golden else []),
        *decision_lines(golden),
    ]


def _guard_words(golden: Mapping[str, Any]) -> str:
    """``guard recall@20 margin 0.05, ``: the guards a stratum also fails on, each with its own margin."""
    # .get: reports written before the golden set's guards were recorded.
    guards = golden.get("guards") or {}
    if not guards:
        return ""
    named = ", ".join(f"{metric} margin {margin:g}" for metric, margin in guards.items())
    return f"{'guard' if len(guards) == 1 else 'guards'} {named}, "


def reason_lines(strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """Why each TIE is a TIE and each WORSE is WORSE (a guard that failed, with its numbers), a line each,
    in the table's order: ``language=es: TIE — unresolved: CI [-0.084, +0.082] covers 0; …``."""
    return [
        f"{s['stratum']}: {s['verdict']} — {s['reason']}" for s in strata if s["verdict"] in REASONS_SHOWN
    ]


def shortlist_lines(shortlist: Mapping[str, Any]) -> list[str]:
    """A shortlist's table under its caption, after its candidates' own tables, and the line naming the
    cheapest candidate that passes; then, with a variant or a FAISS index among the arms, the frontier of
    them all."""
    shown = shortlist_table(shortlist)
    notes = [note.text for note in shortlist_notes(shortlist) if not note.warning]
    frontier = frontier_lines(shortlist["frontier"]) if "frontier" in shortlist else []
    return [shortlist_caption(shortlist), *table(shown.header, shown.rows), *notes, *frontier]


def shortlist_warning_lines(shortlist: Mapping[str, Any], report_path: str | None) -> list[str]:
    """What the shortlist warns about: candidates not run, and each arm whose top k was judged much less
    than another's."""
    return [
        f"embeval: WARNING: {note.text}" for note in shortlist_notes(shortlist, report_path) if note.warning
    ]


def decision_lines(golden: Mapping[str, Any]) -> list[str]:
    """With a declared decision: the routed system's table (when routing was tried), then the decision's
    one line."""
    decision = golden.get("decision")
    if decision is None:
        return []
    return [*_routed_table(golden, decision), decision["line"]]


def _routed_table(golden: Mapping[str, Any], decision: Mapping[str, Any]) -> list[str]:
    caption = routed_caption(decision)
    if caption is None:
        return []
    shown = strata_table(golden, decision["routed_system"], columns=TERMINAL_COLUMNS, reading_order=False)
    return [f"{caption}:", *table(shown.header, shown.rows)]


def decision_failure(record: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """What a decision to change the target prints: its line, and the routed system it measured;
    ``settings``: the golden set's ``confidence`` and ``multiple_comparisons`` (the interval's heading)."""
    return "\n".join([record["line"], *_routed_table(settings, record)])


def _index_line(what: str, index: Mapping[str, Any], depth: int) -> str:
    """An approximate index (hnsw, a FAISS index or a vector database) against exact search, and its
    latency."""
    timings = index["timings"]
    latency, exact = timings["latency_ms"], timings["exact_latency_ms"]
    times = (
        f"latency p50 {_fmt_ms(latency['p50'])} / p95 {_fmt_ms(latency['p95'])} "
        f"(exact {_fmt_ms(exact['p50'])} / {_fmt_ms(exact['p95'])})"
    )
    if "version" in index:
        return f"{what}: {engine_words(index, depth)}, {times} through its client"
    reached = f" (smallest to reach recall {index['recall_target']:g})" if "recall_target" in index else ""
    if index["kind"] == "faiss":
        return (
            f"{what}: {faiss_text(index)}{reached}, ANN recall@{depth} {fmt_number(index['ann_recall'])} "
            f"({index['sample']} queries), {fmt_bytes(index['memory_bytes'])}, {times}"
        )
    filtered = ", filtered as the queries are" if index.get("filtered") else ""
    return (
        f"{what}: hnsw M={index['M']} ef_construction={index['ef_construction']} ef={index['ef']}"
        f"{reached}, ANN recall@{depth} {fmt_number(index['ann_recall'])} "
        f"({index['sample']} queries{filtered}), {fmt_bytes(index['memory_bytes'])}, {times}"
    )


def _fmt_ms(value: float) -> str:
    return f"{value:.3g} ms"


def _mover_lines(title: str, movers: Sequence[Mapping[str, Any]], metric: str) -> list[str]:
    if not movers:
        return []
    rows = [
        [
            m["id"],
            fmt_number(m["incumbent"]),
            fmt_number(m["candidate"]),
            fmt_number(m["candidate"] - m["incumbent"], True),
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
            fmt_number(m["incumbent"]),
            fmt_number(m["candidate"]),
            fmt_number(m["delta"], True),
            fmt_interval(m["ci"]),
            str(m["n"]),
            fmt_sign(m),
        ]
        for name, m in record["metrics"].items()
    ]
    lines = [
        f"{record['stratum']}: {record['verdict']} — {record['reason']}",
        f"margin {record['tie_margin']}, confidence {record['confidence']}",
    ]
    plain = record.get("unweighted")
    if plain is not None:
        design = f", {design_words(record['design'])}" if "design" in record else ""
        lines.append(
            f"traffic-weighted by {record.get('traffic_weight', record['weights'])} (n={record['n']}, "
            f"Kish {record['kish_n']:.1f}{design}); "
            f"unweighted: Δ {fmt_number(plain['delta'], True)} {fmt_interval(plain['ci'])}, "
            f"{plain['verdict']}"
        )
    if record.get("decided_by") == "rerank":
        first = record["rerank"]["first_stage"]
        lines.append(
            f"decided after the reranker, on {record['n']} reranked queries (first stage on them: "
            f"Δ {fmt_number(first['metrics'][metric]['delta'], True)}, {first['verdict']})"
        )
    lines += [
        "",
        *table(["metric", "incumbent", "candidate", "Δ", "CI", "n", "W/L sign"], rows),
    ]
    if record.get("gap_moving"):
        sizes = record["slices"]
        moved = ", ".join(f"{one['fraction']:.0%} {fmt_number(one['delta'], True)}" for one in sizes)
        lines += ["", f"Δ by corpus size: {moved}; {record['slices_note']}"]
    lines += _mover_lines("queries that moved most:", record["movers"], metric)
    if record["sign_disagrees"]:
        lines += _mover_lines(
            "the sign test disagrees; the queries that drive the mean:", record["drivers"], metric
        )
    return "\n".join(lines)


def coverage_warning_lines(golden: Mapping[str, Any], report_path: str | None) -> list[str]:
    """A warning for each arm of the golden set whose top k was judged much less than another's."""
    return [f"embeval: WARNING: {note.text}" for note in coverage_notes(golden, report_path)]


def shelf_life_warning_lines(golden: Mapping[str, Any]) -> list[str]:
    """A warning when the golden set's median judgment is past its ``shelf_life`` (the report's
    ``judgments.age``); nothing when it is not, or when its age is unknown (some judgment has no date)."""
    age = (golden.get("judgments") or {}).get("age") or {}
    if age.get("stale") is not True:
        return []
    path = golden["path"]
    return [
        f"embeval: WARNING: {golden['name']} ({path}): its median judgment was made on {age['median']}, "
        f"past its shelf_life of {age['shelf_life']} (expired {age['expires']}): relevance drifts, re-judge "
        f"a share: embeval refresh {path} --fraction 0.1 --out SHEET.csv, grade the sheet, then embeval "
        f"merge {path} SHEET.csv --refresh"
    ]


def cache_lines(
    read: int, embedded: int, corrupt: int, unreadable: int, write_error: str | None, where: str
) -> list[str]:
    """One line on what the embedding cache in ``where`` served and took over the session, and one each for
    corrupt entries, for packs whose header could not be read (how many entries they held is unknown), and
    for a cache that could not be written; nothing when the cache was not used."""
    if not (read or embedded or corrupt or unreadable or write_error):
        return []
    lines = [f"embeval: embedding cache {where}: {read:,} texts read, {embedded:,} embedded"]
    if corrupt:
        entries = "entry was" if corrupt == 1 else "entries were"
        lines.append(
            f"embeval: {corrupt:,} corrupt cache {entries} found in {where}, discarded and recomputed"
        )
    if unreadable:
        one = unreadable == 1
        lines.append(
            f"embeval: found {unreadable:,} cache pack{'' if one else 's'} in {where} whose "
            f"header{'' if one else 's'} could not be read (how many entries {'it' if one else 'they'} held "
            f"is unknown): discarded, {'its' if one else 'their'} texts embedded again"
        )
    if write_error:
        lines.append(f"embeval: new embeddings could not be stored in {where}: {write_error}")
    return lines


def textless_warning_lines(golden: Mapping[str, Any], shown: int) -> list[str]:
    """A warning naming the golden set's documents without text (the first ``shown`` ids), if it has any."""
    ids = golden.get("documents_without_text") or []
    if not ids:
        return []
    listed = ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
    documents = "document has" if len(ids) == 1 else "documents have"
    return [
        f"embeval: WARNING: {golden['name']} ({golden['path']}): {len(ids)} {documents} no text ({listed}): "
        "never embedded nor retrieved by either arm; judgments naming them still count"
    ]


def margin_warning_lines(golden: Mapping[str, Any]) -> list[str]:
    """A warning for each margin (``tie_margin``, a guard's) that no stratum's Δ can reach on this golden
    set: when every query's score of the metric lies in [lo, hi] in both arms, a mean difference lies in
    [-(hi - lo), hi - lo], so a margin beyond half that range's width makes WORSE impossible. Nothing is
    said when every score is the same (the same model on both arms, say): there is no range to judge by."""
    margins = {golden["metric"]: ("tie_margin", golden["tie_margin"])}
    for metric, margin in golden.get("guards", {}).items():
        margins.setdefault(metric, (f"guards.{metric}", margin))
    lines = []
    for metric, (key, margin) in margins.items():
        scores = [
            value
            for query in golden["queries"]
            for role in ROLES
            if (value := query["scores"][role].get(metric)) is not None
        ]
        if not scores:
            continue
        low, high = min(scores), max(scores)
        if low < high < low + margin:
            lines.append(
                f"embeval: WARNING: {golden_title(golden)} ({golden['path']}): {key} {margin:g} is more than "
                f"any Δ of {metric} can be here (every score is between {low:.3g} and {high:.3g}, so Δ stays "
                f"within ±{high - low:.3g}): no stratum can be WORSE, the gate cannot fail"
            )
    return lines


# ---------------------------------------------------------------- capacity and corpus slices


def _block_lines(block: Block) -> list[str]:
    return ["", block.caption, *table(block.table.header, block.table.rows), *block.notes]


def slice_lines(golden: Mapping[str, Any], strata: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per stratum, the primary Δ, CI and verdict at each corpus size, and the strata whose gap still
    moved between the two largest sizes; nothing without ``corpus_sample``."""
    block = slices_block(golden, strata)
    return [] if block is None else _block_lines(block)


def capacity_lines(golden: Mapping[str, Any]) -> list[str]:
    """Each arm's capacity, measured here and projected to ``production``, with what every projected figure
    assumes; nothing when the golden set declares no production size."""
    blocks = capacity_blocks(golden)
    if not blocks:
        return []
    lines = [line for block in blocks for line in _block_lines(block)]
    return [*lines, "assumptions:", *(f"  {line}" for line in capacity_assumptions(golden))]


def frontier_lines(record: Mapping[str, Any]) -> list[str]:
    """The arms' quality against their bill (`frontier.frontier_block` of a frontier's JSON record), with the
    cheapest arm without a WORSE stratum: a golden set's own two arms, or a shortlist's."""
    return _block_lines(frontier_block(record))


def device_line(default: str, devices: Mapping[str, Mapping[str, Any] | str | None]) -> str:
    """The header line saying where each arm's model runs: ``devices`` maps a role to its `DeviceRecord`
    as a dict, to a word when it has none (a custom encoder places itself, a fixture's arm is not built
    yet), and ``default`` is the device asked of models whose spec does not say."""
    shown = []
    versions: dict[str, str] = {}
    for role, record in devices.items():
        if isinstance(record, Mapping):
            details = [
                part for part in (record.get("name"), record.get("dtype")) if part and part != "float32"
            ]
            where = str(record["device"]) + (f" ({', '.join(details)})" if details else "")
            if record.get("torch"):
                versions["torch"] = str(record["torch"])
            if record.get("cuda"):
                versions["CUDA"] = str(record["cuda"])
        else:
            where = record or "its own device"
        shown.append(f"{role} on {where}")
    tail = "".join(f", {name} {version}" for name, version in versions.items())
    return f"embeval: device {default}: {', '.join(shown)}{tail}"
