"""Files every layer writes, hashes or reads: atomic writes (`atomic`), file digests remembered across runs
(`digests`), and data files read through their compression (`compressed`).

May import: ``core``.
"""

from __future__ import annotations
