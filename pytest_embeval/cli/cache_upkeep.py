"""``embeval cache stats|verify|prune``: what the embedding cache holds, which packs are damaged, and removing
what is no longer wanted, safely while runs use it (the work: `cache.upkeep`).

Modelled on ``ccache -s`` / ``--max-size`` and Hugging Face's ``scan-cache`` / ``delete-cache``: one row per
model and kind with its size and last use, sizes in decimal units (``2GB`` is 2,000,000,000 bytes, ``2GiB``
2**31), and what a prune frees stated in bytes. An entry named like a pack that is not one (a folder), or a
pack that cannot be read, is listed with its problem and the others are checked or pruned all the same.
Exit status: 0 done, 1 ``verify`` found damage (and did not ``--repair`` it), ``verify`` or ``prune`` met
such an entry, or ``prune`` could not remove a pack; 2 bad input (a cache folder that does not exist, an
unknown model, a size or duration that does not parse).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_embeval.cache.upkeep import (
    CacheInventory,
    Damage,
    ModelShelf,
    Stray,
    inventory,
    prune,
    repair,
    verify,
)
from pytest_embeval.cli.support import EXIT_FAILED, EXIT_OK, CliError

__all__ = ["add_cache_command", "parse_duration", "parse_size"]

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?\s*", re.IGNORECASE)
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """``"2GB"`` -> 2,000,000,000 bytes; ``"1.5GiB"``, ``"500M"``, ``"0"``; `ValueError` otherwise."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"expected a size such as 2GB, 500MB or 1.5GiB, got {text!r}")
    unit = (match[2] or "").lower()
    factor = 1 if not unit else (1024 if unit.endswith("i") else 1000) ** ("kmgt".index(unit[0]) + 1)
    return int(float(match[1]) * factor)


