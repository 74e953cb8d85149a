"""What a person reads off a golden set's report, whatever it is rendered as: the headline, the strata in
reading order and what their verdicts rest on (intervals, the family of strata, ties, labels to check), the
guards, the queries that moved most, the settings and the fingerprints, and the numbers as text.

Pure functions of one golden set of the merged JSON report (`json_report.build_report`), keyed on presence
where a key came later (reports written before it still render); `reports/terminal.py`, `reports/markdown.py`
and `reports/html_page.py` render them, each escaping the text for its own format.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_embeval.core.sample_design import design_words
from pytest_embeval.core.verdict import ROUGH_BELOW
from pytest_embeval.reports.frontier_records import faiss_text
from pytest_embeval.reports.json_report import ROLES
from pytest_embeval.reports.shortlist import CANDIDATE_NAME

#: Reading order of the verdicts: what fails the build first, then what the candidate wins, then ties.
VERDICT_ORDER = ("WORSE", "BETTER", "TIE")

#: Queries listed as "moved most" per golden set when a renderer does not say otherwise.
MOVED_SHOWN = 10


def fmt_number(value: float | None, signed: bool = False) -> str:
    """Three decimals (``+`` on differences with ``signed``), an em dash for a missing value."""
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def fmt_bytes(value: int) -> str:
    """Binary units, one decimal: 1536 -> '1.5 KiB'."""
    units = ("B", "KiB", "MiB", "GiB")
    exponent = 0
    while exponent < len(units) - 1 and value >= 1024 ** (exponent + 1):
        exponent += 1
    return f"{value} B" if exponent == 0 else f"{value / 1024**exponent:.1f} {units[exponent]}"


def fmt_interval(ci: Sequence[float | None]) -> str:
    return f"[{fmt_number(ci[0], True)}, {fmt_number(ci[1], True)}]"


def fmt_sign(record: Mapping[str, Any]) -> str:
    """The sign test as wins/losses and its exact two-sided p: ``27/59 p=0.00073``."""
    p = record["sign_p"]
    return f"{record['wins']}/{record['losses']} p={p:.2g}" if p is not None else "—"


@dataclasses.dataclass(frozen=True, slots=True)
class Table:
    """A table as text, for a format to mark up by each column's kind: ``id`` (a name or id from the golden
    set, shown as code), ``quote`` (free text from the golden set: a query), ``number``, ``verdict``
    (``WORSE``, or ``WORSE*`` when the sign test disagrees) or ``text`` (ours)."""

    header: tuple[str, ...]
    kinds: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def _verdict(record: Mapping[str, Any]) -> str:
    return str(record["verdict"]) + ("*" if record.get("sign_disagrees") else "")


NUMBERS = ("number",) * 5

#: Every column a strata table can have, and its kind; the CI column is headed by `ci_heading`.
STRATUM_COLUMNS = {
    "stratum": "id",
    "n": "number",
    "differ": "number",
    "incumbent": "number",
    "candidate": "number",
    "Δ": "number",
    "CI": "number",
    "W/L sign": "number",
    "MDE": "number",
    "verdict": "verdict",
    "unweighted": "number",
    "reason": "text",
}
#: Both arms' means, Δ, its interval and the sign test: the numbers of every comparison, in this order.
COMPARISON = ("incumbent", "candidate", "Δ", "CI", "W/L sign")
#: The columns a reader's report shows (the terminal has its own, with MDE and without the reason); the
#: unweighted column only under ``weights``.
READER_COLUMNS = ("stratum", "n", "differ", *COMPARISON, "verdict", "unweighted", "reason")


def ci_heading(golden: Mapping[str, Any]) -> str:
    """``95% CI``, or ``CI (holm)`` when the strata's intervals were adjusted for their number."""
    adjusted = golden.get("multiple_comparisons", "none")
    return f"{golden['confidence']:.0%} CI" if adjusted == "none" else f"CI ({adjusted})"


