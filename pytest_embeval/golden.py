"""Golden-set files (YAML, schema version 1) loaded into frozen, validated dataclasses.

`load_golden(path)` reads the YAML file and the data it names (JSONL corpus and queries, TSV qrels, or a BEIR
folder) and returns a `GoldenSet`. Every problem with the files is a `GoldenError` whose text is one line,
``<path>[:<line>]: <key>: <problem>``, naming the file, the line where it is known and the key (a dotted path
such as ``index.hnsw.M`` or ``queries[2].relevant.doc-9`` for the YAML file, the field or column name for data
files). Nothing is silently dropped: a value this module cannot use is an error, never a default.

Decisions the schema leaves open, taken here:

* Judgments live in one place: the ``qrels`` file, or ``relevant`` on inline queries. Giving both is an error
  (two sources of truth drift apart). ``qrels`` is required unless some inline query carries ``relevant``.
* ``metric`` is required: the primary metric is the decision, so it is never implied.
* ``bootstrap`` is at least 100 (a percentile interval needs resamples beyond its tails); ``seed`` is >= 0
  (``numpy.random.default_rng`` rejects negative seeds).
* Ids are strings (a JSON integer id is accepted and written as a string) without whitespace, so TREC run
  files (whitespace-separated) stay parseable. Inline YAML ids and stratum values are taken as written
  (``007`` stays ``007``, ``no`` stays ``no``): YAML typing would turn them into numbers and booleans.
* Blank lines in JSONL and TSV files are skipped; a UTF-8 byte order mark is accepted.
* A document needs a non-blank text or title; a query needs a non-blank text. Queries without any judgment are
  kept (they score NaN and are reported as excluded).
* ``beir: folder`` reads ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` (or ``qrels.tsv`` at the
  folder root) and excludes the ``corpus``, ``queries`` and ``qrels`` keys.
* ``separate: {field: [values]}`` keeps matching queries (e.g. hand-written "wish" queries, which are not
  traffic) to their own ``field=value`` stratum: they are left out of ``overall`` and of every other
  field's strata, so the traffic-weighted numbers stay traffic-weighted.
* ``production: {documents, queries_per_month?, memory_price_per_gb_month?}`` and ``corpus_sample: {sizes,
  seed?}`` are part of the plan (declared before the run); they enter the plan fingerprint only when given,
  so the fingerprint of a file without them is unchanged. ``corpus_sample.seed`` defaults to ``seed``;
  ``sizes`` are fractions in (0, 1], kept sorted.
* ``index.hnsw.recall_target`` (in (0, 1]) replaces ``ef_search``: giving both is an error. ``M`` is at
  least 2 (hnswlib cannot build a graph with M = 1).
* ``guidelines: judging.md`` names the written relevance definition (a UTF-8 text file, relative to this
  file, not empty) that people judge by and `judge` builds the LLM judge's prompt from. It is not part of
  the fingerprint: the judgments are, and the guidelines change no score.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import hashlib
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

import yaml

from pytest_embeval.canonical import KeyedTexts, hash_rows
from pytest_embeval.capacity import Production
from pytest_embeval.datafiles import (
    QRELS_FORMATS,
    TEXT_FORMATS,
    Document,
    GoldenError,
    Query,
    id_problem,
    missing_stratum_problem,
    read_documents,
    read_qrels,
    read_queries,
    read_text,
    stratum_type_problem,
    stratum_value,
)
from pytest_embeval.filters import Filter, field_names, field_problem
from pytest_embeval.folding import FoldSpec
from pytest_embeval.metrics import MetricSpec, parse_metric
from pytest_embeval.rerank import RerankSpec
from pytest_embeval.stats import DEFAULT_INTERVAL, INTERVALS
from pytest_embeval.ties import TIES
from pytest_embeval.verdict import MULTIPLE_COMPARISONS

__all__ = [
    "CORPUS_SAMPLE_KEYS",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MIN_QUERIES",
    "DEFAULT_MULTIPLE_COMPARISONS",
    "DEFAULT_RELEVANCE_LEVEL",
    "DEFAULT_SEED",
    "DEFAULT_SPLIT",
    "DEFAULT_TIES",
    "DEFAULT_TIE_MARGIN",
    "HNSW_DEFAULTS",
    "HNSW_RECALL_TARGET",
    "KNOWN_KEYS",
    "MIN_BOOTSTRAP",
    "OVERALL",
    "PRODUCTION_KEYS",
    "SCHEMA_VERSION",
    "TEXTLESS_SHOWN",
    "CorpusSample",
    "Document",
    "GoldenError",
    "GoldenSet",
    "IndexSpec",
    "Query",
    "Stratum",
    "load_golden",
]

SCHEMA_VERSION = 1
OVERALL = "overall"
DEFAULT_TIE_MARGIN = 0.02
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MIN_QUERIES = 20
DEFAULT_BOOTSTRAP = 10_000
MIN_BOOTSTRAP = 100
DEFAULT_SEED = 0
DEFAULT_RELEVANCE_LEVEL = 1
DEFAULT_SPLIT = "test"
HNSW_DEFAULTS: Mapping[str, int] = {"M": 16, "ef_construction": 200, "ef_search": 128}
DEFAULT_TIES = "docid"
DEFAULT_MULTIPLE_COMPARISONS = "none"
#: index.hnsw keys besides HNSW_DEFAULTS: the ANN recall each arm's ef_search is raised to reach
HNSW_RECALL_TARGET = "recall_target"
PRODUCTION_KEYS = ("documents", "queries_per_month", "memory_price_per_gb_month")
CORPUS_SAMPLE_KEYS = ("sizes", "seed")

KNOWN_KEYS = (
    "schema_version",
    "name",
    "corpus",
    "queries",
    "qrels",
    "beir",
    "split",
    "strata",
    "separate",
    "metric",
    "guards",
    "report",
    "tie_margin",
    "confidence",
    "min_queries",
    "bootstrap",
    "seed",
    "index",
    "relevance_level",
    "interval",
    "ties",
    "multiple_comparisons",
    "production",
    "corpus_sample",
    "fold",
    "rerank",
    "guidelines",
)
_DATA_KEYS = ("corpus", "queries", "qrels")
_INLINE_QUERY_KEYS = ("id", "text", "relevant", "filters")
#: Query keys that cannot name a stratum field (they are the query's id, text, judgments and filters).
_RESERVED_FIELDS = frozenset({"_id", "id", "text", "relevant", "filters"})
_NULL_TAG = "tag:yaml.org,2002:null"
#: The keys of the mapping form of a data file (``corpus: {path: docs.tsv, format: tsv}``).
_FILE_KEYS = ("path", "format")
#: Ids of documents without text shown in a message or a warning; the report lists them all.
TEXTLESS_SHOWN = 5


@dataclass(frozen=True, slots=True)
class IndexSpec:
    kind: str  # "exact" | "hnsw"
    M: int = HNSW_DEFAULTS["M"]
    ef_construction: int = HNSW_DEFAULTS["ef_construction"]
    ef_search: int = HNSW_DEFAULTS["ef_search"]
    #: when set, each arm searches at the smallest ef whose ANN recall reaches it, and ef_search is unused
    recall_target: float | None = None

    def as_dict(self) -> dict[str, str | int | float]:
        """The declared index, plain types only; HNSW parameters appear only for ``hnsw``, and either the ef
        searched with or the recall target that chooses it."""
        if self.kind != "hnsw":
            return {"kind": self.kind}
        declared: dict[str, str | int | float] = {
            "kind": "hnsw",
            "M": self.M,
            "ef_construction": self.ef_construction,
        }
        if self.recall_target is None:
            declared["ef_search"] = self.ef_search
        else:
            declared[HNSW_RECALL_TARGET] = self.recall_target
        return declared


@dataclass(frozen=True, slots=True)
class CorpusSample:
    """Evaluate at several corpus sizes: ``sizes`` are fractions of the corpus in (0, 1], ascending; every
    slice holds every judged document and a seeded random draw of the others (see `slices.draw_slices`)."""

    sizes: tuple[float, ...]
    seed: int

    def as_dict(self) -> dict[str, list[float] | int]:
        return {"sizes": list(self.sizes), "seed": self.seed}


@dataclass(frozen=True, slots=True)
class Guidelines:
    """The relevance definition judges grade by: the file, and its text as read."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class Stratum:
    name: str  # "overall" | "field=value"
    query_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GoldenSet:
    path: Path
    name: str
    documents: tuple[Document, ...]
    queries: tuple[Query, ...]
    #: query id -> {document id: grade}, in query order; a query without judgments maps to {}
    qrels: Mapping[str, Mapping[str, int]]
    strata_fields: tuple[str, ...]
    metric: MetricSpec
    #: str(MetricSpec) -> margin, in declared order
    guards: Mapping[str, float]
    report_metrics: tuple[MetricSpec, ...]
    tie_margin: float
    confidence: float
    min_queries: int
    bootstrap: int
    seed: int
    index: IndexSpec
    relevance_level: int
    #: stratum field -> values whose queries form only their own stratum (sorted); see ``strata()``
    separate: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the bootstrap interval (``stats.INTERVALS``)
    interval: str = DEFAULT_INTERVAL
    #: how tied scores are ordered for the metrics (``ties.TIES``): trec_eval's doc-id order, or expected
    ties: str = DEFAULT_TIES
    #: how the strata of this file are adjusted for being tested together (``verdict.MULTIPLE_COMPARISONS``)
    multiple_comparisons: str = DEFAULT_MULTIPLE_COMPARISONS
    #: the production index each arm's capacity is projected to; None: no capacity is measured
    production: Production | None = None
    corpus_sample: CorpusSample | None = None
    #: the written relevance definition (``guidelines``), for people and the LLM judge; None: not declared
    guidelines: Guidelines | None = None
    #: ids of the corpus's documents without text, in corpus order: never embedded nor retrievable, but
    #: known to the judgments (a judged one counts in recall's and nDCG's denominators)
    textless: tuple[str, ...] = ()
    #: the BEIR split whose judgments are read (None for other golden sets)
    split: str | None = None
    #: the file the judgments come from and its format (None for inline judgments)
    qrels_path: Path | None = None
    qrels_format: str | None = None
    #: the corpus holds chunks, folded to the documents named by a field before scoring
    fold: FoldSpec | None = None
    #: a reranker reorders each arm's top documents; its comparison is reported beside the first stage's
    rerank: RerankSpec | None = None

    def strata(self) -> tuple[Stratum, ...]:
        """'overall' first, then each field in ``strata_fields`` order, values sorted; ids in file order.

        A query matched by ``separate`` belongs to its own ``field=value`` stratum and to no other; the other
        values of a ``separate`` field are not strata of their own, since together they are ``overall``.
        """
        overall = tuple(query.id for query in self.queries if not self._kept_separate(query))
        result = [Stratum(OVERALL, overall)]
        for name in self.strata_fields:
            by_value: dict[str, list[str]] = {}
            for query in self.queries:
                if name in self.separate:
                    if query.fields[name] in self.separate[name]:
                        by_value.setdefault(query.fields[name], []).append(query.id)
                elif not self._kept_separate(query):
                    by_value.setdefault(query.fields[name], []).append(query.id)
            result.extend(Stratum(f"{name}={value}", tuple(by_value[value])) for value in sorted(by_value))
        return tuple(result)

    def _kept_separate(self, query: Query) -> bool:
        return any(query.fields[name] in values for name, values in self.separate.items())

    def all_metrics(self) -> tuple[MetricSpec, ...]:
        """Primary, then guards, then report metrics; each once, in that order."""
        specs = [self.metric, *(parse_metric(name) for name in self.guards), *self.report_metrics]
        unique: dict[str, MetricSpec] = {}
        for spec in specs:
            unique.setdefault(str(spec), spec)
        return tuple(unique.values())

    def max_k(self) -> int:
        return max(spec.k for spec in self.all_metrics())

    def plan(self) -> dict[str, Any]:
        """The declared plan (everything decided before results exist), as plain JSON types."""
        return {
            "metric": str(self.metric),
            "guards": dict(self.guards),
            "report": [str(spec) for spec in self.report_metrics],
            "tie_margin": self.tie_margin,
            "confidence": self.confidence,
            "min_queries": self.min_queries,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "index": self.index.as_dict(),
            "relevance_level": self.relevance_level,
            "strata": list(self.strata_fields),
            "separate": {name: list(values) for name, values in self.separate.items()},
            "interval": self.interval,
            "ties": self.ties,
            "multiple_comparisons": self.multiple_comparisons,
            # Only when declared, so the plan fingerprint of a file without them is what it always was.
            **({"production": self.production.as_dict()} if self.production is not None else {}),
            **({"corpus_sample": self.corpus_sample.as_dict()} if self.corpus_sample is not None else {}),
            **({"fold": self.fold.as_dict()} if self.fold is not None else {}),
            **({"rerank": self.rerank.as_dict()} if self.rerank is not None else {}),
        }

    def judged_ids(self) -> frozenset[str]:
        """What judgments and rankings name: the corpus records, or with folding the documents."""
        return _judged_ids(self.documents, self.fold)

    def judged_documents(self) -> dict[str, Document]:
        """What a judge reads, by judged id: each corpus record, or with folding each document, its chunks'
        texts joined in corpus order under its first chunk's title."""
        if self.fold is None:
            return {doc.id: doc for doc in self.documents}
        chunks: dict[str, list[Document]] = {}
        for doc in self.documents:
            chunks.setdefault(doc.fields[self.fold.field][0], []).append(doc)
        return {
            doc_id: Document(doc_id, "\n\n".join(part.text for part in parts), parts[0].title)
            for doc_id, parts in chunks.items()
        }

    def uses_document_fields(self) -> bool:
        """Whether documents' own fields change what is retrieved or scored (filters or folding)."""
        return self.fold is not None or any(query.filters for query in self.queries)

    def plan_fingerprint(self) -> str:
        return "sha256:" + hashlib.sha256(_canonical(self.plan())).hexdigest()

    def fingerprint(self, document_texts: KeyedTexts | None = None) -> str:
        """Plan + corpus (ids, sha256 of each embedded text) + queries + sorted qrels; stable everywhere.
        ``document_texts``: the documents' embedded texts, hashed already (`pipeline.HeldConstant`)."""
        digest = hashlib.sha256(b"pytest-embeval golden set v1\n")
        digest.update(b"plan " + _canonical(self.plan()) + b"\n")
        # Fields and filters are hashed only where they matter, so other golden sets keep their fingerprints.
        with_fields = self.uses_document_fields()
        if document_texts is None:
            document_texts = KeyedTexts(doc.embed_text for doc in self.documents)
        if len(document_texts) != len(self.documents):
            raise ValueError(f"{len(self.documents)} documents but {len(document_texts)} texts")
        hashes = (key.hex() for key in document_texts.keys)
        if with_fields:
            for doc, text_hash in zip(self.documents, hashes, strict=True):
                fields = {name: list(values) for name, values in doc.fields.items()}
                digest.update(b"document " + _canonical([doc.id, text_hash, fields]) + b"\n")
        else:
            rows = ((doc.id, text_hash) for doc, text_hash in zip(self.documents, hashes, strict=True))
            hash_rows(digest, rows, "document ")
        if self.textless:  # only then, so the fingerprints of sets without such documents do not change
            digest.update(b"textless " + _canonical(list(self.textless)) + b"\n")
        for query in self.queries:
            row = [query.id, query.text, dict(query.fields)]
            if query.filters:
                row.append({name: list(values) for name, values in query.filters.items()})
            digest.update(b"query " + _canonical(row) + b"\n")
        judgments = sorted(
            (qid, did, grade) for qid, docs in self.qrels.items() for did, grade in docs.items()
        )
        hash_rows(digest, judgments, "qrel ")
        return "sha256:" + digest.hexdigest()


