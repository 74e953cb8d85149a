"""Control fingerprints and HNSW index statistics through pytest, with the fake encoders of fake_models.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Golden = Callable[..., Path]

ARMS = ("--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad_english")

#: A conftest that makes the candidate embed an older corpus snapshot (the last document missing, so with
#: 60 documents the depth differs too), the kind of drift the control check exists to catch; normal runs
#: cannot produce it, both arms share one code path.
DRIFTING_CANDIDATE = """
import dataclasses

from pytest_embeval.run import golden_run

original = golden_run.run_arm


def drifting(golden, arm, role, **kwargs):
    if role == "candidate":
        golden = dataclasses.replace(golden, documents=golden.documents[:-1])
    return original(golden, arm, role, **kwargs)


def pytest_configure(config):
    golden_run.run_arm = drifting


def pytest_unconfigure(config):
    golden_run.run_arm = original
"""


#: Models whose vectors are in general position (the axis vectors of fake_models.py give an HNSW graph of
#: equal similarities, which hnswlib cannot search to the full depth): document i is a seeded random vector,
#: query i the same vector plus noise, more of it for the candidate.
NOISY_MODELS = """
import numpy as np


class Noisy:
    def __init__(self, name, noise):
        self.name = name
        self.noise = noise

    def encode_document(self, texts):
        return np.stack([np.random.default_rng(int(t.split()[-1])).standard_normal(32) for t in texts])

    def encode_query(self, texts):
        rows = self.encode_document(texts)
        seeds = [1000 + int(t.split()[-1]) for t in texts]
        return rows + self.noise * np.stack([np.random.default_rng(s).standard_normal(32) for s in seeds])


good = Noisy("good", 0.1)
noisy = Noisy("noisy", 1.0)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--embeval", "-p", "no:cacheprovider", *args)


def test_arms_that_consumed_different_inputs_are_an_error_naming_the_component(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    pytester.makeconftest(DRIFTING_CANDIDATE)
    report = pytester.path / "report.json"
    result = run(pytester, *ARMS, f"--embeval-json={report}")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "support: refusing to compare: the arms differ in what must be held constant: "
            "corpus (incumbent sha256:*…, candidate sha256:*…; golden set sha256:*…); "
            "depth (incumbent sha256:*…, candidate sha256:*…; golden set sha256:*…)"
        ]
    )
    assert "Traceback" not in result.stdout.str()
    errors = json.loads(report.read_text(encoding="utf-8"))["errors"]
    assert [(e["path"], e["role"], e["spec"]) for e in errors] == [("support.yaml", None, None)]
    assert errors[0]["message"].startswith("refusing to compare: the arms differ")


def _without_timings(report: dict[str, Any]) -> dict[str, Any]:
    for golden in report["golden_sets"]:
        for role in ("incumbent", "candidate"):
            del golden[role]["index"]["timings"]
    return report


def test_hnsw_index_is_built_as_declared_and_reported_per_arm(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(index={"hnsw": {"M": 8, "ef_construction": 40, "ef_search": 16}})
    pytester.makepyfile(noisy_models=NOISY_MODELS)
    arms = ("--embeval-incumbent=noisy_models:good", "--embeval-candidate=noisy_models:noisy")
    serial = run(pytester, *arms, f"--embeval-json={pytester.path / 'serial.json'}")
    # 60 documents: the ranked depth is 60, so hnswlib searches with ef 60, not the declared 16.
    serial.stdout.fnmatch_lines(
        [
            "support (support.yaml)*",
            "overall*",
            "incumbent index: hnsw M=8 ef_construction=40 ef=60, ANN recall@60 *.* (48 queries), * KiB, "
            "latency p50 * ms / p95 * ms (exact * ms / * ms)",
            "candidate index: hnsw M=8 ef_construction=40 ef=60, ANN recall@60 *",
        ]
    )
    parallel = run(pytester, *arms, f"--embeval-json={pytester.path / 'parallel.json'}", "-n", "2")
    first = json.loads((pytester.path / "serial.json").read_text(encoding="utf-8"))
    second = json.loads((pytester.path / "parallel.json").read_text(encoding="utf-8"))
    assert parallel.ret == serial.ret
    (record,) = first["golden_sets"]
    index = record["incumbent"]["index"]
    assert (index["kind"], index["M"], index["ef_construction"], index["ef"], index["seed"]) == (
        "hnsw",
        8,
        40,
        60,
        0,
    )
    assert index["sample"] == 48 and 0 <= index["ann_recall"] <= 1
    assert set(record["control"]["components"]) == {"corpus", "queries", "qrels", "index", "depth", "plan"}
    assert record["control"]["fingerprint"].startswith("sha256:")
    # Everything but wall-clock timings is identical with and without xdist.
    assert _without_timings(first) == _without_timings(second)
