"""Arm specs resolved to retrievers: ``bm25[?…]`` (`bm25`), ``rrf:A,B[?k=N]`` (`fusion`, whose parts are
resolved here too), anything else an embedding model (`model_specs`, searched by `dense`); and the parts of
a fused arm as the report shows them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_embeval.arms.dense import DenseRetriever
from pytest_embeval.arms.devices import DEFAULT_DEVICE
from pytest_embeval.arms.embedding import Arm
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.arms.retriever import IndexStats, Retriever, Searcher

__all__ = ["Component", "components", "resolve_arm"]


def _named(spec: str, prefix: str) -> bool:
    """Whether ``spec`` is the scheme ``prefix`` rather than a path that happens to start with it."""
    return spec.startswith(prefix) and not os.path.exists(spec)


def resolve_arm(spec_or_object: str | object, *, device: str = DEFAULT_DEVICE) -> Retriever:
    """An arm from a model spec or object: a `Retriever` as is; ``bm25`` / ``bm25?k1=…&b=…`` (`bm25`);
    ``rrf:A,B[?k=N]`` (`fusion`); a model spec with ``dims``, ``precision`` or ``rescore`` parameters as that
    variant of its model (`variants`); anything else through `model_specs.resolve_model`, as an embedding arm
    (on ``device`` unless its spec says ``device=``). Raises `embedding.EncoderError` (one line naming the
    spec) when it cannot be resolved."""
    if isinstance(spec_or_object, Retriever) and not isinstance(spec_or_object, Arm):
        return spec_or_object
    if isinstance(spec_or_object, str):
        spec = spec_or_object.strip()
        if spec == "bm25" or _named(spec, "bm25?"):
            from pytest_embeval.arms.bm25 import bm25_arm

            return bm25_arm(spec)
        if _named(spec, "rrf:"):
            from pytest_embeval.arms.fusion import rrf_arm

            return rrf_arm(spec, functools.partial(resolve_arm, device=device))
        if not os.path.exists(spec):
            from pytest_embeval.arms.variants import split_variant, variant_arm

            model, asked = split_variant(spec)
            if asked is not None:
                return variant_arm(DenseRetriever(resolve_model(model, device=device)), asked, spec)
    return DenseRetriever(resolve_model(spec_or_object, device=device))


@dataclass(frozen=True, slots=True)
class Component:
    """One arm inside a fused arm, as the report shows it."""

    spec: str
    kind: str
    fingerprint: str
    prompts: Mapping[str, str]
    index: IndexStats | None
    parts: tuple[Component, ...]


def components(retriever: Retriever, searcher: Any, depth: int) -> tuple[Component, ...]:
    """The arms a fused arm fuses, with their own indexes measured at ``depth``; () for other arms.
    ``searcher`` is what ``retriever.open`` returned (a fused searcher keeps its parts' searchers)."""
    parts: Sequence[Searcher] = getattr(searcher, "parts", ())
    return tuple(
        Component(
            spec=part.spec,
            kind=part.kind,
            fingerprint=part.fingerprint,
            prompts=part.prompts,
            index=opened.index_stats(depth),
            parts=components(part, opened, depth),
        )
        for part, opened in zip(retriever.parts, parts, strict=True)
    )
