"""Reading the embedding cache when it holds many small packs or few big ones.

    python benchmarks/bench_cache_packs.py [--texts 100000] [--dim 384] [--batch 64] [--repeat 3]

Since every encoder call's vectors are stored as the call returns, a run that is interrupted leaves one pack
per call (``--batch`` texts each: 1,563 packs for 100,000 texts) until a later call merges them. Timed, each a
fresh `EmbeddingCache` looking up every text (what a cached rerun does), best of ``--repeat``:

* floor: the same float32 vectors read from one ``.npy`` file with ``np.load``, and the texts' sha256 keys
  computed (a lookup cannot do less: it must hash every text and read every vector);
* big packs: the texts stored as packs of `PACK_ROWS` (4,096), as one store of all of them writes;
* small packs: the texts stored one pack per ``--batch`` texts;
* merging: one `EmbeddingCache.embed` call that embeds a single new text and so merges the small packs
  (read back from disk: what the rerun of an interrupted run does).

And what storing each call costs a first run: `EmbeddingCache.embed` of every text with an encoder that
returns precomputed vectors at once (one pack per call of 64, then merged from memory), against
`encoders.embed` of them all and then one `store` (packs of 4,096: what pytest-embeval 0.1 did).

Targets: small packs / big packs <= 2 (many small packs stay fast to read), after the merge = big packs,
and storing each call at most 100 us a text more than one store (encoding takes longer: see the README).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_embeval.arms.embedding import embed  # noqa: E402
from pytest_embeval.arms.model_specs import resolve_model  # noqa: E402
from pytest_embeval.cache.packs import PACK_ROWS  # noqa: E402
from pytest_embeval.cache.store import EmbeddingCache  # noqa: E402


class Stored:
    """An encoder that returns precomputed vectors at once (ones for a text it does not know)."""

    name = "bench-cache-packs"

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self.row = {text: i for i, text in enumerate(texts)}
        self.vectors = vectors

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self.encode_document(texts)

    def encode_document(self, texts: list[str]) -> np.ndarray:
        rows = [
            self.vectors[self.row[text]] if text in self.row else np.ones(self.vectors.shape[1])
            for text in texts
        ]
        return np.array(rows, dtype=np.float32)


def best(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()

    texts = [f"passage {i} of a corpus the size of a real one" for i in range(options.texts)]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((options.texts, options.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    arm = resolve_model(Stored(texts, vectors))
    work = Path(tempfile.mkdtemp(prefix="bench-cache-packs-"))
    try:
        floor_file = work / "floor.npy"
        np.save(floor_file, vectors)

        def floor() -> None:
            np.load(floor_file)
            for text in texts:
                hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

        big, small = work / "big", work / "small"
        EmbeddingCache(big).store(arm, "document", texts, vectors)
        for start in range(0, options.texts, options.batch):
            part = slice(start, start + options.batch)
            EmbeddingCache(small).store(arm, "document", texts[part], vectors[part])

        def read(root: Path) -> Callable[[], None]:
            def lookup() -> None:
                found = EmbeddingCache(root).lookup(arm, "document", texts)
                assert len(found) == options.texts

            return lookup

        def packs(root: Path) -> int:
            return sum(1 for _ in root.rglob("*.pack"))

        load = os.getloadavg()[0]
        print(f"{options.texts:,} texts x {options.dim} float32, best of {options.repeat}; load {load:.1f}")
        timings = {"floor (np.load + sha256 of every text)": (best(options.repeat, floor), 1)}
        timings[f"big packs ({PACK_ROWS:,} rows)"] = (best(options.repeat, read(big)), packs(big))
        timings[f"small packs ({options.batch} rows)"] = (best(options.repeat, read(small)), packs(small))
        started = time.perf_counter()
        EmbeddingCache(small).embed(arm, [*texts, "one new text"], "document")
        merge = time.perf_counter() - started
        timings["after the merge"] = (best(options.repeat, read(small)), packs(small))
        floor_seconds = timings["floor (np.load + sha256 of every text)"][0]
        print(f"{'':40} {'files':>6} {'seconds':>8} {'x floor':>8}")
        for name, (seconds, files) in timings.items():
            print(f"{name:40} {files:6,} {seconds:8.3f} {seconds / floor_seconds:8.1f}")
        print(f"{'merging (one embed call, 1 new text)':40} {'':6} {merge:8.3f} {merge / floor_seconds:8.1f}")

        def first_embed() -> None:
            shutil.rmtree(work / "first", ignore_errors=True)
            EmbeddingCache(work / "first").embed(arm, texts, "document")

        def one_store() -> None:
            shutil.rmtree(work / "store", ignore_errors=True)
            EmbeddingCache(work / "store").store(arm, "document", texts, embed(arm, texts, "document"))

        embedding, storing = best(options.repeat, first_embed), best(options.repeat, one_store)
        print(f"{'first embed (a pack per call, merged)':40} {packs(work / 'first'):6,} {embedding:8.3f}")
        print(f"{'embed, then one store of every text':40} {packs(work / 'store'):6,} {storing:8.3f}")
        overhead = (embedding - storing) / options.texts * 1e6
        print(f"first embed - (embed, then one store): {overhead:.0f} us a text (target <= 100)")
        small_ratio = (
            timings[f"small packs ({options.batch} rows)"][0] / timings[f"big packs ({PACK_ROWS:,} rows)"][0]
        )
        print(f"small packs / big packs: {small_ratio:.2f} (target <= 2)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