def parse_duration(text: str) -> int:
    """``"30d"`` -> 30 days in nanoseconds; s, m, h, d, w; `ValueError` otherwise."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"expected a duration such as 30d, 12h, 90m or 2w, got {text!r}")
    return int(float(match[1]) * _UNIT_SECONDS[match[2].lower()] * 10**9)


def _bytes(size: int) -> str:
    """Decimal units, as ccache and Hugging Face show sizes."""
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} B"


def _age(last_use_ns: int, now_ns: int) -> str:
    hours = (now_ns - last_use_ns) / 3600e9
    if hours < 1:
        return "<1 h ago"
    if hours < 48:
        return f"{hours:.0f} h ago"
    return f"{hours / 24:.0f} d ago"


def _cache_root(args: argparse.Namespace) -> Path:
    root: Path = args.cache_dir
    if not root.is_dir():
        raise CliError(
            f"no embedding cache at {root}: give --cache-dir, the folder pytest --embeval uses "
            "(--embeval-cache-dir, embeval_cache_dir)"
        )
    return root


def _shown(path: Path) -> str:
    return os.path.join(path, "")


def _plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {words or word + 's'}"


# ----------------------------------------------------------------------------------------------------- stats


def _stats(args: argparse.Namespace) -> int:
    root = _cache_root(args)
    now = time.time_ns()
    held = inventory(root, now_ns=now)
    for line in stats_lines(held, root, now):
        print(line)
    return EXIT_OK


def stats_lines(held: CacheInventory, root: Path, now_ns: int) -> list[str]:
    header = ("model", "digest", "kind", "entries", "packs", "size", "last use")
    rows = [
        (
            shelf.name,
            shelf.digest,
            shelf.kind,
            f"{shelf.entries:,}",
            f"{len(shelf.packs):,}",
            _bytes(shelf.size),
            _age(shelf.last_use_ns, now_ns),
        )
        for shelf in held.shelves
    ]
    lines = [f"cache directory {_shown(root)}"]
    if rows:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        right = {3, 4, 5}
        for row in [header, *rows]:
            cells = [
                cell.rjust(width) if i in right else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
    else:
        lines.append("no embeddings cached")
    models = len({shelf.digest for shelf in held.shelves})
    entries = sum(shelf.entries for shelf in held.shelves)
    packs = sum(len(shelf.packs) for shelf in held.shelves)
    lines.append(f"HNSW graphs: {_plural(len(held.graphs), 'file')}, {_bytes(held.graphs_size)}")
    lines.append(f"orphaned temporary files: {len(held.orphans):,}, {_bytes(held.orphans_size)}")
    lines.append(
        f"total: {entries:,} entries in {_plural(packs, 'pack')} of {_plural(models, 'model')}, "
        f"{_bytes(held.size)} ({held.size:,} bytes)"
    )
    lines += _stray_lines(held.strays, root, "not counted")
    return lines


def _stray_lines(strays: Sequence[Stray], root: Path, done: str) -> list[str]:
    """One line per entry named like a pack that is not one or cannot be read, saying what was done."""
    return [f"{stray.path.relative_to(root)}: {stray.problem} ({done})" for stray in strays]


# ---------------------------------------------------------------------------------------------------- verify


def _verify(args: argparse.Namespace) -> int:
    root = _cache_root(args)
    held = inventory(root)
    damaged = list(verify(root))
    packs = sum(len(shelf.packs) for shelf in held.shelves)
    entries = sum(shelf.entries for shelf in held.shelves)
    unchecked = sum(one.problem is not None for one in damaged)
    others = f"; {unchecked:,} not packs or unreadable" if unchecked else ""
    print(
        f"checked {_plural(packs, 'pack')} ({entries:,} entries) in {_shown(root)}: "
        f"{len(damaged) - unchecked:,} damaged{others}"
    )
    for one in damaged:
        print(f"{one.path.relative_to(root)}: {_damage(one)}")
    if not damaged:
        return EXIT_OK
    if not args.repair:
        print(
            "nothing changed: embeval cache verify --repair removes the damaged packs, whose texts a run "
            "embeds again"
        )
        return EXIT_FAILED
    removed = repair(damaged)
    lost = sum(one.entries or 0 for one in removed)
    headless = sum(one.entries is None for one in removed)
    held_lost = f"{lost:,} entries" + (
        f", and {headless:,} whose header could not be read" if headless else ""
    )
    removed_packs = _plural(len(removed), "damaged pack")
    print(f"removed {removed_packs} ({held_lost}): the next run embeds those texts again")
    left = [one for one in damaged if one not in removed]
    for one in left:
        print(f"{one.path.relative_to(root)}: left as it is ({one.problem or 'it could not be removed'})")
    return EXIT_FAILED if left else EXIT_OK


def _damage(one: Damage) -> str:
    if one.problem is not None:
        return one.problem
    if one.entries is None:
        return "header damaged (how many entries it held is unknown)"
    assert one.lost is not None  # known whenever the entries are
    what = "header or index damaged" if one.lost == one.entries else f"{one.lost:,} rows damaged"
    return f"{what} (of {_plural(one.entries, 'entry', 'entries')})"


# ----------------------------------------------------------------------------------------------------- prune


def _prune(args: argparse.Namespace) -> int:
    try:
        older_than = None if args.older_than is None else parse_duration(args.older_than)
        max_size = None if args.max_size is None else parse_size(args.max_size)
    except ValueError as error:
        option = "--older-than" if args.older_than is not None and "duration" in str(error) else "--max-size"
        raise CliError(f"{option}: {error}") from None
    root = _cache_root(args)
    held = inventory(root)
    models = [_model_digest(spec, held.shelves, root) for spec in args.model]
    pruned = prune(root, older_than_ns=older_than, models=models, max_size=max_size, dry_run=args.dry_run)
    left = held.size - pruned.freed if args.dry_run else inventory(root).size
    verb, freed = ("would remove", "would be freed") if args.dry_run else ("removed", "freed")
    print(
        f"{verb} {_plural(len(pruned.packs), 'pack')} ({pruned.entries:,} entries), "
        f"{_plural(len(pruned.graphs), 'HNSW graph')} and "
        f"{_plural(len(pruned.orphans), 'orphaned temporary file')} from {_shown(root)}: "
        f"{pruned.freed:,} bytes ({_bytes(pruned.freed)}) {freed}, {_bytes(left)} left"
    )
    for line in [
        *_stray_lines(pruned.failed, root, "left"),
        *_stray_lines(pruned.strays, root, "left alone"),
    ]:
        print(line)
    return EXIT_FAILED if pruned.failed or pruned.strays else EXIT_OK


def _model_digest(spec: str, shelves: Sequence[ModelShelf], root: Path) -> str:
    """The cache folder of a model: its digest as `stats` shows it (or 4+ of its first digits), its name,
    or a model spec as for the plugin (fingerprinted, not loaded)."""
    digests = {shelf.digest for shelf in shelves}
    if re.fullmatch(r"[0-9a-f]{4,16}", spec):
        matching = sorted(d for d in digests if d.startswith(spec))
        if len(matching) == 1:
            return matching[0]
    named = sorted({shelf.digest for shelf in shelves if shelf.name == spec})
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        raise CliError(
            f"--model {spec!r}: {len(named)} models of that name in {_shown(root)}; give its digest"
        )
    from pytest_embeval.arms.embedding import EncoderError
    from pytest_embeval.arms.model_specs import resolve_model

    try:
        digest = resolve_model(spec).digest.removeprefix("sha256:")[:16]
    except EncoderError as error:
        raise CliError(f"--model: {error}; nor is it a digest or name embeval cache stats shows") from None
    if digest not in digests:
        raise CliError(f"--model {spec!r}: nothing of that model ({digest}) in {_shown(root)}")
    return digest


# ---------------------------------------------------------------------------------------------------- parser


def add_cache_command(commands: Any, default_cache: str, cache_help: str) -> None:
    """Add ``cache`` (``stats``, ``verify``, ``prune``) to the ``embeval`` parser's subcommands."""
    cache_parser = commands.add_parser(
        "cache",
        help="the embedding cache: its size per model and kind (stats), damage (verify), pruning (prune).",
        description="Keep the embedding cache: safe while runs use it (a run embeds again what was removed).",
    )
    actions = cache_parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, run: Any, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, **kwargs)
        parser.add_argument("--cache-dir", type=Path, default=Path(default_cache), help=cache_help)
        parser.set_defaults(run=run, command=f"cache {name}")
        return parser

    action(
        "stats",
        _stats,
        help="entries, packs, size and last use per model and kind; HNSW graphs; orphaned temporary files.",
        description="What the cache folder holds, per model and kind: entries, packs, bytes on disk, and "
        "when a run last read it (a pack's modification time, which lookups set).",
    )
    verify_parser = action(
        "verify",
        _verify,
        help="read every pack and report damage (exit 1); --repair removes the damaged packs.",
        description="Read every pack's header, index and rows and check them (sha256 of the index, crc32 of "
        "each row). Without --repair nothing is changed, and damage exits 1.",
    )
    verify_parser.add_argument(
        "--repair", action="store_true", help="remove the damaged packs (a run embeds their texts again)."
    )
    prune_parser = action(
        "prune",
        _prune,
        help="remove packs and HNSW graphs last used before --older-than, a --model's packs, or the least "
        "recently used beyond --max-size; orphaned temporary files always.",
        description="Remove packs whole and HNSW graphs: those last used more than --older-than ago, every "
        "pack of each --model, then the least recently used until the packs and graphs take at most "
        "--max-size; and, always, temporary files a killed run left. Says how many bytes were freed.",
    )
    prune_parser.add_argument(
        "--older-than",
        metavar="AGE",
        help="remove packs and graphs last used more than AGE ago: 30d, 12h, 90m, 2w.",
    )
    prune_parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="SPEC",
        help="remove every pack of this model: its digest or name as stats shows them, or a model spec "
        "(repeatable).",
    )
    prune_parser.add_argument(
        "--max-size",
        metavar="SIZE",
        help="then remove the least recently used packs and graphs until they take at most SIZE: 2GB, "
        "500MB, 1.5GiB.",
    )
    prune_parser.add_argument(
        "--dry-run", action="store_true", help="say what would be removed; remove nothing."
    )
