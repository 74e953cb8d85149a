"""`--embeval-candidate openai:...` through pytest, against the tests' own server serving the fake models.

The server serves fake_models.py's models under their names, so an endpoint arm and the in-process model of
the same name must give the same report, verdict for verdict.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from openai_server import EmbeddingServer, Reply, fake_model_vectors, free_port

Golden = Callable[..., Path]
KEY = "sk-plugin-test-fedcba9876543210"
KEY_ENV = "EMBEVAL_PLUGIN_KEY"
#: The conftest golden set's texts for one arm: 60 documents and 48 queries.
TEXTS = 60 + 48


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with EmbeddingServer(fake_model_vectors(), models=("bad", "good"), key=KEY, lifetime=120) as running:
        yield running


def endpoint_spec(server: EmbeddingServer, model: str, **parameters: object) -> str:
    query = {"base_url": server.base_url, "api_key_env": KEY_ENV, "query_prompt": "query:%20", **parameters}
    return f"openai:{model}?" + "&".join(f"{name}={value}" for name, value in query.items())


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any] | None]:
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    result = pytester.runpytest("--embeval", "-p", "no:cacheprovider", f"--embeval-json={path}", *args)
    return result, json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {s["stratum"]: s["verdict"] for g in report["golden_sets"] for s in g["strata"]}


@pytest.mark.parametrize("xdist", [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")])
def test_an_endpoint_candidate_gives_the_in_process_models_report(
    pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer, xdist: list[str]
) -> None:
    golden()
    local, expected = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad"
    )
    spec = endpoint_spec(server, "bad", price_per_million_tokens=0.02)
    hosted, report = run(
        pytester, "--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}", *xdist
    )
    assert report is not None and expected is not None
    assert (
        verdicts(report)
        == verdicts(expected)
        == {"overall": "WORSE", "language=en": "WORSE", "language=es": "WORSE"}
    )
    assert hosted.ret == local.ret == pytest.ExitCode.TESTS_FAILED
    (golden_set,), (local_set,) = report["golden_sets"], expected["golden_sets"]
    assert [q["ranked"] for q in golden_set["queries"]] == [q["ranked"] for q in local_set["queries"]]
    assert golden_set["strata"] == local_set["strata"]
    # 60 documents and 48 queries in requests of at most 32 texts; a token per word ("doc 7", "query: en 7").
    usage = golden_set["candidate"]["usage"]
    assert usage == {
        "tokens": 60 * 2 + 48 * 3,
        "requests": 2 + 2,
        "cached_tokens": 0,
        "price_per_million_tokens": 0.02,
        "cost": pytest.approx(264 * 0.02e-6),
        "cached_cost": 0.0,
    }
    assert golden_set["incumbent"]["usage"] is None
    assert len(server.received) == 4 and server.texts().count("query: en 7") == 1
    hosted.stdout.fnmatch_lines(
        ["candidate usage: 264 tokens in 4 requests ($5.28e-06 at $0.02 per million)"]
    )


def test_a_cached_rerun_sends_no_request_and_says_what_it_saved(
    pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer
) -> None:
    golden()
    args = ["--embeval-incumbent=fake_models:good", f"--embeval-candidate={endpoint_spec(server, 'bad')}"]
    run(pytester, *args)
    sent = len(server.received)
    again, report = run(pytester, *args)
    assert len(server.received) == sent == 4
    assert report is not None
    usage = report["golden_sets"][0]["candidate"]["usage"]
    assert (usage["tokens"], usage["requests"], usage["cached_tokens"]) == (0, 0, 264)
    again.stdout.fnmatch_lines(
        [
            "embeval: embedding cache .embeval_cache/: 216 texts read, 0 embedded",
            "candidate usage: 0 tokens in 0 requests; 264 tokens not spent: served from the embedding cache",
        ]
    )
    # --embeval-no-cache re-embeds (a provider may have changed the weights behind the name).
    run(pytester, *args, "--embeval-no-cache")
    assert len(server.received) == 2 * sent


def test_a_spec_in_the_ini_file(pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer) -> None:
    golden()
    candidate = endpoint_spec(server, "good")
    pytester.makeini(f"[pytest]\nembeval_incumbent = fake_models:good\nembeval_candidate = {candidate}\n")
    result, report = run(pytester)
    assert report is not None and set(verdicts(report).values()) == {"TIE"}
    assert result.ret == pytest.ExitCode.OK and len(server.received) == 4


def test_an_endpoint_fault_is_one_line_naming_it_and_no_verdict(
    pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer
) -> None:
    golden()
    server.script.extend(Reply(status=503, headers={"retry-after-ms": "5"}) for _ in range(3))
    spec = endpoint_spec(server, "bad", max_retries=2, concurrency=1)
    result, report = run(pytester, "--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}")
    result.assert_outcomes(errors=3)  # an error of the golden set's items, not a failure
    assert report is not None and report["golden_sets"] == []
    assert [(error["role"], error["spec"]) for error in report["errors"]] == [("candidate", spec)]
    lines = [line for line in result.stdout.lines if "gave up after" in line]
    assert lines and all(
        line.endswith(
            f"{server.base_url}/embeddings answered 503 Service Unavailable; gave up after 2 of 2 retries"
        )
        for line in lines
    )
    assert "WORSE" not in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_the_key_is_in_no_output_report_cache_or_log(
    pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer
) -> None:
    golden()
    server.script.extend(
        [Reply(status=429, headers={"retry-after-ms": "5"}), Reply(status=400, message=f"rejected {KEY}")]
    )
    spec = endpoint_spec(server, "bad", concurrency=1)
    args = ["--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}", "--log-level=DEBUG", "-rA"]
    failed, _ = run(pytester, *args, "--log-cli-level=DEBUG")
    passed, report = run(pytester, *args, "--log-file=embeval.log", "--log-file-level=DEBUG")
    assert report is not None and "rejected ***" in failed.stdout.str()
    assert "Retrying request" in failed.stdout.str()  # the client's debug log was shown
    outputs = [
        failed.stdout.str(),
        failed.stderr.str(),
        passed.stdout.str(),
        passed.stderr.str(),
        json.dumps(report),
    ]
    assert not [text for text in outputs if KEY in text]
    written = [
        path for path in pytester.path.rglob("*") if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    assert written == []
    assert (pytester.path / "embeval.log").stat().st_size > 0


def test_an_endpoint_arms_capacity_counts_the_tokens_the_endpoint_reported(
    pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer
) -> None:
    golden(production={"documents": 1_000_000, "queries_per_month": 10_000})
    spec = endpoint_spec(server, "bad", price_per_million_tokens=0.02, concurrency=4, batch_size=8)
    args = ["--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}"]
    first, report = run(pytester, *args)
    assert report is not None
    # A token per word: "doc 7" is 2 tokens, "query: en 7" 3; the fresh run and the cached rerun agree.
    again, cached = run(pytester, *args)
    assert cached is not None and len(server.received) == 60 // 8 + 1 + 48 // 8
    assert first.ret == again.ret == pytest.ExitCode.TESTS_FAILED
    for one in (report, cached):
        capacity = one["golden_sets"][0]["candidate"]["capacity"]
        measured, production = capacity["measured"], capacity["production"]
        assert measured["document_tokens"] == {
            "texts": 60,
            "tokens": 120,
            "truncated": 0,
            "max_length": None,
            "method": "the endpoint's usage figures",
            "per_text": 2.0,
        }
        assert measured["query_tokens"]["tokens"] == 144
        assert production["embedding_tokens"]["value"] == pytest.approx(2_000_000)
        assert production["embedding_cost"]["value"] == pytest.approx(0.04)
        assert production["query_tokens_per_month"]["value"] == pytest.approx(30_000)
    encoding = report["golden_sets"][0]["candidate"]["capacity"]["measured"]["timings"]["encoding"]
    assert encoding["texts"] == 60 and encoding["tokens_per_second"] is not None
    assert cached["golden_sets"][0]["candidate"]["capacity"]["measured"]["timings"]["encoding"] is None


#: What an endpoint fault looks like through pytest: the error of the golden set's item that ran it (the
#: golden set's name, then what `embed` says), and the others' one line pointing at it.
FAULT_PREFIX = "support: candidate encoder '{spec}' failed on a batch of 32 document texts (first: row 10): "


def refused_key(server: EmbeddingServer) -> None:
    server.key = "sk-the-key-the-server-wants"


def out_of_retries(server: EmbeddingServer) -> None:
    server.script.extend(Reply(status=500, headers={"retry-after-ms": "5"}) for _ in range(2))


@pytest.mark.parametrize(
    ("break_it", "parameters", "ending"),
    [
        pytest.param(
            refused_key,
            {},
            "{url}/embeddings refused the API key in $" + KEY_ENV + " (401 Unauthorized)",
            id="401",
        ),
        pytest.param(
            out_of_retries,
            {"max_retries": 1},
            "{url}/embeddings answered 500 Internal Server Error; gave up after 1 of 1 retries",
            id="5xx",
        ),
        pytest.param(
            None,
            {"dimensions": 64},
            "{url}/embeddings returned 128-dimensional vectors for model 'bad', which was asked for "
            "dimensions=64",
            id="wrong-dimension",
        ),
    ],
)
def test_an_endpoint_fault_is_an_error_of_the_golden_set_reported_once(
    pytester: pytest.Pytester,
    golden: Golden,
    server: EmbeddingServer,
    break_it: Callable[[EmbeddingServer], None] | None,
    parameters: dict[str, object],
    ending: str,
) -> None:
    golden()
    if break_it is not None:
        break_it(server)
    spec = endpoint_spec(server, "bad", **{"concurrency": 1, "max_retries": 0, **parameters})
    result, report = run(pytester, "--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=3)  # never `failed`: that word is kept for a WORSE
    line = FAULT_PREFIX.format(spec=spec) + ending.format(url=server.base_url)
    assert line in result.stdout.lines
    assert NOT_RUN in result.stdout.lines
    assert report is not None and report["golden_sets"] == []
    assert [error["message"] for error in report["errors"]] == [line.removeprefix("support: ")]
    assert "Traceback" not in result.stdout.str() and "WORSE" not in result.stdout.str()


NOT_RUN = "support: not run; the error is reported under support.yaml::overall"


def test_nothing_listening_is_an_error_of_the_golden_set(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    url = f"http://127.0.0.1:{free_port()}/v1"
    spec = f"openai:bad?base_url={url}&api_key_env={KEY_ENV}&max_retries=0&concurrency=1"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, KEY)
        result, report = run(pytester, "--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=3)
    line = (
        FAULT_PREFIX.format(spec=spec)
        + f"cannot reach {url}/embeddings (ConnectError: [Errno 111] Connection refused), 0 retries"
    )
    assert line in result.stdout.lines and NOT_RUN in result.stdout.lines
    assert report is not None and [error["role"] for error in report["errors"]] == ["candidate"]


def test_a_missing_key_is_a_usage_error_before_anything_runs(
    pytester: pytest.Pytester, golden: Golden, server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    monkeypatch.delenv(KEY_ENV)
    spec = endpoint_spec(server, "bad")
    result, report = run(pytester, "--embeval-incumbent=fake_models:good", f"--embeval-candidate={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"ERROR: --embeval-candidate: model spec '{spec}': the API key for {server.base_url}/embeddings is "
        f"read from ${KEY_ENV}, which is not set (for a server that needs no key, set it to any value)"
    ) in result.errlines
    assert report is None and server.received == [] and not (pytester.path / ".embeval_cache").exists()


def test_an_endpoint_spec_without_the_extra_is_a_usage_error(
    pytester: pytest.Pytester, golden: Golden, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    result, report = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=openai:text-embedding-3-small"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "ERROR: --embeval-candidate: model spec 'openai:text-embedding-3-small' needs the openai client: "
        "pip install 'pytest-embeval[openai]'"
    ) in result.errlines
    assert report is None
