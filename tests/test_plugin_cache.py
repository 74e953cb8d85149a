"""The embedding cache through pytest: what a run embeds, reads, reports, and never imports.

The counting fakes of fake_models.py append every text they encode to $EMBEVAL_FAKE_LOG, so a test sees what
each run (in process, in xdist workers, in a subprocess) actually embedded.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_plugin_control import NOISY_MODELS

from pytest_embeval.reports.json_report import without_timings

Golden = Callable[..., Path]
Entry = tuple[str, str, str]  # model name, kind, text

GOOD_VS_BAD = ("--embeval-incumbent=fake_models:counted_good", "--embeval-candidate=fake_models:counted_bad")
#: The conftest golden set: 60 documents and 48 queries, for each of two arms.
ALL_TEXTS = 2 * (60 + 48)


class Log:
    """The texts the counting fakes encoded since the last `take`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def take(self) -> list[Entry]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        self.path.unlink()
        return sorted(tuple(line.split("\t")) for line in lines)  # type: ignore[misc]


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Log:
    path = tmp_path / "encoded.log"
    monkeypatch.setenv("EMBEVAL_FAKE_LOG", str(path))
    return Log(path)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--embeval", "-p", "no:cacheprovider", *args)


def report(pytester: pytest.Pytester, name: str, *args: str) -> Any:
    path = pytester.path / name
    run(pytester, *GOOD_VS_BAD, f"--embeval-json={path}", *args)
    return json.loads(path.read_text(encoding="utf-8"))


def cache_line(read: int, embedded: int, where: str = ".embeval_cache/") -> str:
    return f"embeval: embedding cache {where}: {read} texts read, {embedded} embedded"


def test_a_second_run_embeds_nothing(pytester: pytest.Pytester, golden: Golden, log: Log) -> None:
    golden()
    first = report(pytester, "first.json")
    assert len(log.take()) == ALL_TEXTS
    result = run(pytester, *GOOD_VS_BAD, f"--embeval-json={pytester.path / 'second.json'}")
    assert log.take() == []
    result.stdout.fnmatch_lines([cache_line(read=ALL_TEXTS, embedded=0)])
    assert json.loads((pytester.path / "second.json").read_text(encoding="utf-8")) == first


REFUSE_BUILDS = """
import hnswlib
import pytest


@pytest.fixture(autouse=True, scope="session")
def no_graph_is_built():
    def refuse(self, *args, **kwargs):
        raise AssertionError("an HNSW graph was built again")

    original, hnswlib.Index.add_items = hnswlib.Index.add_items, refuse
    yield
    hnswlib.Index.add_items = original  # pytester runs in this very process
"""


def test_a_second_run_loads_its_hnsw_graphs(pytester: pytest.Pytester, golden: Golden) -> None:
    """Built once into the cache folder's graphs/, then loaded: the rerun builds none (serially or on xdist
    workers) and reports what the first run reported; without the cache, nothing is kept."""
    golden(index={"hnsw": {"M": 8, "ef_construction": 40}})
    pytester.makepyfile(noisy_models=NOISY_MODELS)
    arms = ("--embeval-incumbent=noisy_models:good", "--embeval-candidate=noisy_models:noisy")

    def reported(name: str, *args: str) -> Any:
        run(pytester, *arms, f"--embeval-json={pytester.path / name}", *args)
        return without_timings(json.loads((pytester.path / name).read_text(encoding="utf-8")))

    first = reported("first.json")
    folder = pytester.path / ".embeval_cache" / "graphs"
    graphs = sorted(folder.iterdir())
    # One file: these two arms embed the documents alike (only their queries differ), so share one graph.
    assert len(graphs) == 1 and graphs[0].suffix == ".hnsw"
    pytester.makeconftest(REFUSE_BUILDS)
    assert reported("serial.json") == first
    assert reported("xdist.json", "-n", "2") == first
    assert sorted(folder.iterdir()) == graphs
    shutil.rmtree(pytester.path / ".embeval_cache")
    pytester.makeconftest("")  # builds allowed again
    assert reported("uncached.json", "--embeval-no-cache") == first
    assert not (pytester.path / ".embeval_cache").exists()


