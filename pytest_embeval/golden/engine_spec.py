"""The vector database a golden file declares as its index: ``index: {chroma: {...}}``, ``index:
{lancedb: {...}}``, or a team's own adapter, ``index: {service: my_company.search:ProdIndex, ...}``.

Read here into an `EngineSpec`, every key checked as the rest of the file's keys are (one line naming the
file, the line and the key). What an engine is and does lives in ``search`` (`search.vector_index`, the
adapters in ``search/engines``); this module only knows each shipped engine's keys and what they take, and
reads a ``service`` factory's keyword arguments off its signature, so that a misspelt key is a collection
error rather than a failure halfway through a run.

Keys every engine takes, which pytest-embeval acts on and never passes to the adapter:

* ``recall_target`` (in (0, 1]): each arm searches at the smallest value of the engine's search parameter
  (Chroma's ``ef_search``, LanceDB's ``nprobes``, an adapter's own) whose recall against exact search of the
  same vectors reaches it; it replaces that parameter's declared value.
* ``keep`` (a boolean, default false): leave each arm's collection in the engine after the run (as
  ``--embeval-keep-collections`` does for every golden set).

A shipped engine's other keys split into where it is (``url``, ``path``, ``timeout``: not part of the plan,
since a run against another server of the same configuration must compare with this one) and how it indexes
and searches (part of the plan, its fingerprint and the control). A ``service`` adapter's keys all count as
how it indexes: pytest-embeval cannot tell them apart.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from pytest_embeval.golden.yaml_nodes import NULL_TAG, Entry, NodeReader, describe_node

__all__ = ["ENGINES", "ENGINE_EXTRAS", "EngineSpec", "read_engine"]

#: The engines a golden file can name as an ``index`` key, besides ``service``.
ENGINES = ("chroma", "lancedb")
#: The Python package each shipped engine needs, and the extra that installs it.
ENGINE_EXTRAS = {"chroma": ("chromadb", "chroma"), "lancedb": ("lancedb", "lancedb")}

RECALL_TARGET = "recall_target"
KEEP = "keep"
#: Keys of every engine that pytest-embeval acts on itself.
COMMON_KEYS = (RECALL_TARGET, KEEP)


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """A declared vector database: which adapter, with which keyword arguments, and what the run does
    around it."""

    #: ``chroma``, ``lancedb``, or ``service`` for an adapter named by ``factory``
    engine: str
    #: the adapter's keyword arguments, as declared, with a shipped engine's defaults filled in
    params: Mapping[str, Any]
    #: ``module:attr`` of a ``service`` adapter; None for a shipped engine
    factory: str | None = None
    recall_target: float | None = None
    keep: bool = False
    #: the names among ``params`` that say where the engine is, not how it indexes (left out of the plan)
    location: tuple[str, ...] = field(default=())

    @property
    def search_parameter(self) -> str | None:
        """The parameter a recall target tunes, for a shipped engine (an adapter says its own)."""
        return _SEARCH_PARAMETER.get((self.engine, str(self.params.get("index_type", ""))))

    def as_dict(self) -> dict[str, Any]:
        """What the plan holds: the engine (and factory), how it indexes and searches, and the recall target
        in place of the search parameter it chooses; not where the engine is, nor ``keep``."""
        declared: dict[str, Any] = {"kind": self.engine}
        if self.factory is not None:
            declared["factory"] = self.factory
        tuned = self.search_parameter if self.recall_target is not None else None
        declared.update(
            (name, value)
            for name, value in self.params.items()
            if name not in self.location and name != tuned and value is not None
        )
        if self.recall_target is not None:
            declared[RECALL_TARGET] = self.recall_target
        return declared


_SEARCH_PARAMETER = {("chroma", ""): "ef_search", ("lancedb", "ivf_pq"): "nprobes"}


@dataclass(frozen=True, slots=True)
class _Key:
    """One key of a shipped engine: how to read its value, its default, and whether it says where the
    engine is rather than how it indexes."""

    read: Callable[[NodeReader, yaml.Node, str], Any]
    default: Any = None
    location: bool = False
    required: bool = False


def _positive_int(minimum: int) -> Callable[[NodeReader, yaml.Node, str], int]:
    return lambda reader, node, key: reader.integer(node, key, minimum)


def _seconds(reader: NodeReader, node: yaml.Node, key: str) -> float:
    value = reader.number(node, key)
    if value is None or value <= 0:
        raise reader.error(node, key, f"must be a number of seconds > 0, got {describe_node(node)}")
    return value


def _url(reader: NodeReader, node: yaml.Node, key: str) -> str:
    value = reader.string(node, key)
    if not value.startswith(("http://", "https://")):
        raise reader.error(node, key, f"must be an http:// or https:// address, got {describe_node(node)}")
    return value


def _folder(reader: NodeReader, node: yaml.Node, key: str) -> str:
    return str(reader.location(node, key))


def _one_of(*choices: str) -> Callable[[NodeReader, yaml.Node, str], str]:
    return lambda reader, node, key: reader.choice(node, key, choices)


_KEYS: Mapping[str, Mapping[str, _Key]] = {
    "chroma": {
        "url": _Key(_url, required=True, location=True),
        "timeout": _Key(_seconds, 30.0, location=True),
        "space": _Key(_one_of("ip", "cosine", "l2"), "ip"),
        "max_neighbors": _Key(_positive_int(2), 16),
        "ef_construction": _Key(_positive_int(1), 100),
        "ef_search": _Key(_positive_int(1), 100),
    },
    "lancedb": {
        "path": _Key(_folder, location=True),
        "index_type": _Key(_one_of("ivf_pq", "flat"), "ivf_pq"),
        "metric": _Key(_one_of("dot", "cosine", "l2"), "dot"),
        "num_partitions": _Key(_positive_int(1)),
        "num_sub_vectors": _Key(_positive_int(1)),
        "nprobes": _Key(_positive_int(1), 20),
        "refine_factor": _Key(_positive_int(1)),
    },
}
#: LanceDB keys that only an IVF-PQ index takes.
_IVF_PQ_ONLY = ("num_partitions", "num_sub_vectors", "nprobes", "refine_factor")


def read_engine(reader: NodeReader, entries: Mapping[str, Entry]) -> EngineSpec:
    """The `EngineSpec` of an ``index`` mapping whose key is ``chroma``, ``lancedb`` or ``service`` (the
    caller has checked that it is one of them)."""
    if "service" in entries:
        return _service(reader, entries)
    engine = next(name for name in entries if name in ENGINES)
    for name, (key_node, _) in entries.items():
        if name != engine:
            raise reader.error(key_node, f"index.{name}", f"index.{engine} is declared: one index only")
    node = entries[engine][1]
    prefix = f"index.{engine}"
    _check_installed(reader, node, prefix, engine)
    declared = (
        {} if isinstance(node, yaml.ScalarNode) and node.tag == NULL_TAG else reader.entries(node, prefix)
    )
    keys = _KEYS[engine]
    reader.check_keys(declared, (*keys, *COMMON_KEYS), prefix)
    params: dict[str, Any] = {}
    for name, key in keys.items():
        if name in declared:
            params[name] = key.read(reader, declared[name][1], f"{prefix}.{name}")
        elif key.required:
            raise reader.error(node, f"{prefix}.{name}", "missing required key")
        else:
            params[name] = key.default
    if engine == "lancedb" and params["index_type"] == "flat":
        for name in (*_IVF_PQ_ONLY, RECALL_TARGET):
            if name in declared:
                problem = "only applies to index_type ivf_pq (a flat index is searched exhaustively: exact)"
                raise reader.error(declared[name][0], f"{prefix}.{name}", problem)
        params = {name: value for name, value in params.items() if name not in _IVF_PQ_ONLY}
    spec = EngineSpec(
        engine=engine,
        params=params,
        location=tuple(name for name, key in keys.items() if key.location),
        **_common(reader, declared, prefix),
    )
    tuned = spec.search_parameter
    if spec.recall_target is not None and tuned is not None and tuned in declared:
        problem = f"cannot be combined with {tuned}: the target chooses each arm's {tuned} (give one of them)"
        raise reader.error(declared[RECALL_TARGET][0], f"{prefix}.{RECALL_TARGET}", problem)
    return spec


def _common(reader: NodeReader, declared: Mapping[str, Entry], prefix: str) -> dict[str, Any]:
    """``recall_target`` and ``keep``, when declared."""
    common: dict[str, Any] = {}
    if RECALL_TARGET in declared:
        node = declared[RECALL_TARGET][1]
        target = reader.number(node, f"{prefix}.{RECALL_TARGET}")
        if target is None or not 0 < target <= 1:
            problem = f"must be a number in (0, 1], got {describe_node(node)}"
            raise reader.error(node, f"{prefix}.{RECALL_TARGET}", problem)
        common["recall_target"] = target
    if KEEP in declared:
        node = declared[KEEP][1]
        value = reader.construct(node, f"{prefix}.{KEEP}")
        if not isinstance(value, bool):
            raise reader.error(node, f"{prefix}.{KEEP}", f"must be true or false, got {describe_node(node)}")
        common["keep"] = value
    return common


def _check_installed(reader: NodeReader, node: yaml.Node, key: str, engine: str) -> None:
    """A shipped engine whose client library is missing: the extra that installs it, at collection."""
    package, extra = ENGINE_EXTRAS[engine]
    if importlib.util.find_spec(package) is None:
        problem = f"needs {package}, which is not installed: pip install 'pytest-embeval[{extra}]'"
        raise reader.error(node, key, problem)


def _service(reader: NodeReader, entries: Mapping[str, Entry]) -> EngineSpec:
    """``index: {service: module:attr, ...}``: the factory is imported and every other key (but the common
    ones) checked against its keyword arguments."""
    key_node, node = entries["service"]
    factory_name = reader.string(node, "index.service")
    module_name, colon, attribute = factory_name.partition(":")
    if not colon or not all(part.isidentifier() for part in (*module_name.split("."), *attribute.split("."))):
        problem = f"must be 'module:attr' naming an adapter factory, got {describe_node(node)}"
        raise reader.error(node, "index.service", problem)
    try:
        factory: Any = importlib.import_module(module_name)
    except Exception as exc:
        problem = f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        raise reader.error(node, "index.service", problem.splitlines()[0]) from None
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise reader.error(
                node, "index.service", f"module {module_name!r} has no attribute {attribute!r}"
            )
        factory = getattr(factory, part)
    if not callable(factory):
        raise reader.error(node, "index.service", f"{factory_name} is not callable (a class or a function)")
    declared = {name: entry for name, entry in entries.items() if name != "service"}
    accepted = _keyword_arguments(factory)
    params: dict[str, Any] = {}
    for name, (name_node, value_node) in declared.items():
        if name in COMMON_KEYS:
            continue
        if accepted is not None and name not in accepted[0]:
            listed = ", ".join([*accepted[0], *COMMON_KEYS])
            problem = f"unknown key: {factory_name} takes no argument {name!r} (keys: {listed})"
            raise reader.error(name_node, f"index.{name}", problem)
        params[name] = reader.construct(value_node, f"index.{name}")
    if accepted is not None:
        missing = [name for name in accepted[1] if name not in params]
        if missing:
            raise reader.error(
                key_node, f"index.{missing[0]}", f"missing required key (an argument of {factory_name})"
            )
    return EngineSpec(
        engine="service", params=params, factory=factory_name, **_common(reader, declared, "index")
    )


def _keyword_arguments(factory: Callable[..., Any]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """A factory's keyword arguments and the required ones among them; None when it takes ``**kwargs`` or
    its signature cannot be read (a builtin): then the adapter checks its arguments itself."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    names: list[str] = []
    required: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:
            return None
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            names.append(parameter.name)
            if parameter.default is parameter.empty:
                required.append(parameter.name)
    return tuple(names), tuple(required)
