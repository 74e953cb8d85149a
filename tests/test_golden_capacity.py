"""The golden-file keys of capacity planning, ``production``, ``corpus_sample`` and
``index.hnsw.recall_target``: what they load into, that they are part of the plan, and the exact one-line
error for each bad value."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_golden import BASE, PLAN, G, load

from pytest_embeval.core.capacity import Production
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.schema import CorpusSample, IndexSpec

PRODUCTION = (
    "production:\n  documents: 10_000_000\n  queries_per_month: 30_000_000\n"
    "  memory_price_per_gb_month: 4.0\n"
)


def test_production_loads_with_its_optional_keys(tmp_path: Path) -> None:
    assert load(tmp_path / "a", BASE + PRODUCTION).production == Production(10_000_000, 30_000_000, 4.0)
    assert load(tmp_path / "b", BASE + "production: {documents: 5000}\n").production == Production(5000)
    assert load(tmp_path / "c").production is None


def test_corpus_sample_loads_sorted_with_the_golden_seed_by_default(tmp_path: Path) -> None:
    golden = load(tmp_path / "a", BASE + "seed: 3\ncorpus_sample: {sizes: [1.0, 0.1, 0.5, 0.25]}\n")
    assert golden.corpus_sample == CorpusSample(sizes=(0.1, 0.25, 0.5, 1.0), seed=3)
    seeded = load(tmp_path / "b", BASE + "corpus_sample: {sizes: [0.5, 1], seed: 7}\n")
    assert seeded.corpus_sample == CorpusSample(sizes=(0.5, 1.0), seed=7)
    assert load(tmp_path / "c").corpus_sample is None


def test_recall_target_replaces_ef_search(tmp_path: Path) -> None:
    text = BASE + "index: {hnsw: {M: 16, ef_construction: 200, recall_target: 0.95}}\n"
    index = load(tmp_path, text).index
    assert index == IndexSpec("hnsw", M=16, ef_construction=200, recall_target=0.95)
    assert index.as_dict() == {"kind": "hnsw", "M": 16, "ef_construction": 200, "recall_target": 0.95}
    assert load(tmp_path / "one", BASE + "index: {hnsw: {recall_target: 1}}\n").index.recall_target == 1.0


@pytest.mark.parametrize(
    "added",
    [
        PRODUCTION,
        "production: {documents: 10}\n",
        "corpus_sample: {sizes: [0.5, 1.0]}\n",
        "corpus_sample: {sizes: [0.5, 1.0], seed: 9}\n",
    ],
)
def test_the_new_keys_are_part_of_the_plan(tmp_path: Path, added: str) -> None:
    before, after = load(tmp_path / "a", PLAN), load(tmp_path / "b", PLAN + added)
    assert before.plan_fingerprint() != after.plan_fingerprint()


def test_recall_target_is_part_of_the_plan_and_files_without_the_new_keys_keep_their_fingerprint(
    tmp_path: Path,
) -> None:
    plan = load(tmp_path / "a", PLAN)
    target = load(tmp_path / "b", PLAN.replace("ef_search: 128", "recall_target: 0.95"))
    assert target.plan_fingerprint() != plan.plan_fingerprint()
    # A plan that declares none of the new keys hashes the keys it always had, and the interval, tie order
    # and multiple comparisons it is decided with (the default interval changed: its results did too).
    assert set(plan.plan()) == {
        "metric", "guards", "report", "tie_margin", "confidence", "min_queries", "bootstrap", "seed",
        "index", "relevance_level", "strata", "separate", "interval", "ties", "multiple_comparisons",
    }  # fmt: skip
    assert plan.plan()["index"] == {"kind": "hnsw", "M": 16, "ef_construction": 200, "ef_search": 128}


ERROR_CASES = [
    pytest.param(
        BASE + "production: 10\n", f"{G}:7: production: must be a mapping, got 10", id="production-scalar"
    ),
    pytest.param(
        BASE + "production: {queries_per_month: 10}\n",
        f"{G}:7: production.documents: missing required key (chunks the production index holds)",
        id="production-no-documents",
    ),
    pytest.param(
        BASE + "production: {documents: 0}\n",
        f"{G}:7: production.documents: must be an integer from 1 to 1,000,000,000,000,000, got 0",
        id="production-documents-zero",
    ),
    pytest.param(
        BASE + "production: {documents: 1e7}\n",
        f"{G}:7: production.documents: must be an integer from 1 to 1,000,000,000,000,000, got 1e7 (a "
        "number YAML reads as text or a fraction: write it as digits, 10000000)",
        id="production-documents-float",
    ),
    pytest.param(
        BASE + "production:\n  documents: 10\n  queries_per_month: -1\n",
        f"{G}:9: production.queries_per_month: must be an integer from 0 to 1,000,000,000,000,000, got -1",
        id="production-queries-negative",
    ),
    pytest.param(
        BASE + "production: {documents: 10, memory_price_per_gb_month: cheap}\n",
        f"{G}:7: production.memory_price_per_gb_month: must be a number from 0 to 1,000,000,000, got cheap",
        id="production-price-text",
    ),
    pytest.param(
        BASE + "production: {documents: 10, memory_price_per_gb: 4}\n",
        f"{G}:7: production.memory_price_per_gb: unknown key, did you mean 'memory_price_per_gb_month'?",
        id="production-typo",
    ),
    pytest.param(
        BASE + "corpus_sample: [0.5, 1.0]\n",
        f"{G}:7: corpus_sample: must be a mapping, got a list",
        id="sample-list",
    ),
    pytest.param(
        BASE + "corpus_sample: {seed: 7}\n",
        f"{G}:7: corpus_sample.sizes: missing required key (fractions of the corpus, e.g. "
        "[0.1, 0.25, 0.5, 1.0])",
        id="sample-no-sizes",
    ),
    pytest.param(
        BASE + "corpus_sample: {sizes: []}\n",
        f"{G}:7: corpus_sample.sizes: must be a non-empty list of fractions in (0, 1], got a list",
        id="sample-empty",
    ),
    pytest.param(
        BASE + "corpus_sample: {sizes: [0.5, 1.5]}\n",
        f"{G}:7: corpus_sample.sizes[1]: must be a fraction in (0, 1], got 1.5",
        id="sample-above-one",
    ),
    pytest.param(
        BASE + "corpus_sample:\n  sizes:\n    - 0.5\n    - 0\n",
        f"{G}:10: corpus_sample.sizes[1]: must be a fraction in (0, 1], got 0",
        id="sample-zero",
    ),
    pytest.param(
        BASE + "corpus_sample:\n  sizes:\n    - 0.5\n    - 1.0\n    - 0.50\n",
        f"{G}:11: corpus_sample.sizes[2]: duplicate size 0.5 (first on line 9)",
        id="sample-duplicate",
    ),
    pytest.param(
        BASE + "corpus_sample: {sizes: [1.0], seed: -2}\n",
        f"{G}:7: corpus_sample.seed: must be an integer >= 0, got -2",
        id="sample-seed",
    ),
    pytest.param(
        BASE + "corpus_sample: {sizes: [1.0], sead: 2}\n",
        f"{G}:7: corpus_sample.sead: unknown key, did you mean 'seed'?",
        id="sample-typo",
    ),
    pytest.param(
        BASE + "index: {hnsw: {recall_target: 1.5}}\n",
        f"{G}:7: index.hnsw.recall_target: must be a number in (0, 1], got 1.5",
        id="target-above-one",
    ),
    pytest.param(
        BASE + "index: {hnsw: {recall_target: 0}}\n",
        f"{G}:7: index.hnsw.recall_target: must be a number in (0, 1], got 0",
        id="target-zero",
    ),
    pytest.param(
        BASE + "index: {hnsw: {recall_target: high}}\n",
        f"{G}:7: index.hnsw.recall_target: must be a number in (0, 1], got high",
        id="target-text",
    ),
    pytest.param(
        BASE + "index:\n  hnsw:\n    ef_search: 64\n    recall_target: 0.9\n",
        f"{G}:10: index.hnsw.recall_target: cannot be combined with ef_search: the target chooses each arm's "
        "ef (give one of them)",
        id="target-and-ef",
    ),
]


@pytest.mark.parametrize(("yaml_text", "expected"), ERROR_CASES)
def test_bad_values_are_one_golden_error_naming_file_line_and_key(
    tmp_path: Path, yaml_text: str, expected: str
) -> None:
    with pytest.raises(GoldenError) as info:
        load(tmp_path, yaml_text)
    assert str(info.value) == expected.format(d=tmp_path)
