"""The vector databases shipped with pytest-embeval, one module each, each an adapter of the
`vector_index.VectorIndex` protocol: Chroma as a server through its HTTP client (`chroma`), LanceDB embedded
(`lance`). A module is imported only when a golden file declares its engine (`vector_index.open_index`), and
imports its client library only then: each is an extra (``pip install 'pytest-embeval[chroma]'``,
``[lancedb]``).

May import: ``search`` (the protocol), ``golden``, ``files``, ``core``.
"""

from __future__ import annotations
