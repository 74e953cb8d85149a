"""A FAISS index declared by its factory string (``index: {faiss: "IVF1024,PQ48", nprobe: 16}``): built,
searched and measured like an hnswlib graph (`hnsw`), over float vectors (inner product) or, with a binary
factory string (``BIVF…``, ``BHNSW…``, ``BFlat``), over packed bits (Hamming distance).

The index is trained and filled the same way for every arm: its clustering seeds (the IVF quantizer's and a
product quantizer's ``ClusteringParameters.seed``) are the golden set's seed, and training reads every
document (FAISS samples from them with that seed). A search returns FAISS's own top k, scored as FAISS
scores them (a product quantizer's approximate inner products, Hamming distances as ``dims - 2 x distance``),
ranked by score and equal scores by document id descending, as every search of the package ranks (a tie group
that FAISS cuts at k keeps the members FAISS returned; a binary index, whose distances tie often, is asked
for k and a margin, so that a group at k is ranked by id among the members it found). The search parameter
is ``nprobe`` for an IVF index, ``efSearch`` for an HNSW one (none for a flat, PQ, SQ or LSH index, which
scan every code), declared or chosen per arm to reach a recall target against exact search on the same
vectors (`hnsw.smallest_ef`).

Memory is FAISS's own count: the bytes of the serialised index (`faiss.serialize_index`), split into what a
trained, empty index holds (centroids, codebooks) and what each vector adds, so it projects to any number of
documents. Latency is one single-threaded query at a time, beside FAISS's exact flat index over the same
vectors (``IndexFlatIP``, ``IndexBinaryFlat``), in the same library.

FAISS is the ``[faiss]`` extra, imported only when a golden set declares such an index (`require_faiss`).
"""

from __future__ import annotations

import contextlib
import re
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from pytest_embeval.core.step_progress import step
from pytest_embeval.search.exact import (
    check_block,
    exact_search,
    ranking_keys,
    tie_ranks,
    validate_documents,
)
from pytest_embeval.search.hnsw import smallest_ef
from pytest_embeval.search.quantized import (
    FaissMissingWarning,
    binary_keys,
    faiss_module,
    hamming_search,
    integer_search,
    ranked_keys,
)

__all__ = [
    "FAISS_EXTRA",
    "FaissIndex",
    "FaissIndexError",
    "check_factory",
    "code_query_seconds",
    "faiss_flat_seconds",
    "ranked_float_keys",
    "require_faiss",
]

FAISS_EXTRA = "pip install 'pytest-embeval[faiss]'"


class FaissIndexError(ValueError):
    """The factory string names no index FAISS can build over these vectors: one line saying why."""


def require_faiss() -> Any:
    """The faiss module; ImportError naming the extra when it is not installed."""
    try:
        import faiss
    except ImportError as error:
        raise ImportError(f"a FAISS index needs faiss: {FAISS_EXTRA}") from error
    return faiss


@contextlib.contextmanager
def _threads(faiss: Any, count: int | None) -> Iterator[None]:
    """FAISS's OpenMP threads set to ``count`` inside (unchanged when None)."""
    if count is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _summary(error: BaseException) -> str:
    """FAISS's C++ message without where in FAISS's source it was raised, nor the check that failed when
    a sentence follows it."""
    lines = str(error).strip().splitlines()
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", lines[0]) if lines else type(error).__name__
    return re.sub(r"^Error: '.*?' failed: ", "", text)


def _empty_index(faiss: Any, factory: str, dimension: int, *, binary: bool, over: str = "") -> Any:
    """The untrained, empty index ``factory`` names over ``dimension`` components (bits for a binary
    index); `FaissIndexError` when FAISS cannot build it (``over``: what the message says it was asked
    over)."""
    try:
        if binary:
            return faiss.index_binary_factory(dimension, factory)
        return faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as error:
        raise FaissIndexError(f"FAISS cannot build {factory!r}{over}: {_summary(error)}") from None


