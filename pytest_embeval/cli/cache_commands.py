"""``embeval embed`` and ``embeval import``: filling the embedding cache without running the comparison
(``embeval cache``, keeping it: `cache_upkeep`).

``embed`` embeds a golden set's texts with one model, in deterministic shards (`sharding`), locally or
across a Ray cluster (`ray_data`); ``import`` brings in vectors a batch job computed (`vector_import`). Both
write the packs ``pytest --embeval`` reads, under the model's own key; this module only reads arguments
and prints. Exit status: 0 done, 1 the model failed while embedding (what it stored before stays), 2 bad
input (golden file, model spec, shard, vectors, an unwritable cache folder).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_embeval.arms.embedding import KINDS, Arm, EncoderError, Kind
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.packs import PACK_ROWS
from pytest_embeval.cache.sharding import (
    Block,
    BlockFilled,
    Shard,
    fill_block,
    golden_blocks,
    parse_shard,
    shard_blocks,
)
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.cli.cache_upkeep import add_cache_command
from pytest_embeval.cli.support import EXIT_FAILED, EXIT_OK, CliError
from pytest_embeval.cli.support import golden_set as _golden
from pytest_embeval.run.control import short_digest
from pytest_embeval.run.pipeline import searched_corpus

DEFAULT_CACHE = ".embeval_cache"
_CACHE_HELP = (
    "the embedding cache folder: the one pytest --embeval reads (--embeval-cache-dir, embeval_cache_dir; "
    "default %(default)s, as the plugin's default when run from the rootdir)."
)


def _shard(text: str) -> Shard:
    try:
        return parse_shard(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _block_rows(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if not 1 <= value <= PACK_ROWS:
        raise argparse.ArgumentTypeError(f"expected an integer from 1 to {PACK_ROWS}, got {text!r}")
    return value


def _arm(spec: str) -> Arm:
    try:
        return resolve_model(spec)
    except EncoderError as error:
        raise CliError(str(error)) from None


def _shown(path: Path) -> str:
    return os.path.join(path, "")


# ----------------------------------------------------------------------------------------------------- embed


def _embed(args: argparse.Namespace) -> int:
    golden = _golden(args.golden)
    blocks = golden_blocks(golden, block_rows=args.block_rows)
    mine = shard_blocks(blocks, args.shard)
    texts = sum(len(block.texts) for block in mine)
    shard = f"shard {args.shard}" if args.shard else "all blocks"
    counts = {kind: sum(len(b.texts) for b in blocks if b.kind == kind) for kind in KINDS}
    print(
        f"{args.golden}: {counts['document']:,} distinct document texts, {counts['query']:,} query texts, "
        f"{len(blocks):,} blocks of up to {args.block_rows:,}; {shard}: {len(mine):,} blocks, {texts:,} texts"
    )
    status = EXIT_OK
    for spec in args.model:
        arm = _arm(spec)
        print(f"model {arm.spec} ({short_digest(arm.digest)}) into {_shown(args.cache_dir)}", flush=True)
        start = time.perf_counter()
        filled: list[BlockFilled] | None
        if args.ray:
            from pytest_embeval.cache.ray_data import RayError, fill_with_ray

            try:
                filled = fill_with_ray(spec, arm, mine, args.cache_dir, done=_block_line(len(mine)))
            except RayError as error:
                raise CliError(str(error)) from None
        else:
            filled = _fill_here(arm, mine, args.cache_dir)
        if filled is None:
            status = EXIT_FAILED
            continue
        embedded = sum(one.embedded for one in filled)
        read = sum(one.read for one in filled)
        skipped = sum(one.skipped for one in filled)
        print(
            f"{arm.spec}: {embedded:,} texts embedded, {read:,} read, {skipped:,} of {len(filled):,} blocks "
            f"already cached, in {time.perf_counter() - start:.1f} s"
        )
    return status


def _fill_here(arm: Arm, blocks: Sequence[Block], cache_dir: Path) -> list[BlockFilled] | None:
    """Fill the blocks in this process; None (after one line on stderr) if the model fails."""
    cache = EmbeddingCache(cache_dir)
    done = _block_line(len(blocks))
    filled = []
    for block in blocks:
        try:
            one = fill_block(cache, arm, block)
        except EncoderError as error:
            print(f"embeval embed: error: block {block.number}: {error}", file=sys.stderr)
            return None
        done(one)
        filled.append(one)
    return filled


def _block_line(total: int) -> Callable[[BlockFilled], None]:
    count = 0

    def done(filled: BlockFilled) -> None:
        nonlocal count
        count += 1
        block = filled.block
        what = f"{len(block.texts):,} {block.kind} texts"
        if filled.skipped:
            result = "already cached"
        else:
            result = f"{filled.embedded:,} embedded, {filled.read:,} read, {filled.seconds:.1f} s"
        print(f"block {count}/{total} (#{block.number}, {what}): {result}", flush=True)

    return done


# ---------------------------------------------------------------------------------------------------- import


def _import(args: argparse.Namespace) -> int:
    from pytest_embeval.cache.vector_import import ImportProblem, check_vectors, read_vectors

    golden = _golden(args.golden)
    arm = _arm(args.model)
    searched = searched_corpus(golden)
    if args.kind == "document":
        texts_by_id = {doc.id: doc.embed_text for doc in searched.documents}
    else:
        texts_by_id = {query.id: query.text for query in golden.queries}
    try:
        imported = read_vectors(
            args.vectors,
            ids=args.ids,
            id_column=args.id_column,
            text_column=args.text_column,
            vector_column=args.vector_column,
        )
        checked = check_vectors(imported, texts_by_id)
    except ImportProblem as error:
        raise CliError(str(error)) from None
    dim = checked.vectors.shape[1]
    print(f"{args.vectors}: {len(imported.keys):,} rows of {dim} dimensions, keyed by {imported.key_kind}")
    if checked.unknown:
        print(
            f"embeval import: warning: {checked.unknown:,} rows name no {args.kind} the golden set's arms "
            f"embed, left out (first: {checked.first_unknown})",
            file=sys.stderr,
        )
    if checked.rescaled:
        print(
            f"embeval import: warning: {checked.rescaled:,} of {len(checked.texts):,} vectors were not of "
            f"unit length, normalised as the plugin normalises a model's (first: {checked.first_rescaled})",
            file=sys.stderr,
        )
    cache = EmbeddingCache(args.cache_dir)
    _check_cached_dimension(cache, arm, args.kind, list(texts_by_id.values()), dim)
    # Stored block by block in the canonical order, so the packs are those `embeval embed` writes.
    row_of = {text: row for row, text in enumerate(checked.texts)}
    for block in golden_blocks(golden):
        if block.kind != args.kind:
            continue
        rows = [row_of[text] for text in block.texts if text in row_of]
        if rows:
            cache.store(arm, args.kind, [checked.texts[row] for row in rows], checked.vectors[rows])
    wanted = len(set(texts_by_id.values()))
    print(
        f"{len(checked.texts):,} {args.kind} vectors of {arm.spec} ({short_digest(arm.digest)}) stored in "
        f"{_shown(args.cache_dir)}: {len(set(checked.texts)):,} of the golden set's {wanted:,} "
        f"{args.kind} texts"
    )
    return EXIT_OK


def _check_cached_dimension(cache: EmbeddingCache, arm: Arm, kind: Kind, texts: list[str], dim: int) -> None:
    """Refuse vectors of another dimension than the ones the cache holds for this model already."""
    held = cache.contains(arm, kind, texts)
    if not held.any():
        return
    sample = texts[int(held.argmax())]
    cached = cache.lookup(arm, kind, [sample])
    if sample in cached and cached[sample].shape[0] != dim:
        raise CliError(
            f"the cache holds {cached[sample].shape[0]}-dimensional {kind} vectors of {arm.spec} already, "
            f"these have {dim}: another model, or the model changed without its fingerprint changing"
        )


# ---------------------------------------------------------------------------------------------------- parser


def add_commands(commands: Any) -> None:
    """Add ``embed``, ``import`` and ``cache`` to the ``embeval`` parser's subcommands."""
    embed_parser = commands.add_parser(
        "embed",
        help="fill the embedding cache with a golden set's texts for a model, in shards, without comparing.",
        description="Embed the texts a model embeds in `pytest --embeval GOLDEN.yaml` (the documents of the "
        "corpus it searches, then the queries), in blocks of 4,096 texts; with --shard I/N only the blocks "
        "of shard I of N (block b is in shard b % N + 1), so N processes or machines can fill one shared "
        "cache folder at once. Blocks already cached are skipped, an interrupted block is finished: run it "
        "again after a failure. The packs do not depend on the sharding.",
    )
    embed_parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden-set file.")
    embed_parser.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="SPEC",
        help="a model spec, as for the plugin "
        "(a folder, a sentence-transformers name, module:attr, openai:MODEL); repeat for several models.",
    )
    embed_parser.add_argument("--shard", type=_shard, metavar="I/N", help="embed shard I of N only.")
    embed_parser.add_argument("--cache-dir", type=Path, default=Path(DEFAULT_CACHE), help=_CACHE_HELP)
    embed_parser.add_argument(
        "--block-rows",
        type=_block_rows,
        default=PACK_ROWS,
        metavar="N",
        help="texts per block and pack (default %(default)s, at most that); all shards of one cache alike.",
    )
    embed_parser.add_argument(
        "--ray",
        action="store_true",
        help="embed the blocks on a Ray cluster's workers (the [ray] extra; RAY_ADDRESS, or a local "
        "cluster); the workers need the model spec and the cache folder at the same paths.",
    )
    embed_parser.set_defaults(run=_embed)

    import_parser = commands.add_parser(
        "import",
        help="store vectors a batch job computed (Parquet or .npy) in the cache, under the model's key.",
        description="Read one vector per document (or query) from Parquet (an id or text column and a list "
        "column; the [parquet] extra) or from .npy with an id list, check them (one per id, one dimension, "
        "finite, not zero), normalise them as the plugin normalises a model's (with a warning if they were "
        "not of unit length), and store them under MODEL's key: the model is fingerprinted, not loaded "
        "(give a model folder). The first bad row is named with its id.",
    )
    import_parser.add_argument("golden", metavar="GOLDEN.yaml", help="the golden-set file.")
    import_parser.add_argument("vectors", metavar="VECTORS", help="a .parquet or .npy file.")
    import_parser.add_argument("--model", required=True, metavar="SPEC", help="the model that computed them.")
    import_parser.add_argument("--kind", choices=KINDS[::-1], default="document", help="default: document.")
    import_parser.add_argument("--ids", metavar="IDS.txt", help="with .npy: the id of each row, one a line.")
    import_parser.add_argument("--id-column", metavar="NAME", help="Parquet: the id column (id or _id).")
    import_parser.add_argument(
        "--text-column", metavar="NAME", help="Parquet: key rows by the exact text embedded, not an id."
    )
    import_parser.add_argument(
        "--vector-column", metavar="NAME", help="Parquet: the vector column (vector or embedding)."
    )
    import_parser.add_argument("--cache-dir", type=Path, default=Path(DEFAULT_CACHE), help=_CACHE_HELP)
    import_parser.set_defaults(run=_import)

    add_cache_command(commands, DEFAULT_CACHE, _CACHE_HELP)