def _canonical(value: object) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def load_golden(path: str | PathLike[str]) -> GoldenSet:
    """Load and validate a golden-set YAML file and the data it names. Raises `GoldenError`.

    Relative data paths are relative to the folder of the YAML file's resolved path: a symlinked golden file
    reads the data next to the file it links to, so a golden set is its resolved path, wherever it is linked.
    """
    with _collector_paused():
        return _GoldenLoader(Path(path)).load()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused, if it runs: reading a golden set allocates an object or
    more per document, none in a cycle (reference counting frees what is dropped), and the collector's
    passes over the growing heap took a fifth of the reading time of 200,000 documents (0.3 s)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


# --- the YAML file -----------------------------------------------------------------------------------------


def _describe(node: yaml.Node) -> str:
    """A YAML value as the user wrote it, for "got ..." in messages."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = str(node.value)
    return value if value else "an empty value"


def _unknown_key(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f"unknown key, did you mean {close[0]!r}?"
    return f"unknown key (expected one of: {', '.join(known)})"


def _judged_ids(documents: Sequence[Document], fold: FoldSpec | None) -> frozenset[str]:
    """What judgments may name: the corpus records, or with folding the documents their chunks fold to."""
    if fold is None:
        return frozenset(doc.id for doc in documents)
    return frozenset(doc.fields[fold.field][0] for doc in documents)


def _looks_like_attr(spec: str) -> bool:
    """``module:attr`` rather than a folder: dotted identifiers around one colon (a Windows drive letter's
    colon is followed by a path separator, not an identifier)."""
    module, colon, attr = spec.partition(":")
    return bool(colon) and all(
        bool(part) and all(piece.isidentifier() for piece in part.split(".")) for part in (module, attr)
    )


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


_Entry = tuple[yaml.Node, yaml.Node]  # (key node, value node)


@dataclass(frozen=True, slots=True)
class _Data:
    """What a golden file's data keys name, as read: every document (those without text too)."""

    documents: list[Document]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    split: str | None = None
    qrels_path: Path | None = None
    qrels_format: str | None = None


