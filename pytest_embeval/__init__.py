"""pytest-embeval: an embedding-model change as a regression test on your own golden set.

The library surface, for use without pytest::

    from pytest_embeval import evaluate, compare_paired, paired_n, decide, load_golden

and, for a sample drawn by a stratified design, ``SampleDesign`` (``compare_paired(..., design=...)``); for
a ``conftest.py`` that builds an arm in Python, ``sentence_transformer_arm`` and ``openai_arm`` (with
``EndpointOptions``); for tooling that compares two JSON reports, ``control_diff``; for an adapter to a
vector database, its protocol ``VectorIndex`` (with ``TunableIndex``) and what it is given and returns,
``Records``, ``Found`` and ``SearchParameter``.

Everything here is imported on first use (``import pytest_embeval`` happens in every pytest run of anyone who
installs the plugin, so it must stay cheap); the modules behind these names may move between releases, these
names do not. The package's folders follow the pipeline (see ``docs/development.md``): ``core`` (metrics,
statistics, the verdict rule) ← ``files`` ← ``golden`` ← ``search`` ← ``arms`` ← ``run`` ← ``cache`` /
``judging`` ← ``reports`` / ``judge_page`` ← ``plugin`` / ``cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_SURFACE = {
    "evaluate": "pytest_embeval.core.metrics",
    "parse_metric": "pytest_embeval.core.metrics",
    "compare_paired": "pytest_embeval.core.stats",
    "paired_bootstrap_ci": "pytest_embeval.core.stats",
    "sign_test": "pytest_embeval.core.stats",
    "minimum_detectable_effect": "pytest_embeval.core.stats",
    "paired_n": "pytest_embeval.core.stats",
    "PairedComparison": "pytest_embeval.core.stats",
    "SampleDesign": "pytest_embeval.core.sample_design",
    "decide": "pytest_embeval.core.verdict",
    "StratumRuling": "pytest_embeval.core.verdict",
    "Verdict": "pytest_embeval.core.verdict",
    "load_golden": "pytest_embeval.golden.loader",
    "GoldenSet": "pytest_embeval.golden.schema",
    "GoldenError": "pytest_embeval.golden.data_files",
    "sentence_transformer_arm": "pytest_embeval.arms.sentence_transformer",
    "openai_arm": "pytest_embeval.arms.endpoint",
    "EndpointOptions": "pytest_embeval.arms.endpoint",
    "control_diff": "pytest_embeval.reports.json_report",
    "VectorIndex": "pytest_embeval.search.vector_index",
    "TunableIndex": "pytest_embeval.search.vector_index",
    "Records": "pytest_embeval.search.vector_index",
    "Found": "pytest_embeval.search.vector_index",
    "SearchParameter": "pytest_embeval.search.vector_index",
}

__all__ = [
    "EndpointOptions",
    "Found",
    "GoldenError",
    "GoldenSet",
    "PairedComparison",
    "Records",
    "SampleDesign",
    "SearchParameter",
    "StratumRuling",
    "TunableIndex",
    "VectorIndex",
    "Verdict",
    "compare_paired",
    "control_diff",
    "decide",
    "evaluate",
    "load_golden",
    "minimum_detectable_effect",
    "openai_arm",
    "paired_bootstrap_ci",
    "paired_n",
    "parse_metric",
    "sentence_transformer_arm",
    "sign_test",
]

if TYPE_CHECKING:
    from pytest_embeval.arms.endpoint import EndpointOptions, openai_arm
    from pytest_embeval.arms.sentence_transformer import sentence_transformer_arm
    from pytest_embeval.core.metrics import evaluate, parse_metric
    from pytest_embeval.core.sample_design import SampleDesign
    from pytest_embeval.core.stats import (
        PairedComparison,
        compare_paired,
        minimum_detectable_effect,
        paired_bootstrap_ci,
        paired_n,
        sign_test,
    )
    from pytest_embeval.core.verdict import StratumRuling, Verdict, decide
    from pytest_embeval.golden.data_files import GoldenError
    from pytest_embeval.golden.loader import load_golden
    from pytest_embeval.golden.schema import GoldenSet
    from pytest_embeval.reports.json_report import control_diff
    from pytest_embeval.search.vector_index import Found, Records, SearchParameter, TunableIndex, VectorIndex


def __getattr__(name: str) -> Any:
    module = _SURFACE.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_embeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SURFACE])
