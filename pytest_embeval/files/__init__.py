"""Files every layer writes, hashes or reads: atomic writes (`atomic`), file digests remembered across runs
(`digests`), data files read through their compression (`compressed`) or a line at a time (`lines`), a
source of one file or a glob of many (`sources`), and the columnar engine that reads the large ones
(`columnar`: DuckDB, the ``[duckdb]`` extra, imported only when used).

May import: ``core``.
"""

from __future__ import annotations
