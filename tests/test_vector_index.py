"""The vector-database protocol and what every engine shares, on the documentation's SQLite adapter (exact)
and adapters of the tests' own that miss, tune and misbehave: an arm's collection searched as exact search
ranks, one search per distinct filter, the engine's faults as one line, the collections' names and
markers, the leftovers of an interrupted run (its own, and only its own), a recall target choosing the
search parameter, and the Δ split into the model's part and the engine's on a run."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from suite_helpers import shared_collection
from test_pipeline import hash_arm, make_golden

from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.core.stats import compare_paired, stable_seed
from pytest_embeval.golden.engine_spec import EngineSpec
from pytest_embeval.golden.filters import EmptyFilterWarning, Filter, plan_filters
from pytest_embeval.golden.schema import IndexSpec
from pytest_embeval.run.pipeline import run_golden
from pytest_embeval.run.stratum_evaluation import evaluate_golden
from pytest_embeval.search.engine_search import EngineCollection
from pytest_embeval.search.exact import exact_search
from pytest_embeval.search.hnsw import TargetNotReached
from pytest_embeval.search.vector_index import (
    COLLECTION_PREFIX,
    EngineError,
    Found,
    LeftoverCollectionsWarning,
    Records,
    SearchParameter,
    VectorIndex,
    collection_name,
    golden_key,
    guarded,
    leftovers,
    open_index,
    opened_engine,
    owner_marker,
    remove_leftovers,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "sqlite_index.py"


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("sqlite_index", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sqlite_index"] = module
    spec.loader.exec_module(module)
    return module


SqliteIndex = _load_example().SqliteIndex


def unit_rows(rng: np.random.Generator, n: int, dimension: int = 16) -> np.ndarray:
    rows = rng.standard_normal((n, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def generated(n: int, dimension: int = 64, queries: int = 60) -> dict[str, Any]:
    """A generated collection: unit vectors, a language on every record, tags on some (one with a quote)."""
    rng = np.random.default_rng(0)

    def rows(count: int) -> np.ndarray:
        matrix = rng.standard_normal((count, dimension)).astype(np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    fields = [
        {"language": ("en" if i % 3 else "es",), **({"tags": ("billing", "it's")} if i % 5 == 0 else {})}
        for i in range(n)
    ]
    return {
        "ids": [f"d{i:04d}" for i in range(n)],
        "documents": rows(n),
        "queries": rows(queries),
        "fields": fields,
    }


def medline_vectors() -> tuple[list[str], np.ndarray, np.ndarray]:
    """../shared/data's medline (1,033 abstracts, 30 queries) as vectors: hashed word counts (256
    dimensions, unit length; scikit-learn's HashingVectorizer), real texts without a model. Skips where the
    collection is missing."""
    from sklearn.feature_extraction.text import HashingVectorizer

    folder = shared_collection("medline")
    read = [
        [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines()]
        for name in ("corpus.jsonl", "queries.jsonl")
    ]
    vectorizer = HashingVectorizer(n_features=256, alternate_sign=False, norm="l2")
    documents, queries = (
        vectorizer.transform([record["text"] for record in records]).toarray().astype(np.float32)
        for records in read
    )
    return [str(doc["_id"]) for doc in read[0]], documents, queries


def corpus(n: int = 300) -> tuple[list[str], np.ndarray, list[dict[str, tuple[str, ...]]]]:
    """Ids, vectors and fields: a language on every record, tags (some several, with a quote in one) on
    two of three, none on the rest."""
    rng = np.random.default_rng(7)
    ids = [f"d{i:04d}" for i in range(n)]
    fields: list[dict[str, tuple[str, ...]]] = []
    for i in range(n):
        one: dict[str, tuple[str, ...]] = {"language": ("en" if i % 3 else "es",)}
        if i % 3 != 2:
            one["tags"] = ("billing", "it's") if i % 5 == 0 else ("refund",)
        fields.append(one)
    return ids, unit_rows(rng, n), fields


def assert_exact_but_for_near_ties(
    positions: np.ndarray, expected: np.ndarray, queries: np.ndarray, documents: np.ndarray
) -> None:
    """What an engine searching exhaustively in float32 returns: each query's exact top k, in an order whose
    exact scores never rise by more than a float32 rounding (an engine's own float32 similarities may tie,
    or swap, two documents whose exact scores are an ulp apart)."""
    for row, (found, wanted) in enumerate(zip(positions.tolist(), expected.tolist(), strict=True)):
        assert set(found) == set(wanted), row
        known = [p for p in found if p >= 0]
        exact = queries[row].astype(np.float64) @ documents[known].astype(np.float64).T
        assert (np.diff(exact) <= 1e-6).all(), row


def test_the_example_adapter_is_the_protocol() -> None:
    index = SqliteIndex()
    assert isinstance(index, VectorIndex)
    index.close()


def test_an_exhaustive_engine_returns_exact_searchs_top_k_scores_and_ties_included() -> None:
    ids, documents, fields = corpus()
    queries = unit_rows(np.random.default_rng(1), 40)
    # Two documents equal to a third: equal scores, which the id rule orders (larger id first).
    documents[10] = documents[20] = documents[30]
    index = SqliteIndex()
    collection = EngineCollection(
        index, documents, doc_ids=ids, fields=fields, golden="g" * 12, arm="incumbent"
    )
    queries[0] = documents[30]
    positions, scores = collection.search(queries, 10)
    expected_positions, expected_scores = exact_search(queries, documents, 10, doc_ids=ids)
    assert np.array_equal(positions, expected_positions)
    assert np.array_equal(scores, expected_scores)
    assert positions[0, :3].tolist() == [30, 20, 10]
    collection.drop()
    assert index.markers(COLLECTION_PREFIX) == {}


def test_each_distinct_filter_is_one_search_and_equals_exact_filtered_search() -> None:
    ids, documents, fields = corpus()
    queries = unit_rows(np.random.default_rng(2), 30)
    wanted: list[Filter] = [
        {},
        {"language": ("es",)},
        {"tags": ("it's",)},
        {"language": ("en",), "tags": ("billing", "refund")},
        {"tags": ("nothing",)},
    ]
    query_filters = [wanted[i % len(wanted)] for i in range(len(queries))]
    with pytest.warns(EmptyFilterWarning, match="matches no document"):
        plan = plan_filters(fields, query_filters, [f"q{i}" for i in range(len(queries))])
    assert plan is not None

    class Counting(SqliteIndex):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[Filter | None] = []

        def search(self, name: str, queries: np.ndarray, k: int, where: Filter | None) -> list[Found]:
            self.calls.append(where)
            return super().search(name, queries, k, where)

    index = Counting()
    collection = EngineCollection(
        index, documents, doc_ids=ids, fields=fields, golden="g" * 12, arm="candidate"
    )
    positions, scores = collection.search(queries, 12, allowed=plan.allowed, filters=plan.filters)
    expected_positions, expected_scores = exact_search(
        queries, documents, 12, doc_ids=ids, allowed=plan.allowed
    )
    assert np.array_equal(positions, expected_positions)
    assert np.array_equal(scores, expected_scores, equal_nan=True)
    # One call per distinct filter that allows anything; "nothing" allows no record and is not sent.
    assert sorted(map(str, index.calls)) == sorted(map(str, [None, *wanted[1:4]]))
    assert (positions[4::5] == -1).all()


class Misbehaving(SqliteIndex):  # type: ignore[misc, valid-type]
    """Answers what an engine must not: ``fault`` names which."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault

    def search(self, name: str, queries: np.ndarray, k: int, where: Filter | None) -> list[Found]:
        found = super().search(name, queries, k, None if self.fault == "ignores filters" else where)
        if self.fault == "unknown id":
            return [Found(("nobody",), (1.0,)) for _ in found]
        if self.fault == "too few answers":
            return found[:-1]
        if self.fault == "raises":
            raise ConnectionResetError("the server closed the connection\nand more")
        return found


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("unknown id", "returned id 'nobody', which is not in collection"),
        ("too few answers", "answered 19 results for 20 queries"),
        ("ignores filters", "for a query whose filter excludes it: its filter semantics differ"),
        ("raises", "searching collection 'embeval-gggggggggggg-arm-"),
    ],
)
def test_an_engine_that_answers_what_it_must_not_is_one_line_naming_it(fault: str, message: str) -> None:
    ids, documents, fields = corpus()
    queries = unit_rows(np.random.default_rng(3), 20)
    plan = plan_filters(fields, [{"language": ("es",)}] * 20, [f"q{i}" for i in range(20)])
    assert plan is not None
    index = Misbehaving(fault)
    collection = EngineCollection(index, documents, doc_ids=ids, fields=fields, golden="g" * 12, arm="arm")
    with pytest.raises(EngineError) as info:
        collection.search(queries, 5, allowed=plan.allowed, filters=plan.filters)
    text = str(info.value)
    assert text.startswith("sqlite at :memory:: ") and message in text and "\n" not in text
    if fault == "raises":
        assert text.endswith(": ConnectionResetError: the server closed the connection")