def check_factory(factory: str, dims: int, *, binary: bool) -> None:
    """`FaissIndexError` unless FAISS builds ``factory`` over vectors of ``dims`` components (packed in
    bytes for a binary index): what an index declared before any vector exists is checked by, as cheaply
    as the empty index is made."""
    dimension = 8 * -(-dims // 8) if binary else dims
    over = f" over {dims}-bit codes" if binary else f" over {dims}-dimensional vectors"
    _empty_index(require_faiss(), factory, dimension, binary=binary, over=over)


class FaissIndex:
    """One FAISS index over an arm's document vectors: float32 unit rows, or packed bits (``bits`` set to
    the number of bits a vector holds, ``dims``: how many of them are the vector's)."""

    def __init__(
        self,
        documents: np.ndarray,
        *,
        doc_ids: Sequence[str],
        factory: str,
        seed: int = 0,
        dims: int | None = None,
    ) -> None:
        faiss = require_faiss()
        self._faiss = faiss
        self.factory = factory
        self.seed = seed
        self.binary = dims is not None
        d = validate_documents(documents, doc_ids)
        self._ranks = tie_ranks(doc_ids)
        self.n = int(d.shape[0])
        self.dims = int(dims) if dims is not None else int(d.shape[1])
        if self.binary:
            vectors = np.ascontiguousarray(d.view(np.uint8))
            index = _empty_index(faiss, factory, 8 * vectors.shape[1], binary=True)
        else:
            vectors = np.ascontiguousarray(d, dtype=np.float32)
            index = _empty_index(faiss, factory, vectors.shape[1], binary=False)
        self._seed(index)
        what = f"building FAISS index {factory} of {self.n:,} vectors"
        try:
            with step(what):
                if not index.is_trained:
                    index.train(vectors)
                self.fixed_bytes = self._serialised_bytes(index)
                index.add(vectors)
        except RuntimeError as error:
            raise FaissIndexError(
                f"FAISS cannot train {factory!r} on {self.n:,} vectors: {_summary(error)}"
            ) from None
        self._index = index
        self.parameter, self._high = self._search_parameter(index)

    def _seed(self, index: Any) -> None:
        """The golden set's seed in every clustering FAISS runs to train the index: the IVF quantizer's
        k-means and a product quantizer's."""
        faiss = self._faiss
        if self.binary:
            inner = faiss.downcast_IndexBinary(index)
            if hasattr(inner, "cp"):
                inner.cp.seed = self.seed
            return
        ivf = faiss.try_extract_index_ivf(index)
        parts = [faiss.downcast_index(index)] + ([] if ivf is None else [faiss.downcast_index(ivf)])
        for part in parts:
            if hasattr(part, "cp"):
                part.cp.seed = self.seed
            pq = getattr(part, "pq", None)
            if pq is not None:
                pq.cp.seed = self.seed

    def _search_parameter(self, index: Any) -> tuple[str | None, int]:
        """The parameter that trades recall for speed, and its largest useful value: ``nprobe`` up to the
        number of lists, ``efSearch`` up to the number of documents; None for an index that scans all."""
        faiss = self._faiss
        if self.binary:
            inner = faiss.downcast_IndexBinary(index)
            if hasattr(inner, "nprobe"):
                return "nprobe", int(inner.nlist)
            return ("efSearch", max(1, self.n)) if hasattr(inner, "hnsw") else (None, 0)
        ivf = faiss.try_extract_index_ivf(index)
        if ivf is not None:
            return "nprobe", int(ivf.nlist)
        return ("efSearch", max(1, self.n)) if self._hnsw(index) is not None else (None, 0)

    def _hnsw(self, index: Any) -> Any:
        """The HNSW part of a float index (under a pre-transform or a refinement), or None."""
        inner = self._faiss.downcast_index(index)
        for attribute in ("index", "base_index"):
            if hasattr(inner, attribute) and not hasattr(inner, "hnsw"):
                inner = self._faiss.downcast_index(getattr(inner, attribute))
        return getattr(inner, "hnsw", None)

    def bounds(self, k: int) -> tuple[int, int]:
        """The range a recall target's search for the parameter spans: nprobe 1 to the lists, efSearch k
        (FAISS's least) to the documents."""
        if self.parameter == "nprobe":
            return 1, self._high
        return min(k, self._high), self._high

    def set_parameter(self, value: int | None) -> None:
        """Search with ``value`` of the index's parameter from now on (None: FAISS's default)."""
        if value is None or self.parameter is None:
            return
        check_block(self.parameter, value)
        if self.binary:
            inner = self._faiss.downcast_IndexBinary(self._index)
            if self.parameter == "nprobe":
                inner.nprobe = int(value)
            else:
                inner.hnsw.efSearch = int(value)
            return
        self._faiss.ParameterSpace().set_index_parameter(self._index, self.parameter, int(value))

    def parameters(self) -> dict[str, int | str]:
        """The factory string, the build seed and the parameter's value as the index searches now."""
        found: dict[str, int | str] = {"factory": self.factory, "seed": self.seed}
        if self.parameter == "nprobe":
            inner = (
                self._faiss.downcast_IndexBinary(self._index)
                if self.binary
                else self._faiss.extract_index_ivf(self._index)
            )
            found["nprobe"] = int(inner.nprobe)
        elif self.parameter == "efSearch":
            hnsw = (
                self._faiss.downcast_IndexBinary(self._index).hnsw if self.binary else self._hnsw(self._index)
            )
            found["efSearch"] = int(hnsw.efSearch)
        return found

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """FAISS's top ``k`` of every query, best first, equal scores by document id descending; float64
        scores (FAISS's inner products, or ``dims - 2 x distance``), padded with -1 and NaN."""
        check_block("k", k)
        k_eff = min(int(k), self.n)
        if queries.shape[0] == 0 or k_eff == 0:
            return np.empty((queries.shape[0], k_eff), dtype=np.int64), np.empty((queries.shape[0], k_eff))
        position_of_rank = np.argsort(self._ranks)
        if self.binary:
            packed = np.ascontiguousarray(queries.view(np.uint8))
            # Hamming distances tie often: k + a margin are asked for, so that a tie group at k is ranked by
            # id among the members the index found, as exact search ranks it.
            width = min(self.n, k_eff + max(16, k_eff // 4))
            keys = binary_keys(self._index, packed, k_eff, self.dims, self._ranks, width)
            return ranked_keys(keys, position_of_rank)
        rows = np.ascontiguousarray(queries, dtype=np.float32)
        scores, labels = self._index.search(rows, k_eff)
        found = labels >= 0
        keys = ranking_keys(scores.astype(np.float32), self._ranks[np.where(found, labels, 0)])
        keys[~found] = 0
        return ranked_float_keys(keys, position_of_rank)

    def value_for_recall(self, queries: np.ndarray, exact: np.ndarray, target: float) -> tuple[int, float]:
        """The smallest parameter value (and the recall it reaches) at which the index's top k finds at least
        ``target`` of ``exact`` (exact search's top k of ``queries`` on the same vectors), by
        `hnsw.smallest_ef`; an index without a parameter is measured as it is. Raises
        `hnsw.TargetNotReached` if even the largest value falls short."""
        from pytest_embeval.search.hnsw import TargetNotReached, ann_recall

        k = int(np.asarray(exact).shape[1])

        def recall_at(value: int) -> float:
            self.set_parameter(value)
            return ann_recall(self.search(queries, k)[0], exact)

        if self.parameter is None:
            recall = recall_at(0)
            if recall < target:
                raise TargetNotReached(target, recall, 0)
            return 0, recall
        low, high = self.bounds(k)
        return smallest_ef(recall_at, target, low=low, high=high)

    def query_seconds(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Wall-clock seconds of one single-threaded FAISS query per row of ``queries`` (the index search
        alone, without the ranking by id), after one untimed query."""
        rows = self._rows(queries)
        return _time_each(self._faiss, self._index, rows, min(int(k), self.n))

    def _rows(self, queries: np.ndarray) -> np.ndarray:
        if self.binary:
            return np.ascontiguousarray(queries.view(np.uint8))
        return np.ascontiguousarray(queries, dtype=np.float32)

    def memory_bytes(self) -> int:
        """The serialised index's bytes (FAISS's own layout: codes, ids, lists, centroids, codebooks)."""
        return self._serialised_bytes(self._index)

    def _serialised_bytes(self, index: Any) -> int:
        faiss = self._faiss
        writer = faiss.serialize_index_binary if self.binary else faiss.serialize_index
        return int(writer(index).size)


def ranked_float_keys(keys: np.ndarray, position_of_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`exact.ranking_keys` of each row best first, decoded to positions and float64 scores (-1, NaN for a
    key of 0)."""
    from pytest_embeval.search.exact import decode_keys, padded

    ordered = np.sort(keys, axis=1)[:, ::-1]
    positions, scores = padded(ordered, *decode_keys(ordered, position_of_rank))
    return positions, scores.astype(np.float64)


def faiss_flat_seconds(
    queries: np.ndarray, documents: np.ndarray, k: int, *, dims: int | None = None
) -> np.ndarray:
    """Wall-clock seconds of one single-threaded exact query per row of ``queries`` on FAISS's flat index
    over ``documents`` (``IndexFlatIP``; over packed bits, ``IndexBinaryFlat``): exact search's latency in
    the library the approximate index is timed in."""
    faiss = require_faiss()
    if dims is not None:
        vectors = np.ascontiguousarray(documents.view(np.uint8))
        flat = faiss.IndexBinaryFlat(8 * vectors.shape[1])
        rows = np.ascontiguousarray(queries.view(np.uint8))
    else:
        vectors = np.ascontiguousarray(documents, dtype=np.float32)
        flat = faiss.IndexFlatIP(vectors.shape[1])
        rows = np.ascontiguousarray(queries, dtype=np.float32)
    flat.add(vectors)
    return _time_each(faiss, flat, rows, min(int(k), vectors.shape[0]))


def _time_each(faiss: Any, index: Any, rows: np.ndarray, k: int) -> np.ndarray:
    """Seconds of ``index.search`` of each row alone, single-threaded, after one untimed search."""
    seconds = np.zeros(rows.shape[0])
    if rows.shape[0] == 0 or k == 0:
        return seconds
    with _threads(faiss, 1):
        index.search(rows[:1], k)
        for i in range(rows.shape[0]):
            start = time.perf_counter()
            index.search(rows[i : i + 1], k)
            seconds[i] = time.perf_counter() - start
    return seconds


#: FAISS's flat index that scans codes of each precision as the codes are compared here: packed bits by
#: popcount, int8/uint8 codes decoded directly (``QT_8bit_direct*``: no ranges), float16 halves.
_FAISS_SCALAR = {"int8": "QT_8bit_direct_signed", "uint8": "QT_8bit_direct", "float16": "QT_fp16"}


def code_query_seconds(
    queries: np.ndarray, documents: np.ndarray, k: int, *, precision: str, dims: int
) -> tuple[np.ndarray, str]:
    """Seconds of one single-threaded exact query per row of ``queries`` over codes in ``precision``, and
    what timed it: FAISS's flat index of that precision (``IndexBinaryFlat``, ``IndexScalarQuantizer``), or
    without FAISS this module's search of all the queries at once, divided among them (numpy's BLAS, on as
    many threads as it takes)."""
    k_eff = min(int(k), documents.shape[0])
    if queries.shape[0] == 0 or k_eff == 0:
        return np.zeros(queries.shape[0]), "none"
    faiss = faiss_module()
    if faiss is None:
        ids = [str(i) for i in range(documents.shape[0])]
        start = time.perf_counter()
        if precision in ("binary", "ubinary"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FaissMissingWarning)
                hamming_search(queries, documents, k_eff, dims=dims, doc_ids=ids)
        elif precision == "float16":
            exact_search(queries, documents, k_eff, doc_ids=ids)
        else:
            integer_search(queries, documents, k_eff, doc_ids=ids)
        return np.full(queries.shape[0], (time.perf_counter() - start) / queries.shape[0]), "numpy"
    if precision in ("binary", "ubinary"):
        index = faiss.IndexBinaryFlat(8 * documents.shape[1])
        index.add(np.ascontiguousarray(documents.view(np.uint8)))
        rows = np.ascontiguousarray(queries.view(np.uint8))
    else:
        kind = getattr(faiss.ScalarQuantizer, _FAISS_SCALAR[precision])
        index = faiss.IndexScalarQuantizer(documents.shape[1], kind, faiss.METRIC_INNER_PRODUCT)
        index.train(np.ascontiguousarray(documents[: min(256, documents.shape[0])], dtype=np.float32))
        index.add(np.ascontiguousarray(documents, dtype=np.float32))
        rows = np.ascontiguousarray(queries, dtype=np.float32)
    return _time_each(faiss, index, rows, k_eff), "faiss"
