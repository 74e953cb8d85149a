"""Golden-set files (YAML, schema version 1) loaded into the frozen, validated dataclasses of `schema`.

`load_golden(path)` reads the YAML file and the data it names (JSONL corpus and queries, TSV qrels, or a BEIR
folder) and returns a `GoldenSet`. Every problem with the files is a `GoldenError` whose text is one line,
``<path>[:<line>]: <key>: <problem>``, naming the file, the line where it is known and the key (a dotted path
such as ``index.hnsw.M`` or ``queries[2].relevant.doc-9`` for the YAML file, the field or column name for data
files). Nothing is silently dropped: a value this module cannot use is an error, never a default.

Decisions the schema leaves open, taken here:

* Judgments live in one place: the ``qrels`` file, or ``relevant`` on inline queries. Giving both is an error
  (two sources of truth drift apart). ``qrels`` is required unless some inline query carries ``relevant``.
* ``metric`` is required: the primary metric decides every verdict, so it is never implied.
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
  least 2 (hnswlib cannot build a graph with M = 1). A vector database (``index: {chroma: …}``,
  ``{lancedb: …}``, ``{service: module:attr, …}``) is read by `engine_spec`.
* ``weights: frequency`` makes every verdict rest on the traffic-weighted means, each query weighted by its
  ``frequency`` (which every query must then have), over its ``inclusion`` when the queries have one
  (`data_files.Query.traffic_weight`); it is part of the plan, in its fingerprint only when given. When the
  queries file has the draw sidecar of ``embeval sample``, the weighted intervals use the design of that
  draw (`drawn_design`: each query's (stratum, band) cell, each cell's distinct queries); a sidecar the
  file no longer matches is an error, never a silent fallback to the with-replacement interval.
* ``guidelines: judging.md`` names the written relevance definition (a UTF-8 text file, relative to this
  file, not empty) that people judge by and `judge` builds the LLM judge's prompt from. It is not part of
  the fingerprint: the judgments are, and the guidelines change no score.
* ``shelf_life: 12 months`` (the default; syntax in `shelf_life`) is how long a judgment stays usable: a
  run warns when the golden set's median judgment is older. It is not part of the plan or the fingerprint:
  it changes no score.
* ``decision: {owner?, proceed?, route?, otherwise?}`` (`decision_spec`) is read after the data, since its
  conditions and routes name strata; it is part of the plan, and enters its fingerprint only when given.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import yaml

from pytest_embeval.core.capacity import MAX_COUNT, MAX_PRICE, Production
from pytest_embeval.core.metrics import MetricSpec
from pytest_embeval.core.sample_design import SampleDesign
from pytest_embeval.core.stats import DEFAULT_INTERVAL, INTERVALS
from pytest_embeval.core.ties import TIES
from pytest_embeval.core.verdict import MULTIPLE_COMPARISONS
from pytest_embeval.golden.data_files import (
    Document,
    GoldenError,
    Query,
    read_text,
)
from pytest_embeval.golden.data_sections import DATA_KEYS, RESERVED_FIELDS, DataReader
from pytest_embeval.golden.decision_spec import read_decision
from pytest_embeval.golden.drawn_design import drawn_design
from pytest_embeval.golden.folding import FoldSpec
from pytest_embeval.golden.index_spec import read_index
from pytest_embeval.golden.schema import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_CONFIDENCE,
    DEFAULT_MIN_QUERIES,
    DEFAULT_MULTIPLE_COMPARISONS,
    DEFAULT_RELEVANCE_LEVEL,
    DEFAULT_SEED,
    DEFAULT_TIE_MARGIN,
    DEFAULT_TIES,
    FAISS_FILTERS,
    FAMILIES,
    MAX_BOOTSTRAP,
    MIN_BOOTSTRAP,
    SCHEMA_VERSION,
    WEIGHTS,
    CorpusSample,
    GoldenSet,
    Guidelines,
    IndexSpec,
    RerankSpec,
)
from pytest_embeval.golden.shelf_life import DEFAULT_SHELF_LIFE, ShelfLife, parse_shelf_life
from pytest_embeval.golden.yaml_nodes import NULL_TAG, Entry, compose, describe_node, node_line

__all__ = [
    "CORPUS_SAMPLE_KEYS",
    "KNOWN_KEYS",
    "PRODUCTION_KEYS",
    "Document",
    "GoldenError",
    "Query",
    "load_golden",
]

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
    "family",
    "production",
    "corpus_sample",
    "fold",
    "rerank",
    "guidelines",
    "shelf_life",
    "decision",
    "weights",
)


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


def _design(
    weights: str | None, queries: Sequence[Query], path: Path | None, draws: Mapping[str, Mapping[str, Any]]
) -> SampleDesign | None:
    """Under ``weights``, the design of queries drawn by ``embeval sample`` (its sidecar beside the queries
    file ``path``); None without weights or without such a sidecar."""
    draw = draws.get("queries")
    if weights is None or draw is None or draw.get("command") != "sample" or path is None:
        return None
    return drawn_design(path, queries, draw)


# --- the YAML file -----------------------------------------------------------------------------------------


def _looks_like_attr(spec: str) -> bool:
    """``module:attr`` rather than a folder: dotted identifiers around one colon (a Windows drive letter's
    colon is followed by a path separator, not an identifier)."""
    module, colon, attr = spec.partition(":")
    return bool(colon) and all(
        bool(part) and all(piece.isidentifier() for piece in part.split(".")) for part in (module, attr)
    )


_T = TypeVar("_T")
#: A YAML mapping's entries: key -> (the key's node, the value's node).
_Entries = Mapping[str, tuple[yaml.Node, yaml.Node]]


def _setting(top: _Entries, name: str, parse: Callable[[yaml.Node], _T], default: _T) -> _T:
    """The top-level key ``name`` parsed, or ``default`` when the file leaves it out."""
    return default if name not in top else parse(top[name][1])


class _VerdictSettings(TypedDict):
    name: str
    metric: MetricSpec
    guards: dict[str, float]
    report_metrics: tuple[MetricSpec, ...]
    tie_margin: float
    confidence: float
    min_queries: int
    bootstrap: int
    seed: int
    interval: str
    ties: str
    multiple_comparisons: str
    family: str | None
    relevance_level: int


class _RunSettings(TypedDict):
    index: IndexSpec
    rerank: RerankSpec | None
    production: Production | None
    corpus_sample: CorpusSample | None
    guidelines: Guidelines | None
    shelf_life: ShelfLife


class _GoldenLoader(DataReader):
    """One load of one golden file: its sections, and the data files they name."""

    # --- the golden file

    def load(self) -> GoldenSet:
        top = self.entries(self.compose(), None)
        self.check_keys(top, KNOWN_KEYS, None)
        self.check_structure(top)
        # The settings first, then the data files they need: a mistake in a setting is named before any
        # data file is read.
        verdict = self._verdict_settings(top)
        strata: tuple[str, ...] = _setting(top, "strata", self.strata, ())
        run = self._run_settings(top, verdict["seed"])
        fold: FoldSpec | None = _setting(top, "fold", self.fold, None)
        data = self.data(top, strata, fold)
        if run["index"].kind == "faiss":
            filtered = next((query.id for query in data.queries if query.filters), None)
            if filtered is not None:
                key_node = self.entries(top["index"][1], "index")["faiss"][0]
                problem = f"query {filtered!r} has filters, and {FAISS_FILTERS}"
                raise self.error(key_node, "index.faiss", problem)
        weights: str | None = _setting(top, "weights", lambda node: self.weights(node, data.queries), None)
        golden = GoldenSet(
            path=self.path,
            documents=tuple(doc for doc in data.documents if doc.has_text),
            queries=tuple(data.queries),
            qrels=data.qrels,
            strata_fields=strata,
            textless=tuple(doc.id for doc in data.documents if not doc.has_text),
            split=data.split,
            qrels_path=data.qrels_path,
            qrels_format=None if data.qrels_read is None else data.qrels_read.format,
            draws=data.draws,
            fold=fold,
            separate=_setting(top, "separate", lambda node: self.separate(node, strata, data.queries), {}),
            weights=weights,
            design=_design(weights, data.queries, data.queries_path, data.draws),
            **verdict,
            **run,
        )
        if "decision" not in top:
            return golden
        # Read last: its conditions name the strata, which the data and ``separate`` make.
        names = [stratum.name for stratum in golden.strata()]
        decision = read_decision(self, *top["decision"], names, strata)
        return dataclasses.replace(golden, decision=decision)

    def _verdict_settings(self, top: _Entries) -> _VerdictSettings:
        """What decides each stratum's verdict: the metrics and their margins, the interval, the family."""
        metric = self.metric(top["metric"][1], "metric")
        return _VerdictSettings(
            name=_setting(
                top, "name", lambda node: self.word(node, "name", "a non-empty name"), self.path.stem
            ),
            metric=metric,
            guards=_setting(top, "guards", self.guards, {}),
            report_metrics=_setting(top, "report", self.report, ()),
            tie_margin=_setting(
                top,
                "tie_margin",
                lambda node: self.gate_margin(node, "tie_margin", metric),
                DEFAULT_TIE_MARGIN,
            ),
            confidence=_setting(top, "confidence", self.confidence, DEFAULT_CONFIDENCE),
            min_queries=_setting(
                top, "min_queries", lambda node: self.integer(node, "min_queries", 1), DEFAULT_MIN_QUERIES
            ),
            bootstrap=_setting(
                top,
                "bootstrap",
                lambda node: self.integer(node, "bootstrap", MIN_BOOTSTRAP, MAX_BOOTSTRAP),
                DEFAULT_BOOTSTRAP,
            ),
            seed=_setting(top, "seed", lambda node: self.integer(node, "seed", 0), DEFAULT_SEED),
            interval=_setting(
                top, "interval", lambda node: self.choice(node, "interval", INTERVALS), DEFAULT_INTERVAL
            ),
            ties=_setting(top, "ties", lambda node: self.choice(node, "ties", TIES), DEFAULT_TIES),
            multiple_comparisons=_setting(
                top,
                "multiple_comparisons",
                lambda node: self.choice(node, "multiple_comparisons", MULTIPLE_COMPARISONS),
                DEFAULT_MULTIPLE_COMPARISONS,
            ),
            family=_setting(top, "family", lambda node: self.choice(node, "family", FAMILIES), None),
            relevance_level=_setting(
                top,
                "relevance_level",
                lambda node: self.integer(node, "relevance_level", 1),
                DEFAULT_RELEVANCE_LEVEL,
            ),
        )

    def _run_settings(self, top: _Entries, seed: int) -> _RunSettings:
        """How the arms are run and what the run is planned for: the index, the reranker, production's size,
        the corpus slices (drawn with ``seed`` unless they name their own), the judging guidelines and how
        long judgments keep."""
        return _RunSettings(
            index=_setting(top, "index", lambda node: read_index(self, node), IndexSpec("exact")),
            rerank=_setting(top, "rerank", self.rerank, None),
            production=_setting(top, "production", self.production, None),
            corpus_sample=_setting(top, "corpus_sample", lambda node: self.corpus_sample(node, seed), None),
            guidelines=_setting(top, "guidelines", self.guidelines, None),
            shelf_life=_setting(top, "shelf_life", self.shelf_life, DEFAULT_SHELF_LIFE),
        )

    def check_structure(self, top: Mapping[str, Entry]) -> None:
        """Version, required keys and the BEIR-or-files choice, before any value is read."""
        if "schema_version" in top:
            node = top["schema_version"][1]
            version = self.construct(node, "schema_version")
            if type(version) is not int or version != SCHEMA_VERSION:
                problem = f"unsupported version {describe_node(node)} (this release reads {SCHEMA_VERSION})"
                raise self.error(node, "schema_version", problem)
        if "beir" in top:
            for name in DATA_KEYS:
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
        root = compose(self.path)
        if root is None:
            raise GoldenError(self.path, None, None, "expected a mapping of settings, the file is empty")
        if not isinstance(root, yaml.MappingNode):
            raise self.error(root, None, f"expected a mapping of settings, got {describe_node(root)}")
        return root

    def strata(self, node: yaml.Node) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(
                node, "strata", f"must be a list of query field names, got {describe_node(node)}"
            )
        names: dict[str, int] = {}
        for i, item in enumerate(node.value):
            key = f"strata[{i}]"
            name = self.word(item, key, "a query field name")
            if name in RESERVED_FIELDS:
                raise self.error(item, key, f"{name!r} is reserved for the query itself, not a stratum field")
            if name in names:
                raise self.error(item, key, f"duplicate stratum field {name!r} (first on line {names[name]})")
            names[name] = node_line(item)
        return tuple(names)

    def guards(self, node: yaml.Node) -> dict[str, float]:
        guards: dict[str, float] = {}
        lines: dict[str, int] = {}
        for name, (key_node, value_node) in self.entries(node, "guards").items():
            key = f"guards.{name}"
            metric = self.metric(key_node, key)
            spec = str(metric)
            if spec in guards:
                raise self.error(key_node, key, f"same metric as the guard on line {lines[spec]}")
            guards[spec] = self.gate_margin(value_node, key, metric)
            lines[spec] = node_line(key_node)
        return guards

    def gate_margin(self, node: yaml.Node, key: str, metric: MetricSpec) -> float:
        """A margin a Δ of ``metric`` must cross for a verdict: one no difference of two bounded means can
        reach would turn the gate off without a word."""
        margin = self.margin(node, key)
        bounds = metric.bounds
        if bounds is not None and margin >= bounds[1] - bounds[0]:
            low, high = bounds
            problem = (
                f"must be below {high - low:g} for {metric}, whose scores are in [{low:g}, {high:g}] "
                f"(no Δ can reach {margin:g}: no stratum could ever be WORSE), got {describe_node(node)}"
            )
            raise self.error(node, key, problem)
        return margin

    def report(self, node: yaml.Node) -> tuple[MetricSpec, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.error(node, "report", f"must be a list of metric names, got {describe_node(node)}")
        specs: dict[str, MetricSpec] = {}
        for i, item in enumerate(node.value):
            spec = self.metric(item, f"report[{i}]")
            if str(spec) in specs:
                raise self.error(item, f"report[{i}]", f"duplicate metric {str(spec)!r}")
            specs[str(spec)] = spec
        return tuple(specs.values())

    def production(self, node: yaml.Node) -> Production:
        entries = self.entries(node, "production")
        self.check_keys(entries, PRODUCTION_KEYS, "production")
        if "documents" not in entries:
            raise self.error(
                node, "production.documents", "missing required key (chunks the production index holds)"
            )
        documents = self.integer(entries["documents"][1], "production.documents", 1, MAX_COUNT)
        queries = None
        if "queries_per_month" in entries:
            node = entries["queries_per_month"][1]
            queries = self.integer(node, "production.queries_per_month", 0, MAX_COUNT)
        price = None
        if "memory_price_per_gb_month" in entries:
            node = entries["memory_price_per_gb_month"][1]
            price = self.number(node, "production.memory_price_per_gb_month")
            if price is None or not 0 <= price <= MAX_PRICE:
                problem = f"must be a number from 0 to {MAX_PRICE:,}, got {describe_node(node)}"
                raise self.error(node, "production.memory_price_per_gb_month", problem)
        return Production(documents=documents, queries_per_month=queries, memory_price_per_gb_month=price)

    def corpus_sample(self, node: yaml.Node, default_seed: int) -> CorpusSample:
        entries = self.entries(node, "corpus_sample")
        self.check_keys(entries, CORPUS_SAMPLE_KEYS, "corpus_sample")
        if "sizes" not in entries:
            problem = "missing required key (fractions of the corpus, e.g. [0.1, 0.25, 0.5, 1.0])"
            raise self.error(node, "corpus_sample.sizes", problem)
        sizes_node = entries["sizes"][1]
        if not isinstance(sizes_node, yaml.SequenceNode) or not sizes_node.value:
            problem = f"must be a non-empty list of fractions in (0, 1], got {describe_node(sizes_node)}"
            raise self.error(sizes_node, "corpus_sample.sizes", problem)
        sizes: dict[float, int] = {}
        for i, item in enumerate(sizes_node.value):
            key = f"corpus_sample.sizes[{i}]"
            size = self.number(item, key)
            if size is None or not 0 < size <= 1:
                raise self.error(item, key, f"must be a fraction in (0, 1], got {describe_node(item)}")
            if size in sizes:
                raise self.error(item, key, f"duplicate size {size:g} (first on line {sizes[size]})")
            sizes[size] = node_line(item)
        seed = default_seed
        if "seed" in entries:
            seed = self.integer(entries["seed"][1], "corpus_sample.seed", 0)
        return CorpusSample(sizes=tuple(sorted(sizes)), seed=seed)

    def shelf_life(self, node: yaml.Node) -> ShelfLife:
        if not isinstance(node, yaml.ScalarNode) or node.tag == NULL_TAG:
            raise self.error(
                node, "shelf_life", f"must be a duration such as '12 months', got {describe_node(node)}"
            )
        try:
            return parse_shelf_life(str(node.value))
        except ValueError as error:
            raise self.error(node, "shelf_life", str(error)) from None

    def weights(self, node: yaml.Node, queries: list[Query]) -> str:
        """``frequency``, on queries that have one (the data reader made sure all or none do)."""
        weights = self.choice(node, "weights", WEIGHTS)
        if queries and queries[0].frequency is None:
            problem = (
                "'frequency' weighs each query by its frequency in the traffic, but the queries have none "
                "(give every query a frequency: a JSONL key, a TSV column or an inline key)"
            )
            raise self.error(node, "weights", problem)
        return weights

    def guidelines(self, node: yaml.Node) -> Guidelines:
        path = self.require(node, "guidelines", self.location(node, "guidelines"))
        text = read_text(path)
        if not text.strip():
            problem = f"{path.resolve()} is empty: write down the relevance definition judges grade by"
            raise self.error(node, "guidelines", problem)
        return Guidelines(path, text)

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
                problem = f"must be true or false, got {describe_node(decides_node)}"
                raise self.error(decides_node, "rerank.decides", problem)
            values["decides"] = decides
        return RerankSpec(**values)