def test_a_collection_that_cannot_be_built_is_dropped_and_named() -> None:
    class RefusesWrites(SqliteIndex):  # type: ignore[misc, valid-type]
        def create(self, name: str, records: Records, marker: Mapping[str, str]) -> None:
            super().create(name, records, marker)
            raise PermissionError("read-only database")

    ids, documents, fields = corpus(20)
    index = RefusesWrites()
    refused = (
        r"^sqlite at :memory:: creating collection 'embeval-0{12}-x-[0-9a-f]{8}': PermissionError: read-only"
    )
    with pytest.raises(EngineError, match=refused):
        EngineCollection(index, documents, doc_ids=ids, fields=fields, golden="0" * 12, arm="x", keep=True)
    assert index.markers(COLLECTION_PREFIX) == {}


def test_guarded_keeps_an_engine_error_and_describes_anything_else_on_one_line() -> None:
    index = SqliteIndex()
    error = EngineError("sqlite", ":memory:", "already one line")
    with pytest.raises(EngineError) as info:
        guarded(index, "x", lambda: (_ for _ in ()).throw(error))
    assert info.value is error

    def empty_message() -> None:
        try:
            raise OSError("the cause, first line\nsecond")
        except OSError as cause:
            raise TimeoutError() from cause

    with pytest.raises(
        EngineError, match=r"^sqlite at :memory:: waiting: TimeoutError: the cause, first line$"
    ):
        guarded(index, "waiting", empty_message)


