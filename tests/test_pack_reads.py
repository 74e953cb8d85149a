"""Reading many packs a few at a time (`cache.pack_reads`): in order, bounded, each fault in its place."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_cache import DIM, Recorder, flip, reference, vectors_offset

import pytest_embeval.cache.pack_reads as pack_reads
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.packs import read_index
from pytest_embeval.cache.store import CacheStats, EmbeddingCache

#: Six packs of 30 texts, stored one call each (`store` does not merge them).
GROUPS = [[f"pack {p} text {i}" for i in range(30)] for p in range(6)]


def six_packs(root: Path) -> tuple[Recorder, Any, list[Path]]:
    """A cache of `GROUPS`, one pack each, and the packs in the order of the groups."""
    model = Recorder()
    arm = resolve_model(model)
    cache = EmbeddingCache(root)
    paths = []
    for texts in GROUPS:
        before = set(root.rglob("*.pack"))
        cache.store(arm, "document", texts, reference(texts))
        (path,) = set(root.rglob("*.pack")) - before
        paths.append(path)
    return model, arm, paths


class Watched:
    """`read_rows` as it is, counting the reads running at once (each made to last a little)."""

    def __init__(self) -> None:
        self.real = pack_reads.read_rows
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[Path] = []

    def __call__(self, pack: Any, into: Any = None) -> Any:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(pack.path)
        try:
            time.sleep(0.02)
            return self.real(pack, into)
        finally:
            with self.lock:
                self.running -= 1


def test_a_lookup_of_many_packs_reads_a_few_at_a_time_and_serves_them_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, arm, _ = six_packs(tmp_path)
    watched = Watched()
    monkeypatch.setattr(pack_reads, "read_rows", watched)
    everything = [text for texts in GROUPS for text in texts]
    cache = EmbeddingCache(tmp_path)
    np.testing.assert_array_equal(cache.embed(arm, everything, "document"), reference(everything))
    assert model.encoded == [] and cache.stats() == CacheStats(read=180)
    assert len(watched.started) == 6 and watched.most == pack_reads.READERS == 2
    # Looked up in another order: each pack's rows are copied from memory of its own, still in bounds.
    watched.most = 0
    shuffled = everything[::-1]
    np.testing.assert_array_equal(fresh_embed(tmp_path, arm, shuffled), reference(shuffled))
    assert watched.most == 2


def fresh_embed(root: Path, arm: Any, texts: list[str]) -> np.ndarray:
    return EmbeddingCache(root).embed(arm, texts, "document")


def test_a_damaged_and_a_vanished_pack_among_many_are_each_dealt_with_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third pack has a flipped row, the fifth is deleted after the folder was indexed: the other packs
    serve their rows, the flipped row and the vanished pack's texts are embedded again."""
    model, arm, paths = six_packs(tmp_path)
    flip(paths[2], vectors_offset(30) + 7 * DIM * 4 + 1)
    everything = [text for texts in GROUPS for text in texts]
    cache = EmbeddingCache(tmp_path)
    assert cache.contains(arm, "document", everything).all()  # indexed, the fifth pack among them
    paths[4].unlink()
    np.testing.assert_array_equal(cache.embed(arm, everything, "document"), reference(everything))
    assert sorted(model.encoded) == sorted(("document", text) for text in [GROUPS[2][7], *GROUPS[4]])
    assert cache.stats() == CacheStats(read=149, embedded=31, corrupt=1)


def test_a_consumer_that_stops_early_leaves_no_read_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    *_, paths = six_packs(tmp_path)
    indexed = [read_index(path, None) for path in paths]
    watched = Watched()
    monkeypatch.setattr(pack_reads, "read_rows", watched)
    reads = pack_reads.read_each([(pack, None) for pack in indexed if pack is not None])
    first, outcome = next(reads)
    assert first is indexed[0] and isinstance(outcome, pack_reads.RowsRead)
    reads.close()
    assert watched.running == 0 and len(watched.started) <= 3


def test_a_pack_that_cannot_be_read_is_its_error_in_its_place(tmp_path: Path) -> None:
    *_, paths = six_packs(tmp_path)
    indexed = [read_index(path, None) for path in paths]
    paths[1].unlink()
    outcomes = list(pack_reads.read_each([(pack, None) for pack in indexed if pack is not None]))
    assert [pack for pack, _ in outcomes] == indexed
    assert isinstance(outcomes[1][1], FileNotFoundError)
    for (pack, outcome), texts in zip(outcomes, GROUPS, strict=True):
        if pack is not indexed[1]:
            assert isinstance(outcome, pack_reads.RowsRead) and outcome.complete and outcome.intact.all()
            np.testing.assert_array_equal(outcome.vectors, reference(texts))
