"""Ranking documents for queries from their vectors: exact blocked top-k (`exact`), hnswlib graphs with
their recall and latency measured (`hnsw`), exact search's float32 scan on a torch device
(`torch_scan`), built graphs kept in the cache folder (`graphs`), and an arm's per-query scores from its
ranking (`scoring`).

May import: ``golden``, ``files``, ``core``.
"""

from __future__ import annotations
