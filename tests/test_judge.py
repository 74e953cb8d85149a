"""The LLM judge (`judge`): its spec, its prompt, the strict reading of an answer, and its requests against
the tests' own chat-completions server on 127.0.0.1 (known grades, malformed answers, refusals,
out-of-scale grades, 429s with Retry-After, endpoint faults), never showing the key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openai")

from openai_server import ChatReply, EmbeddingServer, Reply, word_vectors

from pytest_embeval.judging.llm_judge import (
    DEFAULT_ATTEMPTS,
    Judge,
    JudgeError,
    Price,
    instructions,
    is_model_judge,
    judge_settings,
    pair_message,
    prompt_digest,
    read_grade,
)

KEY = "sk-judge-test-0123456789abcdef"
KEY_ENV = "EMBEVAL_JUDGE_KEY"
MODEL = "judge-model"
GUIDELINES = "2: answers the query on its own.\n1: answers part of it.\n0: does not help.\n"


def answers(script: dict[str, list[str | ChatReply]]) -> Any:
    """A chat function answering by the document's text (its last line; the title comes first): the next
    of its scripted answers, the last one again once they run out."""
    said: dict[str, int] = {}

    def chat(model: str, messages: list[dict[str, Any]]) -> str | ChatReply:
        document = re.search(r"<document>\n(.*)\n</document>", messages[1]["content"], re.S)
        assert document is not None
        text = document.group(1).split("\n")[-1]
        replies = script[text]
        count = said.get(text, 0)
        said[text] = count + 1
        return replies[min(count, len(replies) - 1)]

    return chat


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with EmbeddingServer(word_vectors(), models=(MODEL,), key=KEY, lifetime=60, max_requests=200) as running:
        yield running


def spec(server: EmbeddingServer, **parameters: object) -> str:
    query = {"base_url": server.base_url, "api_key_env": KEY_ENV, **parameters}
    return f"openai:{MODEL}?" + "&".join(f"{name}={value}" for name, value in query.items())


def judge(server: EmbeddingServer, script: dict[str, list[str | ChatReply]], **parameters: object) -> Judge:
    server.chat = answers(script)
    return Judge(judge_settings(spec(server, **parameters)), GUIDELINES, 2)


# ------------------------------------------------------------------------------------ reading an answer


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("2", (2, None)),
        (" 1\n", (1, None)),
        ("0", (0, None)),
        ("3", (None, "grade 3 is outside the scale 0..2")),
        ("-1", (None, "grade -1 is outside the scale 0..2")),
        ("2.", (None, "not a grade: '2.'")),
        ("Grade: 2", (None, "not a grade: 'Grade: 2'")),
        ("2 (partly)", (None, "not a grade: '2 (partly)'")),
        ("two", (None, "not a grade: 'two'")),
        ("1.5", (None, "not a grade: '1.5'")),
        ("", (None, "an empty answer")),
        (None, (None, "an empty answer")),
        ("x" * 200, (None, "not a grade: '" + "x" * 79 + "…'")),
    ],
)
def test_an_answer_is_one_integer_on_the_scale_or_nothing(
    content: str | None, expected: tuple[int | None, str | None]
) -> None:
    assert read_grade(content, 2) == expected


def test_a_refusal_is_never_a_grade() -> None:
    assert read_grade("0", 2, refusal="I can't help with that.") == (
        None,
        'refused: "I can\'t help with that."',
    )
    assert read_grade(None, 2, finish_reason="content_filter") == (
        None,
        "refused: the endpoint's content filter stopped the answer",
    )


# ----------------------------------------------------------------------------------------------- spec


def test_a_judge_spec_reads_its_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = judge_settings(
        "openai:gpt-x?base_url=http://127.0.0.1:9/v1&api_key_env=MY_KEY&price_per_million_tokens=0.15,0.6"
        "&concurrency=2&attempts=5&max_tokens=4&max_retries=1&timeout=7.5"
    )
    assert settings.connection.base_url == "http://127.0.0.1:9/v1"
    assert settings.connection.api_key_env == "MY_KEY"
    assert (settings.concurrency, settings.attempts, settings.max_tokens) == (2, 5, 4)
    assert (settings.connection.max_retries, settings.connection.timeout) == (1, 7.5)
    assert settings.price == Price(0.15, 0.6)
    assert settings.url == "http://127.0.0.1:9/v1/chat/completions"
    assert settings.identity == "openai:gpt-x?base_url=http://127.0.0.1:9/v1"
    default = judge_settings("openai:gpt-x?price_per_million_tokens=2")
    assert default.price == Price(2.0, 2.0)
    assert default.identity == "openai:gpt-x"
    assert default.attempts == DEFAULT_ATTEMPTS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "gpt-4o",
            "judge spec 'gpt-4o': a judge is a chat model behind an OpenAI-compatible endpoint, "
            "'openai:MODEL[?base_url=...&api_key_env=...]'",
        ),
        (
            "openai:",
            "model spec 'openai:': no model name after 'openai:' "
            "(e.g. 'openai:MODEL?base_url=http://127.0.0.1:8000/v1')",
        ),
        (
            "openai:m?api_key=sk-secret",
            "model spec 'openai:m': unknown parameter 'api_key' (the key is read from the environment: "
            "api_key_env=VARIABLE); known: base_url, api_key_env, price_per_million_tokens, concurrency, "
            "attempts, max_tokens, max_retries, timeout",
        ),
        ("openai:m?attempts=0", "model spec 'openai:m': attempts must be an integer >= 1, got '0'"),
        (
            "openai:m?concurrency=many",
            "model spec 'openai:m': concurrency must be an integer >= 1, got 'many'",
        ),
        ("openai:m?timeout=-1", "model spec 'openai:m': timeout must be a number of seconds > 0, got '-1'"),
        (
            "openai:m?price_per_million_tokens=1,2,3",
            "model spec 'openai:m': price_per_million_tokens must be a price >= 0 per million tokens, or two "
            "(input,output), got '1,2,3'",
        ),
        (
            "openai:m?base_url=http://user:sk-secret@host/v1",
            "model spec 'openai:m': base_url must not hold a user name or password; the key is read from the "
            "environment (api_key_env=VARIABLE)",
        ),
    ],
)
def test_bad_judge_specs_are_one_line_without_the_key(text: str, message: str) -> None:
    with pytest.raises(JudgeError) as error:
        judge_settings(text)
    assert str(error.value) == message
    assert "sk-secret" not in str(error.value)


def test_a_model_judge_is_told_from_a_person_by_its_spec() -> None:
    assert is_model_judge("openai:gpt-x prompt:0123456789ab")
    assert not is_model_judge("ana")


# --------------------------------------------------------------------------------------------- prompt


def test_the_prompt_holds_the_guidelines_and_the_pair_and_its_digest_follows_them() -> None:
    system = instructions(GUIDELINES, 2)
    assert GUIDELINES.strip() in system
    assert system.endswith("Answer with the grade alone: one integer from 0 to 2, and nothing else.")
    assert pair_message("lost parcel", "Claims", "File a claim.") == (
        "<query>\nlost parcel\n</query>\n\n<document>\nClaims\nFile a claim.\n</document>"
    )
    assert pair_message("lost parcel", "", "File a claim.") == (
        "<query>\nlost parcel\n</query>\n\n<document>\nFile a claim.\n</document>"
    )
    digest = prompt_digest(GUIDELINES, 2)
    assert re.fullmatch(r"[0-9a-f]{12}", digest)
    assert prompt_digest(GUIDELINES, 2) == digest
    assert prompt_digest(GUIDELINES + "3: also this.\n", 2) != digest
    assert prompt_digest(GUIDELINES, 3) != digest


def test_the_judge_name_is_its_model_endpoint_and_prompt(server: EmbeddingServer) -> None:
    graded = judge(server, {})
    assert graded.name == f"openai:{MODEL}?base_url={server.base_url} prompt:{prompt_digest(GUIDELINES, 2)}"


# ----------------------------------------------------------------------------------- against a server


def test_a_known_grade_takes_one_request_at_temperature_0(server: EmbeddingServer) -> None:
    graded = judge(server, {"File a claim.": ["2"]}).grade("lost parcel", "Claims", "File a claim.")
    assert (graded.grade, graded.problem, len(graded.exchanges)) == (2, None, 1)
    (request,) = server.received
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": instructions(GUIDELINES, 2)},
            {"role": "user", "content": pair_message("lost parcel", "Claims", "File a claim.")},
        ],
        "temperature": 0,
        "max_tokens": 16,
    }
    # what the test server bills: a token per word
    asked = instructions(GUIDELINES, 2) + " " + pair_message("lost parcel", "Claims", "File a claim.")
    assert graded.input_tokens == len(asked.split())
    assert graded.output_tokens == 1


def test_a_malformed_answer_is_asked_again_with_the_form(server: EmbeddingServer) -> None:
    graded = judge(server, {"doc": ["I would say 2", "2"]}).grade("q", "", "doc")
    assert (graded.grade, [e.problem for e in graded.exchanges]) == (
        2,
        ["not a grade: 'I would say 2'", None],
    )
    first, second = (request.body["messages"] for request in server.received)
    assert second[:2] == first
    assert second[2:] == [
        {"role": "assistant", "content": "I would say 2"},
        {
            "role": "user",
            "content": "Answer with the grade alone: one integer from 0 to 2, and nothing else.",
        },
    ]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("3", "grade 3 is outside the scale 0..2"),
        ("relevant", "not a grade: 'relevant'"),
        (
            ChatReply(content=None, refusal="I can't assist with that."),
            'refused: "I can\'t assist with that."',
        ),
        (
            ChatReply(content=None, finish_reason="content_filter"),
            "refused: the endpoint's content filter stopped the answer",
        ),
        (ChatReply(content=""), "an empty answer"),
    ],
)
def test_an_answer_never_a_grade_leaves_the_pair_ungraded_after_the_attempts(
    server: EmbeddingServer, reply: str | ChatReply, problem: str
) -> None:
    graded = judge(server, {"doc": [reply]}, attempts=3).grade("q", "", "doc")
    assert (graded.grade, graded.problem, len(graded.exchanges)) == (None, problem, 3)
    assert len(server.received) == 3


def test_a_429_is_retried_by_the_client_after_retry_after(server: EmbeddingServer) -> None:
    server.script.append(Reply(status=429, headers={"Retry-After": "1"}, message="slow down"))
    graded = judge(server, {"doc": ["1"]}, max_retries=2).grade("q", "", "doc")
    assert graded.grade == 1
    assert len(graded.exchanges) == 1  # one request of ours; the client's retry is not an attempt
    first, retried = server.received
    assert [first.retry_count, retried.retry_count] == [0, 1]
    assert retried.at - first.at >= 0.9  # it waited what Retry-After asked


@pytest.mark.parametrize(
    ("replies", "parameters", "message"),
    [
        (
            [Reply(status=500)] * 3,
            {"max_retries": 2},
            "{url} answered 500 Internal Server Error; gave up after 2 of 2 retries",
        ),
        (
            [Reply(status=403, message=f"key {KEY} may not")],
            {},
            "{url} refused the API key in $" + KEY_ENV + " (403 Forbidden)",
        ),
        (
            [Reply(status=400, message=f"bad request for {KEY}")],
            {},
            "{url} answered 400 Bad Request: bad request for ***",
        ),
    ],
)
def test_endpoint_faults_are_one_line_without_the_key(
    server: EmbeddingServer, replies: list[Reply], parameters: dict[str, object], message: str
) -> None:
    server.script.extend(replies)
    with pytest.raises(JudgeError) as error:
        judge(server, {"doc": ["1"]}, **{"max_retries": 0, **parameters}).grade("q", "", "doc")
    assert str(error.value) == message.format(url=f"{server.base_url}/chat/completions")
    assert KEY not in str(error.value)


def test_a_missing_key_names_its_variable(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(JudgeError) as error:
        judge(server, {"doc": ["1"]}).grade("q", "", "doc")
    assert str(error.value) == (
        f"the API key for {server.base_url}/chat/completions is read from ${KEY_ENV}, which is not set "
        "(for a server that needs no key, set it to any value)"
    )
    assert server.received == []