def interval_words(golden: Mapping[str, Any]) -> str:
    """How the intervals were made: ``95% CI (studentized interval), ties docid``, or with an adjustment
    ``95% family-wise (holm, studentized interval), ties docid``."""
    # .get: reports written before these settings existed ran percentile intervals on trec_eval's ties.
    interval, ties = golden.get("interval", "percentile"), golden.get("ties", "docid")
    adjusted = golden.get("multiple_comparisons", "none")
    level = "CI (" if adjusted == "none" else f"family-wise ({adjusted}, "
    weighted = f", traffic-weighted by {traffic_weight_text(golden)}" if "weights" in golden else ""
    if "design" in golden:
        weighted += f", {design_words(golden['design'])}"
    return f"{golden['confidence']:.0%} {level}{interval} interval), ties {ties}{weighted}"


def traffic_weight_text(golden: Mapping[str, Any]) -> str:
    """What a query weighs under ``weights``: ``frequency`` or ``frequency / inclusion`` (a report written
    before ``traffic_weight`` existed: its ``weights``)."""
    return str(golden.get("traffic_weight", golden["weights"]))


def rough(differ: int | None) -> bool:
    """An interval on some, but fewer than `ROUGH_BELOW`, differing queries (none: all differences zero)."""
    return differ is not None and 0 < differ < ROUGH_BELOW


def _differ(stratum: Mapping[str, Any]) -> str:
    differ = stratum.get("effective_n")
    return "—" if differ is None else str(differ) + ("†" if rough(differ) else "")


def _n(stratum: Mapping[str, Any]) -> str:
    """``118``, ``118 (+2 excl.)``; a weighted one adds Kish's effective number: ``118 (Kish 23.4)``."""
    kish = f" (Kish {stratum['kish_n']:.1f})" if stratum.get("kish_n") is not None else ""
    return str(stratum["n"]) + (f" (+{stratum['excluded']} excl.)" if stratum["excluded"] else "") + kish


def _unweighted(stratum: Mapping[str, Any]) -> str:
    """A weighted stratum's unweighted Δ, interval and verdict: ``-0.012 [-0.041, +0.017] TIE``."""
    plain = stratum.get("unweighted")
    if plain is None:
        return "—"
    return f"{fmt_number(plain['delta'], True)} {fmt_interval(plain['ci'])} {_verdict(plain)}"


#: How each strata-table column is written from a stratum record.
_CELLS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "stratum": lambda s: str(s["stratum"]),
    "n": _n,
    "differ": _differ,
    "incumbent": lambda s: fmt_number(s["incumbent"]),
    "candidate": lambda s: fmt_number(s["candidate"]),
    "Δ": lambda s: fmt_number(s["delta"], True),
    "CI": lambda s: fmt_interval(s["ci"]),
    "W/L sign": fmt_sign,
    "MDE": lambda s: fmt_number(s["mde"]),
    "verdict": _verdict,
    "unweighted": _unweighted,
    "reason": lambda s: str(s["reason"]),
}


