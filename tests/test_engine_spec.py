"""A vector database declared as a golden file's index: the keys of Chroma, LanceDB and a service adapter,
their defaults, what enters the plan, and the one-line error for every key that cannot be used."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_golden import BASE, write_set

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden

ADAPTER = """
class Adapter:
    def __init__(self, url, ef_search=10, *, shards=1):
        self.url = url

def anything(**params):
    return params

not_callable = 3
"""


@pytest.fixture
def adapter_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An importable module ``my_adapters`` with a factory of known keyword arguments."""
    (tmp_path / "my_adapters.py").write_text(ADAPTER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_adapters"
    sys.modules.pop("my_adapters", None)


def index_of(root: Path, index_yaml: str):  # type: ignore[no-untyped-def]
    return load_golden(write_set(root, BASE + index_yaml)).index


def error_of(root: Path, index_yaml: str) -> str:
    with pytest.raises(GoldenError) as info:
        load_golden(write_set(root, BASE + index_yaml))
    return str(info.value)


def test_chroma_takes_its_hnsw_keys_with_defaults_and_leaves_where_it_is_out_of_the_plan(
    tmp_path: Path,
) -> None:
    index = index_of(tmp_path, "index: {chroma: {url: 'http://127.0.0.1:8000', ef_search: 64}}\n")
    assert index.kind == "chroma"
    assert index.engine is not None
    assert dict(index.engine.params) == {
        "url": "http://127.0.0.1:8000",
        "timeout": 30.0,
        "space": "ip",
        "max_neighbors": 16,
        "ef_construction": 100,
        "ef_search": 64,
    }
    assert index.as_dict() == {
        "kind": "chroma",
        "space": "ip",
        "max_neighbors": 16,
        "ef_construction": 100,
        "ef_search": 64,
    }
    # Another server of the same configuration plans the same comparison.
    other = index_of(tmp_path, "index: {chroma: {url: 'http://10.0.0.5:9000', ef_search: 64, timeout: 2}}\n")
    assert other.as_dict() == index.as_dict()


def test_a_recall_target_replaces_the_search_parameter_it_chooses(tmp_path: Path) -> None:
    chroma = index_of(tmp_path, "index: {chroma: {url: 'http://h:1', recall_target: 0.95, keep: true}}\n")
    assert chroma.engine is not None and chroma.engine.recall_target == 0.95 and chroma.engine.keep
    assert "ef_search" not in chroma.as_dict() and chroma.as_dict()["recall_target"] == 0.95
    assert "keep" not in chroma.as_dict()
    lance = index_of(tmp_path, "index: {lancedb: {recall_target: 0.9, refine_factor: 4}}\n")
    assert lance.as_dict() == {
        "kind": "lancedb",
        "index_type": "ivf_pq",
        "metric": "dot",
        "refine_factor": 4,
        "recall_target": 0.9,
    }


def test_lancedb_defaults_to_ivf_pq_and_a_flat_index_takes_no_ivf_keys(tmp_path: Path) -> None:
    lance = index_of(tmp_path, "index: {lancedb: {path: tables}}\n")
    assert lance.engine is not None
    assert lance.engine.params["path"] == str(tmp_path.resolve() / "tables")
    assert lance.engine.params["nprobes"] == 20 and lance.engine.search_parameter == "nprobes"
    flat = index_of(tmp_path, "index: {lancedb: {index_type: flat}}\n")
    assert flat.engine is not None and flat.engine.search_parameter is None
    assert flat.as_dict() == {"kind": "lancedb", "index_type": "flat", "metric": "dot"}
    assert index_of(tmp_path, "index: {lancedb: }\n").engine is not None


@pytest.mark.parametrize(
    ("index_yaml", "expected"),
    [
        (
            "index: {chroma: {url: 'http://h:1', ef_serach: 3}}\n",
            "golden.yaml:7: index.chroma.ef_serach: unknown key, did you mean 'ef_search'?",
        ),
        ("index: {chroma: {space: ip}}\n", "golden.yaml:7: index.chroma.url: missing required key"),
        (
            "index: {chroma: {url: '127.0.0.1:8000'}}\n",
            "golden.yaml:7: index.chroma.url: must be an http:// or https:// address, got 127.0.0.1:8000",
        ),
        (
            "index: {chroma: {url: 'http://h:1', max_neighbors: 1}}\n",
            "golden.yaml:7: index.chroma.max_neighbors: must be an integer >= 2, got 1",
        ),
        (
            "index: {chroma: {url: 'http://h:1', timeout: 0}}\n",
            "golden.yaml:7: index.chroma.timeout: must be a number of seconds > 0, got 0",
        ),
        (
            "index: {chroma: {url: 'http://h:1', ef_search: 8, recall_target: 0.9}}\n",
            "golden.yaml:7: index.chroma.recall_target: cannot be combined with ef_search: the target "
            "chooses each arm's ef_search (give one of them)",
        ),
        (
            "index: {lancedb: {recall_target: 1.5}}\n",
            "golden.yaml:7: index.lancedb.recall_target: must be a number in (0, 1], got 1.5",
        ),
        (
            "index: {lancedb: {index_type: flat, nprobes: 4}}\n",
            "golden.yaml:7: index.lancedb.nprobes: only applies to index_type ivf_pq (a flat index is "
            "searched exhaustively: exact)",
        ),
        (
            "index: {lancedb: {index_type: hnsw}}\n",
            "golden.yaml:7: index.lancedb.index_type: must be 'ivf_pq' or 'flat', got hnsw",
        ),
        (
            "index: {lancedb: {keep: yes please}}\n",
            "golden.yaml:7: index.lancedb.keep: must be true or false, got yes please",
        ),
        (
            "index: {lancedb: {}, hnsw: {M: 8}}\n",
            "golden.yaml:7: index.hnsw: index.lancedb is declared: one index only",
        ),
        (
            "index: {faiss_ivf: {}}\n",
            "golden.yaml:7: index.faiss_ivf: unknown key (expected one of: hnsw, chroma, lancedb, service)",
        ),
    ],
)
def test_a_key_an_engine_cannot_use_is_one_line_naming_file_line_and_key(
    tmp_path: Path, index_yaml: str, expected: str
) -> None:
    assert error_of(tmp_path, index_yaml).endswith(expected)


def test_a_service_factorys_keys_are_its_keyword_arguments(tmp_path: Path, adapter_module: str) -> None:
    index = index_of(
        tmp_path, f"index: {{service: '{adapter_module}:Adapter', url: x, shards: 2, keep: true}}\n"
    )
    assert index.kind == "service" and index.engine is not None
    assert index.engine.factory == "my_adapters:Adapter" and index.engine.keep
    assert dict(index.engine.params) == {"url": "x", "shards": 2}
    assert index.as_dict() == {"kind": "service", "factory": "my_adapters:Adapter", "url": "x", "shards": 2}
    # A factory taking **kwargs checks its own keys.
    free = index_of(tmp_path, f"index: {{service: '{adapter_module}:anything', whatever: [1, 2]}}\n")
    assert free.engine is not None and dict(free.engine.params) == {"whatever": [1, 2]}


@pytest.mark.parametrize(
    ("index_yaml", "expected"),
    [
        (
            "index: {service: 'my_adapters:Adapter', url: x, shard: 2}\n",
            "golden.yaml:7: index.shard: unknown key: my_adapters:Adapter takes no argument 'shard' (keys: "
            "url, ef_search, shards, recall_target, keep)",
        ),
        (
            "index: {service: 'my_adapters:Adapter', ef_search: 4}\n",
            "golden.yaml:7: index.url: missing required key (an argument of my_adapters:Adapter)",
        ),
        (
            "index: {service: 'no_such_module_here:Adapter'}\n",
            "golden.yaml:7: index.service: cannot import module 'no_such_module_here': ModuleNotFoundError: "
            "No module named 'no_such_module_here'",
        ),
        (
            "index: {service: 'my_adapters:Missing'}\n",
            "golden.yaml:7: index.service: module 'my_adapters' has no attribute 'Missing'",
        ),
        (
            "index: {service: 'my_adapters:not_callable'}\n",
            "golden.yaml:7: index.service: my_adapters:not_callable is not callable (a class or a function)",
        ),
        (
            "index: {service: my_adapters}\n",
            "golden.yaml:7: index.service: must be 'module:attr' naming an adapter factory, got my_adapters",
        ),
    ],
)
def test_a_service_that_cannot_be_used_is_a_collection_error_naming_the_key(
    tmp_path: Path, adapter_module: str, index_yaml: str, expected: str
) -> None:
    assert error_of(tmp_path, index_yaml).endswith(expected)


def test_a_shipped_engine_without_its_library_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "chromadb" else real(name, *a)
    )
    assert error_of(tmp_path, "index: {chroma: {url: 'http://h:1'}}\n").endswith(
        "golden.yaml:7: index.chroma: needs chromadb, which is not installed: "
        "pip install 'pytest-embeval[chroma]'"
    )


def test_the_engine_enters_the_plan_fingerprint(tmp_path: Path) -> None:
    exact = load_golden(write_set(tmp_path, BASE))
    flat = load_golden(write_set(tmp_path, BASE + "index: {lancedb: {index_type: flat}}\n"))
    ivf = load_golden(write_set(tmp_path, BASE + "index: {lancedb: {nprobes: 4}}\n"))
    assert len({exact.plan_fingerprint(), flat.plan_fingerprint(), ivf.plan_fingerprint()}) == 3
