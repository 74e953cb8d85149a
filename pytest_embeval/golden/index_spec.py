"""A golden file's ``index:`` setting read from its YAML node: exact search, an HNSW graph with its
parameters or recall target, a FAISS index from a factory string with its search parameter or recall target,
or a vector database (`engine_spec`). FAISS must be importable where a golden file asks for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from pytest_embeval.golden.engine_spec import ENGINES, read_engine
from pytest_embeval.golden.schema import FAISS_PARAMETERS, HNSW_DEFAULTS, HNSW_RECALL_TARGET, IndexSpec
from pytest_embeval.golden.yaml_nodes import NULL_TAG, Entry, NodeReader, describe_node

__all__ = ["read_index"]


def read_index(reader: NodeReader, node: yaml.Node) -> IndexSpec:
    """The ``index:`` setting: ``exact``, ``hnsw`` or ``{hnsw: {...}}`` with its parameters and recall
    target, a FAISS factory string (`_faiss_index`), or a vector database (`engine_spec.read_engine`)."""
    expected = (
        "'exact', {hnsw: {M: 16, ef_construction: 200, ef_search: 128}} or {faiss: 'IVF1024,PQ48', "
        "nprobe: 16}"
    )
    if isinstance(node, yaml.ScalarNode):
        if node.value in ("exact", "hnsw"):
            return IndexSpec(str(node.value))
        raise reader.error(node, "index", f"must be {expected}, got {describe_node(node)}")
    entries = reader.entries(node, "index")
    if "faiss" in entries:
        return _faiss_index(reader, entries)
    if "service" in entries or any(name in entries for name in ENGINES):
        engine = read_engine(reader, entries)
        return IndexSpec(engine.engine, engine=engine)
    reader.check_keys(entries, ("hnsw", "faiss", *ENGINES, "service"), "index")
    if "hnsw" not in entries:
        raise reader.error(node, "index", f"must be {expected}, got an empty mapping")
    params_node = entries["hnsw"][1]
    if isinstance(params_node, yaml.ScalarNode) and params_node.tag == NULL_TAG:
        return IndexSpec("hnsw")
    params = reader.entries(params_node, "index.hnsw")
    reader.check_keys(params, (*HNSW_DEFAULTS, HNSW_RECALL_TARGET), "index.hnsw")
    # M = 1 makes hnswlib's level multiplier 1/log(M) infinite: it cannot build the graph.
    minimum = {"M": 2}
    values: dict[str, Any] = {
        name: reader.integer(node, f"index.hnsw.{name}", minimum.get(name, 1))
        for name, (_, node) in params.items()
        if name != HNSW_RECALL_TARGET
    }
    if HNSW_RECALL_TARGET not in params:
        return IndexSpec("hnsw", **values)
    key_node, target_node = params[HNSW_RECALL_TARGET]
    key = f"index.hnsw.{HNSW_RECALL_TARGET}"
    if "ef_search" in params:
        problem = "cannot be combined with ef_search: the target chooses each arm's ef (give one of them)"
        raise reader.error(key_node, key, problem)
    target = reader.number(target_node, key)
    if target is None or not 0 < target <= 1:
        raise reader.error(target_node, key, f"must be a number in (0, 1], got {describe_node(target_node)}")
    return IndexSpec("hnsw", **values, recall_target=target)


def _faiss_index(reader: NodeReader, entries: Mapping[str, Entry]) -> IndexSpec:
    """``{faiss: FACTORY, nprobe | efSearch | recall_target}``: the factory string FAISS builds, and at
    most one way to set its search parameter. FAISS must be importable (the ``[faiss]`` extra)."""
    reader.check_keys(entries, ("faiss", *FAISS_PARAMETERS, HNSW_RECALL_TARGET), "index")
    key_node, factory_node = entries["faiss"]
    factory = reader.word(factory_node, "index.faiss", "a FAISS index factory string such as 'IVF1024,PQ48'")
    given = [name for name in (*FAISS_PARAMETERS, HNSW_RECALL_TARGET) if name in entries]
    if len(given) > 1:
        second = entries[given[1]][0]
        problem = f"give one of {', '.join(given)}: the recall target chooses the parameter per arm"
        raise reader.error(second, f"index.{given[1]}", problem)
    try:
        import faiss  # noqa: F401  (declared: FAISS builds the index)
    except ImportError:
        problem = "needs FAISS, which is not installed: pip install 'pytest-embeval[faiss]'"
        raise reader.error(key_node, "index.faiss", problem) from None
    if not given:
        return IndexSpec("faiss", factory=factory)
    name = given[0]
    value_node = entries[name][1]
    if name != HNSW_RECALL_TARGET:
        return IndexSpec(
            "faiss", factory=factory, faiss_parameter=(name, reader.integer(value_node, f"index.{name}", 1))
        )
    target = reader.number(value_node, f"index.{name}")
    if target is None or not 0 < target <= 1:
        raise reader.error(
            value_node, f"index.{name}", f"must be a number in (0, 1], got {describe_node(value_node)}"
        )
    return IndexSpec("faiss", factory=factory, recall_target=target)