def test_names_are_fresh_short_and_safe_and_markers_say_who_built_them(tmp_path: Path) -> None:
    golden = golden_key(tmp_path / "g.yaml")
    assert golden == golden_key(tmp_path / "." / "g.yaml") and len(golden) == 12
    names = {collection_name(golden, "Candidate: static/256 ÿ") for _ in range(50)}
    assert len(names) == 50
    for name in names:
        assert name.startswith(f"embeval-{golden}-candidate--static-256-") and len(name) <= 56
        assert all(c.isascii() and (c.isalnum() or c == "-") for c in name)
    marker = owner_marker(golden, keep=False)
    assert marker == {
        "embeval_golden": golden,
        "embeval_host": socket.gethostname(),
        "embeval_pid": str(os.getpid()),
        "embeval_kept": "0",
    }


def _finished_pid() -> int:
    """The id of a process that has ended (and been reaped): no process runs under it now."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(done.stdout)


@pytest.mark.skipif(os.name == "nt", reason="process liveness is not checked on Windows: nothing is removed")
def test_a_run_removes_its_own_leftovers_and_only_its_own() -> None:
    golden, dead = "a" * 12, str(_finished_pid())
    mine = {**owner_marker(golden, keep=False), "embeval_pid": dead}
    markers: dict[str, Mapping[str, str]] = {
        "embeval-aaaaaaaaaaaa-incumbent-00000001": mine,
        "embeval-aaaaaaaaaaaa-candidate-00000002": {**mine, "embeval_pid": str(os.getppid())},  # running
        "embeval-aaaaaaaaaaaa-candidate-00000003": {**mine, "embeval_host": "another-host"},
        "embeval-bbbbbbbbbbbb-candidate-00000004": {**mine, "embeval_golden": "b" * 12},
        "embeval-aaaaaaaaaaaa-candidate-00000005": {**mine, "embeval_kept": "1"},
        "embeval-aaaaaaaaaaaa-candidate-00000006": {**mine, "embeval_pid": str(os.getpid())},  # this run
        "production-vectors": mine,  # not ours: no prefix
        "embeval-aaaaaaaaaaaa-incumbent-00000007": {},  # no marker
    }
    assert leftovers(markers, golden) == ["embeval-aaaaaaaaaaaa-incumbent-00000001"]

    index = SqliteIndex()
    ids, documents, fields = corpus(5)
    for name, marker in markers.items():
        index.create(name, Records(ids, documents, fields), marker)
    assert remove_leftovers(index, golden) == ["embeval-aaaaaaaaaaaa-incumbent-00000001"]
    assert set(index.markers("")) == set(markers) - {"embeval-aaaaaaaaaaaa-incumbent-00000001"}


def test_opening_an_engine_removes_the_leftovers_with_a_warning_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    database = tmp_path / "vectors.sqlite"
    golden_path = tmp_path / "g.yaml"
    index = SqliteIndex(str(database))
    ids, documents, fields = corpus(5)
    left = f"embeval-{golden_key(golden_path)}-incumbent-0badcafe"
    marker = {**owner_marker(golden_key(golden_path), keep=False), "embeval_pid": str(_finished_pid())}
    index.create(left, Records(ids, documents, fields), marker)
    index.close()
    spec = EngineSpec("service", {"path": str(database)}, factory="sqlite_index:SqliteIndex", keep=True)
    removed = rf"^sqlite at .*: removed 1 collection\(s\) .*: {left}$"
    with pytest.warns(LeftoverCollectionsWarning, match=removed), opened_engine(spec, golden_path) as opened:
        assert opened.keep and opened.index.markers(COLLECTION_PREFIX) == {}


def test_a_service_that_is_no_adapter_or_fails_to_connect_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "half_adapters.py").write_text(
        "class NoSearch:\n    engine = 'x'\n    address = 'y'\n    version = 'z'\n"
        "def refuses(url):\n    raise ConnectionRefusedError(f'[Errno 111] Connection refused: {url}')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        EngineError, match=r"^service at half_adapters:NoSearch: half_adapters:NoSearch returned"
    ):
        open_index(EngineSpec("service", {}, factory="half_adapters:NoSearch"))
    refused = r"^service at http://h:1: cannot open: ConnectionRefusedError: \[Errno 111\] Connection"
    with pytest.raises(EngineError, match=refused):
        open_index(EngineSpec("service", {"url": "http://h:1"}, factory="half_adapters:refuses"))


class Probes(SqliteIndex):  # type: ignore[misc, valid-type]
    """An IVF-like adapter: ``nprobes`` of 10 partitions (records by position) are searched; exact at 10."""

    partitions = 10

    def __init__(self) -> None:
        super().__init__()
        self.nprobes: dict[str, int] = {}
        self.sizes: dict[str, int] = {}

    def create(self, name: str, records: Records, marker: Mapping[str, str]) -> None:
        super().create(name, records, marker)
        self.nprobes[name], self.sizes[name] = 1, len(records.ids)

    def search(self, name: str, queries: np.ndarray, k: int, where: Filter | None) -> list[Found]:
        reached = self.sizes[name] * self.nprobes[name] // self.partitions
        found = super().search(name, queries, self.sizes[name], where)
        kept = [
            [(i, s) for i, s in zip(f.ids, f.scores, strict=True) if int(i[1:]) < reached][:k] for f in found
        ]
        return [Found(tuple(i for i, _ in one), tuple(s for _, s in one)) for one in kept]

    def search_parameter(self, name: str, k: int) -> SearchParameter:
        return SearchParameter("nprobes", self.nprobes[name], low=1, high=self.partitions)

    def set_search_parameter(self, name: str, value: int) -> None:
        self.nprobes[name] = value


def test_a_recall_target_chooses_the_smallest_search_parameter_reaching_it() -> None:
    ids, documents, fields = corpus(200)
    queries = unit_rows(np.random.default_rng(4), 50)
    exact, _ = exact_search(queries, documents, 10, doc_ids=ids)
    index = Probes()
    collection = EngineCollection(index, documents, doc_ids=ids, fields=fields, golden="c" * 12, arm="arm")
    value, recall = collection.parameter_for_recall(queries, exact, 0.75)
    assert recall >= 0.75
    # The smallest: one probe fewer falls short (recall grows with the share of records reachable).
    collection.set_search_parameter(value - 1)
    positions = collection.positions(queries, 10, None, ())
    shares = [len(set(p) & set(e)) / 10 for p, e in zip(positions.tolist(), exact.tolist(), strict=True)]
    assert np.mean(shares) < 0.75
    assert index.nprobes[collection.name] == value - 1
    assert collection.parameter_for_recall(queries, exact, 1.0) == (10, 1.0)


def test_a_recall_target_out_of_the_engines_reach_says_what_it_reached() -> None:
    class HalfTheProbes(Probes):
        def search_parameter(self, name: str, k: int) -> SearchParameter:
            return SearchParameter("nprobes", self.nprobes[name], low=1, high=5)

    ids, documents, fields = corpus(200)
    queries = unit_rows(np.random.default_rng(5), 50)
    exact, _ = exact_search(queries, documents, 10, doc_ids=ids)
    collection = EngineCollection(
        HalfTheProbes(), documents, doc_ids=ids, fields=fields, golden="c" * 12, arm="x"
    )
    with pytest.raises(TargetNotReached) as info:
        collection.parameter_for_recall(queries, exact, 0.9)
    assert info.value.ef == 5 and info.value.recall < 0.9


LOSSY = """
import sys
sys.path.insert(0, {folder!r})
from sqlite_index import SqliteIndex
from pytest_embeval.search.vector_index import Found


