"""What one run measures about an arm for its capacity projection: encoding throughput and the arm's
`capacity.ArmCapacity` (vectors, tokens, index memory, latency).

Throughput is the wall-clock time during which at least one of the encoder's own calls was running, over
the documents it encoded in this run, timed around the arm's encoder, so the embedding cache's reads and
writes are not counted, nor is loading a lazily loaded model. An endpoint arm keeps several requests in flight
from several threads (`batching.completed`): summing each call's seconds would count one wall-clock second
once per request in flight, so the timer measures the union of the calls' intervals instead. A run that
encoded no document (all served by the cache) did not measure throughput, and says so rather than invent a
figure.

Tokens are the model's own tokenizer's count where the arm has one (`Arm.token_counter`), and otherwise the
endpoint's ``usage`` figures (`Arm.usage`): for the distinct texts the endpoint was sent in this run, and for
those served by the embedding cache what they cost when they were embedded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_embeval.arms.embedding import Arm, EncodedBatch, Encoder, LazyEncoder
from pytest_embeval.arms.tokens import count
from pytest_embeval.arms.usage import UsageCount
from pytest_embeval.core.capacity import ArmCapacity, FaissLayout, Latency, Throughput, TokenCount
from pytest_embeval.search.quantization import VectorShape

__all__ = ["TimedEncoder", "measure_capacity"]


class TimedEncoder:
    """Wraps an arm's encoder: the document texts it encodes, the wall-clock seconds during which at least one
    ``encode_document`` call was running (calls may overlap, from several threads) and the tokens an endpoint
    counted for them. Everything else (``encode_query``, attributes such as a hosted encoder's usage) passes
    through."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.documents: list[str] = []
        self.seconds = 0.0
        #: the endpoint's tokens for ``documents``; None once a call returned vectors without token counts
        self.tokens: int | None = 0
        self._lock = threading.Lock()
        self._running = 0
        self._busy_since = 0.0

    def encode_document(self, texts: list[str]) -> np.ndarray | EncodedBatch:
        if isinstance(self.encoder, LazyEncoder):
            self.encoder.get()  # loading the model is not encoding: never timed
        with self._lock:
            if self._running == 0:
                self._busy_since = time.perf_counter()
            self._running += 1
        try:
            vectors = self.encoder.encode_document(texts)
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self.seconds += time.perf_counter() - self._busy_since
        with self._lock:
            self.documents.extend(texts)
            if isinstance(vectors, EncodedBatch) and self.tokens is not None:
                self.tokens += int(np.asarray(vectors.tokens).sum())
            else:
                self.tokens = None
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
    document_usage: UsageCount | None = None,
    query_usage: UsageCount | None = None,
    index: str,
    index_bytes: int,
    M: int | None,
    latency: Latency,
    latency_ef: int | None,
    faiss: FaissLayout | None = None,
    shape: VectorShape | None = None,
) -> ArmCapacity:
    """The arm's `ArmCapacity` on the ``index`` ("exact", "hnsw" or "faiss", with its ``faiss`` layout) it
    built over ``documents`` (its vectors, in corpus order; a variant's vectors are described by its
    ``shape`` instead: dims, precision, bytes). ``document_usage`` and ``query_usage``: what the arm's
    `Arm.usage` counted while the documents and the queries were embedded (endpoint arms), used when the arm
    has no token counter."""
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
    elif arm.usage is not None:
        document_tokens = _usage_tokens(document_usage, len(set(document_texts)))
        query_tokens = _usage_tokens(query_usage, len(set(query_texts)))
        if timer is not None and timer.documents:
            throughput_tokens = timer.tokens
    throughput = None
    if timer is not None and timer.documents:
        throughput = Throughput(texts=len(timer.documents), seconds=timer.seconds, tokens=throughput_tokens)
    return ArmCapacity(
        documents=int(documents.shape[0]),
        dimension=int(documents.shape[1]) if shape is None else shape.dims,
        dtype=str(documents.dtype) if shape is None else shape.precision,
        bytes_per_vector=(
            int(documents.shape[1] * documents.dtype.itemsize) if shape is None else shape.bytes_per_vector
        ),
        index_bytes=index_bytes,
        index_kind=index,
        M=M,
        document_tokens=document_tokens,
        query_tokens=query_tokens,
        throughput=throughput,
        latency=latency,
        latency_ef=latency_ef,
        price_per_million_tokens=arm.price_per_million_tokens,
        faiss=faiss,
    )


def _usage_tokens(usage: UsageCount | None, distinct_texts: int) -> TokenCount | None:
    """The endpoint's count for ``distinct_texts`` texts (each embedded once, or served by the cache), or None
    when nothing was counted (an endpoint that reports no usage)."""
    if usage is None or distinct_texts == 0:
        return None
    total = usage.tokens + usage.cached_tokens
    if total == 0:
        return None
    return TokenCount(
        texts=distinct_texts,
        tokens=total,
        truncated=0,
        max_length=None,
        method="the endpoint's usage figures",
    )
