"""Filling the embedding cache for a golden set without running the comparison, in deterministic shards.

The texts an arm embeds (`pipeline.embedded_texts`: the documents of the corpus it searches, in corpus
order, then the queries in golden order; each distinct text once) are cut into *blocks* of `packs.PACK_ROWS`
texts of one kind, numbered in that order. Block ``b`` belongs to shard ``b % N + 1`` of ``N``, so any
number of processes or machines (a CI matrix, a batch cluster's array job, Ray workers) can fill one
shared cache folder, each with its own shard, and nothing is embedded twice.

Each block is embedded by one `cache.EmbeddingCache.embed` call of exactly its texts. The encoder calls
that make it up depend on the block alone, and the call leaves one pack of its texts in block order (its
per-call packs merged, and only its own: see `cache`), so the packs do not depend on how many shards
there were nor on which process ran which block: for a model whose vector of a text does not depend on the
other texts of its batch, they are byte-identical to the packs of one process filling everything. A block
whose texts are all in the cache already is skipped without reading it (the run is idempotent), and a
block interrupted half-way is finished from where it stopped (resumable). The packs are the ones
``pytest --embeval`` reads: same keys, same layout.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence

from pytest_embeval.arms.embedding import KINDS, Arm, Kind
from pytest_embeval.cache.packs import PACK_ROWS
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.run.pipeline import embedded_texts

__all__ = ["Block", "BlockFilled", "Shard", "fill_block", "golden_blocks", "parse_shard", "shard_blocks"]

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclasses.dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based: ``1/3``, ``2/3``, ``3/3``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"a shard is I/N with 1 <= I <= N, got {self}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, block: Block) -> bool:
        return block.number % self.count == self.index - 1


def parse_shard(text: str) -> Shard:
    """``"2/3"`` -> ``Shard(2, 3)``; ``ValueError`` naming the text otherwise."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise ValueError(f"a shard is I/N (e.g. 2/3), got {text!r}")
    return Shard(int(match[1]), int(match[2]))


@dataclasses.dataclass(frozen=True, slots=True)
class Block:
    """Texts of one kind, embedded together by one cache call; ``number`` orders the golden set's blocks."""

    number: int
    kind: Kind
    texts: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class BlockFilled:
    """What filling one block did: texts read (already cached), texts embedded, seconds taken; ``skipped``
    when every text was cached and nothing was read."""

    block: Block
    read: int
    embedded: int
    seconds: float
    skipped: bool = False


def golden_blocks(golden: GoldenSet, *, block_rows: int = PACK_ROWS) -> tuple[Block, ...]:
    """The golden set's texts in their canonical order, cut into blocks of ``block_rows`` (documents, then
    queries; a duplicate text only where it first appears)."""
    if isinstance(block_rows, bool) or not isinstance(block_rows, int) or not 1 <= block_rows <= PACK_ROWS:
        raise ValueError(f"block_rows must be an integer from 1 to {PACK_ROWS}, got {block_rows!r}")
    texts = embedded_texts(golden)
    blocks: list[Block] = []
    for kind in KINDS[::-1]:  # "document", then "query"
        distinct = list(dict.fromkeys(texts[kind]))
        for start in range(0, len(distinct), block_rows):
            blocks.append(Block(len(blocks), kind, tuple(distinct[start : start + block_rows])))
    return tuple(blocks)


def fill_block(cache: EmbeddingCache, arm: Arm, block: Block) -> BlockFilled:
    """Embed the block's texts missing from the cache, in one call of all its texts (see the module)."""
    start = time.perf_counter()
    if cache.contains(arm, block.kind, block.texts).all():
        return BlockFilled(block, read=0, embedded=0, seconds=time.perf_counter() - start, skipped=True)
    before = cache.stats()
    cache.embed(arm, block.texts, block.kind)
    used = cache.stats() - before
    if used.write_error is not None:
        raise OSError(f"the embedding cache {cache.root} cannot be written: {used.write_error}")
    return BlockFilled(block, read=used.read, embedded=used.embedded, seconds=time.perf_counter() - start)


def shard_blocks(blocks: Sequence[Block], shard: Shard | None) -> list[Block]:
    """The blocks of one shard (all of them without one)."""
    return [block for block in blocks if shard is None or shard.owns(block)]
