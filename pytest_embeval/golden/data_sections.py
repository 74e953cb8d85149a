"""The data a golden file names: the corpus, the queries and the judgments, read from their files (JSONL, TSV,
a BEIR folder) or inline, every id and judgment checked against the rest.

`DataReader` reads these sections of the YAML node tree; `loader._GoldenLoader` reads the others with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pytest_embeval.golden.data_files import TEXT_FORMATS, Document, GoldenError, Query, read_documents
from pytest_embeval.golden.draws import read_draw
from pytest_embeval.golden.filters import Filter, field_names, field_problem
from pytest_embeval.golden.folding import FoldSpec
from pytest_embeval.golden.qrels_files import COLUMN_ROLES, QRELS_FORMATS, QrelsColumns, QrelsRead, read_qrels
from pytest_embeval.golden.query_files import (
    FREQUENCY,
    INCLUSION,
    check_frequencies,
    frequency_problem,
    frequency_value,
    inclusion_problem,
    inclusion_value,
    missing_stratum_problem,
    read_queries,
    stratum_type_problem,
    stratum_value,
)
from pytest_embeval.golden.schema import (
    DEFAULT_SPLIT,
    judged_document_ids,
)
from pytest_embeval.golden.yaml_nodes import NULL_TAG, Entry, NodeReader, describe_node, node_line

DATA_KEYS = ("corpus", "queries", "qrels")


_INLINE_QUERY_KEYS = ("id", "text", "relevant", "filters", FREQUENCY, INCLUSION)


#: Query keys that cannot name a stratum field (the query's id, text, judgments, filters, frequency and
#: inclusion probability).
RESERVED_FIELDS = frozenset({"_id", "id", "text", "relevant", "filters", FREQUENCY, INCLUSION})


@dataclass(frozen=True, slots=True)
class _Data:
    """What a golden file's data keys name, as read: every document (those without text too)."""

    documents: list[Document]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    split: str | None = None
    qrels_path: Path | None = None
    #: what reading the qrels file found (None: inline judgments)
    qrels_read: QrelsRead | None = None
    #: the draw sidecars of the corpus and queries files, by data key (`draws.read_draw`)
    draws: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    #: the queries file (None: inline queries)
    queries_path: Path | None = None


def _draws(**files: Path | None) -> dict[str, Mapping[str, object]]:
    """The draw record beside each data file that has one (`draws.read_draw`), by data key."""
    found = {key: read_draw(path) if path is not None else None for key, path in files.items()}
    return {key: draw for key, draw in found.items() if draw is not None}


