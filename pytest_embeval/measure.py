"""What one run measures about an arm for its capacity projection: encoding throughput and the arm's
`capacity.ArmCapacity` (vectors, tokens, index memory, latency).

Throughput is the wall-clock time of the encoder's own calls over the documents it encoded in this run,
timed around the arm's encoder, so the embedding cache's reads and writes are not counted, nor is loading a
lazily loaded model. A run that encoded no document (all served by the cache) did not measure throughput,
and says so rather than invent a figure.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_embeval.capacity import ArmCapacity, Throughput, TokenCount
from pytest_embeval.encoders import Arm, EncodedBatch, Encoder, LazyEncoder
from pytest_embeval.index import Latency
from pytest_embeval.tokens import count

__all__ = ["TimedEncoder", "measure_capacity"]


class TimedEncoder:
    """Wraps an arm's encoder: the document texts it encodes and the seconds its ``encode_document`` calls
    take. Everything else (``encode_query``, attributes such as a hosted encoder's usage) passes through."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.documents: list[str] = []
        self.seconds = 0.0

    def encode_document(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        if isinstance(self.encoder, LazyEncoder):
            self.encoder.get()  # loading the model is not encoding: never timed
        start = time.perf_counter()
        vectors = self.encoder.encode_document(texts)
        self.seconds += time.perf_counter() - start
        self.documents.extend(texts)
        return vectors

    def encode_query(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        return self.encoder.encode_query(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.encoder, name)


def measure_capacity(
    arm: Arm,
    *,
    documents: np.ndarray,
    document_texts: Sequence[str],
    query_texts: Sequence[str],
    timer: TimedEncoder | None,
    index: str,
    index_bytes: int,
    M: int | None,
    latency: Latency,
    latency_ef: int | None,
) -> ArmCapacity:
    """The arm's `ArmCapacity` on the ``index`` ("exact" or "hnsw") it built over ``documents`` (its vectors,
    in corpus order)."""
    counter = arm.token_counter
    document_tokens: TokenCount | None = None
    query_tokens: TokenCount | None = None
    throughput_tokens: int | None = None
    if counter is not None:
        document_tokens, read = count(counter, document_texts, "document")
        query_tokens = count(counter, query_texts, "query")[0]
        if timer is not None and timer.documents:
            tokens_of = dict(zip(document_texts, read.tolist(), strict=True))
            throughput_tokens = sum(tokens_of[text] for text in timer.documents)
    throughput = None
    if timer is not None and timer.documents:
        throughput = Throughput(texts=len(timer.documents), seconds=timer.seconds, tokens=throughput_tokens)
    return ArmCapacity(
        documents=int(documents.shape[0]),
        dimension=int(documents.shape[1]),
        dtype=str(documents.dtype),
        bytes_per_vector=int(documents.shape[1] * documents.dtype.itemsize),
        index_bytes=index_bytes,
        index_kind=index,
        M=M,
        document_tokens=document_tokens,
        query_tokens=query_tokens,
        throughput=throughput,
        latency=latency,
        latency_ef=latency_ef,
        price_per_million_tokens=arm.price_per_million_tokens,
    )
