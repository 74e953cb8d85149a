"""What turns a model spec into something that ranks: an arm.

The one validated embedding path (`embedding`), model specs resolved to encoders (`model_specs`):
sentence-transformers folders and names (`sentence_transformer`), ``module:attr`` factories, OpenAI-compatible
endpoints (`endpoint`, with `batching`, `tokens` and `usage`); retrievers over them (`retriever`, `dense`),
BM25 (`bm25`), reciprocal rank fusion (`fusion`), a model's vectors in another shape (`variants`, searching
the golden set's FAISS index, or one of their own, with `faiss_search`), resolved from an arm spec by
`resolve`; the reranker (`rerank`), what a run measures for capacity (`capacity_measurement`), the
candidates' names (`candidates`) and the demo models (`demo`); the device, dtype and batch size an
in-process model runs with (`devices`) and the ``openai`` client every endpoint of ours uses
(`openai_client`).

May import: ``search``, ``golden``, ``files``, ``core``. Never pytest.
"""

from __future__ import annotations
