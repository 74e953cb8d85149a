"""A run stopped mid-encode (Ctrl-C, or a killed CI job) and run again embeds only what was missing.

`pytest --embeval` runs in a real subprocess with a slow incumbent, is sent SIGINT or SIGKILL once a few
encoder calls have returned, and is run again: the second run must embed exactly the texts the first did
not store, and the first must have lost at most the calls in flight (one batch for an in-process model,
``concurrency`` requests for an endpoint).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from suite_helpers import golden_files

from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.store import EmbeddingCache

DOCUMENTS = 640  # ten batches of 64
BATCH = 64

SLOW_MODELS = """
import os, time
from fake_models import AxisModel

class SlowAxis(AxisModel):
    '''An AxisModel that takes 0.25 s a call and then logs the texts of the call it returns.'''

    def encode_document(self, texts):
        time.sleep(0.25)
        vectors = super().encode_document(texts)
        with open(os.environ["EMBEVAL_SLOW_LOG"], "a", encoding="utf-8") as log:
            log.write("".join(text + "\\n" for text in texts))
        return vectors

slow = SlowAxis("slow-good")
"""


def long_golden(root: Path) -> Path:
    """The conftest golden set with 640 documents ("doc 0" .. "doc 639"), so encoding takes ten calls."""
    path = golden_files(root)
    corpus = root / "support" / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"d{i:02d}", "text": f"doc {i}"}) + "\n" for i in range(DOCUMENTS)),
        encoding="utf-8",
    )
    return path


def pytest_process(
    root: Path, log: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--embeval",
            "-p",
            "no:cacheprovider",
            "--embeval-no-progress",
            *args,
        ],
        cwd=root,
        env={
            **os.environ,
            **(env or {}),
            "EMBEVAL_SLOW_LOG": str(log),
            "PYTHONPATH": os.pathsep.join(sys.path),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # A suite started with SIGINT ignored (``nohup ... &``, some CI runners) passes the ignore on to its
        # children, and a Python started so never installs its KeyboardInterrupt: the run must get Ctrl-C.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_when(run: subprocess.Popen[str], condition: Callable[[], bool], stop: signal.Signals) -> str:
    """Send ``stop`` to the run once ``condition`` holds (within a minute); its output, once it ended."""
    try:
        deadline = time.monotonic() + 60
        while not condition():
            assert time.monotonic() < deadline, "the run never got that far"
            time.sleep(0.02)
        run.send_signal(stop)
        output, _ = run.communicate(timeout=60)
    finally:
        run.kill()
    expected = pytest.ExitCode.INTERRUPTED if stop == signal.SIGINT else -signal.SIGKILL
    assert run.returncode == expected, output
    if stop == signal.SIGINT:
        assert "KeyboardInterrupt" in output
    return output


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    long_golden(root)
    (root / "conftest.py").write_text("", encoding="utf-8")
    (root / "fake_models.py").write_text(
        (Path(__file__).with_name("fake_models.py")).read_text(encoding="utf-8"), encoding="utf-8"
    )
    (root / "slow_models.py").write_text(SLOW_MODELS, encoding="utf-8")
    return root


def stored_documents(cache_dir: Path, name: str, texts: list[str]) -> set[str]:
    """The documents the cache holds for the fake model called ``name`` (its fingerprint is its name)."""
    from fake_models import AxisModel

    return set(EmbeddingCache(cache_dir).lookup(resolve_model(AxisModel(name)), "document", texts))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_an_interrupted_run_loses_at_most_one_batch(
    project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    texts = [f"doc {i}" for i in range(DOCUMENTS)]
    log = tmp_path / "encoded.log"
    args = ["--embeval-incumbent=slow_models:slow", "--embeval-candidate=fake_models:good"]
    stop_when(pytest_process(project, log, *args), lambda: len(lines(log)) >= 3 * BATCH, stop)
    encoded = set(lines(log))
    stored = stored_documents(project / ".embeval_cache", "slow-good", texts)
    # Calls are sequential: every call before the last one logged was stored before that one began. The
    # last may have been stopped between returning (logged) and being stored: the one call in flight.
    assert len(stored) >= 2 * BATCH and stored <= encoded
    assert len(encoded - stored) <= BATCH

    log.unlink()
    second = pytest_process(project, log, *args)
    output, _ = second.communicate(timeout=120)
    assert second.returncode == pytest.ExitCode.OK, output
    assert sorted(lines(log)) == sorted(set(texts) - stored)
    # What was stored is read; the rest of the incumbent's texts, and all the candidate's, are embedded.
    embedded = (DOCUMENTS - len(stored) + 48) + (DOCUMENTS + 48)
    assert (
        f"embeval: embedding cache .embeval_cache/: {len(stored):,} texts read, {embedded:,} embedded"
        in output
    )


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_an_interrupted_endpoint_run_pays_again_only_for_what_it_lost(
    project: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    pytest.importorskip("openai")
    from openai_server import EmbeddingServer, fake_model_vectors

    key = "sk-interrupted-0123456789"
    texts = [f"doc {i}" for i in range(DOCUMENTS)]
    log = tmp_path / "unused.log"
    with EmbeddingServer(fake_model_vectors(), models=("good",), key=key, delay=0.2, lifetime=180) as server:
        spec = (
            f"openai:good?base_url={server.base_url}&api_key_env=EMBEVAL_KILL_KEY&query_prompt=query:%20"
            "&batch_size=32&concurrency=2"
        )
        args = [f"--embeval-incumbent={spec}", "--embeval-candidate=fake_models:good"]
        env = {"EMBEVAL_KILL_KEY": key}
        stop_when(pytest_process(project, log, *args, env=env), lambda: len(server.received) >= 8, stop)
        sent = set(server.texts())
        arm = resolve_model(spec)
        stored = set(EmbeddingCache(project / ".embeval_cache").lookup(arm, "document", texts))
        assert len(stored) >= 5 * 32 and stored <= sent
        assert len(sent - stored) <= 2 * 32  # at most the two requests in flight

        server.received.clear()
        second = pytest_process(project, log, *args, env=env)
        output, _ = second.communicate(timeout=120)
        assert second.returncode == pytest.ExitCode.OK, output
        documents = [text for text in server.texts() if not text.startswith("query: ")]
        assert sorted(documents) == sorted(set(texts) - stored)


def test_the_runs_get_ctrl_c_even_when_the_suite_was_started_ignoring_it(tmp_path: Path) -> None:
    """``nohup pytest &`` starts the suite with SIGINT ignored, which its children inherit: the runs these
    tests interrupt must still take SIGINT as a Ctrl-C (a KeyboardInterrupt), or they would never stop."""
    (tmp_path / "conftest.py").write_text(
        "import pathlib, signal\n"
        "pathlib.Path('sigint.txt').write_text(repr(signal.getsignal(signal.SIGINT)), encoding='utf-8')\n",
        encoding="utf-8",
    )
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        run = pytest_process(tmp_path, tmp_path / "unused.log", "--co", "-q")
        output, _ = run.communicate(timeout=120)
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert run.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, output
    assert (tmp_path / "sigint.txt").read_text(encoding="utf-8") == repr(signal.default_int_handler)
