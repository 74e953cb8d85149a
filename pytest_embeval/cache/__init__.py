"""The embedding cache: content-addressed packs of unit vectors (`store`, the pack format in `packs`, their
rows read and checked a few packs at a time into a lookup's result in `pack_reads`, the texts processes are
embedding now in `claims`), filled ahead of a run in deterministic shards (`sharding`), across a Ray cluster
(`ray_data`) or from vectors a batch job computed (`vector_import`), and kept (what a folder holds, which
packs are damaged, pruning: `upkeep`).

May import: ``run`` (which texts a run embeds), ``arms``, ``search``, ``golden``, ``files``, ``core``.
Never pytest.
"""

from __future__ import annotations