def test_a_changed_document_is_embedded_alone(pytester: pytest.Pytester, golden: Golden, log: Log) -> None:
    path = golden()
    run(pytester, *GOOD_VS_BAD)
    log.take()
    corpus = path.parent / "support" / "corpus.jsonl"
    corpus.write_text(
        corpus.read_text(encoding="utf-8").replace('"doc 5"', '"revised doc 5"'), encoding="utf-8"
    )
    result = run(pytester, *GOOD_VS_BAD)
    assert log.take() == [
        ("counted-bad", "document", "revised doc 5"),
        ("counted-good", "document", "revised doc 5"),
    ]
    result.stdout.fnmatch_lines([cache_line(read=ALL_TEXTS - 2, embedded=2)])


def test_a_new_candidate_is_embedded_alone(pytester: pytest.Pytester, golden: Golden, log: Log) -> None:
    golden()
    run(pytester, *GOOD_VS_BAD)
    log.take()
    run(
        pytester,
        "--embeval-incumbent=fake_models:counted_good",
        "--embeval-candidate=fake_models:counted_bad_english",
    )
    embedded = log.take()
    assert {model for model, _, _ in embedded} == {"counted-bad-english"}
    assert len(embedded) == ALL_TEXTS // 2


def test_no_cache_neither_reads_nor_writes(pytester: pytest.Pytester, golden: Golden, log: Log) -> None:
    golden()
    result = run(pytester, *GOOD_VS_BAD, "--embeval-no-cache")
    assert len(log.take()) == ALL_TEXTS
    assert not (pytester.path / ".embeval_cache").exists()
    assert "embedding cache" not in result.stdout.str()

    run(pytester, *GOOD_VS_BAD)
    log.take()
    before = {path: path.stat().st_mtime_ns for path in (pytester.path / ".embeval_cache").rglob("*")}
    run(pytester, *GOOD_VS_BAD, "--embeval-no-cache")
    assert len(log.take()) == ALL_TEXTS
    after = {path: path.stat().st_mtime_ns for path in (pytester.path / ".embeval_cache").rglob("*")}
    assert after == before


