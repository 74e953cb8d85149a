"""A lexical arm: BM25 over the golden set's records, with the `bm25s` library (the optional extra
``[bm25]``, with PyStemmer for stemming), imported only when a ``bm25`` arm is used.

Spec: ``bm25`` or ``bm25?k1=0.9&b=0.4&method=lucene&stopwords=en&stemmer=english``. The defaults are bm25s's
own (k1 1.5, b 0.75, the Lucene variant, bm25s's English stopword list, no stemmer), so ``bm25`` scores as
``bm25s`` does out of the box. ``delta`` applies to ``bm25l`` and ``bm25+`` only. ``stopwords`` is a name
bm25s knows (``en``, ``de``, ``fr``, …) or ``none``; ``stemmer`` a Snowball algorithm PyStemmer knows
(``english``, ``german``, …) or ``none``.

Tokenisation is bm25s's: lower-cased, words of two or more word characters (``(?u)\\b\\w\\w+\\b``), stopwords
removed, then stemmed. All of it, the parameters and the versions of bm25s and PyStemmer, is in the arm's
fingerprint, so a report says exactly which BM25 it compared.

Which documents a BM25 arm ranks: those with a positive score for the query (sharing at least one token
with it under the Lucene, Robertson and ATIRE variants; BM25L and BM25+ give every document a positive
score). A lexical engine returns nothing for a document that shares no term; padding the ranking with
arbitrarily ordered zero-score documents would only add noise to recall at depth and to a fusion. Equal
scores are ordered like every other arm: by document id, descending. Filters restrict the ranked documents
exactly, per query.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from pytest_embeval.arms.embedding import EncoderError
from pytest_embeval.arms.retriever import EmbedsNothing, Hits, RetrievalTask, Retriever, spec_parameters
from pytest_embeval.search.exact import tie_ranks, top_k

__all__ = ["BM25_DEFAULTS", "METHODS", "Bm25Retriever", "bm25_arm"]

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
BM25_DEFAULTS: dict[str, Any] = {
    "k1": 1.5,
    "b": 0.75,
    "delta": 0.5,
    "method": "lucene",
    "stopwords": "en",
    "stemmer": "none",
}
#: bm25s's default tokenisation (scikit-learn's CountVectorizer pattern).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
_PARAMETERS = {
    "k1": "a number >= 0",
    "b": "a number in [0, 1]",
    "delta": "a number >= 0, for bm25l and bm25+",
    "method": "one of " + ", ".join(METHODS),
    "stopwords": "a bm25s stopword list name such as en, or none",
    "stemmer": "a PyStemmer algorithm such as english, or none",
}
_INSTALL = "install the extra: pip install 'pytest-embeval[bm25]'"
#: Scratch bytes for one block of queries' dense score rows (float32 scores and uint64 keys per document).
_SCRATCH_BYTES = 64 * 2**20


def _import(name: str, spec: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        package = "bm25s" if name == "bm25s" else "PyStemmer"
        raise EncoderError(
            f"model spec {spec!r} needs {package}, which is not installed: {_INSTALL}"
        ) from None


def _number(spec: str, name: str, text: str, low: float, high: float | None) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= low and (high is None or value <= high)):
        raise EncoderError(f"model spec {spec!r}: {name} must be {_PARAMETERS[name]}, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Bm25Retriever:
    """A BM25 arm: its parameters, and the fingerprint of its tokenisation and scoring."""

    spec: str
    k1: float
    b: float
    delta: float
    method: str
    stopwords: str
    stemmer: str
    fingerprint: str
    prompts: dict[str, str] = field(default_factory=lambda: {"query": "", "document": ""})
    kind: str = field(default="bm25", init=False)
    parts: tuple[Retriever, ...] = field(default=(), init=False)

    def open(self, task: RetrievalTask) -> Bm25Searcher:
        bm25s = _import("bm25s", self.spec)
        stemmer = None if self.stemmer == "none" else _import("Stemmer", self.spec).Stemmer(self.stemmer)
        options: dict[str, Any] = {
            "lower": True,
            "token_pattern": TOKEN_PATTERN,
            "stopwords": None if self.stopwords == "none" else self.stopwords,
            "stemmer": stemmer,
            "show_progress": False,
        }
        index = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method)
        index.index(bm25s.tokenize(list(task.doc_texts), **options), show_progress=False)
        queries = bm25s.tokenize(list(task.query_texts), return_ids=False, **options)
        return Bm25Searcher(self, task, index, queries)


class Bm25Searcher(EmbedsNothing):
    """A bm25s index over the records, and each query's tokens."""

    def __init__(
        self, retriever: Bm25Retriever, task: RetrievalTask, index: Any, query_tokens: list[list[str]]
    ) -> None:
        self.retriever = retriever
        self.task = task
        self.index = index
        self.query_tokens = query_tokens
        self.ranks = tie_ranks(task.doc_ids)

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """BM25 score of every record for each query at ``rows``: (len(rows), n_records) float32."""
        matrix = np.zeros((rows.size, len(self.task.doc_ids)), dtype=np.float32)
        for out, row in enumerate(rows.tolist()):
            tokens = self.query_tokens[row]
            if tokens:  # bm25s reads tokens[0] to tell tokens from ids
                matrix[out] = self.index.get_scores(tokens)
        return matrix

    def search(self, rows: np.ndarray, depth: int) -> Hits:
        n_records = len(self.task.doc_ids)
        block = max(1, _SCRATCH_BYTES // (13 * max(1, n_records)))
        positions, scores = [], []
        for start in range(0, rows.size, block):
            chunk = rows[start : start + block]
            matrix = self.scores(chunk)
            keep = matrix > 0
            allowed = self.task.allowed_for(chunk)
            if allowed is not None:
                keep &= allowed.masks[allowed.rows]
            found, value = top_k(matrix, depth, ranks=self.ranks, keep=keep)
            positions.append(found)
            scores.append(value.astype(np.float64))
        if not positions:
            return Hits.empty(0, min(depth, n_records))
        return Hits(np.concatenate(positions), np.concatenate(scores))

    def restrict(self, task: RetrievalTask, rows: np.ndarray) -> Bm25Searcher:
        # Term statistics (document frequencies, average length) are the subset's own: index it afresh.
        return self.retriever.open(task)


def bm25_arm(spec: str) -> Bm25Retriever:
    """A `Bm25Retriever` from ``bm25[?name=value&…]``; raises `EncoderError` (one line) for a bad parameter
    or, naming the extra, when bm25s (or PyStemmer, for a stemmer) is not installed."""
    _, _, query = spec.partition("?")
    given = spec_parameters(spec, query, _PARAMETERS)
    values = {**BM25_DEFAULTS, **given}
    k1 = _number(spec, "k1", str(values["k1"]), 0.0, None)
    b = _number(spec, "b", str(values["b"]), 0.0, 1.0)
    delta = _number(spec, "delta", str(values["delta"]), 0.0, None)
    method = str(values["method"])
    if method not in METHODS:
        raise EncoderError(f"model spec {spec!r}: method must be {_PARAMETERS['method']}, got {method!r}")
    if "delta" in given and method not in ("bm25l", "bm25+"):
        raise EncoderError(f"model spec {spec!r}: delta applies to method bm25l or bm25+ only, not {method}")
    bm25s = _import("bm25s", spec)
    stopwords = str(values["stopwords"])
    words: list[str] = []
    if stopwords != "none":
        try:
            words = sorted(bm25s.tokenization.Tokenizer(stopwords=stopwords).stopwords)
        except ValueError:
            raise EncoderError(
                f"model spec {spec!r}: stopwords must be {_PARAMETERS['stopwords']}, got {stopwords!r}"
            ) from None
    stemmer = str(values["stemmer"])
    pystemmer = None
    if stemmer != "none":
        module = _import("Stemmer", spec)
        if stemmer not in module.algorithms():
            raise EncoderError(
                f"model spec {spec!r}: stemmer {stemmer!r} is not a PyStemmer algorithm "
                f"({', '.join(module.algorithms())})"
            )
        pystemmer = module.version()
    identity: dict[str, Any] = {
        "retriever": "bm25",
        "library": f"bm25s {bm25s.__version__}",
        "method": method,
        "k1": k1,
        "b": b,
        "tokenizer": {
            "lower": True,
            "token_pattern": TOKEN_PATTERN,
            "stopwords": stopwords,
            "stopwords_sha256": hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()[:16],
            "stemmer": stemmer,
            "pystemmer": pystemmer,
        },
    }
    if method in ("bm25l", "bm25+"):
        identity["delta"] = delta
    return Bm25Retriever(
        spec=spec,
        k1=k1,
        b=b,
        delta=delta,
        method=method,
        stopwords=stopwords,
        stemmer=stemmer,
        fingerprint=json.dumps(identity, ensure_ascii=False, separators=(",", ":"), sort_keys=True),
    )