class DataReader(NodeReader):
    """Reads a golden file's data sections: corpus, queries (or a BEIR folder, or inline ones) and qrels."""

    def data(self, top: Mapping[str, Entry], strata: tuple[str, ...], fold: FoldSpec | None) -> _Data:
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
        judged_ids = judged_document_ids(documents, fold)
        fields = field_names(doc.fields for doc in documents)
        queries_node = top["queries"][1]
        qrels_entry = top.get("qrels")
        queries_file: Path | None = None
        if isinstance(queries_node, yaml.SequenceNode):
            queries, qrels = self.inline_queries(queries_node, strata, judged_ids, fields, qrels_entry)
            if qrels_entry is None and not any(qrels.values()):
                problem = "missing required key (no inline query carries 'relevant' judgments)"
                raise GoldenError(self.path, "qrels", None, problem)
        elif isinstance(queries_node, (yaml.ScalarNode, yaml.MappingNode)) and queries_node.tag != NULL_TAG:
            queries_file, queries_format = self.data_file(queries_node, "queries", TEXT_FORMATS)
            queries = read_queries(queries_file, strata, queries_format, fields)
            if not queries:
                raise self.error(queries_node, "queries", "no queries in the file")
            if qrels_entry is None:
                problem = "missing required key (queries from a file need a qrels file)"
                raise GoldenError(self.path, "qrels", None, problem)
            qrels = {query.id: {} for query in queries}
        else:
            problem = f"must be a JSONL or TSV file or a list of queries, got {describe_node(queries_node)}"
            raise self.error(queries_node, "queries", problem)
        draws = _draws(corpus=corpus_file, queries=queries_file)
        if qrels_entry is None:
            return _Data(documents, queries, qrels, draws=draws, queries_path=queries_file)
        qrels_node = qrels_entry[1]
        qrels_file, qrels_format = self.data_file(qrels_node, "qrels", QRELS_FORMATS, ("columns",))
        columns = self.qrels_columns(qrels_node)
        # A header-only file is a golden set before its first judging session (`embeval pool` starts
        # there); its queries score NaN and every stratum is below the floor.
        found = read_qrels(qrels_file, qrels, judged_ids, qrels_format, columns)
        return _Data(
            documents,
            queries,
            qrels,
            qrels_path=qrels_file,
            qrels_read=found,
            draws=draws,
            queries_path=queries_file,
        )

    def qrels_columns(self, node: yaml.Node) -> QrelsColumns | None:
        """``qrels: {path: FILE, columns: {query: qid, document: docid, grade: rel}}``: the header names of a
        TSV file's columns, when they are not spellings the reader knows."""
        if not isinstance(node, yaml.MappingNode):
            return None
        entries = self.entries(node, "qrels")
        if "columns" not in entries:
            return None
        key_node, columns_node = entries["columns"]
        if "format" in entries and self.word(entries["format"][1], "qrels.format", "a format name") != "beir":
            raise self.error(
                key_node, "qrels.columns", "only applies to a TSV file with a header (format beir)"
            )
        names = self.entries(columns_node, "qrels.columns")
        self.check_keys(names, COLUMN_ROLES, "qrels.columns")
        values: dict[str, str] = {}
        for role in COLUMN_ROLES:
            if role not in names:
                what = {"query": "the query ids'", "document": "the document ids'", "grade": "the grades'"}[
                    role
                ]
                raise self.error(
                    columns_node, f"qrels.columns.{role}", f"missing required key ({what} column)"
                )
            value_node = names[role][1]
            value = self.word(value_node, f"qrels.columns.{role}", "a column name of the file's header")
            same = next((other for other, name in values.items() if name.lower() == value.lower()), None)
            if same is not None:
                raise self.error(value_node, f"qrels.columns.{role}", f"same column as {same}: {value!r}")
            values[role] = value
        return QrelsColumns(**values)

    def documents(self, node: yaml.Node, key: str, documents: list[Document]) -> list[Document]:
        """The corpus as read, refusing one without a document to embed."""
        if not documents:
            raise self.error(node, key, "no documents in the file")
        if not any(doc.has_text for doc in documents):
            raise self.error(node, key, f"none of the {len(documents)} documents has a text or a title")
        return documents

    def beir(
        self, node: yaml.Node, strata: tuple[str, ...], split_entry: Entry | None, fold: FoldSpec | None
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
        elif not (folder / "qrels.tsv").is_file():
            looked = f"qrels/{declared or DEFAULT_SPLIT}.tsv"
            problem = f"no qrels file in {folder.resolve()} (looked for {looked} and qrels.tsv)"
            raise self.error(node, "beir", problem)
        elif split_entry is not None:
            problem = (
                f"{folder.resolve()} has no qrels/ folder of splits (qrels/<split>.tsv), only qrels.tsv; "
                "remove 'split'"
            )
            raise self.error(split_entry[1], "split", problem)
        else:
            qrels_file = folder / "qrels.tsv"
        documents = read_documents(corpus, None, () if fold is None else (fold.field,))
        if not documents:
            raise self.error(node, "beir", f"no documents in {corpus.resolve()}")
        self.documents(node, "beir", documents)
        queries = read_queries(queries_file, strata, None, field_names(doc.fields for doc in documents))
        if not queries:
            raise self.error(node, "beir", f"no queries in {queries_file.resolve()}")
        qrels: dict[str, dict[str, int]] = {query.id: {} for query in queries}
        found = read_qrels(qrels_file, qrels, judged_document_ids(documents, fold))
        if len(splits) > 1:
            # queries.jsonl holds every split's queries (as BEIR publishes them): keep this split's own.
            queries = [query for query in queries if qrels[query.id]]
            if not queries:
                problem = f"no query of {queries_file.resolve()} is judged in qrels/{split}.tsv"
                raise self.error(node, "beir", problem)
            qrels = {query.id: qrels[query.id] for query in queries}
        draws = _draws(corpus=corpus, queries=queries_file)
        return _Data(
            documents,
            queries,
            qrels,
            split=split,
            qrels_path=qrels_file,
            qrels_read=found,
            draws=draws,
            queries_path=queries_file,
        )

    def inline_queries(
        self,
        node: yaml.SequenceNode,
        strata: tuple[str, ...],
        document_ids: AbstractSet[str],
        document_fields: AbstractSet[str],
        qrels_entry: Entry | None,
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
            first_line[query_id] = node_line(id_node)
            text = self.string(entries["text"][1], f"{prefix}.text")
            fields: dict[str, str] = {}
            for name in strata:
                key = f"{prefix}.{name}"
                if name not in entries:
                    raise self.error(item, key, missing_stratum_problem(query_id, name, entries))
                field_node = entries[name][1]
                if not isinstance(field_node, yaml.ScalarNode) or field_node.tag == NULL_TAG:
                    raise self.error(
                        field_node, key, stratum_type_problem(query_id, name, describe_node(field_node))
                    )
                value = str(field_node.value)
                fields[name] = stratum_value(self.path, key, node_line(field_node), query_id, name, value)
            qrels[query_id] = {}
            if "relevant" in entries:
                key_node, relevant_node = entries["relevant"]
                if qrels_entry is not None:
                    problem = (
                        f"cannot be combined with the 'qrels' file (line {node_line(qrels_entry[0])}); "
                        "keep all judgments in one place"
                    )
                    raise self.error(key_node, f"{prefix}.relevant", problem)
                qrels[query_id] = self.relevant(relevant_node, f"{prefix}.relevant", document_ids)
            filters: Filter = {}
            if "filters" in entries:
                filters = self.filters(entries["filters"][1], f"{prefix}.filters", query_id, document_fields)
            frequency = self.query_number(entries, prefix, FREQUENCY, query_id)
            inclusion = self.query_number(entries, prefix, INCLUSION, query_id)
            queries.append(Query(query_id, text, fields, filters, frequency, inclusion))
        check_frequencies(self.path, queries, first_line, "queries")
        return queries, qrels

    def query_number(
        self, entries: Mapping[str, Entry], prefix: str, name: str, query_id: str
    ) -> float | None:
        """An inline query's ``frequency`` or ``inclusion``, checked as a data file's are; None if absent."""
        if name not in entries:
            return None
        node = entries[name][1]
        key = f"{prefix}.{name}"
        problem_of, value_of = (
            (frequency_problem, frequency_value)
            if name == FREQUENCY
            else (inclusion_problem, inclusion_value)
        )
        if not isinstance(node, yaml.ScalarNode) or node.tag == NULL_TAG:
            raise self.error(node, key, problem_of(query_id, describe_node(node)))
        return value_of(self.path, key, node_line(node), query_id, str(node.value))

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
                raise self.error(
                    values_node, key, f"must be a list of values, got {describe_node(values_node)}"
                )
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