def _numbers(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The `COMPARISON` cells of a stratum's or a guard's record."""
    return tuple(_CELLS[column](record) for column in COMPARISON)


def strata_table(
    golden: Mapping[str, Any],
    strata: Sequence[Mapping[str, Any]] | None = None,
    *,
    columns: Sequence[str] | None = None,
    reading_order: bool = True,
) -> Table:
    """One row per stratum (of ``strata``, default the golden set's), failing first unless not in
    ``reading_order``: by default (`READER_COLUMNS`) n, the queries that differ, both means, Δ, CI, sign
    test, verdict and reason."""
    chosen = golden["strata"] if strata is None else strata
    rows = failing_first(chosen) if reading_order else list(chosen)
    if columns is None:  # the queries that differ: in reports since the effective n was recorded
        differ = any("effective_n" in s for s in chosen)
        weighted = any("unweighted" in s for s in chosen)
        columns = [c for c in READER_COLUMNS if (differ or c != "differ") and (weighted or c != "unweighted")]
    return Table(
        header=tuple(ci_heading(golden) if c == "CI" else c for c in columns),
        kinds=tuple(STRATUM_COLUMNS[c] for c in columns),
        rows=tuple(tuple(_CELLS[c](s) for c in columns) for s in rows),
    )


def unweighted_row(stratum: Mapping[str, Any], columns: Sequence[str]) -> tuple[str, ...] | None:
    """A weighted stratum's second row, its ``columns`` filled from the stratum unweighted (the verdict in
    parentheses: not the one that counts); None for an unweighted stratum."""
    plain = stratum.get("unweighted")
    if plain is None:
        return None
    cells = {"stratum": "  unweighted", "n": "", "verdict": f"({_verdict(plain)})", "reason": plain["reason"]}
    return tuple(cells[c] if c in cells else _CELLS[c](plain) for c in columns)


def guards_table(golden: Mapping[str, Any]) -> Table | None:
    """Each stratum's guards (strata failing first), or None without guards."""
    rows = tuple(
        (
            str(s["stratum"]),
            str(g["metric"]),
            f"{g['margin']:g}",
            *_numbers(g),
            _verdict(g),
            "fails the stratum" if g["failed"] else "no",
        )
        for s in failing_first(golden["strata"])
        for g in s["guards"]
    )
    if not rows:
        return None
    return Table(
        header=("stratum", "guard", "margin", *COMPARISON, "verdict", "fails"),
        kinds=("id", "text", "number", *NUMBERS, "verdict", "text"),
        rows=rows,
    )


def failing_first(strata: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The strata in reading order (`VERDICT_ORDER`), each verdict's in the golden file's order."""
    return sorted(strata, key=lambda s: VERDICT_ORDER.index(s["verdict"]))


def counted(count: int, word: str) -> str:
    """``1 candidate``, ``3 candidates``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def join_words(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def golden_title(golden: Mapping[str, Any]) -> str:
    """The golden set's name, and in a shortlist its candidate's: ``support-search [small]``."""
    named = golden.get(CANDIDATE_NAME)
    return str(golden["name"]) if named is None else f"{golden['name']} [{named}]"


@dataclasses.dataclass(frozen=True, slots=True)
class Headline:
    """One golden set at a glance: ``support-search: 3 WORSE, 3 TIE — candidate loses overall and on
    shape=question and language=en``. Stratum names are kept apart so each format can mark them up."""

    name: str
    #: verdict counts in reading order, e.g. "3 WORSE, 3 TIE"
    counts: str
    #: the strata the candidate loses and wins (golden-file order), and why the rest tie when none resolved
    loses: tuple[str, ...]
    wins: tuple[str, ...]
    ties: str | None

    def text(self, stratum: Callable[[str], str] = str, name: Callable[[str], str] = str) -> str:
        """The headline, with each stratum name passed through ``stratum`` and the golden set's name through
        ``name`` (a format's escaping or markup)."""

        def where(strata: tuple[str, ...]) -> str:
            named = [stratum(s) for s in strata if s != "overall"]
            if len(named) < len(strata):
                return "overall" + (f" and on {join_words(named)}" if named else "")
            return f"on {join_words(named)}"

        said = []
        if self.loses:
            said.append(f"loses {where(self.loses)}")
        if self.wins:
            said.append(f"wins {where(self.wins)}")
        verdicts = f"candidate {'; '.join(said)}" if said else f"no difference resolved ({self.ties})"
        return f"{name(self.name)}: {self.counts} — {verdicts}"


def headline(golden: Mapping[str, Any]) -> Headline:
    strata = golden["strata"]
    counts = {verdict: sum(s["verdict"] == verdict for s in strata) for verdict in VERDICT_ORDER}
    # Ties say why only when nothing resolved: then the reason is the whole story.
    reasons: dict[str, int] = {}
    for s in strata:
        if s["verdict"] == "TIE":
            # A reason is "<label>: <detail>" (verdict.MetricRuling.reason); a tie's label is its kind.
            reason = str(s["reason"]).split(":", 1)[0]
            reasons[reason] = reasons.get(reason, 0) + 1
    return Headline(
        name=golden_title(golden),
        counts=", ".join(f"{count} {verdict}" for verdict, count in counts.items() if count) or "no strata",
        loses=tuple(s["stratum"] for s in strata if s["verdict"] == "WORSE"),
        wins=tuple(s["stratum"] for s in strata if s["verdict"] == "BETTER"),
        ties=", ".join(f"{count} {reason}" for reason, count in reasons.items()) or None,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Moved:
    """A query whose primary metric differs between the arms."""

    id: str
    text: str
    strata: str  # "language=en, shape=question"
    incumbent: float
    candidate: float

    @property
    def delta(self) -> float:
        return self.candidate - self.incumbent


def moved_most(golden: Mapping[str, Any], limit: int | None = MOVED_SHOWN) -> tuple[list[Moved], int]:
    """The queries whose primary metric moved most (largest |Δ| first, golden-file order among equals; at most
    ``limit``, all with None), and how many moved at all. Queries without a score under an arm (no relevant
    judgment) are left out, as the verdicts leave them out."""
    metric = golden["metric"]
    moved = []
    for query in golden["queries"]:
        scores = [query["scores"][role].get(metric) for role in ROLES]
        if None in scores or scores[0] == scores[1] or not all(map(math.isfinite, scores)):
            continue
        moved.append(
            Moved(
                id=str(query["id"]),
                text=str(query.get("text", "")),
                strata=", ".join(f"{field}={value}" for field, value in query["strata"].items()),
                incumbent=float(scores[0]),
                candidate=float(scores[1]),
            )
        )
    ranked = sorted(moved, key=lambda m: -abs(m.delta))
    return (ranked if limit is None else ranked[:limit]), len(moved)


def moved_table(moved: Sequence[Moved]) -> Table:
    return Table(
        header=("query", "strata", "incumbent", "candidate", "Δ", "text"),
        kinds=("id", "id", "number", "number", "number", "quote"),
        rows=tuple(
            (
                m.id,
                m.strata,
                fmt_number(m.incumbent),
                fmt_number(m.candidate),
                fmt_number(m.delta, True),
                m.text,
            )
            for m in moved
        ),
    )


def arm_title(arm: Mapping[str, Any]) -> str:
    """The arm's spec, and the prompts its model applies when it has any."""
    prompts = {kind: text for kind, text in arm.get("prompts", {}).items() if text}
    if not prompts:
        return str(arm["spec"])
    return f"{arm['spec']} (prompts: " + ", ".join(f"{kind} {text!r}" for kind, text in prompts.items()) + ")"


#: What an arm that searches no vector index of its own says instead (a fused arm's parts list theirs).
_NO_INDEX = {"bm25": "none: BM25 scores its records itself", "rrf": "none: it fuses its parts' rankings"}


def engine_words(index: Mapping[str, Any], depth: int) -> str:
    """A vector database's index as a reader reads it: ``lancedb 0.40.0 (index_type=ivf_pq metric=dot
    nprobes=3, the smallest to reach recall 0.9), recall@100 against exact search 0.982 (200 queries)``."""
    shown = " ".join(f"{name}={value}" for name, value in index["parameters"].items() if value is not None)
    tuned = index.get("search_parameter")
    if "recall_target" in index and tuned is not None:
        shown += f", {tuned} the smallest to reach recall {index['recall_target']:g}"
    filtered = ", filtered as the queries are" if index.get("filtered") else ""
    kept = "; collection kept after the run" if index.get("kept") else ""
    recall = fmt_number(index["ann_recall"])
    return (
        f"{index['version']} ({shown}), recall@{depth} against exact search {recall} "
        f"({index['sample']} queries{filtered}){kept}"
    )


def _index_setting(golden: Mapping[str, Any], role: str) -> str:
    index = golden[role].get("index")
    kind = golden[role].get("kind", "dense")
    if kind in _NO_INDEX:
        return _NO_INDEX[kind]
    if index is not None and "version" in index:
        return f"{engine_words(index, golden['depth'])}, dimension {index['dimension']}"
    if index is not None and index["kind"] == "faiss":
        return (
            f"{faiss_text(index)}, dimension {index['dimension']}, ANN recall@{golden['depth']} "
            f"{fmt_number(index['ann_recall'])} ({index['sample']} queries), {index['memory_bytes']:,} bytes"
        )
    if index is None or index["kind"] != "hnsw":
        return "exact" if index is None else f"{index['kind']}, dimension {index['dimension']}"
    filtered = ", filtered as the queries are" if index.get("filtered") else ""
    return (
        f"hnsw M={index['M']} ef_construction={index['ef_construction']} ef={index['ef']}, dimension "
        f"{index['dimension']}, ANN recall@{golden['depth']} {fmt_number(index['ann_recall'])} "
        f"({index['sample']} queries{filtered}), {index['memory_bytes']:,} bytes"
    )


def settings_table(golden: Mapping[str, Any]) -> Table:
    """The pre-declared plan and how the run searched."""
    guards = ", ".join(f"{metric} (margin {margin:g})" for metric, margin in golden["guards"].items())
    rows = [
        ("golden file", str(golden["path"])),
        ("metric", str(golden["metric"])),
        ("guards", guards or "none"),
        ("also reported", ", ".join(golden["report"]) or "none"),
        ("tie margin", f"{golden['tie_margin']:g}"),
        ("confidence", f"{golden['confidence']:g}"),
        ("min queries", str(golden["min_queries"])),
        ("bootstrap resamples", f"{golden['bootstrap']:,}"),
        ("interval", interval_words(golden)),
        *(
            [("weights", f"{traffic_weight_text(golden)}: the verdicts rest on the traffic-weighted means")]
            if "weights" in golden
            else []
        ),
        ("seed", str(golden["seed"])),
        ("relevance level", str(golden["relevance_level"])),
        ("documents searched", f"{golden['documents']:,}"),
        ("ranked depth", str(golden["depth"])),
    ]
    for role in ROLES:
        rows.append((role, arm_title(golden[role])))
        rows.append((f"{role} index", _index_setting(golden, role)))
    return Table(header=("setting", "value"), kinds=("text", "text"), rows=tuple(rows))


def fingerprints_table(golden: Mapping[str, Any]) -> Table:
    """What identifies this comparison: the golden file, its plan, everything held constant (and each of its
    components), and both models."""
    rows = [("golden set", str(golden["fingerprint"])), ("plan", str(golden["plan_fingerprint"]))]
    control = golden["control"]
    rows.append(("held constant", str(control["fingerprint"])))
    rows += [(f"held constant: {name}", str(digest)) for name, digest in control["components"].items()]
    rows += [(f"{role} model", str(golden[role]["fingerprint"])) for role in ROLES]
    return Table(header=("fingerprint", "value"), kinds=("text", "id"), rows=tuple(rows))


def routed_caption(decision: Mapping[str, Any]) -> str | None:
    """What the routed system's table shows, e.g. ``routed system (language=de to the incumbent, 11% of
    traffic by query count) against the incumbent``; None when no routing was tried."""
    if not decision["routed_system"]:
        return None
    to = "the incumbent" if decision["to"] == "incumbent" else decision["to"]
    share = decision["traffic_share"]
    return (
        f"routed system ({', '.join(decision['routed'])} to {to}, {share:.0%} of traffic by "
        f"{decision['traffic_basis']}) against the incumbent"
    )
