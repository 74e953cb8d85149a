"""The records of an arm inside a golden set's record: its model, index, endpoint usage, components and
capacity (what this run measured and its projection to production), as pure functions of plain data (see
`json_report`, which builds the rest of the report around them)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from pytest_embeval.arms.dense import DenseRetriever
from pytest_embeval.arms.resolve import Component
from pytest_embeval.arms.retriever import IndexStats, Retriever
from pytest_embeval.arms.usage import UsageCount, cost
from pytest_embeval.core.capacity import ArmCapacity, Estimate, Latency, Production, TokenCount, project
from pytest_embeval.run.pipeline import ArmResult

Record = dict[str, Any]


def number(value: float) -> float | None:
    """NaN (undefined) and infinite (unbounded interval) values are None: strict JSON has neither."""
    return float(value) if math.isfinite(value) else None


def _latency_record(latency: Latency) -> Record:
    # Four significant digits: the timer's noise is larger than that from one run to the next.
    return {"p50": float(f"{latency.p50_ms:.4g}"), "p95": float(f"{latency.p95_ms:.4g}")}


def index_record(stats: IndexStats) -> Record:
    """One arm's index: kind, dimension, memory; for hnsw also its parameters as built, for a vector database
    its version and parameters as the engine reports them; for both their ANN recall against exact search
    and, under ``timings``, their per-query latency and exact search's (and an engine's address and
    collection, which change from run to run)."""
    record: Record = {"kind": stats.kind, "dimension": stats.dimension, "memory_bytes": stats.memory_bytes}
    measured = stats.hnsw or stats.engine
    if stats.hnsw is not None:
        record.update(stats.hnsw.parameters)
    if stats.engine is not None:
        engine = stats.engine
        record.update(
            version=engine.version,
            parameters=dict(engine.parameters),
            search_parameter=engine.search_parameter,
        )
    if measured is not None:
        if measured.recall_target is not None:
            record["recall_target"] = measured.recall_target
        record["ann_recall"] = number(measured.ann_recall)
        record["sample"] = measured.sample
        if measured.filtered:
            record["filtered"] = True
        if stats.engine is not None and stats.engine.kept:
            record["kept"] = True
        record["timings"] = {
            "latency_ms": _latency_record(measured.latency),
            "exact_latency_ms": _latency_record(measured.exact_latency),
        }
    if stats.engine is not None:
        # Where this run found the engine and what it named the collection: a fresh name (and, without a
        # path, a temporary folder) every run, so, like a timing, they differ between runs that agree.
        record["timings"].update(address=stats.engine.address, collection=stats.engine.collection)
    return record


def arm_record(result: ArmResult, production: Production | None) -> Record:
    record: Record = {
        "spec": result.arm.spec,
        "fingerprint": result.arm.fingerprint,
        "prompts": dict(result.arm.prompts),
        "index": None if result.index is None else index_record(result.index),
        "usage": None if result.usage is None else usage_record(result.usage, _price(result.arm)),
    }
    if result.capacity is not None and production is not None:
        record["capacity"] = capacity_record(result.capacity, production)
    # Only for the arms that are not embedding arms, so embedding arms' records keep their shape.
    if result.arm.kind != "dense":
        record["kind"] = result.arm.kind
    if result.components:
        record["components"] = [_component_record(part) for part in result.components]
    return record


def device_record(arm: Retriever) -> Record | None:
    """An embedding arm's `devices.DeviceRecord` as a dict (a fused arm's: its first embedding part's);
    None for an arm that does not say where it runs (a custom encoder, an endpoint, BM25)."""
    if isinstance(arm, DenseRetriever):
        return None if arm.arm.device is None else dict(arm.arm.device.as_dict())
    return next((found for part in arm.parts if (found := device_record(part)) is not None), None)


def _price(arm: Retriever) -> float | None:
    """An embedding arm's price per million tokens; arms that embed nothing themselves have none."""
    return arm.arm.price_per_million_tokens if isinstance(arm, DenseRetriever) else None


def _component_record(part: Component) -> Record:
    record: Record = {
        "spec": part.spec,
        "kind": part.kind,
        "fingerprint": part.fingerprint,
        "prompts": dict(part.prompts),
        "index": None if part.index is None else index_record(part.index),
    }
    if part.parts:
        record["components"] = [_component_record(inner) for inner in part.parts]
    return record


def usage_record(usage: UsageCount, price_per_million_tokens: float | None) -> Record:
    """What an endpoint arm spent on one golden set: ``tokens`` as the endpoint reported them, ``requests``,
    ``cached_tokens`` (what the texts served from the embedding cache had cost: not spent), and with a
    declared price their ``cost`` and ``cached_cost`` (None without one)."""
    return {
        "tokens": usage.tokens,
        "requests": usage.requests,
        "cached_tokens": usage.cached_tokens,
        "price_per_million_tokens": price_per_million_tokens,
        "cost": cost(usage.tokens, price_per_million_tokens),
        "cached_cost": cost(usage.cached_tokens, price_per_million_tokens),
    }


def _tokens_record(count: TokenCount | None) -> Record | None:
    if count is None:
        return None
    return {**dataclasses.asdict(count), "per_text": number(count.per_text)}


def _estimate_record(estimate: Estimate | None) -> Record | None:
    return None if estimate is None else {"value": estimate.value, "assumes": estimate.assumes}


def capacity_record(capacity: ArmCapacity, production: Production) -> Record:
    """One arm's capacity: what this run measured, and its projection to ``production`` (each figure with
    what it assumes). Throughput and latency, and what is derived from latency, are under ``timings``."""
    throughput = capacity.throughput
    encoding = None
    if throughput is not None:
        encoding = {
            "texts": throughput.texts,
            "seconds": float(f"{throughput.seconds:.4g}"),
            "texts_per_second": float(f"{throughput.texts_per_second:.4g}"),
            "tokens_per_second": (
                None if throughput.tokens_per_second is None else float(f"{throughput.tokens_per_second:.4g}")
            ),
        }
    projection = project(capacity, production)
    projected: Record = {
        "documents": projection.documents,
        "index_bytes": _estimate_record(projection.index_bytes),
        "embedding_tokens": _estimate_record(projection.embedding_tokens),
        "embedding_cost": _estimate_record(projection.embedding_cost),
        "memory_cost_per_month": _estimate_record(projection.memory_cost_per_month),
    }
    if projection.query_tokens_per_month is not None:
        projected["query_tokens_per_month"] = _estimate_record(projection.query_tokens_per_month)
        projected["query_cost_per_month"] = _estimate_record(projection.query_cost_per_month)
        projected["timings"] = {
            "search_core_hours_per_month": _estimate_record(projection.search_core_hours_per_month)
        }
    return {
        "measured": {
            "documents": capacity.documents,
            "dimension": capacity.dimension,
            "dtype": capacity.dtype,
            "bytes_per_vector": capacity.bytes_per_vector,
            "index": capacity.index_kind,
            "index_bytes": capacity.index_bytes,
            "document_tokens": _tokens_record(capacity.document_tokens),
            "query_tokens": _tokens_record(capacity.query_tokens),
            "price_per_million_tokens": capacity.price_per_million_tokens,
            "latency_ef": capacity.latency_ef,
            # encoding is None when no document was encoded in this run (all from the embedding cache)
            "timings": {"encoding": encoding, "latency_ms": _latency_record(capacity.latency)},
        },
        "production": projected,
    }
