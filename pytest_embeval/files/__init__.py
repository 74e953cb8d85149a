"""Files every layer writes or hashes: atomic writes (`atomic`) and file digests remembered across runs
(`digests`).

May import: ``core``.
"""

from __future__ import annotations
