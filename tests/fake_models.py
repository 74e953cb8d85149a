"""Deterministic fake encoders for plugin tests: no weights, and exact control of what each arm gets right.

Documents are texts "doc <i>" and queries "<language> <i>"; document i is the one relevant to query i.
An encoder maps "doc i" to the unit vector of axis i and a query to the axis of the document it "thinks"
answers it, so each model's retrieval, and therefore every verdict, is known in advance.
"""

from __future__ import annotations

import numpy as np

DIMENSIONS = 128


def _axis(i: int) -> np.ndarray:
    vector = np.zeros(DIMENSIONS, dtype=np.float32)
    vector[i % DIMENSIONS] = 1.0
    return vector


class AxisModel:
    """Gets query i right unless its language is in `misses` and i % 4 != 0: then doc i+1 ranks first."""

    def __init__(self, name: str, misses: tuple[str, ...] = ()) -> None:
        self.name = name
        self.misses = misses

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.stack([_axis(int(text.split()[-1])) for text in texts])

    def encode_query(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            language, number = text.split()
            i = int(number)
            rows.append(_axis(i + 1 if language in self.misses and i % 4 else i))
        return np.stack(rows)


class BrokenModel(AxisModel):
    """Returns NaN for every query: the plugin must fail the golden set's items, not score garbage."""

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return np.full((len(texts), DIMENSIONS), np.nan, dtype=np.float32)


good = AxisModel("good")
bad = AxisModel("bad", misses=("en", "es"))
bad_english = AxisModel("bad-english", misses=("en",))
broken = BrokenModel("broken")
