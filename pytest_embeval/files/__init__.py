"""Files every layer writes, hashes or reads: atomic writes (`atomic`), file digests remembered across runs
(`digests`), data files read through their compression (`compressed`), and a file's lines read in one
streaming pass with its sha256 (`lines`).

May import: ``core``.
"""

from __future__ import annotations