_T = TypeVar("_T")


class _GoldenLoader:
    """One load of one golden file: knows the file, so every error can name it and the line of a YAML node."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.folder = path.resolve().parent
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: read_text names it
            self.folder = path.parent
        self._constructor = yaml.SafeLoader("")

    def error(self, node: yaml.Node | None, key: str | None, problem: str) -> GoldenError:
        return GoldenError(self.path, key, None if node is None else _line(node), problem)

    # --- generic node readers

    def entries(self, node: yaml.Node, key: str | None) -> dict[str, _Entry]:
        """A mapping node's entries by key as written, refusing duplicate keys (PyYAML keeps the last one)."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, key, f"must be a mapping, got {_describe(node)}")
        result: dict[str, _Entry] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, key, f"keys must be plain names, got {_describe(key_node)}")
            name = str(key_node.value)
            if name in result:
                problem = f"duplicate key (first on line {_line(result[name][0])})"
                raise self.error(key_node, name if key is None else f"{key}.{name}", problem)
            result[name] = (key_node, value_node)
        return result

    def check_keys(self, entries: Mapping[str, _Entry], known: Sequence[str], prefix: str | None) -> None:
        for name, (key_node, _) in entries.items():
            if name not in known:
                key = name if prefix is None else f"{prefix}.{name}"
                raise self.error(key_node, key, _unknown_key(name, known))

    def construct(self, node: yaml.Node, key: str) -> object:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            raise self.error(node, key, f"invalid YAML value: {problem}") from None

    def word(self, node: yaml.Node, key: str, what: str) -> str:
        """A scalar as written (ids, names, stratum values): YAML typing would make numbers, bools of them."""
        if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL_TAG or not str(node.value).strip():
            raise self.error(node, key, f"must be {what}, got {_describe(node)}")
        return str(node.value)

    def identifier(self, node: yaml.Node, key: str) -> str:
        value = self.word(node, key, "an id")
        problem = id_problem(value)
        if problem is not None:
            raise self.error(node, key, problem)
        return value

    def string(self, node: yaml.Node, key: str) -> str:
        value = self.construct(node, key)
        if not isinstance(value, str) or not value.strip():
            raise self.error(node, key, f"must be a non-empty string, got {_describe(node)}")
        return value

    def number(self, node: yaml.Node, key: str) -> float | None:
        """The value as a float if it is a finite number (booleans are not numbers), else None."""
        value = self.construct(node, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return float(value)

    def margin(self, node: yaml.Node, key: str) -> float:
        value = self.number(node, key)
        if value is None or value < 0:
            raise self.error(node, key, f"must be a number >= 0, got {_describe(node)}")
        return value

    def choice(self, node: yaml.Node, key: str, choices: Sequence[str]) -> str:
        """One of ``choices``, as written."""
        quoted = [f"'{choice}'" for choice in choices]
        expected = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
        if not isinstance(node, yaml.ScalarNode) or str(node.value) not in choices:
            raise self.error(node, key, f"must be {expected}, got {_describe(node)}")
        return str(node.value)

    def confidence(self, node: yaml.Node) -> float:
        value = self.number(node, "confidence")
        if value is None or not 0 < value < 1:
            problem = f"must be a number strictly between 0 and 1, got {_describe(node)}"
            raise self.error(node, "confidence", problem)
        return value

    def integer(self, node: yaml.Node, key: str, minimum: int) -> int:
        value = self.construct(node, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(node, key, f"must be an integer >= {minimum}, got {_describe(node)}")
        return value

    def metric(self, node: yaml.Node, key: str) -> MetricSpec:
        value = self.construct(node, key)
        if not isinstance(value, str):
            raise self.error(node, key, f"must be a metric name such as ndcg@10, got {_describe(node)}")
        try:
            return parse_metric(value)
        except ValueError as exc:
            raise self.error(node, key, str(exc)) from None

    def location(self, node: yaml.Node, key: str) -> Path:
        """A path as given in the YAML file: absolute, or relative to the folder of the YAML file (resolved,
        see `load_golden`)."""
        path = Path(self.string(node, key))
        return path if path.is_absolute() else self.folder / path

    def data_file(self, node: yaml.Node, key: str, formats: Sequence[str]) -> tuple[Path, str | None]:
        """A data file named by a path, or by ``{path: FILE, format: F}`` declaring one of ``formats``; the
        declared format is None when the file's first line is to tell."""
        if not isinstance(node, yaml.MappingNode):
            return self.require(node, key, self.location(node, key)), None
        entries = self.entries(node, key)
        self.check_keys(entries, _FILE_KEYS, key)
        if "path" not in entries:
            raise self.error(node, f"{key}.path", "missing required key")
        declared = None
        if "format" in entries:
            format_node = entries["format"][1]
            declared = self.word(format_node, f"{key}.format", "a format name")
            if declared not in formats:
                problem = f"unknown format {declared!r} (expected one of: {', '.join(formats)})"
                raise self.error(format_node, f"{key}.format", problem)
        path_node = entries["path"][1]
        return self.require(path_node, f"{key}.path", self.location(path_node, f"{key}.path")), declared

    def require(self, node: yaml.Node, key: str, path: Path, *, folder: bool = False) -> Path:
        """``path`` if it is an existing file (or folder), else an error at ``node`` naming the full path."""
        what = "folder" if folder else "file"
        try:
            if path.is_dir() if folder else path.is_file():
                return path
            problem = f"{'not a ' + what if path.exists() else what + ' not found'}: {path.resolve()}"
        except (OSError, RuntimeError, ValueError) as exc:  # name too long, symlink loop, NUL byte
            problem = f"unusable path {str(path)!r}: {getattr(exc, 'strerror', None) or exc}"
        raise self.error(node, key, problem)

    # --- the golden file

    def load(self) -> GoldenSet:
        top = self.entries(self.compose(), None)
        self.check_keys(top, KNOWN_KEYS, None)
        self.check_structure(top)

        def setting(name: str, parse: Callable[[yaml.Node], _T], default: _T) -> _T:
            return default if name not in top else parse(top[name][1])

        name = setting("name", lambda node: self.word(node, "name", "a non-empty name"), self.path.stem)
        strata: tuple[str, ...] = setting("strata", self.strata, ())
        metric = self.metric(top["metric"][1], "metric")
        guards: dict[str, float] = setting("guards", self.guards, {})
        report: tuple[MetricSpec, ...] = setting("report", self.report, ())
        tie_margin = setting("tie_margin", lambda node: self.margin(node, "tie_margin"), DEFAULT_TIE_MARGIN)
        confidence = setting("confidence", self.confidence, DEFAULT_CONFIDENCE)
        min_queries = setting(
            "min_queries", lambda node: self.integer(node, "min_queries", 1), DEFAULT_MIN_QUERIES
        )
        bootstrap = setting(
            "bootstrap", lambda node: self.integer(node, "bootstrap", MIN_BOOTSTRAP), DEFAULT_BOOTSTRAP
        )
        seed = setting("seed", lambda node: self.integer(node, "seed", 0), DEFAULT_SEED)
        index = setting("index", self.index, IndexSpec("exact"))
        relevance_level = setting(
            "relevance_level", lambda node: self.integer(node, "relevance_level", 1), DEFAULT_RELEVANCE_LEVEL
        )
        interval = setting(
            "interval", lambda node: self.choice(node, "interval", INTERVALS), DEFAULT_INTERVAL
        )
        ties = setting("ties", lambda node: self.choice(node, "ties", TIES), DEFAULT_TIES)
        multiple_comparisons = setting(
            "multiple_comparisons",
            lambda node: self.choice(node, "multiple_comparisons", MULTIPLE_COMPARISONS),
            DEFAULT_MULTIPLE_COMPARISONS,
        )
        fold: FoldSpec | None = setting("fold", self.fold, None)
        rerank: RerankSpec | None = setting("rerank", self.rerank, None)
        data = self.data(top, strata, fold)
        excludes: dict[str, tuple[str, ...]] = setting(
            "separate", lambda node: self.separate(node, strata, data.queries), {}
        )
        production: Production | None = setting("production", self.production, None)
        corpus_sample: CorpusSample | None = setting(
            "corpus_sample", lambda node: self.corpus_sample(node, seed), None
        )
        guidelines: Guidelines | None = setting("guidelines", self.guidelines, None)
        return GoldenSet(
            path=self.path,
            name=name,
            documents=tuple(doc for doc in data.documents if doc.has_text),
            queries=tuple(data.queries),
            qrels=data.qrels,
            strata_fields=strata,
            metric=metric,
            guards=guards,
            report_metrics=report,
            tie_margin=tie_margin,
            confidence=confidence,
            min_queries=min_queries,
            bootstrap=bootstrap,
            seed=seed,
            index=index,
            relevance_level=relevance_level,
            separate=excludes,
            interval=interval,
            ties=ties,
            multiple_comparisons=multiple_comparisons,
            production=production,
            corpus_sample=corpus_sample,
            guidelines=guidelines,
            textless=tuple(doc.id for doc in data.documents if not doc.has_text),
            split=data.split,
            qrels_path=data.qrels_path,
            qrels_format=data.qrels_format,
            fold=fold,
            rerank=rerank,
        )

    def check_structure(self, top: Mapping[str, _Entry]) -> None:
        """Version, required keys and the BEIR-or-files choice, before any value is read."""
        if "schema_version" in top:
            node = top["schema_version"][1]
            version = self.construct(node, "schema_version")
            if type(version) is not int or version != SCHEMA_VERSION:
                problem = f"unsupported version {_describe(node)} (this release reads {SCHEMA_VERSION})"
                raise self.error(node, "schema_version", problem)
        if "beir" in top:
            for name in _DATA_KEYS:
                if name in top:
                    problem = "cannot be combined with 'beir' (the folder supplies corpus, queries and qrels)"
                    raise self.error(top[name][0], name, problem)
        else:
            for name in ("corpus", "queries"):
                if name not in top:
                    problem = "missing required key (or give 'beir: <folder>')"
                    raise GoldenError(self.path, name, None, problem)
        if "metric" not in top:
            problem = "missing required key (the primary metric, e.g. ndcg@10)"
            raise GoldenError(self.path, "metric", None, problem)

    def compose(self) -> yaml.Node:
        text = read_text(self.path)
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "syntax error"
            if exc.context and problem.startswith("but "):  # "expected a single document ... but found ..."
                problem = f"{exc.context} {problem}"
            where = "" if mark is None else f" (column {mark.column + 1})"
            line = None if mark is None else mark.line + 1
            raise GoldenError(self.path, None, line, f"invalid YAML: {problem}{where}") from None
        except yaml.reader.ReaderError as exc:
            line = text.count("\n", 0, exc.position) + 1
            problem = f"invalid YAML: {exc.reason} (character #x{exc.character:04x})"
            raise GoldenError(self.path, None, line, problem) from None
        if root is None:
            raise GoldenError(self.path, None, None, "expected a mapping of settings, the file is empty")
        if not isinstance(root, yaml.MappingNode):
            raise self.error(root, None, f"expected a mapping of settings, got {_describe(root)}")
        return root

    def strata(self, node: yaml.Node) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, "strata", f"must be a list of query field names, got {_describe(node)}")
        names: dict[str, int] = {}
        for i, item in enumerate(node.value):
            key = f"strata[{i}]"
            name = self.word(item, key, "a query field name")
            if name in _RESERVED_FIELDS:
                raise self.error(item, key, f"{name!r} is reserved for the query itself, not a stratum field")
            if name in names:
                raise self.error(item, key, f"duplicate stratum field {name!r} (first on line {names[name]})")
            names[name] = _line(item)
        return tuple(names)

    def guards(self, node: yaml.Node) -> dict[str, float]:
        guards: dict[str, float] = {}
        lines: dict[str, int] = {}
        for name, (key_node, value_node) in self.entries(node, "guards").items():
            key = f"guards.{name}"
            spec = str(self.metric(key_node, key))
            if spec in guards:
                raise self.error(key_node, key, f"same metric as the guard on line {lines[spec]}")
            guards[spec] = self.margin(value_node, key)
            lines[spec] = _line(key_node)
        return guards

    def report(self, node: yaml.Node) -> tuple[MetricSpec, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, "report", f"must be a list of metric names, got {_describe(node)}")
        specs: dict[str, MetricSpec] = {}
        for i, item in enumerate(node.value):
            spec = self.metric(item, f"report[{i}]")
            if str(spec) in specs:
                raise self.error(item, f"report[{i}]", f"duplicate metric {str(spec)!r}")
            specs[str(spec)] = spec
        return tuple(specs.values())

    def index(self, node: yaml.Node) -> IndexSpec:
        expected = "'exact' or {hnsw: {M: 16, ef_construction: 200, ef_search: 128}}"
        if isinstance(node, yaml.ScalarNode):
            if node.value in ("exact", "hnsw"):
                return IndexSpec(str(node.value))
            raise self.error(node, "index", f"must be {expected}, got {_describe(node)}")
        entries = self.entries(node, "index")
        self.check_keys(entries, ("hnsw",), "index")
        if "hnsw" not in entries:
            raise self.error(node, "index", f"must be {expected}, got an empty mapping")
        params_node = entries["hnsw"][1]
        if isinstance(params_node, yaml.ScalarNode) and params_node.tag == _NULL_TAG:
            return IndexSpec("hnsw")
        params = self.entries(params_node, "index.hnsw")
        self.check_keys(params, (*HNSW_DEFAULTS, HNSW_RECALL_TARGET), "index.hnsw")
        # M = 1 makes hnswlib's level multiplier 1/log(M) infinite: it cannot build the graph.
        minimum = {"M": 2}
        values = {
            name: self.integer(node, f"index.hnsw.{name}", minimum.get(name, 1))
            for name, (_, node) in params.items()
            if name != HNSW_RECALL_TARGET
        }
        if HNSW_RECALL_TARGET not in params:
            return IndexSpec("hnsw", **values)
        key_node, target_node = params[HNSW_RECALL_TARGET]
        key = f"index.hnsw.{HNSW_RECALL_TARGET}"
        if "ef_search" in params:
            problem = "cannot be combined with ef_search: the target chooses each arm's ef (give one of them)"
            raise self.error(key_node, key, problem)
        target = self.number(target_node, key)
        if target is None or not 0 < target <= 1:
            raise self.error(target_node, key, f"must be a number in (0, 1], got {_describe(target_node)}")
        return IndexSpec("hnsw", **values, recall_target=target)

    def production(self, node: yaml.Node) -> Production:
        entries = self.entries(node, "production")
        self.check_keys(entries, PRODUCTION_KEYS, "production")
        if "documents" not in entries:
            raise self.error(
                node, "production.documents", "missing required key (chunks the production index holds)"
            )
        documents = self.integer(entries["documents"][1], "production.documents", 1)
        queries = None
        if "queries_per_month" in entries:
            queries = self.integer(entries["queries_per_month"][1], "production.queries_per_month", 0)
        price = None
        if "memory_price_per_gb_month" in entries:
            price = self.margin(
                entries["memory_price_per_gb_month"][1], "production.memory_price_per_gb_month"
            )
        return Production(documents=documents, queries_per_month=queries, memory_price_per_gb_month=price)

    def corpus_sample(self, node: yaml.Node, default_seed: int) -> CorpusSample:
        entries = self.entries(node, "corpus_sample")
        self.check_keys(entries, CORPUS_SAMPLE_KEYS, "corpus_sample")
        if "sizes" not in entries:
            problem = "missing required key (fractions of the corpus, e.g. [0.1, 0.25, 0.5, 1.0])"
            raise self.error(node, "corpus_sample.sizes", problem)
        sizes_node = entries["sizes"][1]
        if not isinstance(sizes_node, yaml.SequenceNode) or not sizes_node.value:
            problem = f"must be a non-empty list of fractions in (0, 1], got {_describe(sizes_node)}"
            raise self.error(sizes_node, "corpus_sample.sizes", problem)
        sizes: dict[float, int] = {}
        for i, item in enumerate(sizes_node.value):
            key = f"corpus_sample.sizes[{i}]"
            size = self.number(item, key)
            if size is None or not 0 < size <= 1:
                raise self.error(item, key, f"must be a fraction in (0, 1], got {_describe(item)}")
            if size in sizes:
                raise self.error(item, key, f"duplicate size {size:g} (first on line {sizes[size]})")
            sizes[size] = _line(item)
        seed = default_seed
        if "seed" in entries:
            seed = self.integer(entries["seed"][1], "corpus_sample.seed", 0)
        return CorpusSample(sizes=tuple(sorted(sizes)), seed=seed)

    def guidelines(self, node: yaml.Node) -> Guidelines:
        path = self.require(node, "guidelines", self.location(node, "guidelines"))
        text = read_text(path)
        if not text.strip():
            problem = f"{path.resolve()} is empty: write down the relevance definition judges grade by"
            raise self.error(node, "guidelines", problem)
        return Guidelines(path, text)

    # --- data: corpus, queries, qrels

    def data(self, top: Mapping[str, _Entry], strata: tuple[str, ...], fold: FoldSpec | None) -> _Data:
        required = () if fold is None else (fold.field,)
        if "beir" in top:
            return self.beir(top["beir"][1], strata, top.get("split"), fold)
        if "split" in top:
            raise self.error(top["split"][0], "split", "only applies to a 'beir' folder")
        corpus_node = top["corpus"][1]
        corpus_file, corpus_format = self.data_file(corpus_node, "corpus", TEXT_FORMATS)
        documents = self.documents(
            corpus_node, "corpus", read_documents(corpus_file, corpus_format, required)
        )
        # Judgments may name documents without text too (they count in the denominators); with folding,
        # what they name is the documents the chunks fold to.
        judged_ids = _judged_ids(documents, fold)
        fields = field_names(doc.fields for doc in documents)
        queries_node = top["queries"][1]
        qrels_entry = top.get("qrels")
        if isinstance(queries_node, yaml.SequenceNode):
            queries, qrels = self.inline_queries(queries_node, strata, judged_ids, fields, qrels_entry)
            if qrels_entry is None and not any(qrels.values()):
                problem = "missing required key (no inline query carries 'relevant' judgments)"
                raise GoldenError(self.path, "qrels", None, problem)
        elif isinstance(queries_node, (yaml.ScalarNode, yaml.MappingNode)) and queries_node.tag != _NULL_TAG:
            queries_file, queries_format = self.data_file(queries_node, "queries", TEXT_FORMATS)
            queries = read_queries(queries_file, strata, queries_format, fields)
            if not queries:
                raise self.error(queries_node, "queries", "no queries in the file")
            if qrels_entry is None:
                problem = "missing required key (queries from a file need a qrels file)"
                raise GoldenError(self.path, "qrels", None, problem)
            qrels = {query.id: {} for query in queries}
        else:
            problem = f"must be a JSONL or TSV file or a list of queries, got {_describe(queries_node)}"
            raise self.error(queries_node, "queries", problem)
        if qrels_entry is None:
            return _Data(documents, queries, qrels)
        qrels_file, qrels_format = self.data_file(qrels_entry[1], "qrels", QRELS_FORMATS)
        # A header-only file is a golden set before its first judging session (`embeval pool` starts
        # there); its queries score NaN and every stratum is below the floor.
        found = read_qrels(qrels_file, qrels, judged_ids, qrels_format)
        return _Data(documents, queries, qrels, qrels_path=qrels_file, qrels_format=found)

    def documents(self, node: yaml.Node, key: str, documents: list[Document]) -> list[Document]:
        """The corpus as read, refusing one without a document to embed."""
        if not documents:
            raise self.error(node, key, "no documents in the file")
        if not any(doc.has_text for doc in documents):
            raise self.error(node, key, f"none of the {len(documents)} documents has a text or a title")
        return documents

    def beir(
        self, node: yaml.Node, strata: tuple[str, ...], split_entry: _Entry | None, fold: FoldSpec | None
    ) -> _Data:
        folder = self.require(node, "beir", self.location(node, "beir"), folder=True)
        corpus = self.require(node, "beir", folder / "corpus.jsonl")
        queries_file = self.require(node, "beir", folder / "queries.jsonl")
        declared = None if split_entry is None else self.word(split_entry[1], "split", "a split name")
        splits_folder = folder / "qrels"
        splits = sorted(path.stem for path in splits_folder.glob("*.tsv")) if splits_folder.is_dir() else []
        split: str | None = None
        if splits:
            split = declared or DEFAULT_SPLIT
            if split not in splits:
                where = split_entry[1] if split_entry is not None else node
                problem = (
                    f"no qrels/{split}.tsv in {folder.resolve()} (its splits: {', '.join(splits)}); "
                    "name one with 'split:'"
                )
                raise self.error(where, "split", problem)
            qrels_file = splits_folder / f"{split}.tsv"
        elif split_entry is not None:
            problem = f"{folder.resolve()} has no qrels/ folder of splits (qrels/<split>.tsv); remove 'split'"
            raise self.error(split_entry[1], "split", problem)
        elif (folder / "qrels.tsv").is_file():
            qrels_file = folder / "qrels.tsv"
        else:
            problem = f"no qrels file in {folder.resolve()} (looked for qrels/test.tsv and qrels.tsv)"
            raise self.error(node, "beir", problem)
        documents = read_documents(corpus, None, () if fold is None else (fold.field,))
        if not documents:
            raise self.error(node, "beir", f"no documents in {corpus.resolve()}")
        self.documents(node, "beir", documents)
        queries = read_queries(queries_file, strata, None, field_names(doc.fields for doc in documents))
        if not queries:
            raise self.error(node, "beir", f"no queries in {queries_file.resolve()}")
        qrels: dict[str, dict[str, int]] = {query.id: {} for query in queries}
        found = read_qrels(qrels_file, qrels, _judged_ids(documents, fold))
        if len(splits) > 1:
            # queries.jsonl holds every split's queries (as BEIR publishes them): keep this split's own.
            queries = [query for query in queries if qrels[query.id]]
            if not queries:
                problem = f"no query of {queries_file.resolve()} is judged in qrels/{split}.tsv"
                raise self.error(node, "beir", problem)
            qrels = {query.id: qrels[query.id] for query in queries}
        return _Data(documents, queries, qrels, split=split, qrels_path=qrels_file, qrels_format=found)

    def inline_queries(
        self,
        node: yaml.SequenceNode,
        strata: tuple[str, ...],
        document_ids: AbstractSet[str],
        document_fields: AbstractSet[str],
        qrels_entry: _Entry | None,
    ) -> tuple[list[Query], dict[str, dict[str, int]]]:
        if not node.value:
            raise self.error(node, "queries", "no queries in the list")
        known = (*_INLINE_QUERY_KEYS, *strata)
        queries: list[Query] = []
        qrels: dict[str, dict[str, int]] = {}
        first_line: dict[str, int] = {}
        for i, item in enumerate(node.value):
            prefix = f"queries[{i}]"
            entries = self.entries(item, prefix)
            self.check_keys(entries, known, prefix)
            for required in ("id", "text"):
                if required not in entries:
                    raise self.error(item, f"{prefix}.{required}", "missing required key")
            id_node = entries["id"][1]
            query_id = self.identifier(id_node, f"{prefix}.id")
            if query_id in first_line:
                problem = f"duplicate query id {query_id!r} (first on line {first_line[query_id]})"
                raise self.error(id_node, f"{prefix}.id", problem)
            first_line[query_id] = _line(id_node)
            text = self.string(entries["text"][1], f"{prefix}.text")
            fields: dict[str, str] = {}
            for name in strata:
                key = f"{prefix}.{name}"
                if name not in entries:
                    raise self.error(item, key, missing_stratum_problem(query_id, name, entries))
                field_node = entries[name][1]
                if not isinstance(field_node, yaml.ScalarNode) or field_node.tag == _NULL_TAG:
                    raise self.error(
                        field_node, key, stratum_type_problem(query_id, name, _describe(field_node))
                    )
                value = str(field_node.value)
                fields[name] = stratum_value(self.path, key, _line(field_node), query_id, name, value)
            qrels[query_id] = {}
            if "relevant" in entries:
                key_node, relevant_node = entries["relevant"]
                if qrels_entry is not None:
                    problem = (
                        f"cannot be combined with the 'qrels' file (line {_line(qrels_entry[0])}); "
                        "keep all judgments in one place"
                    )
                    raise self.error(key_node, f"{prefix}.relevant", problem)
                qrels[query_id] = self.relevant(relevant_node, f"{prefix}.relevant", document_ids)
            filters: Filter = {}
            if "filters" in entries:
                filters = self.filters(entries["filters"][1], f"{prefix}.filters", query_id, document_fields)
            queries.append(Query(query_id, text, fields, filters))
        return queries, qrels

    def filters(self, node: yaml.Node, key: str, query_id: str, document_fields: AbstractSet[str]) -> Filter:
        """An inline query's filters, values taken as written (as stratum values are)."""
        entries = self.entries(node, key)
        if not entries:
            raise self.error(node, key, "must be a non-empty mapping {field: value}, got an empty mapping")
        result: dict[str, tuple[str, ...]] = {}
        for name, (key_node, value_node) in entries.items():
            field_key = f"{key}.{name}"
            what = "a value or a non-empty list of values"
            items = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            if not items:
                raise self.error(value_node, field_key, f"must be {what}, got an empty list")
            values = [self.word(item, field_key, what) for item in items]
            problem = field_problem(name, document_fields)
            if problem is not None:
                raise self.error(key_node, field_key, f"query {query_id!r}: {problem}")
            result[name] = tuple(dict.fromkeys(values))
        return result

    def fold(self, node: yaml.Node) -> FoldSpec:
        entries = self.entries(node, "fold")
        self.check_keys(entries, ("field", "score"), "fold")
        if "field" not in entries:
            raise self.error(
                node, "fold.field", "missing required key (the record field naming the document)"
            )
        name = self.word(entries["field"][1], "fold.field", "a corpus field name")
        score = "max"
        if "score" in entries:
            score_node = entries["score"][1]
            score = self.word(score_node, "fold.score", "'max'")
            if score != "max":
                problem = f"must be 'max' (a document ranks by its best chunk), got {score}"
                raise self.error(score_node, "fold.score", problem)
        return FoldSpec(field=name, score=score)

    def rerank(self, node: yaml.Node) -> RerankSpec:
        entries = self.entries(node, "rerank")
        self.check_keys(entries, ("model", "depth", "sample", "decides"), "rerank")
        if "model" not in entries:
            problem = "missing required key (a CrossEncoder folder or module:attr)"
            raise self.error(node, "rerank.model", problem)
        model_node = entries["model"][1]
        model = self.word(model_node, "rerank.model", "a CrossEncoder folder or module:attr")
        values: dict[str, Any] = {"model": model}
        if not _looks_like_attr(model):
            path = Path(model)
            folder = path if path.is_absolute() else self.path.parent / path
            values["location"] = str(self.require(model_node, "rerank.model", folder, folder=True))
        for name in ("depth", "sample"):
            if name in entries:
                values[name] = self.integer(entries[name][1], f"rerank.{name}", 1)
        if "decides" in entries:
            decides_node = entries["decides"][1]
            decides = self.construct(decides_node, "rerank.decides")
            if not isinstance(decides, bool):
                problem = f"must be true or false, got {_describe(decides_node)}"
                raise self.error(decides_node, "rerank.decides", problem)
            values["decides"] = decides
        return RerankSpec(**values)

    def relevant(self, node: yaml.Node, key: str, document_ids: AbstractSet[str]) -> dict[str, int]:
        judged: dict[str, int] = {}
        for name, (doc_node, grade_node) in self.entries(node, key).items():
            doc_key = f"{key}.{name}"
            doc_id = self.identifier(doc_node, doc_key)
            if doc_id not in document_ids:
                raise self.error(doc_node, doc_key, f"unknown document {doc_id!r} (not in the corpus)")
            judged[doc_id] = self.integer(grade_node, doc_key, 0)
        return judged

    def separate(
        self, node: yaml.Node, strata: tuple[str, ...], queries: Sequence[Query]
    ) -> dict[str, tuple[str, ...]]:
        excludes: dict[str, tuple[str, ...]] = {}
        for name, (key_node, values_node) in self.entries(node, "separate").items():
            key = f"separate.{name}"
            if name not in strata:
                listed = ", ".join(strata) if strata else "none"
                raise self.error(key_node, key, f"{name!r} is not a stratum field (strata: {listed})")
            if not isinstance(values_node, yaml.SequenceNode):
                raise self.error(values_node, key, f"must be a list of values, got {_describe(values_node)}")
            present = sorted({query.fields[name] for query in queries})
            values: set[str] = set()
            for i, item in enumerate(values_node.value):
                value = self.word(item, f"{key}[{i}]", "a stratum value")
                if value not in present:
                    problem = f"no query has {name}={value} (values: {', '.join(present)})"
                    raise self.error(item, f"{key}[{i}]", problem)
                if value in values:
                    raise self.error(item, f"{key}[{i}]", f"duplicate value {value!r}")
                values.add(value)
            excludes[name] = tuple(sorted(values))
        if all(any(query.fields[name] in values for name, values in excludes.items()) for query in queries):
            raise self.error(node, "separate", "leaves no query in the overall stratum")
        return excludes
