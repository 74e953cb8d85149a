"""Built HNSW graphs kept in the cache folder: a rerun over the same vectors loads its graph instead of
building it again (single-threaded, the build is most of an HNSW golden set's rerun at scale).

A graph built single-threaded with a fixed seed is a function of its inputs: the document vectors (float32,
in corpus order), the space (inner product), M, ef_construction, the seed and the hnswlib version. A file is
named by the sha256 of all of these (the graph's *key*) and by the sha256 of its own bytes::

    graphs/<key, 32 hex>-<sha256 of the file, 64 hex>.hnsw      hnswlib's save_index format

The file's digest is checked before hnswlib reads it: hnswlib trusts what it loads, and a truncated or
bit-flipped file could crash the process rather than fail. A file that does not check out is deleted and
the graph built again. Files are written to a uniquely named temporary file and moved into place, as the
embedding cache's packs are; two processes building one graph write the same bytes under the same name. A
cache folder that cannot be written costs the next run a build, nothing else (the embedding cache has
already said so once). Loading a graph marks it used (its modification time), which ``embeval cache prune``
goes by.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from pytest_embeval.files.atomic import write_atomic

__all__ = ["GraphStore", "graph_key"]

_FORMAT = b"pytest-embeval hnsw graph v1\n"
_SUFFIX = ".hnsw"


@functools.cache
def _hnswlib_version() -> str:
    return version("hnswlib")  # its package metadata: 4 ms to find the first time


def graph_key(documents: np.ndarray, *, M: int, ef_construction: int, seed: int) -> str:
    """The key of the graph built over ``documents`` (float32 rows) with these parameters."""
    rows = np.ascontiguousarray(documents, dtype=np.float32)
    digest = hashlib.sha256(_FORMAT)
    digest.update(
        f"hnswlib {_hnswlib_version()} ip n={rows.shape[0]} dim={rows.shape[1]} M={M} "
        f"ef_construction={ef_construction} seed={seed}\n".encode()
    )
    digest.update(rows.data)
    return digest.hexdigest()[:32]


class GraphStore:
    """The ``graphs/`` folder of a cache root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.directory = Path(root) / "graphs"

    def load(self, key: str, dim: int, n: int) -> Any | None:
        """The hnswlib index stored under ``key`` (``dim`` and ``n`` its vectors'), or None if none checks
        out (a damaged file is deleted)."""
        import hnswlib

        try:
            names = [name for name in os.listdir(self.directory) if name.startswith(key + "-")]
        except OSError:  # no folder yet, or one that cannot be read
            return None
        for name in names:
            path = self.directory / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if hashlib.sha256(data).hexdigest() != name[len(key) + 1 : -len(_SUFFIX)]:
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            index = hnswlib.Index(space="ip", dim=dim)
            try:
                index.load_index(str(path), max_elements=n)
            except RuntimeError:  # deleted since it was read (its bytes were whole)
                continue
            index.set_num_threads(1)
            # Its last use, as a pack's: `embeval cache prune` drops the graphs no run has loaded lately.
            with contextlib.suppress(OSError):  # a read-only cache: its last use stays as it was
                os.utime(path)
            return index
        return None

    def save(self, key: str, index: Any) -> None:
        """Store a built hnswlib index under ``key``."""
        # hnswlib writes only to a path: a private scratch file, whose bytes are then written into place
        # with the umask's mode (`atomic.write_atomic`: caches are shared), under their digest.
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, scratch = tempfile.mkstemp(dir=self.directory, prefix=".build-", suffix=_SUFFIX)
            os.close(handle)
        except OSError:
            return  # a cache folder that cannot be written: the next run builds the graph again
        try:
            index.save_index(scratch)
            data = Path(scratch).read_bytes()
            write_atomic(self.directory / f"{key}-{hashlib.sha256(data).hexdigest()}{_SUFFIX}", data)
        except (OSError, RuntimeError):  # full, or its folder gone meanwhile
            pass
        finally:
            with contextlib.suppress(OSError):
                os.unlink(scratch)
