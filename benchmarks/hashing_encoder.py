"""A cheap, deterministic encoder for benchmarks: feature hashing of words, so that encoding costs almost
nothing and what a benchmark measures is the plugin's own work.

Each word goes to one of ``dimensions`` buckets with a sign, both from its crc32 salted by the model's
``salt``; a text's vector is the signed count of its words per bucket (the plugin normalises it). Two
arms with different sizes or salts retrieve differently, as two models would. Used as model specs
``hashing_encoder:incumbent`` (512 dimensions) and ``hashing_encoder:candidate`` (256), with this folder on
``PYTHONPATH``.
"""

from __future__ import annotations

import zlib

import numpy as np


class HashingEncoder:
    """Signed word hashing into ``dimensions`` buckets; the same vector for a text as query or document."""

    def __init__(self, dimensions: int, salt: str) -> None:
        self.dimensions = dimensions
        self.salt = salt.encode("utf-8")
        self.name = f"hashing-{dimensions}-{salt}"
        self._buckets: dict[str, int] = {}  # word -> signed bucket + 1 (the sign is the sign)

    def _bucket(self, word: str) -> int:
        code = self._buckets.get(word)
        if code is None:
            digest = zlib.crc32(word.encode("utf-8"), zlib.crc32(self.salt))
            bucket = (digest >> 1) % self.dimensions
            code = self._buckets[word] = (bucket + 1) * (1 if digest & 1 else -1)
        return code

    def _encode(self, texts: list[str]) -> np.ndarray:
        rows: list[int] = []
        codes: list[int] = []
        for row, text in enumerate(texts):
            words = text.split()
            codes.extend(map(self._bucket, words))
            rows.extend([row] * len(words))
        signed = np.asarray(codes, dtype=np.int64)
        flat = np.asarray(rows, dtype=np.int64) * self.dimensions + np.abs(signed) - 1
        counts = np.bincount(flat, weights=np.sign(signed), minlength=len(texts) * self.dimensions)
        vectors = counts.reshape(len(texts), self.dimensions).astype(np.float32)
        vectors[:, 0] += 1e-3  # never an all-zero vector, whatever words cancel out
        return vectors

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)


def incumbent() -> HashingEncoder:
    return HashingEncoder(512, "incumbent")


def candidate() -> HashingEncoder:
    return HashingEncoder(256, "candidate")
