"""Deterministic fake encoders for plugin tests: no weights, and exact control of what each arm gets right.

Documents are texts "doc <i>" and queries "<language> <i>"; document i is the one relevant to query i.
An encoder maps "doc i" to the unit vector of axis i and a query to the axis of the document it "thinks"
answers it, so each model's retrieval, and therefore every verdict, is known in advance.
"""

from __future__ import annotations

import os
import time

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


class TiedModel(AxisModel):
    """Puts query i of a language in `ties` halfway between doc i and doc i+1: the two tie at the top, and
    trec_eval's order (larger id first) ranks doc i+1, the wrong one, first."""

    def __init__(self, name: str, ties: tuple[str, ...]) -> None:
        super().__init__(name)
        self.ties = ties

    def encode_query(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            language, number = text.split()
            i = int(number)
            rows.append(_axis(i) + _axis(i + 1) if language in self.ties else _axis(i))
        return np.stack(rows)


class BrokenModel(AxisModel):
    """Returns NaN for every query: the plugin must fail the golden set's items, not score garbage."""

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return np.full((len(texts), DIMENSIONS), np.nan, dtype=np.float32)


class FaultyModel(AxisModel):
    """Encodes documents right and answers queries with one of the faults an encoder can have."""

    def __init__(self, name: str, fault: str) -> None:
        super().__init__(name)
        self.fault = fault

    def encode_query(self, texts: list[str]) -> np.ndarray:
        good = super().encode_query(texts)
        if self.fault == "raises":
            raise RuntimeError("the model server went away")
        if self.fault == "inf":
            return np.full_like(good, np.inf)
        if self.fault == "zero":
            return np.zeros_like(good)
        if self.fault == "rows":
            return good[:-1]
        if self.fault == "flat":
            return good[:, 0]
        if self.fault == "dimension":
            return good[:, : DIMENSIONS // 2]
        if self.fault == "complex":
            return good.astype(np.complex64)
        raise AssertionError(self.fault)


class NotAnEncoder:
    """Has encode() only, like sentence-transformers before version 5."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), DIMENSIONS))


def failing_factory() -> AxisModel:
    raise RuntimeError("no GPU here")


class CountingModel(AxisModel):
    """An AxisModel that appends "<name> TAB <kind> TAB <text>" to the file named by $EMBEVAL_FAKE_LOG for
    every text it encodes, so a test can see what a pytest run (a subprocess, an xdist worker) embedded;
    each call takes $EMBEVAL_FAKE_SECONDS (default 0), for runs that must overlap."""

    def encode_document(self, texts: list[str]) -> np.ndarray:
        self._log("document", texts)
        return super().encode_document(texts)

    def encode_query(self, texts: list[str]) -> np.ndarray:
        self._log("query", texts)
        return super().encode_query(texts)

    def _log(self, kind: str, texts: list[str]) -> None:
        path = os.environ.get("EMBEVAL_FAKE_LOG")
        if path:
            # One append per call: O_APPEND keeps concurrent workers' lines whole.
            with open(path, "a", encoding="utf-8") as log:
                log.write("".join(f"{self.name}\t{kind}\t{text}\n" for text in texts))
        time.sleep(float(os.environ.get("EMBEVAL_FAKE_SECONDS", "0")))


good = AxisModel("good")
bad = AxisModel("bad", misses=("en", "es"))
bad_english = AxisModel("bad-english", misses=("en",))
bad_spanish = AxisModel("bad-spanish", misses=("es",))
broken = BrokenModel("broken")
tied_spanish = TiedModel("tied-spanish", ties=("es",))
counted_good = CountingModel("counted-good")
counted_bad = CountingModel("counted-bad", misses=("en", "es"))
counted_bad_english = CountingModel("counted-bad-english", misses=("en",))
counted_bad_spanish = CountingModel("counted-bad-spanish", misses=("es",))
raises = FaultyModel("raises", "raises")
infinite = FaultyModel("infinite", "inf")
zero = FaultyModel("zero", "zero")
short = FaultyModel("short", "rows")
flat = FaultyModel("flat", "flat")
narrow = FaultyModel("narrow", "dimension")
complex_valued = FaultyModel("complex", "complex")
not_an_encoder = NotAnEncoder()
