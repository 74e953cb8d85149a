"""FAISS indexes from a factory string: built identically from the same vectors and seed, searched at a
declared or recall-chosen nprobe / efSearch, ranked by the package's tie rule, their bytes split into what a
trained, empty index holds and what each vector adds."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from pytest_embeval.search.exact import exact_search
from pytest_embeval.search.faiss_index import (
    FaissIndex,
    FaissIndexError,
    code_query_seconds,
    faiss_flat_seconds,
)
from pytest_embeval.search.hnsw import TargetNotReached, ann_recall
from pytest_embeval.search.quantization import quantize

N, D = 1200, 32


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def vectors() -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(0)
    documents = unit(rng.standard_normal((N, D)))
    queries = unit(documents[:60] + 0.2 * rng.standard_normal((60, D)))
    ids = [f"d{i:05d}" for i in rng.permutation(N)]
    return documents, queries, ids


@pytest.mark.parametrize("factory", ["IVF16,PQ8x4", "HNSW8", "IVF16,Flat", "SQ8", "PCA16,IVF16,SQ8"])
def test_two_builds_with_one_seed_are_the_same_index(
    vectors: tuple[np.ndarray, np.ndarray, list[str]], factory: str
) -> None:
    documents, queries, ids = vectors
    first = FaissIndex(documents, doc_ids=ids, factory=factory, seed=7)
    second = FaissIndex(documents, doc_ids=ids, factory=factory, seed=7)
    assert faiss.serialize_index(first._index).tobytes() == faiss.serialize_index(second._index).tobytes()
    positions, scores = first.search(queries, 10)
    np.testing.assert_array_equal(positions, second.search(queries, 10)[0])
    # Best first, equal scores by id descending.
    for row in range(positions.shape[0]):
        keyed = [(scores[row, j], ids[positions[row, j]]) for j in range(10)]
        assert keyed == sorted(keyed, reverse=True)


def test_the_seed_reaches_the_clustering(vectors: tuple[np.ndarray, np.ndarray, list[str]]) -> None:
    documents, _, ids = vectors
    built = [FaissIndex(documents, doc_ids=ids, factory="IVF16,Flat", seed=seed) for seed in (1, 2)]
    centroids = [faiss.extract_index_ivf(one._index).quantizer.reconstruct_n(0, 16) for one in built]
    assert not np.array_equal(*centroids)


def test_nprobe_is_declared_or_chosen_to_reach_a_recall_target(
    vectors: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    documents, queries, ids = vectors
    index = FaissIndex(documents, doc_ids=ids, factory="IVF16,Flat", seed=0)
    assert (index.parameter, index.bounds(10)) == ("nprobe", (1, 16))
    index.set_parameter(3)
    assert index.parameters() == {"factory": "IVF16,Flat", "seed": 0, "nprobe": 3}
    exact, _ = exact_search(queries, documents, 10, doc_ids=ids)
    value, recall = index.value_for_recall(queries, exact, 0.9)
    assert recall >= 0.9
    # The smallest: one fewer probe misses the target.
    index.set_parameter(value - 1)
    assert value == 1 or ann_recall(index.search(queries, 10)[0], exact) < 0.9
    # Every list probed: an IVF-Flat index is exact.
    index.set_parameter(16)
    assert ann_recall(index.search(queries, 10)[0], exact) == 1.0


def test_an_index_without_a_parameter_is_measured_as_it_is(
    vectors: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    documents, queries, ids = vectors
    index = FaissIndex(documents, doc_ids=ids, factory="PQ4x4", seed=0)
    exact, _ = exact_search(queries, documents, 10, doc_ids=ids)
    assert index.parameter is None
    with pytest.raises(TargetNotReached):
        index.value_for_recall(queries, exact, 1.0)


def test_memory_is_the_serialised_index_split_into_trained_and_per_vector(
    vectors: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    documents, _, ids = vectors
    index = FaissIndex(documents, doc_ids=ids, factory="IVF16,PQ8x4", seed=0)
    assert index.memory_bytes() == faiss.serialize_index(index._index).size
    # Each vector adds its 4-byte code and its 8-byte id to its list; each of the 16 lists its length.
    assert index.memory_bytes() - index.fixed_bytes == N * 12 + 16 * 8


def test_a_binary_factory_string_indexes_packed_bits(
    vectors: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    documents, queries, ids = vectors
    codes, query_codes = quantize(documents, "ubinary"), quantize(queries, "ubinary")
    index = FaissIndex(codes, doc_ids=ids, factory="BIVF8", seed=0, dims=D)
    assert index.parameter == "nprobe"
    index.set_parameter(8)  # every list: exact
    flat = FaissIndex(codes, doc_ids=ids, factory="BFlat", seed=0, dims=D)
    np.testing.assert_array_equal(index.search(query_codes, 10)[0], flat.search(query_codes, 10)[0])
    assert index.memory_bytes() - index.fixed_bytes == pytest.approx(N * (D // 8 + 8), rel=0.01)


@pytest.mark.parametrize(
    ("factory", "rows", "message"),
    [
        (
            "IVF16,PQ7",
            N,
            "FAISS cannot build 'IVF16,PQ7': The dimension of the vector (d) should be a "
            "multiple of the number of subquantizers (M)",
        ),
        (
            "IVF64,Flat",
            20,
            "FAISS cannot train 'IVF64,Flat' on 20 vectors: Number of training points (20) "
            "should be at least as large as number of clusters (64)",
        ),
    ],
)
def test_what_faiss_cannot_build_is_one_line(
    vectors: tuple[np.ndarray, np.ndarray, list[str]], factory: str, rows: int, message: str
) -> None:
    documents, _, ids = vectors
    with pytest.raises(FaissIndexError) as caught:
        FaissIndex(documents[:rows], doc_ids=ids[:rows], factory=factory)
    assert str(caught.value) == message


def test_latencies_are_one_single_threaded_query_at_a_time(
    vectors: tuple[np.ndarray, np.ndarray, list[str]],
) -> None:
    documents, queries, ids = vectors
    index = FaissIndex(documents, doc_ids=ids, factory="HNSW8", seed=0)
    threads = faiss.omp_get_max_threads()
    for seconds in (
        index.query_seconds(queries, 10),
        faiss_flat_seconds(queries, documents, 10),
        code_query_seconds(
            quantize(queries, "ubinary"), quantize(documents, "ubinary"), 10, precision="ubinary", dims=D
        )[0],
    ):
        assert seconds.shape == (60,) and (seconds > 0).all()
    assert faiss.omp_get_max_threads() == threads
