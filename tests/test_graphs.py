"""graphs.py: HNSW graphs kept in the cache folder, loaded only when their bytes check out."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embeval.search.graphs import GraphStore, graph_key
from pytest_embeval.search.hnsw import HnswIndex

Data = tuple[np.ndarray, np.ndarray, list[str]]


@pytest.fixture
def data() -> Data:
    rng = np.random.default_rng(11)
    documents = rng.standard_normal((600, 16)).astype(np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    queries = rng.standard_normal((25, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return queries, documents, [f"d{i:04d}" for i in range(600)]


def build(data: Data, store: GraphStore | None, **parameters: int) -> HnswIndex:
    _, documents, doc_ids = data
    return HnswIndex(documents, doc_ids=doc_ids, **{"M": 8, "ef_construction": 40, **parameters}, store=store)


def same_graph(a: HnswIndex, b: HnswIndex, queries: np.ndarray) -> None:
    """What the report takes from a graph: its results, its parameters and its size."""
    for ef in (10, 50):
        left, right = a.search(queries, 10, ef_search=ef), b.search(queries, 10, ef_search=ef)
        assert np.array_equal(left[0], right[0]) and np.array_equal(left[1], right[1])
    assert a.parameters() == b.parameters()
    assert a.memory_bytes() == b.memory_bytes()


def stored(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "graphs").glob("*.hnsw"))


def test_a_stored_graph_is_loaded_and_is_the_graph_a_build_gives(
    data: Data, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = build(data, None)
    first = build(data, GraphStore(tmp_path))
    [path] = stored(tmp_path)
    key = graph_key(data[1], M=8, ef_construction=40, seed=0)
    assert path.name.startswith(key + "-") and len(path.name) == 32 + 1 + 64 + len(".hnsw")
    assert path.stat().st_size == fresh.memory_bytes()  # hnswlib's own file
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # shared like the packs
    import hnswlib

    monkeypatch.setattr(hnswlib.Index, "add_items", lambda *a, **k: pytest.fail("built again"))
    loaded = build(data, GraphStore(tmp_path))
    same_graph(loaded, fresh, data[0])
    same_graph(first, fresh, data[0])
    assert [p.name for p in stored(tmp_path)] == [path.name]  # the same graph, the same bytes: one file


def test_loading_a_stored_graph_marks_it_used_for_cache_prune(data: Data, tmp_path: Path) -> None:
    build(data, GraphStore(tmp_path))
    [path] = stored(tmp_path)
    then = time.time_ns() - 40 * 86400 * 10**9
    os.utime(path, ns=(then, then))
    build(data, GraphStore(tmp_path))
    assert path.stat().st_mtime_ns > time.time_ns() - 3600 * 10**9


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    "change",
    [{"M": 12}, {"ef_construction": 60}, {"seed": 1}, {"vectors": True}],
    ids=["M", "ef_construction", "seed", "vectors"],
)
def test_a_graph_of_other_parameters_or_vectors_is_not_reused(
    data: Data, tmp_path: Path, change: dict[str, Any]
) -> None:
    build(data, GraphStore(tmp_path))
    queries, documents, doc_ids = data
    if change.pop("vectors", False):
        documents = documents.copy()
        documents[0] = -documents[0]
    parameters = {"M": 8, "ef_construction": 40, **change}
    other = HnswIndex(documents, doc_ids=doc_ids, **parameters, store=GraphStore(tmp_path))
    same_graph(other, HnswIndex(documents, doc_ids=doc_ids, **parameters), queries)
    assert len(stored(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty"])
def test_a_damaged_graph_is_deleted_and_built_again(data: Data, tmp_path: Path, damage: str) -> None:
    """hnswlib is never handed a file whose bytes are not the ones stored (it could crash on them)."""
    build(data, GraphStore(tmp_path))
    [path] = stored(tmp_path)
    original = path.read_bytes()
    flipped = bytearray(original)
    flipped[len(flipped) // 2] ^= 0x40
    damaged = {"flipped byte": bytes(flipped), "truncated": original[: len(original) // 3], "empty": b""}
    path.write_bytes(damaged[damage])
    again = build(data, GraphStore(tmp_path))
    same_graph(again, build(data, None), data[0])
    assert stored(tmp_path) == [path] and path.read_bytes() == original


def test_a_cache_folder_that_cannot_be_written_costs_a_build_and_nothing_else(
    data: Data, tmp_path: Path
) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder", encoding="utf-8")
    graph = build(data, GraphStore(blocker))
    same_graph(graph, build(data, None), data[0])
    assert blocker.read_text(encoding="utf-8") == "not a folder"


def test_no_scratch_file_is_left(data: Data, tmp_path: Path) -> None:
    build(data, GraphStore(tmp_path))
    assert [p.name for p in (tmp_path / "graphs").iterdir()] == [stored(tmp_path)[0].name]
