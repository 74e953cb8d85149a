"""The golden set as frozen dataclasses: what `loader.load_golden` returns and everything downstream reads.

`GoldenSet` holds the documents, queries and judgments with every declared setting (metric, guards, margins,
confidence, index, ties, interval, production, corpus sample, folding, reranker, guidelines) and the defaults
of the schema; its ``fingerprint`` and ``plan_fingerprint`` are what the report records and the control
compares.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_embeval.core.canonical import KeyedTexts, hash_rows
from pytest_embeval.core.capacity import Production
from pytest_embeval.core.metrics import MetricSpec, parse_metric
from pytest_embeval.core.sample_design import SampleDesign
from pytest_embeval.core.stats import DEFAULT_INTERVAL
from pytest_embeval.golden.data_files import (
    Document,
    Query,
)
from pytest_embeval.golden.decision_spec import DecisionSpec
from pytest_embeval.golden.engine_spec import EngineSpec
from pytest_embeval.golden.folding import FoldSpec
from pytest_embeval.golden.shelf_life import DEFAULT_SHELF_LIFE, ShelfLife

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DEPTH",
    "DEFAULT_FAMILY",
    "DEFAULT_MIN_QUERIES",
    "DEFAULT_MULTIPLE_COMPARISONS",
    "DEFAULT_RELEVANCE_LEVEL",
    "DEFAULT_SEED",
    "DEFAULT_SPLIT",
    "DEFAULT_TIES",
    "DEFAULT_TIE_MARGIN",
    "FAISS_FILTERS",
    "FAISS_PARAMETERS",
    "FAMILIES",
    "HNSW_DEFAULTS",
    "HNSW_RECALL_TARGET",
    "MAX_BOOTSTRAP",
    "MIN_BOOTSTRAP",
    "OVERALL",
    "SCHEMA_VERSION",
    "TEXTLESS_SHOWN",
    "TRAFFIC_BY_FREQUENCY",
    "TRAFFIC_BY_INCLUSION",
    "WEIGHTS",
    "CorpusSample",
    "GoldenSet",
    "Guidelines",
    "IndexSpec",
    "RerankSpec",
    "Stratum",
    "judged_document_ids",
]


SCHEMA_VERSION = 1


OVERALL = "overall"


DEFAULT_TIE_MARGIN = 0.02


DEFAULT_CONFIDENCE = 0.95


DEFAULT_MIN_QUERIES = 20


DEFAULT_BOOTSTRAP = 10_000


MIN_BOOTSTRAP = 100


#: At most this many resamples: the interval keeps every resample's mean and more, per stratum and metric
#: (100 million resamples took 94 s and 4.8 GB), and past a million its ends no longer move at the three
#: decimals a report shows.
MAX_BOOTSTRAP = 1_000_000


DEFAULT_SEED = 0


DEFAULT_RELEVANCE_LEVEL = 1


DEFAULT_SPLIT = "test"


HNSW_DEFAULTS: Mapping[str, int] = {"M": 16, "ef_construction": 200, "ef_search": 128}


DEFAULT_TIES = "docid"


DEFAULT_MULTIPLE_COMPARISONS = "none"


#: How the comparisons of several candidates (a shortlist) are grouped for ``multiple_comparisons``: every
#: candidate's strata in one family (``shortlist``, the default), or each candidate's strata on their own,
#: as a run of that candidate alone decides them (``candidate``).
FAMILIES = ("shortlist", "candidate")
DEFAULT_FAMILY = "shortlist"


#: index.hnsw keys besides HNSW_DEFAULTS: the ANN recall each arm's ef_search is raised to reach
HNSW_RECALL_TARGET = "recall_target"


#: Ids of documents without text shown in a message or a warning; the report lists them all.
TEXTLESS_SHOWN = 5


#: What a golden file's ``weights`` may name: each query weighted by its ``frequency`` in the traffic (over
#: its ``inclusion`` probability when the queries carry one: `Query.traffic_weight`).
WEIGHTS = ("frequency",)
#: `GoldenSet.traffic_weighting`: each query weighs its frequency, or its frequency over its inclusion.
TRAFFIC_BY_FREQUENCY = "frequency"
TRAFFIC_BY_INCLUSION = "frequency / inclusion"


#: index keys beside ``faiss`` (the factory string): the search parameter it is searched with, or the recall
#: target that chooses it per arm
FAISS_PARAMETERS = ("nprobe", "efSearch")
#: Why a FAISS index (the golden file's or an arm's own) is refused when queries have filters.
FAISS_FILTERS = (
    "a FAISS index is not offered with filters (it searches every document, whatever a query's filters "
    "allow): search exactly, with hnsw or with a vector database"
)


@dataclass(frozen=True, slots=True)
class IndexSpec:
    kind: str  # "exact" | "hnsw" | "faiss" | an engine: "chroma", "lancedb", "service"
    M: int = HNSW_DEFAULTS["M"]
    ef_construction: int = HNSW_DEFAULTS["ef_construction"]
    ef_search: int = HNSW_DEFAULTS["ef_search"]
    #: when set, each arm searches at the smallest ef (a FAISS index: nprobe or efSearch) whose ANN recall
    #: reaches it, and ef_search is unused
    recall_target: float | None = None
    #: a vector database (``kind`` is its engine); None for exact search and hnsw
    engine: EngineSpec | None = None
    #: a FAISS index: its factory string (``"IVF1024,PQ48"``), and the search parameter declared for it,
    #: ``("nprobe", 16)`` (None: FAISS's default, or the recall target's choice)
    factory: str | None = None
    faiss_parameter: tuple[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The declared index, plain types only; HNSW parameters appear only for ``hnsw``, and either the ef
        searched with or the recall target that chooses it; a FAISS index's factory string and parameter; an
        engine's as `EngineSpec.as_dict`."""
        if self.engine is not None:
            return self.engine.as_dict()
        if self.kind == "faiss" and self.factory is not None:
            declared: dict[str, str | int | float] = {"kind": "faiss", "faiss": self.factory}
            if self.faiss_parameter is not None:
                declared[self.faiss_parameter[0]] = self.faiss_parameter[1]
            if self.recall_target is not None:
                declared[HNSW_RECALL_TARGET] = self.recall_target
            return declared
        if self.kind != "hnsw":
            return {"kind": self.kind}
        declared = {
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
    slice holds every judged document and a seeded random draw of the others (see
    `corpus_slices.draw_slices`)."""

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
    #: how a shortlist's candidates are grouped for ``multiple_comparisons`` (`FAMILIES`); None: not
    #: declared, `DEFAULT_FAMILY`
    family: str | None = None
    #: the production index each arm's capacity is projected to; None: no capacity is measured
    production: Production | None = None
    corpus_sample: CorpusSample | None = None
    #: the written relevance definition (``guidelines``), for people and the LLM judge; None: not declared
    guidelines: Guidelines | None = None
    #: how long a judgment stays usable (``shelf_life``): a run warns when the median judgment is older
    shelf_life: ShelfLife = DEFAULT_SHELF_LIFE
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
    #: the declared decision (`decision_spec`): outcomes, owner and routing; None: the verdicts alone gate
    decision: DecisionSpec | None = None
    #: ``frequency``: the verdicts rest on the traffic-weighted means (the unweighted shown beside); None:
    #: every query counts once
    weights: str | None = None
    #: how the corpus and queries files were drawn from production, by data key, as their draw sidecars
    #: say (`draws.read_draw`); not fingerprinted, since the digests of the data hold their content
    draws: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: with ``weights`` on queries drawn by ``embeval sample``: the design of the draw, from its sidecar
    #: (`drawn_design`), whose variance the weighted intervals use; None: weights without a design (the
    #: with-replacement interval), or no weights
    design: SampleDesign | None = None

    def query_weights(self) -> tuple[float, ...] | None:
        """Each query's weight, in query order, under ``weights``: the traffic it stands for
        (`Query.traffic_weight`: frequency / inclusion, or frequency); None without ``weights``."""
        if self.weights is None:
            return None
        weights = [query.traffic_weight for query in self.queries]
        missing = next((q.id for q, w in zip(self.queries, weights, strict=True) if w is None), None)
        if missing is not None:
            raise ValueError(f"weights: {self.weights} but query {missing!r} has no frequency")
        return tuple(float(w or 0.0) for w in weights)

    @property
    def traffic_weighting(self) -> str | None:
        """What a query's traffic weight is: `TRAFFIC_BY_INCLUSION` when the queries carry inclusion
        probabilities (a drawn sample), ``frequency`` when they carry frequencies alone, None without
        frequencies."""
        if not self.queries or self.queries[0].frequency is None:
            return None
        return TRAFFIC_BY_INCLUSION if self.queries[0].inclusion is not None else TRAFFIC_BY_FREQUENCY

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
            **({"decision": self.decision.as_dict()} if self.decision is not None else {}),
            **({"weights": self.weights} if self.weights is not None else {}),
            **({"family": self.family} if self.family is not None else {}),
        }

    def judged_ids(self) -> frozenset[str]:
        """What judgments and rankings name: the corpus records, or with folding the documents."""
        return judged_document_ids(self.documents, self.fold)

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
            if query.frequency is not None:  # only then, so sets without frequencies keep their fingerprints
                row.append({"frequency": query.frequency})
            if query.inclusion is not None:  # likewise
                row.append({"inclusion": query.inclusion})
            digest.update(b"query " + _canonical(row) + b"\n")
        judgments = sorted(
            (qid, did, grade) for qid, docs in self.qrels.items() for did, grade in docs.items()
        )
        hash_rows(digest, judgments, "qrel ")
        if self.design is not None:  # only then, so sets without a design keep their fingerprints
            cells = [str(cell) for cell in self.design.cells]
            population = {str(cell): size for cell, size in self.design.population.items()}
            digest.update(b"design " + _canonical([cells, population]) + b"\n")
        return "sha256:" + digest.hexdigest()


def _canonical(value: object) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


DEFAULT_DEPTH = 50


@dataclass(frozen=True, slots=True)
class RerankSpec:
    #: as written in the golden file (what the plan fingerprint holds)
    model: str
    depth: int = DEFAULT_DEPTH
    #: queries reranked per stratum; None: all of them
    sample: int | None = None
    #: the verdict rests on the after-rerank comparison
    decides: bool = False
    #: ``model`` resolved against the golden file's folder, for a CrossEncoder folder; None for module:attr
    location: str | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "depth": self.depth, "sample": self.sample, "decides": self.decides}


def judged_document_ids(documents: Sequence[Document], fold: FoldSpec | None) -> frozenset[str]:
    """What judgments may name: the corpus records, or with folding the documents their chunks fold to."""
    if fold is None:
        return frozenset(doc.id for doc in documents)
    return frozenset(doc.fields[fold.field][0] for doc in documents)
