"""Embedding a golden set's blocks across a Ray cluster with Ray Data (the ``[ray]`` extra).

The blocks of `sharding` become the rows of a Ray Dataset; ``map_batches`` runs them on a pool of actors,
each of which resolves the arm's model spec itself (so loads the arm's own model once, on its worker) and
fills its blocks with `sharding.fill_block` into the cache folder, which the workers must see at the same
path (a shared volume). Ray schedules, retries and scales the actors; nothing here schedules anything.
Because each block's pack depends on the block alone, the packs are those a local ``embeval embed`` writes,
and a worker whose model resolves to another fingerprint (other files at that path) is refused.

Ray must be initialised by the caller (``ray.init(...)``), or it starts or joins a cluster as
``ray.init()`` does by default (``RAY_ADDRESS``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_embeval.arms.embedding import Arm, EncoderError
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.sharding import Block, BlockFilled, fill_block
from pytest_embeval.cache.store import EmbeddingCache

__all__ = ["RayError", "fill_with_ray"]

#: CPUs each actor asks Ray for: by default as many actors embed at once as the cluster has CPUs.
_CPUS_PER_ACTOR = 1


class RayError(Exception):
    """Ray is missing, or a worker could not embed: one line saying which."""


class _BlockFiller:
    """A Ray actor's work: the arm resolved once on the worker, then one block per row."""

    def __init__(self, spec: str, cache_dir: str, digest: str) -> None:
        self.arm = resolve_model(spec)
        if self.arm.digest != digest:
            raise RayError(
                f"model spec {spec!r} resolves to another model on Ray worker pid {os.getpid()} "
                f"(fingerprint {self.arm.digest[:19]}…, not {digest[:19]}…): the workers need the same files"
            )
        self.cache = EmbeddingCache(cache_dir)

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        numbers, kinds, texts = (batch.column(name).to_pylist() for name in ("number", "kind", "texts"))
        result: dict[str, list[Any]] = {
            "number": [],
            "read": [],
            "embedded": [],
            "seconds": [],
            "skipped": [],
        }
        for number, kind, block_texts in zip(numbers, kinds, texts, strict=True):
            filled = fill_block(self.cache, self.arm, Block(number, kind, tuple(block_texts)))
            result["number"].append(number)
            result["read"].append(filled.read)
            result["embedded"].append(filled.embedded)
            result["seconds"].append(filled.seconds)
            result["skipped"].append(filled.skipped)
        return result


def fill_with_ray(
    spec: str,
    arm: Arm,
    blocks: Sequence[Block],
    cache_dir: str | os.PathLike[str],
    *,
    concurrency: int | None = None,
    done: Callable[[BlockFilled], None] | None = None,
) -> list[BlockFilled]:
    """Fill ``blocks`` (of one golden set, for the model ``spec`` that resolved here to ``arm``) on Ray
    actors, ``concurrency`` at once (default: the cluster's CPUs, at most one per block); ``done`` is told of
    each block, in block order, once all are filled. Raises `RayError` if Ray is missing or a worker fails."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise RayError("embedding on Ray needs Ray Data: pip install 'pytest-embeval[ray]'") from None
    if not blocks:
        return []
    if concurrency is None:
        here = os.cpu_count() or 1
        # Not initialised: Ray Data starts a local cluster of this machine's CPUs.
        resources = ray.cluster_resources() if ray.is_initialized() else {}  # type: ignore[no-untyped-call]
        cpus = int(resources.get("CPU", here))
        concurrency = max(1, min(len(blocks), cpus // _CPUS_PER_ACTOR))
    rows = [{"number": block.number, "kind": block.kind, "texts": list(block.texts)} for block in blocks]
    dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
        _BlockFiller,
        fn_constructor_kwargs={
            "spec": spec,
            "cache_dir": os.fspath(Path(cache_dir).resolve()),
            "digest": arm.digest,
        },
        batch_size=1,
        batch_format="pyarrow",
        concurrency=concurrency,
        num_cpus=_CPUS_PER_ACTOR,
    )
    try:
        results = dataset.take_all()
    except Exception as error:  # a worker's exception arrives wrapped in Ray's own
        cause = _root_cause(error)
        raise RayError(f"Ray workers failed: {type(cause).__name__}: {cause}") from None
    by_number = {block.number: block for block in blocks}
    filled = sorted(
        (
            BlockFilled(
                by_number[int(row["number"])],
                read=int(row["read"]),
                embedded=int(row["embedded"]),
                seconds=float(row["seconds"]),
                skipped=bool(row["skipped"]),
            )
            for row in results
        ),
        key=lambda one: one.block.number,
    )
    if done is not None:
        for one in filled:
            done(one)
    return filled


def _root_cause(error: BaseException) -> BaseException:
    """The first exception of ours (or the deepest) in a chain of Ray's wrappers."""
    seen = error
    while True:
        if isinstance(seen, (RayError, EncoderError, OSError)):
            return seen
        cause = getattr(seen, "cause", None) or seen.__cause__
        if cause is None or cause is seen:
            return seen
        seen = cause
