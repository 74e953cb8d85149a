"""Ranking documents for queries from their vectors: exact blocked top-k (`exact`, scanning in float32 within
a proven error bound: `float32_bounds`), hnswlib graphs with their recall and latency measured (`hnsw`), exact
search's float32 scan on a torch device (`torch_scan`), built graphs kept in the cache folder (`graphs`), a
variant's vectors truncated and quantised (`quantization`) and searched exactly in that domain (`quantized`),
FAISS indexes from a factory string (`faiss_index`), and an arm's per-query scores from its ranking
(`scoring`); a vector database behind the adapter protocol (`vector_index`), one arm's collection in it
searched like a graph (`engine_search`), and the shipped adapters (the ``engines`` folder, one module each,
imported only when declared).

May import: ``golden``, ``files``, ``core``.
"""

from __future__ import annotations