def test_cache_folder_from_option_then_ini_then_default(
    pytester: pytest.Pytester, golden: Golden, log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    monkeypatch.setenv("EMBEVAL_TEST_CACHES", "caches")
    pytester.makeini("[pytest]\nembeval_cache_dir = $EMBEVAL_TEST_CACHES/from-ini\n")
    run(pytester, *GOOD_VS_BAD).stdout.fnmatch_lines([cache_line(0, ALL_TEXTS, "caches/from-ini/")])
    assert (pytester.path / "caches" / "from-ini" / "embeddings").is_dir()
    assert not (pytester.path / ".embeval_cache").exists()
    # The option wins (and is relative to where pytest was started).
    option = run(pytester, *GOOD_VS_BAD, "--embeval-cache-dir=from-option")
    option.stdout.fnmatch_lines([cache_line(0, ALL_TEXTS, "from-option/")])
    assert len(log.take()) == 2 * ALL_TEXTS


def model_folder(root: Path, name: str) -> Path:
    """The cache folder of the fake model called ``name``."""
    (folder,) = (
        path.parent
        for path in root.glob(".embeval_cache/embeddings/*/fingerprint.json")
        if json.loads(path.read_text(encoding="utf-8")).get("name") == name
    )
    return folder


@pytest.mark.parametrize("xdist", [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")])
def test_corrupt_entries_are_recomputed_and_reported_once(
    pytester: pytest.Pytester, golden: Golden, log: Log, xdist: list[str]
) -> None:
    golden()
    golden("second", strata=["shape"])  # the same texts: both golden sets read the same entries
    clean = report(pytester, "clean.json")
    log.take()
    # Three bit flips in the incumbent's document vectors (60 rows of 128 float32), and the candidate's
    # query pack (48 rows) cut two rows short.
    (documents,) = (model_folder(pytester.path, "counted-good") / "document").glob("*.pack")
    data = bytearray(documents.read_bytes())
    start = 84 + 60 * 40  # header and index: a text key, a crc32 and a token count per row
    for row in (0, 7, 59):
        data[start + row * 512 + 100] ^= 0x01
    documents.write_bytes(bytes(data))
    (queries,) = (model_folder(pytester.path, "counted-bad") / "query").glob("*.pack")
    queries.write_bytes(queries.read_bytes()[: -2 * 512])

    result = run(pytester, *GOOD_VS_BAD, f"--embeval-json={pytester.path / 'healed.json'}", *xdist)
    lines = [line for line in result.stdout.lines if "corrupt cache" in line]
    assert lines == [
        "embeval: 5 corrupt cache entries were found in .embeval_cache/, discarded and recomputed"
    ]
    # Only the damaged entries are recomputed, also when two xdist workers meet the damaged packs at once
    # (each repairing and merging what the other may be reading).
    assert set(log.take()) == {
        ("counted-good", "document", "doc 0"),
        ("counted-good", "document", "doc 7"),
        ("counted-good", "document", "doc 59"),
        ("counted-bad", "query", "es 46"),
        ("counted-bad", "query", "es 47"),
    }
    assert json.loads((pytester.path / "healed.json").read_text(encoding="utf-8")) == clean
    run(pytester, *GOOD_VS_BAD).stdout.no_fnmatch_line("*corrupt cache*")
    assert log.take() == []


def test_texts_two_golden_sets_share_are_embedded_once_on_two_workers(
    pytester: pytest.Pytester, golden: Golden, log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    golden("second", strata=["shape"])  # the same texts, run by the other worker at the same time
    monkeypatch.setenv("EMBEVAL_FAKE_SECONDS", "0.3")  # each encoder call: so the two workers overlap
    run(pytester, *GOOD_VS_BAD, "-n", "2").stdout.fnmatch_lines(
        [cache_line(read=ALL_TEXTS, embedded=ALL_TEXTS)]
    )
    embedded = log.take()
    assert len(embedded) == len(set(embedded)) == ALL_TEXTS


def test_json_reports_are_identical_with_and_without_xdist_and_cache(
    pytester: pytest.Pytester, golden: Golden, log: Log
) -> None:
    golden()
    golden("second", strata=["shape"])
    computed = report(pytester, "computed.json")  # serial, filling the cache
    read_by_workers = report(pytester, "read.json", "-n", "2")
    uncached = report(pytester, "uncached.json", "--embeval-no-cache")
    assert computed == read_by_workers == uncached


def save_tiny_sentence_transformer(folder: Path) -> None:
    """A real SentenceTransformer (StaticEmbedding over a 4-word vocabulary, no download) saved to folder."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocabulary = {word: i for i, word in enumerate(["[UNK]", "doc", "en", "es"])}
    tokenizer = Tokenizer(WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    weights = np.random.default_rng(0).standard_normal((len(vocabulary), 8)).astype(np.float32)
    SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=weights)], device="cpu").save(
        str(folder)
    )


HEAVY_REPORT = """
import sys

def pytest_sessionfinish(session):
    print("\\nHEAVY:", " ".join(m for m in ("sentence_transformers", "torch") if m in sys.modules) or "none")
"""


def test_a_cached_model_folder_is_never_loaded(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path
) -> None:
    golden()
    folder = tmp_path / "tiny-model"
    save_tiny_sentence_transformer(folder)
    args = ["--embeval", "-p", "no:cacheprovider", "-s", f"--embeval-incumbent={folder}"]
    args.append("--embeval-candidate=fake_models:good")
    # The first run fills the cache; in process, where sentence-transformers is imported already.
    first = pytester.runpytest(*args)
    first.stdout.fnmatch_lines([cache_line(0, ALL_TEXTS)])
    # A fresh interpreter shows what the second run imports.
    pytester.makeconftest(HEAVY_REPORT)
    second = pytester.runpytest_subprocess(*args)
    second.stdout.fnmatch_lines(["HEAVY: none", cache_line(ALL_TEXTS, 0)])
    assert second.ret == first.ret == pytest.ExitCode.OK
