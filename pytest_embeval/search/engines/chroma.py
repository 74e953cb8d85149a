"""Chroma, as a server (``chroma run``, or a deployed one), through ``chromadb.HttpClient``.

``index: {chroma: {url: http://HOST:PORT, space, max_neighbors, ef_construction, ef_search, timeout}}``: each
collection is an HNSW index with those parameters (Chroma's own names), built from the records in corpus
order in batches of the server's largest batch. Filterable fields are stored as metadata, each field as a
list of strings under ``field:<name>`` (the prefix keeps a field from being read as one of Chroma's reserved
keys or operators), and a filter becomes a ``where`` of ``$contains`` per value, ``$or`` across a field's
values, ``$and`` across fields (`chroma_where`): a record matches when, for every field, it holds one of the
values, as the golden set's filters mean.

Chroma reads a collection's ``ef_search`` when it loads its index and keeps it loaded, so a changed value
reaches searches only once the server reloads it; a recall target therefore tries each value on a fresh
collection built from the same records (`set_search_parameter`).

chromadb's client sets no timeout on its HTTP session and has no setting for one (chroma-core/chroma#5805),
so the adapter sets it on the session the client made (``timeout`` seconds, 30 by default), after checking the
server answers its heartbeat within that time: a server that does not answer is a fault of the run, not a
wait without end.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from pytest_embeval.golden.filters import Filter
from pytest_embeval.search.vector_index import EngineError, Found, Records, SearchParameter, describe_fault

__all__ = ["ADAPTER", "FIELD_PREFIX", "ChromaIndex", "chroma_metadata", "chroma_where"]

#: Metadata keys of the records' filterable fields start with this.
FIELD_PREFIX = "field:"
#: The hnsw parameters of a collection's configuration that the golden file declares.
HNSW_KEYS = ("space", "max_neighbors", "ef_construction", "ef_search")

T = TypeVar("T")


def chroma_metadata(fields: Mapping[str, tuple[str, ...]]) -> dict[str, list[str]] | None:
    """A record's filterable fields as Chroma metadata: each field a list of its values (None for a record
    without fields: Chroma refuses empty metadata)."""
    return {FIELD_PREFIX + name: list(values) for name, values in fields.items()} or None


def chroma_where(wanted: Filter | None) -> dict[str, Any] | None:
    """A golden-set filter as a Chroma ``where``: each value a ``$contains`` on its field's list, a field's
    values joined by ``$or``, the fields by ``$and`` (Chroma wants two or more under either); None for no
    filter."""
    if not wanted:
        return None
    clauses: list[dict[str, Any]] = []
    for name, values in wanted.items():
        alternatives = [{FIELD_PREFIX + name: {"$contains": value}} for value in values]
        clauses.append(alternatives[0] if len(alternatives) == 1 else {"$or": alternatives})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class ChromaIndex:
    """A Chroma server, connected (see the module docstring)."""

    engine = "chroma"

    def __init__(
        self,
        url: str,
        space: str = "ip",
        max_neighbors: int = 16,
        ef_construction: int = 100,
        ef_search: int = 100,
        timeout: float = 30.0,
    ) -> None:
        import chromadb
        import httpx
        from chromadb.config import Settings

        self.address = url.rstrip("/")
        self.timeout = timeout
        self.hnsw: dict[str, Any] = {
            "space": space,
            "max_neighbors": max_neighbors,
            "ef_construction": ef_construction,
            "ef_search": ef_search,
        }
        parts = urlsplit(self.address)
        if parts.hostname is None:
            raise EngineError(self.engine, self.address, "the url names no host")
        with self._faults("connecting"):
            # The client's first requests are made while it is constructed, on a session without a timeout:
            # the heartbeat, with one, makes sure they will be answered.
            httpx.get(f"{self.address}/api/v2/heartbeat", timeout=timeout).raise_for_status()
            client: Any = chromadb.HttpClient(
                host=parts.hostname,
                port=parts.port or (443 if parts.scheme == "https" else 80),
                ssl=parts.scheme == "https",
                settings=Settings(anonymized_telemetry=False),
            )
            client._server._session.timeout = httpx.Timeout(timeout)
            self.client = client
            self.version = f"chromadb {chromadb.__version__}, server {self.client.get_version()}"
        #: each collection's records and ef_search, to build it again at another ef_search
        self._records: dict[str, tuple[Records, Mapping[str, str]]] = {}
        self._ef: dict[str, int] = {}

    @contextmanager
    def _faults(self, what: str) -> Iterator[None]:
        """A timeout as the ``timeout`` key names it; anything else as the client says it."""
        import httpx

        try:
            with warnings.catch_warnings():
                # chromadb warns of its own legacy configuration reading a collection made without an
                # embedding function: nothing the run can act on.
                warnings.simplefilter("ignore", DeprecationWarning)
                yield
        except httpx.TimeoutException:
            problem = f"{what}: no answer within {self.timeout:g} s (index.chroma.timeout)"
            raise EngineError(self.engine, self.address, problem) from None
        except httpx.ConnectError as error:
            raise EngineError(self.engine, self.address, f"{what}: cannot connect: {error}") from None
        except EngineError:
            raise
        except Exception as error:
            raise EngineError(self.engine, self.address, f"{what}: {describe_fault(error)}") from None

    def _call(self, what: str, call: Callable[[], T]) -> T:
        with self._faults(what):
            return call()

    def create(self, name: str, records: Records, marker: Mapping[str, str]) -> None:
        self._records[name] = (records, dict(marker))
        self._ef[name] = int(self.hnsw["ef_search"])
        self._build(name)

    def _build(self, name: str) -> None:
        records, marker = self._records[name]
        configuration = {"hnsw": {**self.hnsw, "ef_search": self._ef[name]}}
        collection = self._call(
            f"creating collection {name!r}",
            lambda: self.client.create_collection(
                name, configuration=configuration, metadata=dict(marker), embedding_function=None
            ),
        )
        batch = self._call("asking its batch size", self.client.get_max_batch_size)
        ids = list(records.ids)
        for start in range(0, len(ids), batch):
            stop = min(start + batch, len(ids))
            metadatas = [chroma_metadata(fields) for fields in records.fields[start:stop]]
            self._call(
                f"adding records {start}..{stop - 1} to collection {name!r}",
                lambda start=start, stop=stop, metadatas=metadatas: collection.add(  # type: ignore[misc]
                    ids=ids[start:stop],
                    embeddings=records.vectors[start:stop],
                    metadatas=metadatas if any(metadatas) else None,
                ),
            )

    def search(self, name: str, queries: np.ndarray, k: int, where: Filter | None) -> Sequence[Found]:
        collection = self._call(
            f"opening collection {name!r}", lambda: self.client.get_collection(name, embedding_function=None)
        )
        answer = self._call(
            f"searching collection {name!r}",
            lambda: collection.query(
                query_embeddings=np.ascontiguousarray(queries, dtype=np.float32),
                n_results=k,
                where=chroma_where(where),
                include=["distances"],
            ),
        )
        distances = answer["distances"] or [[] for _ in answer["ids"]]
        return [
            Found(tuple(ids), tuple(self._similarity(float(d)) for d in row))
            for ids, row in zip(answer["ids"], distances, strict=True)
        ]

    def _similarity(self, distance: float) -> float:
        """Chroma's distance as a similarity: ``1 - d`` for ip and cosine, ``1 - d / 2`` for squared l2
        (all three the cosine of unit vectors)."""
        return 1.0 - distance / 2.0 if self.hnsw["space"] == "l2" else 1.0 - distance

    def parameters(self, name: str) -> dict[str, Any]:
        configuration = self._call(
            f"describing collection {name!r}",
            lambda: self.client.get_collection(name, embedding_function=None).configuration,
        )
        hnsw = dict(configuration.get("hnsw") or {})
        return {key: hnsw.get(key) for key in HNSW_KEYS}

    def search_parameter(self, name: str, k: int) -> SearchParameter:
        # hnswlib searches with max(ef, k) candidates: below k nothing changes; at the collection's size it
        # explores everything the graph reaches.
        size = len(self._records[name][0].ids)
        return SearchParameter("ef_search", self._ef[name], low=k, high=max(k, size))

    def set_search_parameter(self, name: str, value: int) -> None:
        if value == self._ef[name]:
            return
        self.drop(name, forget=False)
        self._ef[name] = value
        self._build(name)

    def drop(self, name: str, *, forget: bool = True) -> None:
        self._call(f"dropping collection {name!r}", lambda: self.client.delete_collection(name))
        if forget:
            self._records.pop(name, None)
            self._ef.pop(name, None)

    def markers(self, prefix: str) -> dict[str, Mapping[str, str]]:
        listed = self._call("listing collections", lambda: self.client.list_collections())
        return {
            collection.name: {key: str(value) for key, value in (collection.metadata or {}).items()}
            for collection in listed
            if collection.name.startswith(prefix)
        }

    def close(self) -> None:
        self._records.clear()
        self.client.close()


#: What `vector_index.open_index` calls with the golden file's keys.
ADAPTER = ChromaIndex