class Lossy(SqliteIndex):
    # Exact for the incumbent's collection; the candidate's loses its best record on half the queries of
    # each language (rows 0 and 1 of every 4: the languages alternate).

    def search(self, name, queries, k, where):
        found = super().search(name, queries, k + 1, where)
        if "-candidate-" not in name:
            return [Found(f.ids[:k], f.scores[:k]) for f in found]
        return [
            Found(f.ids[1 : k + 1], f.scores[1 : k + 1]) if row % 4 < 2 else Found(f.ids[:k], f.scores[:k])
            for row, f in enumerate(found)
        ]
"""


def test_the_split_is_the_model_part_plus_the_engine_parts_on_the_same_resamples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both arms the same model (an A/A run): the model's part is zero and ties; the candidate's collection
    loses its best record on half the queries, so the whole Δ is the candidate's engine part, and the
    verdict on the engine differs from the one under exact search."""
    (tmp_path / "lossy_index.py").write_text(LOSSY.format(folder=str(EXAMPLE.parent)), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = EngineSpec("service", {}, factory="lossy_index:Lossy")
    index = IndexSpec("service", engine=spec)
    golden = make_golden(index=index, metric=parse_metric("recall@1"), path=tmp_path / "g.yaml")
    run = run_golden(golden, hash_arm(), hash_arm())
    assert run.incumbent.exact is not None and run.candidate.exact is not None
    outcomes = {outcome.stratum.name: outcome for outcome in evaluate_golden(run)}
    for name, outcome in outcomes.items():
        split = outcome.split
        assert split is not None and split.metric == "recall@1" and split.k == 1
        model, engine = split.model["recall@1"], split.engine
        assert model.delta == 0.0 and split.model_ruling.verdict.value == "TIE"
        delta = outcome.comparisons["recall@1"].delta
        parts = model.delta + engine["candidate"].comparison.delta - engine["incumbent"].comparison.delta
        assert delta == pytest.approx(parts)
        assert engine["incumbent"].recall == 1.0 and engine["incumbent"].comparison.delta == 0.0
        assert engine["candidate"].recall == pytest.approx(0.5, abs=0.05)
        # The engine part's interval is the one compare_paired gives with the stratum's own seed.
        rows = np.array(
            [
                i
                for i, q in enumerate(golden.queries)
                if name in ("overall", f"language={q.fields['language']}")
            ]
        )
        again = compare_paired(
            run.candidate.exact.per_query["recall@1"][rows],
            run.candidate.per_query["recall@1"][rows],
            n_resamples=golden.bootstrap,
            rng=np.random.default_rng(stable_seed(golden.seed, name, "recall@1")),
            interval=golden.interval,
        )
        candidate = engine["candidate"].comparison
        assert (again.ci_low, again.ci_high) == (candidate.ci_low, candidate.ci_high)
    assert outcomes["overall"].ruling.verdict.value == "WORSE"


def test_the_split_block_notes_a_verdict_the_engine_and_not_the_model_made() -> None:
    from pytest_embeval.reports.pipeline_contents import index_split_block

    def part(recall: float, delta: float) -> dict[str, Any]:
        return {"recall": recall, "delta": delta, "ci": [delta - 0.01, delta + 0.01]}

    stratum = {
        "stratum": "language=es",
        "n": 85,
        "delta": -0.06,
        "ci": [-0.09, -0.03],
        "verdict": "WORSE",
        "index_split": {
            "metric": "ndcg@10",
            "k": 10,
            "model": {"delta": -0.01, "ci": [-0.04, 0.02], "verdict": "TIE"},
            "engine": {"incumbent": part(0.9, -0.01), "candidate": part(0.7, -0.06)},
        },
    }
    block = index_split_block({}, [stratum, {"stratum": "overall"}])
    assert block is not None
    assert block.caption.startswith("ndcg@10 Δ split") and "recall@10" in block.caption
    assert block.table.rows == (
        (
            "language=es",
            "85",
            "-0.060 [-0.090, -0.030]",
            "WORSE",
            "-0.010 [-0.040, +0.020]",
            "TIE",
            "recall 0.900, -0.010 [-0.020, +0.000]",
            "recall 0.700, -0.060 [-0.070, -0.050]",
        ),
    )
    assert block.notes == (
        "language=es: WORSE on the engine, TIE under exact search: what moved the verdict is the engine, not "
        "the model alone",
    )
    assert index_split_block({}, [{"stratum": "overall"}]) is None
