"""`embeval embed [--shard I/N]`: filling the cache without comparing, in shards whose union is one process.

The golden set is the plugin tests' (60 documents, 48 queries) with the deterministic fake models; blocks of
16 texts make 4 document blocks and 3 query blocks, so 3 shards each get two or three of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import CliResult, golden_files

from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.sharding import Shard, golden_blocks, parse_shard, shard_blocks
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.reports.json_report import without_timings

TESTS = Path(__file__).parent
MODELS = ("fake_models:counted_good", "fake_models:counted_bad")
#: Seconds an `embeval embed` process or a pytest run may take here.
RUN_TIMEOUT = 240
Result = CliResult


def packs(cache: Path) -> dict[str, bytes]:
    """Every file of a cache folder's embeddings, by path under it: what byte-identical means. Not the
    claims' lock file (``.claims.lock``), which an embedding process leaves for the next to coordinate by."""
    root = cache / "embeddings"
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and path.name != ".claims.lock"
    }


def plugin_report(
    pytester: pytest.Pytester, cache: Path, report: Path, models: Sequence[str] = MODELS
) -> Any:
    """``pytest --embeval`` of pytester's golden files with ``models`` on ``cache``: its run and its JSON
    report without timings (the fakes' verdicts: some strata WORSE)."""
    result = pytester.runpytest_subprocess(
        "--embeval",
        "-p",
        "no:cacheprovider",
        f"--embeval-incumbent={models[0]}",
        f"--embeval-candidate={models[1]}",
        f"--embeval-cache-dir={cache}",
        f"--embeval-json={report}",
        timeout=RUN_TIMEOUT,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    return result, without_timings(json.loads(report.read_text(encoding="utf-8")))


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What the counting fakes encode, in this process and in the ones it starts."""
    path = tmp_path / "encoded.log"
    monkeypatch.setenv("EMBEVAL_FAKE_LOG", str(path))
    return path


def embed_command(golden: Path, cache: Path, *args: str) -> list[str]:
    models = [item for spec in MODELS for item in ("--model", spec)]
    program = "import sys; from pytest_embeval.cli.embeval import main; sys.exit(main())"
    return [sys.executable, "-c", program, "embed", str(golden), *models, f"--cache-dir={cache}", *args]


def subprocess_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


# ------------------------------------------------------------------------------------------------ shards


def test_a_shard_is_i_of_n() -> None:
    assert parse_shard("2/3") == Shard(2, 3)
    assert parse_shard(" 1 / 1 ") == Shard(1, 1)
    assert str(Shard(3, 4)) == "3/4"
    with pytest.raises(ValueError, match=r"^a shard is I/N \(e\.g\. 2/3\), got '2'$"):
        parse_shard("2")
    with pytest.raises(ValueError, match=r"^a shard is I/N with 1 <= I <= N, got 4/3$"):
        parse_shard("4/3")
    with pytest.raises(ValueError, match=r"^a shard is I/N with 1 <= I <= N, got 0/3$"):
        parse_shard("0/3")


def test_blocks_are_the_embedded_texts_in_order_and_shards_partition_them(tmp_path: Path) -> None:
    golden = load_golden(golden_files(tmp_path))
    blocks = golden_blocks(golden, block_rows=16)
    assert [(block.number, block.kind, len(block.texts)) for block in blocks] == [
        (0, "document", 16),
        (1, "document", 16),
        (2, "document", 16),
        (3, "document", 12),
        (4, "query", 16),
        (5, "query", 16),
        (6, "query", 16),
    ]
    documents = [text for block in blocks[:4] for text in block.texts]
    assert documents == [f"doc {i}" for i in range(60)]
    assert [text for block in blocks[4:] for text in block.texts] == [q.text for q in golden.queries]
    shards = [shard_blocks(blocks, Shard(i, 3)) for i in (1, 2, 3)]
    assert [[block.number for block in shard] for shard in shards] == [[0, 3, 6], [1, 4], [2, 5]]
    assert shard_blocks(blocks, None) == list(blocks)
    with pytest.raises(ValueError, match=r"^block_rows must be an integer from 1 to 4096, got 4097$"):
        golden_blocks(golden, block_rows=4097)


def test_a_text_repeated_in_the_corpus_is_in_one_block(tmp_path: Path) -> None:
    path = golden_files(tmp_path)
    corpus = path.parent / "support" / "corpus.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines()
    lines.append(json.dumps({"_id": "d60", "text": "doc 3"}))  # the text of d03 again
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    blocks = golden_blocks(load_golden(path), block_rows=16)
    documents = [text for block in blocks if block.kind == "document" for text in block.texts]
    assert documents == [f"doc {i}" for i in range(60)]


# ---------------------------------------------------------------------------------------- the command


def test_three_shard_processes_write_the_packs_of_one_and_the_plugin_reads_them(
    pytester: pytest.Pytester, golden: Callable[..., Path], log: Path, tmp_path: Path
) -> None:
    path = golden()
    env = subprocess_env()
    sharded, single = tmp_path / "sharded", tmp_path / "single"
    running = [
        subprocess.Popen(
            embed_command(path, sharded, f"--shard={i}/3", "--block-rows=16"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2, 3)
    ]
    outputs = []
    for process in running:  # at once, into one folder
        out, err = process.communicate(timeout=RUN_TIMEOUT)
        assert process.returncode == 0, err
        outputs.append(out)
    assert (
        "support.yaml: 60 distinct document texts, 48 query texts, 7 blocks of up to 16; "
        "shard 1/3: 3 blocks, 44 texts"
    ) in outputs[0]
    # Each text of each model was embedded once, by one shard.
    encoded = log.read_text(encoding="utf-8").splitlines()
    assert len(encoded) == len(set(encoded)) == 2 * (60 + 48)
    log.unlink()
    one = subprocess.run(
        embed_command(path, single, "--block-rows=16"),
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert one.returncode == 0, one.stderr
    assert packs(sharded) == packs(single)  # byte-identical, file by file
    assert len([name for name in packs(single) if name.endswith(".pack")]) == 2 * 7

    log.unlink()
    read, read_report = plugin_report(pytester, sharded, tmp_path / "sharded.json")
    read.stdout.fnmatch_lines(["*embedding cache*: 216 texts read, 0 embedded"])
    assert not log.exists()  # no model encoded anything
    embedded, embedded_report = plugin_report(pytester, tmp_path / "fresh", tmp_path / "fresh.json")
    embedded.stdout.fnmatch_lines(["*embedding cache*: 0 texts read, 216 embedded"])
    assert read_report == embedded_report


def test_embedding_again_is_idempotent_and_an_interrupted_block_is_finished(
    embeval: Callable[..., Result], log: Path, tmp_path: Path
) -> None:
    path = golden_files(tmp_path)
    clean = tmp_path / "clean"
    status, out, err = embeval("embed", path, "--model", MODELS[0], f"--cache-dir={clean}", "--block-rows=16")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (
        f"{path}: 60 distinct document texts, 48 query texts, 7 blocks of up to 16; all blocks: 7 blocks, "
        "108 texts"
    )
    assert lines[1].startswith(f"model {MODELS[0]} (sha256:") and lines[1].endswith(f"into {clean}/")
    assert lines[2].startswith("block 1/7 (#0, 16 document texts): 16 embedded, 0 read, ")
    assert lines[-1].startswith(f"{MODELS[0]}: 108 texts embedded, 0 read, 0 of 7 blocks already cached, in ")
    before = packs(clean)

    # Again: nothing is read or embedded, nothing written.
    status, out, _ = embeval("embed", path, "--model", MODELS[0], f"--cache-dir={clean}", "--block-rows=16")
    assert status == 0
    assert "block 7/7 (#6, 16 query texts): already cached" in out.splitlines()
    assert out.splitlines()[-1].startswith(f"{MODELS[0]}: 0 texts embedded, 0 read, 7 of 7 blocks already")
    assert packs(clean) == before

    # Interrupted in block 1 after 5 of its texts were stored: the rerun embeds its other 11, and the
    # packs are the clean run's.
    resumed = tmp_path / "resumed"
    arm = resolve_model(MODELS[0])
    EmbeddingCache(resumed).embed(arm, [f"doc {i}" for i in range(16, 21)], "document")
    status, out, _ = embeval(
        "embed", path, "--model", MODELS[0], f"--cache-dir={resumed}", "--block-rows=16", "--shard=2/2"
    )
    assert status == 0
    assert "block 1/3 (#1, 16 document texts): 11 embedded, 5 read, " in out
    status, out, _ = embeval(
        "embed", path, "--model", MODELS[0], f"--cache-dir={resumed}", "--block-rows=16", "--shard=1/2"
    )
    assert status == 0
    assert packs(resumed) == before


def test_bad_input_is_one_line_and_exit_2(embeval: Callable[..., Result], tmp_path: Path) -> None:
    path = golden_files(tmp_path)
    status, out, err = embeval("embed", path, "--model", MODELS[0], "--shard=4/3")
    assert (status, out) == (2, "")
    assert err.splitlines()[-1] == (
        "embeval embed: error: argument --shard: a shard is I/N with 1 <= I <= N, got 4/3"
    )
    status, _, err = embeval("embed", path, "--model", MODELS[0], "--block-rows=5000")
    assert status == 2
    assert err.splitlines()[-1] == (
        "embeval embed: error: argument --block-rows: expected an integer from 1 to 4096, got '5000'"
    )
    status, out, err = embeval(
        "embed", path, "--model", "no_such_module_here:model", f"--cache-dir={tmp_path}"
    )
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("embeval embed: error: ") and "no_such_module_here" in err
    status, out, err = embeval("embed", tmp_path / "missing.yaml", "--model", MODELS[0])
    assert status == 2 and err.count("\n") == 1 and "missing.yaml" in err


def test_a_model_that_fails_is_exit_1_naming_the_block_and_keeps_what_was_stored(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    path = golden_files(tmp_path)
    cache = tmp_path / "cache"
    # fake_models:broken returns NaN for every query: the document blocks fill, the first query block fails.
    status, out, err = embeval("embed", path, "--model", "fake_models:broken", f"--cache-dir={cache}")
    assert status == 1
    assert "block 1/2 (#0, 60 document texts): 60 embedded, 0 read" in out
    assert len(err.splitlines()) == 1
    assert err.startswith("embeval embed: error: block 1: ") and "NaN" in err
    arm = resolve_model("fake_models:broken")
    assert EmbeddingCache(cache).contains(arm, "document", [f"doc {i}" for i in range(60)]).all()
