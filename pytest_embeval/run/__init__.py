"""One golden set run: the pipeline both arms go through with everything else held constant (`pipeline`),
the control digests that prove it (`control`), corpus slices (`corpus_slices`), each stratum decided
from both arms' per-query scores (`stratum_evaluation`), the family of several candidates' comparisons
(`shortlist`), the declared decision (`decision`), and with a vector database each comparison's Δ split into
the model's part and the engine's (`index_split`).

The pipeline never knows whether vectors come from the embedding cache: the plugin hands it the function
that embeds (the cache's, or the plain `arms.embedding.embed`).

May import: ``arms``, ``search``, ``golden``, ``files``, ``core``. Never pytest.
"""

from __future__ import annotations
