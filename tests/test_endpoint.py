"""Endpoint arms (`openai:MODEL?...`) against the tests' own OpenAI-compatible server on 127.0.0.1.

Every fault the issue names is injected by the server and must come back as one `EncoderError` line that
names what the user must fix, and never the key.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openai")

from openai_server import (
    EmbeddingServer,
    Reply,
    drop_last,
    duplicate_index,
    free_port,
    nan_in_first,
    swap_first_two,
    without_usage,
    word_vectors,
)

from pytest_embeval.arms import endpoint
from pytest_embeval.arms.batching import estimate_tokens
from pytest_embeval.arms.embedding import EncoderError, embed
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.arms.usage import UsageCount, apportion, cost
from pytest_embeval.cache.store import EmbeddingCache

KEY = "sk-test-0123456789abcdef"
KEY_ENV = "EMBEVAL_TEST_KEY"
MODEL = "test-model"
TEXTS = [f"parcel number {i} went missing" for i in range(100)]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with EmbeddingServer(word_vectors(), key=KEY, lifetime=60) as running:
        yield running


def spec(server: EmbeddingServer, **parameters: object) -> str:
    query = {"base_url": server.base_url, "api_key_env": KEY_ENV, **parameters}
    return f"openai:{MODEL}?" + "&".join(f"{name}={value}" for name, value in query.items())


def expected(texts: list[str]) -> np.ndarray:
    vectors = word_vectors()(MODEL, texts).astype(np.float64)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def fault(server: EmbeddingServer, texts: list[str] | None = None, **parameters: object) -> str:
    """The message of the `EncoderError` that embedding ``texts`` through ``server`` raises."""
    arm = resolve_model(spec(server, **{"max_retries": 0, "concurrency": 1, **parameters}))
    with pytest.raises(EncoderError) as error:
        embed(arm, texts or TEXTS[:3], "document", role="candidate")
    message = str(error.value)
    assert "\n" not in message and KEY not in message
    return message


# ------------------------------------------------------------------------------------------- the spec


def test_a_spec_resolves_without_a_request_or_an_import(server: EmbeddingServer) -> None:
    code = (
        "import sys\n"
        "from pytest_embeval.arms.model_specs import resolve_model\n"
        f"arm = resolve_model({spec(server)!r})\n"
        "print('openai' in sys.modules, 'httpx2' in sys.modules, 'httpx' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["False", "False", "False"], result.stderr
    assert server.received == []


def test_the_fingerprint_holds_what_decides_the_vectors_and_never_the_key(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    arm = resolve_model(spec(server, dimensions=256, query_prompt="query:%20", price_per_million_tokens=0.02))
    assert json.loads(arm.fingerprint) == {
        "provider": "openai-compatible",
        "endpoint": f"127.0.0.1:{server.port}/v1",
        "model": MODEL,
        "dimensions": 256,
        "prompts": {"query": "query: ", "document": ""},
        "normalize": "l2",
    }
    assert arm.prompts == {"query": "query: ", "document": ""}
    assert arm.price_per_million_tokens == 0.02
    assert arm.spec == spec(server, dimensions=256, query_prompt="query:%20", price_per_million_tokens=0.02)
    # Neither batching, retries nor the key's variable change the vectors: same fingerprint.
    same = resolve_model(spec(server, dimensions=256, query_prompt="query:%20", batch_size=7, max_retries=1))
    assert same.fingerprint == arm.fingerprint
    monkeypatch.setenv(KEY_ENV, "sk-another-key-altogether")
    same_key = spec(server, dimensions=256, query_prompt="query:%20")
    assert resolve_model(same_key).fingerprint == arm.fingerprint
    # Another server, model, size or prompt is another model.
    for other in (
        spec(server, query_prompt="query:%20"),
        spec(server, dimensions=128, query_prompt="query:%20"),
        spec(server, dimensions=256, query_prompt="search_query:%20"),
        same_key.replace(MODEL, "other-model"),
        same_key.replace(str(server.port), str(server.port + 1)),
    ):
        assert resolve_model(other).fingerprint != arm.fingerprint
    assert KEY not in arm.fingerprint + arm.spec + repr(arm)


def test_base_url_and_key_default_as_the_official_client_takes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    arm = resolve_model("openai:text-embedding-3-small")
    assert isinstance(arm.encoder, endpoint.EndpointEncoder)
    settings = arm.encoder.settings
    assert (settings.base_url, settings.api_key_env) == ("https://api.openai.com/v1", "OPENAI_API_KEY")
    assert json.loads(arm.fingerprint)["endpoint"] == "api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://LOCALHOST:8080/v1/")
    served = resolve_model("openai:text-embedding-3-small")
    assert served.encoder.settings.base_url == "http://LOCALHOST:8080/v1"  # type: ignore[attr-defined]
    assert json.loads(served.fingerprint)["endpoint"] == "localhost:8080/v1"


def test_model_names_may_hold_colons_and_slashes() -> None:
    for model in ("nomic-embed-text:latest", "BAAI/bge-small-en-v1.5", "intfloat/e5-small-v2:q8"):
        arm = resolve_model(f"openai:{model}?base_url=http://127.0.0.1:11434/v1")
        assert arm.encoder.settings.model == model  # type: ignore[attr-defined]


def test_the_python_constructor_builds_the_same_arm_as_the_spec() -> None:
    built = endpoint.openai_arm(
        "e5-small",
        endpoint.EndpointOptions(
            base_url="http://127.0.0.1:8080/v1",
            api_key_env="TEI_KEY",
            prompts={"query": "query: ", "document": "passage: "},
        ),
        price_per_million_tokens=0.5,
        name="e5 on TEI",
    )
    parsed = resolve_model(
        "openai:e5-small?base_url=http://127.0.0.1:8080/v1&api_key_env=TEI_KEY"
        "&query_prompt=query:%20&document_prompt=passage:+&price_per_million_tokens=0.5"
    )
    assert built.fingerprint == parsed.fingerprint and built.prompts == parsed.prompts
    assert built.spec == "e5 on TEI" and built.price_per_million_tokens == 0.5
    assert resolve_model(built) is built


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("openai:", "model spec 'openai:': no model name after 'openai:'"),
        (
            "openai:m?dimension=256",
            "model spec 'openai:m': unknown parameter 'dimension'; known: dimensions, ",
        ),
        (
            "openai:m?api_key=sk-live-123456",
            "unknown parameter 'api_key' (the key is read from the environment",
        ),
        ("openai:m?sk-live-123456", "the parameters after '?' must be name=value pairs joined by '&'"),
        ("openai:m?dimensions=256&dimensions=128", "parameter 'dimensions' is given twice"),
        ("openai:m?dimensions=many", "dimensions must be an integer, got 'many'"),
        ("openai:m?dimensions=0", "dimensions must be an integer >= 1, got 0"),
        ("openai:m?timeout=-1", "timeout must be a number of seconds > 0, got -1.0"),
        ("openai:m?timeout=nan", "timeout must be a number of seconds > 0, got nan"),
        ("openai:m?max_retries=-1", "max_retries must be an integer >= 0, got -1"),
        ("openai:m?concurrency=0", "concurrency must be an integer >= 1, got 0"),
        ("openai:m?batch_size=0", "size must be an integer >= 1, got 0"),
        (
            "openai:m?price_per_million_tokens=-0.1",
            "price_per_million_tokens must be a number from 0 to 1,000,000,000, got -0.1",
        ),
        ("openai:m?encoding_format=json", "encoding_format must be 'float' or 'base64', got 'json'"),
        ("openai:m?api_key_env=sk-live-123456", "api_key_env must be the name of an environment variable"),
        ("openai:m?base_url=ftp://host/v1", "base_url must be an http(s) URL without query or fragment"),
        ("openai:m?base_url=http://127.0.0.1:99999/v1", "base_url is not a URL"),
        (
            "openai:m?base_url=https://me:sk-live-123456@host/v1",
            "base_url must not hold a user name or password",
        ),
    ],
)
def test_bad_specs_are_one_line_errors_that_quote_no_key(given: str, message: str) -> None:
    with pytest.raises(EncoderError) as error:
        resolve_model(given)
    assert message in str(error.value)
    assert "\n" not in str(error.value) and "sk-live-123456" not in str(error.value)


def test_a_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    with pytest.raises(
        EncoderError, match=re.escape("needs the openai client: pip install 'pytest-embeval[openai]'")
    ):
        resolve_model("openai:text-embedding-3-small")


# ------------------------------------------------------------------------------------------- requests


def test_vectors_prompts_and_dimensions_as_sent(server: EmbeddingServer) -> None:
    # A space that ends a spec is dropped (by pytest's option and ini handling too): %20 keeps it.
    arm = resolve_model(spec(server, query_prompt="query: ", document_prompt="passage:%20"))
    queries = embed(arm, TEXTS[:5], "query")
    np.testing.assert_allclose(queries, expected([f"query: {t}" for t in TEXTS[:5]]), atol=1e-6)
    np.testing.assert_allclose(
        embed(arm, TEXTS[:5], "document"), expected([f"passage: {t}" for t in TEXTS[:5]]), atol=1e-6
    )
    first = server.received[0]
    assert first.model == MODEL and "dimensions" not in first.body
    assert first.body["encoding_format"] == "base64"  # the client's default, decoded by it
    assert first.headers["authorization"] == f"Bearer {KEY}"
    resolve_and_embed = resolve_model(spec(server, encoding_format="float", dimensions=8))
    np.testing.assert_allclose(
        embed(resolve_and_embed, TEXTS[:2], "document"), expected(TEXTS[:2]), atol=1e-6
    )
    assert server.received[-1].body["encoding_format"] == "float"
    assert server.received[-1].body["dimensions"] == 8
    # Asked for explicitly, base64 comes back undecoded by the client: decoded here.
    as_base64 = resolve_model(spec(server, encoding_format="base64"))
    np.testing.assert_allclose(embed(as_base64, TEXTS[:2], "document"), expected(TEXTS[:2]), atol=1e-6)
    assert server.received[-1].body["encoding_format"] == "base64"


def test_requests_are_bounded_by_count_and_by_estimated_tokens(server: EmbeddingServer) -> None:
    embed(resolve_model(spec(server, batch_size=16, token_budget=100_000)), TEXTS, "document")
    assert sorted(len(r.inputs) for r in server.received) == [4] + [16] * 6
    server.received.clear()
    # Each text estimates at 10 tokens (28 or 29 bytes): a budget of 35 holds 3 of them.
    assert {estimate_tokens(text) for text in TEXTS} == {10}
    embed(resolve_model(spec(server, batch_size=16, token_budget=35, concurrency=1)), TEXTS[:9], "document")
    assert [len(r.inputs) for r in server.received] == [3, 3, 3]
    server.received.clear()
    # A text over the budget goes alone rather than not at all.
    embed(resolve_model(spec(server, token_budget=5, concurrency=1)), TEXTS[:2], "document")
    assert [len(r.inputs) for r in server.received] == [1, 1]


def test_concurrent_requests_stay_within_the_bound(server: EmbeddingServer) -> None:
    server.delay = 0.1
    arm = resolve_model(spec(server, batch_size=5, concurrency=3))
    done: list[tuple[int, int]] = []
    vectors = embed(arm, TEXTS[:60], "document", progress=lambda *call: done.append(call))
    np.testing.assert_allclose(vectors, expected(TEXTS[:60]), atol=1e-6)
    assert len(server.received) == 12 and server.max_in_flight == 3
    assert [d for d, _ in done] == list(range(0, 65, 5)) and {t for _, t in done} == {60}


def test_usage_is_summed_per_arm_and_costed(server: EmbeddingServer) -> None:
    arm = resolve_model(spec(server, batch_size=10, price_per_million_tokens=0.02))
    embed(arm, TEXTS, "document")
    assert arm.usage is not None
    assert arm.usage.snapshot() == UsageCount(tokens=5 * 100, requests=10)
    assert cost(arm.usage.snapshot().tokens, arm.price_per_million_tokens) == pytest.approx(500 * 0.02e-6)
    assert cost(500, None) is None


def test_each_texts_tokens_are_its_share_of_the_request() -> None:
    assert apportion(10, [1, 1, 1]).tolist() == [4, 3, 3]
    assert apportion(7, [10, 30]).tolist() == [2, 5]
    assert apportion(0, [3, 4]).tolist() == [0, 0]
    assert apportion(5, []).tolist() == []
    for total, weights in [(997, [3, 1, 4, 1, 5, 9, 2, 6]), (1, [5, 5]), (12, [0, 0, 0])]:
        shares = apportion(total, weights)
        assert shares.sum() == total and (shares >= 0).all()


def test_an_endpoint_without_usage_costs_nothing_known(server: EmbeddingServer) -> None:
    server.script.append(Reply(change=without_usage))
    arm = resolve_model(spec(server))
    embed(arm, TEXTS[:3], "document")
    assert arm.usage is not None and arm.usage.snapshot() == UsageCount(tokens=0, requests=1)


def test_a_cached_rerun_sends_nothing_and_reports_the_tokens_it_saved(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    first = resolve_model(spec(server, batch_size=16))
    vectors = EmbeddingCache(tmp_path).embed(first, TEXTS, "document")
    assert first.usage is not None and first.usage.snapshot() == UsageCount(tokens=500, requests=7)
    sent = len(server.received)
    again = resolve_model(spec(server, batch_size=16))
    np.testing.assert_array_equal(EmbeddingCache(tmp_path).embed(again, TEXTS, "document"), vectors)
    assert len(server.received) == sent
    assert again.usage is not None and again.usage.snapshot() == UsageCount(cached_tokens=500)
    # Half of them cached: the saving is the shares those texts were billed.
    half = resolve_model(spec(server, batch_size=16))
    EmbeddingCache(tmp_path).embed(half, [*TEXTS[:50], *(f"new text {i}" for i in range(3))], "document")
    assert half.usage is not None
    assert half.usage.snapshot().tokens == 9 and 240 <= half.usage.snapshot().cached_tokens <= 260


# ------------------------------------------------------------------------------------------- faults


def test_an_unreachable_endpoint_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    arm = resolve_model(f"openai:{MODEL}?base_url={url}&api_key_env={KEY_ENV}&max_retries=1")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, KEY)
        with pytest.raises(EncoderError) as error:
            embed(arm, TEXTS[:3], "document", role="candidate")
    assert re.fullmatch(
        rf"candidate encoder '.*' failed on a batch of 3 document texts \(first: row 0\): cannot reach "
        rf"{re.escape(url)}/embeddings \(ConnectError: .*\), 1 retry",
        str(error.value),
    ), str(error.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_names_its_variable(server: EmbeddingServer, status: int) -> None:
    if status == 401:
        server.key = "sk-the-key-the-server-wants"
    else:
        server.script.append(Reply(status=403, message=f"key {KEY} may not use this model"))
    phrase = {401: "401 Unauthorized", 403: "403 Forbidden"}[status]
    assert fault(server).endswith(
        f"{server.base_url}/embeddings refused the API key in ${KEY_ENV} ({phrase})"
    )
    assert len(server.received) == 1  # not retried


def test_a_missing_key_names_its_variable(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    assert fault(server).endswith(
        f"the API key for {server.base_url}/embeddings is read from ${KEY_ENV}, which is not set "
        "(for a server that needs no key, set it to any value)"
    )
    assert server.received == []


def test_an_unknown_model_names_model_and_url(server: EmbeddingServer) -> None:
    arm = resolve_model(spec(server, max_retries=3).replace(MODEL, "text-embedding-4"))
    with pytest.raises(EncoderError) as error:
        embed(arm, TEXTS[:3], "document")
    assert str(error.value).endswith(
        f"{server.base_url}/embeddings has no model 'text-embedding-4' (404 Not Found): check the model name "
        "and the base URL"
    )
    assert len(server.received) == 1


@pytest.mark.parametrize(("status", "phrase"), [(429, "Too Many Requests"), (503, "Service Unavailable")])
def test_retries_exhausted_say_how_many_and_the_last_status(
    server: EmbeddingServer, status: int, phrase: str
) -> None:
    server.script.extend(Reply(status=status, headers={"retry-after-ms": "10"}) for _ in range(3))
    message = fault(server, max_retries=2)
    assert message.endswith(
        f"{server.base_url}/embeddings answered {status} {phrase}; gave up after 2 of 2 retries"
    )
    assert [r.retry_count for r in server.received] == [0, 1, 2]


def test_the_client_waits_what_retry_after_asks(server: EmbeddingServer) -> None:
    # The client's own first backoff is at most 0.5 s: a wait of a second is Retry-After's.
    server.script.append(Reply(status=429, headers={"Retry-After": "1"}))
    arm = resolve_model(spec(server, max_retries=2))
    np.testing.assert_allclose(embed(arm, TEXTS[:3], "document"), expected(TEXTS[:3]), atol=1e-6)
    first, second = server.received
    assert 1.0 <= second.at - first.at < 1.6 and second.retry_count == 1
    assert arm.usage is not None and arm.usage.snapshot().requests == 1


def test_a_retry_after_beyond_two_minutes_is_not_waited_for(server: EmbeddingServer) -> None:
    server.script.append(Reply(status=429, headers={"Retry-After": "600"}))
    arm = resolve_model(spec(server, max_retries=3))
    started = time.monotonic()
    try:
        embed(arm, TEXTS[:3], "document")
    except EncoderError as error:  # current clients give up at once
        assert str(error).endswith("answered 429 Too Many Requests; gave up after 0 of 3 retries")
        assert len(server.received) == 1
    else:  # openai < 2 backs off as for any 429 and tries again
        assert len(server.received) == 2
    assert time.monotonic() - started < 5


def test_a_request_the_server_refuses_quotes_its_message(server: EmbeddingServer) -> None:
    server.script.append(Reply(status=413, message=f"batch too large: 32 > 16 (sent with {KEY})"))
    assert fault(server).endswith(
        f"{server.base_url}/embeddings answered 413 Request Entity Too Large: batch too large: 32 > 16 "
        "(sent with ***)"
    )


def test_no_answer_within_the_timeout(server: EmbeddingServer) -> None:
    server.script.append(Reply(delay=2.0))
    assert fault(server, timeout=0.3).endswith(
        f"no answer from {server.base_url}/embeddings within 0.3 s, 0 retries"
    )


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(change=drop_last), "returned 2 embeddings for 3 inputs"),
        (
            Reply(change=swap_first_two),
            "returned embeddings whose index fields are [1, 0, 2], not 0 to 2 in order",
        ),
        (
            Reply(change=duplicate_index),
            "returned embeddings whose index fields are [0, 1, 0], not 0 to 2 in order",
        ),
        (Reply(change=nan_in_first), "returned NaN or inf in 1 of 3 vectors (first: input 0)"),
    ],
)
def test_a_bad_response_is_a_fault(server: EmbeddingServer, reply: Reply, message: str) -> None:
    server.script.append(reply)
    assert fault(server).endswith(f"{server.base_url}/embeddings {message}")


def test_vectors_of_another_size_than_asked_are_a_fault(server: EmbeddingServer) -> None:
    assert fault(server, dimensions=4).endswith(
        f"{server.base_url}/embeddings returned 8-dimensional vectors for model '{MODEL}', "
        "which was asked for dimensions=4"
    )


def test_a_fault_keeps_the_requests_that_returned(server: EmbeddingServer, tmp_path: Path) -> None:
    # Ten requests of ten; the sixth fails: with one in flight at a time, five were stored.
    server.script.extend([Reply()] * 5 + [Reply(status=400, message="bad input")])
    arm = resolve_model(spec(server, batch_size=10, concurrency=1, max_retries=0))
    with pytest.raises(EncoderError, match="answered 400 Bad Request: bad input"):
        EmbeddingCache(tmp_path).embed(arm, TEXTS, "document")
    stored = EmbeddingCache(tmp_path).lookup(resolve_model(spec(server)), "document", TEXTS)
    assert len(stored) == 50
    server.received.clear()
    EmbeddingCache(tmp_path).embed(resolve_model(spec(server, batch_size=10)), TEXTS, "document")
    assert sorted(server.texts()) == sorted(set(TEXTS) - set(stored))


def test_the_key_is_in_no_message_and_no_log(
    server: EmbeddingServer, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    messages = []
    server.script.extend(
        [
            Reply(status=500, headers={"retry-after-ms": "1"}),
            Reply(status=500, headers={"retry-after-ms": "1"}),
            Reply(status=400, message=f"the key {KEY} is fine but the input is not"),
            Reply(status=403),
        ]
    )
    arm = resolve_model(spec(server, max_retries=1, concurrency=1))
    for _ in range(3):
        with pytest.raises(EncoderError) as error:
            EmbeddingCache(tmp_path).embed(arm, TEXTS[:2], "document")
        messages.append(str(error.value))
    EmbeddingCache(tmp_path).embed(arm, TEXTS[:2], "document")
    assert len(server.received) == 5 and arm.usage is not None and arm.usage.snapshot().requests == 1
    logged = "\n".join(f"{record.name} {record.getMessage()} {record.args}" for record in caplog.records)
    assert "Retrying request" in logged  # the client logged what it did
    files = b"".join(path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
    for text in (*messages, logged, arm.fingerprint, arm.spec, repr(arm), repr(arm.encoder)):
        assert KEY not in text
    assert KEY.encode() not in files
