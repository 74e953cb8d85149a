"""Files every layer writes, hashes or reads: the one write path (`atomic`: atomic writes, special files
written through), the one guard on output paths (`output_paths`: an output is never an input), file
digests remembered across runs or computed ahead on a thread of their own (`digests`), data files read
through their compression (`compressed`), a file's lines read in one streaming pass with its sha256
(`lines`), the one text check at load (`unicode`), a source of one file or a glob of many (`sources`), and
the columnar engine that reads the large ones (`columnar`: DuckDB, the ``[duckdb]`` extra, imported only
when used).

May import: ``core``.
"""

from __future__ import annotations
