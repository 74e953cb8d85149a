"""Judgments age: relevance drifts as the corpus, the product and the users change, so a share of a golden
set's judgments is re-judged every so often (10 % a quarter keeps a set of a year's shelf life usable).
`draw_refresh` draws that share as a blind sheet; ``embeval merge --refresh`` then reports the agreement of
the new grades with the old (the drift) and replaces them, keeping the old grade in the provenance.

The draw is stratified like the set: the judged pairs are grouped by the values of the query's stratum
fields (every field of ``strata``, together: ``language=es, shape=keyword``), each group gets its share of
the draw by largest remainders, and within a group ``oldest`` takes the pairs judged longest ago first
(pairs without a recorded date first of all: they were merged before dates were recorded, or typed in), ties
in a seeded random order, while ``random`` takes a seeded uniform sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_embeval.core.stats import stable_seed
from pytest_embeval.core.text_table import table
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.pooling import Pool, QueryPool, pool_row
from pytest_embeval.judging.provenance import Source
from pytest_embeval.judging.rankings import Pair

__all__ = ["ORDERS", "Group", "Refresh", "draw_refresh", "refresh_lines"]

ORDERS = ("oldest", "random")


@dataclass(frozen=True, slots=True)
class Group:
    """One group of the draw: the judged pairs whose queries share every stratum field's value."""

    #: the stratum fields' values, ``field=value`` joined by ", " ("all" without strata)
    name: str
    judged: int
    drawn: int
    #: of the drawn, how many carry no date
    undated: int
    #: the latest day among the drawn pairs' (None: none dated)
    newest_drawn: str | None


@dataclass(frozen=True, slots=True)
class Refresh:
    order: str
    fraction: float
    groups: tuple[Group, ...]
    #: the sheet to grade, blind (documents of a query in a seeded shuffled order)
    pool: Pool


def _allocate(sizes: Sequence[int], total: int) -> list[int]:
    """``total`` split over groups of ``sizes`` in proportion, by largest remainders (ties: first group)."""
    whole = sum(sizes)
    quotas = [total * size / whole for size in sizes]
    shares = [math.floor(quota) for quota in quotas]
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - shares[i]), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def draw_refresh(
    golden: GoldenSet, sources: Mapping[Pair, Source], *, fraction: float, order: str, seed: int | None = None
) -> Refresh:
    """Draw ``fraction`` of the judged pairs (at least one) to re-judge, stratified like the set, ``order``
    ``oldest`` or ``random``; deterministic for a ``seed`` (default: the golden set's). Raises ``ValueError``
    for a fraction outside (0, 1], an unknown order or a golden set without judgments."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be 'oldest' or 'random', got {order!r}")
    base_seed = golden.seed if seed is None else seed
    groups: dict[str, list[Pair]] = {}
    for query in golden.queries:
        name = ", ".join(f"{field}={query.fields[field]}" for field in golden.strata_fields) or "all"
        groups.setdefault(name, []).extend((query.id, doc) for doc in sorted(golden.qrels.get(query.id, {})))
    groups = {name: pairs for name, pairs in sorted(groups.items()) if pairs}
    total = sum(len(pairs) for pairs in groups.values())
    if not total:
        raise ValueError(f"{golden.name}: no judgments to refresh")
    shares = _allocate([len(pairs) for pairs in groups.values()], max(1, round(fraction * total)))
    drawn: set[Pair] = set()
    summary = []
    for (name, pairs), share in zip(groups.items(), shares, strict=True):
        rng = np.random.default_rng(stable_seed("embeval refresh", base_seed, name))
        shuffled = [pairs[i] for i in rng.permutation(len(pairs)).tolist()]
        if order == "oldest":
            # Undated ("") before any date; the shuffle breaks ties (a stable sort keeps its order).
            shuffled.sort(key=lambda pair: _day(sources, pair) or "")
        chosen = shuffled[:share]
        drawn.update(chosen)
        days = [_day(sources, pair) for pair in chosen]
        dated = [day for day in days if day is not None]
        summary.append(Group(name, len(pairs), share, len(days) - len(dated), max(dated, default=None)))
    return Refresh(order, fraction, tuple(summary), _sheet(golden, drawn, base_seed))


def _day(sources: Mapping[Pair, Source], pair: Pair) -> str | None:
    source = sources.get(pair)
    return None if source is None else source.judged_on


def _sheet(golden: GoldenSet, drawn: set[Pair], seed: int) -> Pool:
    """The drawn pairs as a blind sheet: queries in golden order, each query's documents shuffled."""
    documents = golden.judged_documents()
    queries = []
    for query in golden.queries:
        docs = sorted(doc for query_id, doc in drawn if query_id == query.id)
        if not docs:
            continue
        order = np.random.default_rng(stable_seed("embeval refresh sheet", seed, query.id)).permutation(
            len(docs)
        )
        rows = tuple(pool_row(golden.name, query, documents[docs[i]]) for i in order.tolist())
        queries.append(QueryPool(query.id, len(docs), len(docs), 0, rows, (0,) * len(rows)))
    return Pool(golden.name, 0, seed, (), tuple(queries))


def refresh_lines(golden: GoldenSet, refresh: Refresh) -> list[str]:
    """What was drawn: per group of the stratum fields, the judged pairs, the drawn ones and their age."""
    judged = sum(group.judged for group in refresh.groups)
    drawn = sum(group.drawn for group in refresh.groups)
    fields = " x ".join(golden.strata_fields) or "no strata"
    undated = sum(group.undated for group in refresh.groups)
    lines = [
        f"drew {drawn} of the {judged} judged pairs of {golden.name} ({refresh.fraction:.0%}, "
        + ("the oldest first" if refresh.order == "oldest" else "at random")
        + f") to re-judge, stratified like the set over {fields}:",
        *table(
            ["group", "judged", "drawn", "undated", "newest drawn"],
            [
                [g.name, str(g.judged), str(g.drawn), str(g.undated), g.newest_drawn or "—"]
                for g in refresh.groups
            ],
            names=1,
        ),
    ]
    if undated:
        lines.append(
            f"{undated} of the drawn pairs carry no date (merged before dates were recorded, or typed in)"
            + (": --oldest takes them first, in a seeded random order" if refresh.order == "oldest" else "")
        )
    return lines
