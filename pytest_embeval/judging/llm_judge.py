"""An LLM judge: a chat model behind an OpenAI-compatible chat-completions endpoint grades (query, document)
pairs on the golden set's scale, by the golden set's written guidelines.

The judge is a spec like an endpoint arm's, ``openai:MODEL[?name=value&...]`` (`judge_settings`), sent
through the same client, base URL and key handling (`endpoint.OpenAIClient`): the official ``openai``
client retries 408/409/429/5xx answers and connection errors itself (``max_retries``, honouring
``Retry-After``), and nothing here retries a request on top of it.

What *is* retried here is an answer that is not a grade: text that is not one integer, a grade outside
``0..max_grade``, a refusal, or an empty answer. The request then went through and the model answered; it
is asked again (``attempts`` times in all), shown its answer and reminded of the form, and when no attempt
gives a grade the pair is left ungraded with the reason. A grade is never guessed from free text.

Requests are made at temperature 0 and hold only the guidelines, the query and the document (title and
text): no id, arm, rank or score, so the judge is as blind as the people who grade the same sheet.

The judge's name (`Judge.name`) is what goes in a sheet's ``judge`` cell: the model and endpoint, and a
digest of the prompt (template version, guidelines, scale). Grades made under other guidelines come from
another judge, so a calibration never carries over to them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from pytest_embeval.arms.embedding import ENDPOINT_PREFIX
from pytest_embeval.arms.endpoint import (
    DEFAULT_BASE_URL,
    DEFAULT_CONCURRENCY,
    DEFAULT_KEY_ENV,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    connection,
    spec_parameters,
)
from pytest_embeval.arms.openai_client import Connection, EndpointError, OpenAIClient

__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_MAX_TOKENS",
    "PROMPT_VERSION",
    "Exchange",
    "Judge",
    "JudgeError",
    "JudgeSettings",
    "Judgment",
    "Price",
    "instructions",
    "is_model_judge",
    "judge_settings",
    "pair_message",
    "prompt_digest",
    "read_grade",
]

#: Bumped whenever the wording of the prompt changes: it is part of every judge's name.
PROMPT_VERSION = 1
#: Answers asked for per pair before it is left ungraded (the first and two more).
DEFAULT_ATTEMPTS = 3
#: A grade is one token; a few more leave room for a newline or a stray space, not for an essay.
DEFAULT_MAX_TOKENS = 16
TEMPERATURE = 0
#: What the judge's part of a sheet's ``judge`` cell ends with: `` prompt:`` and 12 hex digits.
PROMPT_MARK = " prompt:"

_INTEGER = re.compile(r"[+-]?[0-9]+")
_SHOWN = 80  # characters of a bad answer quoted in a message


class JudgeError(Exception):
    """A judge that cannot be used or an endpoint that failed; one line, never holding the key."""


@dataclasses.dataclass(frozen=True, slots=True)
class Price:
    """Dollars (or any currency) per million input and output tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


@dataclasses.dataclass(frozen=True, slots=True)
class JudgeSettings:
    """A judge spec, validated: where requests go, how many at once, how often an answer is asked again."""

    #: as given (it holds no key: the key is read from ``connection.api_key_env``)
    spec: str
    connection: Connection
    concurrency: int
    attempts: int
    max_tokens: int
    price: Price | None

    @property
    def url(self) -> str:
        return f"{self.connection.base_url}/chat/completions"

    @property
    def identity(self) -> str:
        """The model and the endpoint, as a spec: what a judge's name starts with."""
        base = self.connection.base_url
        where = "" if base == DEFAULT_BASE_URL else "?base_url=" + base
        return f"{ENDPOINT_PREFIX}{self.connection.model}{where}"


def _price(text: str) -> Price:
    parts = text.split(",")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or not all(0 <= value < float("inf") for value in values):
        raise ValueError("a price >= 0 per million tokens, or two (input,output)")
    return Price(values[0], values[-1])


def _at_least(least: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            value = least - 1
        if value < least:
            raise ValueError(f"an integer >= {least}")
        return value

    return read


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValueError("a number of seconds > 0")
    return value


_SPEC_PARAMETERS: dict[str, Callable[[str], object]] = {
    "base_url": str,
    "api_key_env": str,
    "price_per_million_tokens": _price,
    "concurrency": _at_least(1),
    "attempts": _at_least(1),
    "max_tokens": _at_least(1),
    "max_retries": _at_least(0),
    "timeout": _seconds,
}


def judge_settings(spec: str) -> JudgeSettings:
    """The settings of a judge spec ``openai:MODEL[?name=value&...]``; `JudgeError` for a bad one.

    Parameters: ``base_url`` and ``api_key_env`` (as for an endpoint arm), ``price_per_million_tokens``
    (one price, or ``input,output``), ``concurrency`` (requests in flight, default 4), ``attempts`` (answers
    asked for per pair, default 3), ``max_tokens`` (default 16), ``max_retries`` and ``timeout`` (the
    client's retries of a failed request and its wait for an answer).
    """
    if not spec.startswith(ENDPOINT_PREFIX):
        raise JudgeError(
            f"judge spec {spec!r}: a judge is a chat model behind an OpenAI-compatible endpoint, "
            f"'{ENDPOINT_PREFIX}MODEL[?base_url=...&api_key_env=...]'"
        )
    try:
        model, options = spec_parameters(
            spec, _SPEC_PARAMETERS, example="openai:MODEL?base_url=http://127.0.0.1:8000/v1"
        )
        where = connection(
            model,
            base_url=cast("str | None", options.get("base_url")),
            api_key_env=cast(str, options.get("api_key_env", DEFAULT_KEY_ENV)),
            max_retries=cast(int, options.get("max_retries", DEFAULT_MAX_RETRIES)),
            timeout=cast(float, options.get("timeout", DEFAULT_TIMEOUT)),
        )
    except EndpointError as error:
        raise JudgeError(str(error)) from None
    return JudgeSettings(
        spec=spec,
        connection=where,
        concurrency=cast(int, options.get("concurrency", DEFAULT_CONCURRENCY)),
        attempts=cast(int, options.get("attempts", DEFAULT_ATTEMPTS)),
        max_tokens=cast(int, options.get("max_tokens", DEFAULT_MAX_TOKENS)),
        price=cast("Price | None", options.get("price_per_million_tokens")),
    )


def is_model_judge(judge: str) -> bool:
    """Whether a sheet's ``judge`` cell names a model (a judge spec), not a person."""
    return judge.startswith(ENDPOINT_PREFIX)


# ------------------------------------------------------------------------------------------------ prompt


def instructions(guidelines: str, max_grade: int) -> str:
    """The system message: the task, the guidelines as written, and the form of the answer."""
    return (
        "You judge how relevant a document is to a search query, for a test collection. Grade it by the "
        "relevance guidelines below, which people grade the same documents by.\n\n"
        f"<guidelines>\n{guidelines.strip()}\n</guidelines>\n\n"
        f"{_form(max_grade)}"
    )


def _form(max_grade: int) -> str:
    return f"Answer with the grade alone: one integer from 0 to {max_grade}, and nothing else."


def pair_message(query: str, title: str, text: str) -> str:
    """The user message of one pair: the query and the document, nothing about where it came from."""
    document = f"{title}\n{text}" if title else text
    return f"<query>\n{query}\n</query>\n\n<document>\n{document}\n</document>"


def prompt_digest(guidelines: str, max_grade: int) -> str:
    """12 hex digits of the sha256 of everything that makes the prompt: its version, the system message
    (guidelines and scale), the form of a pair and of the reminder, and the temperature."""
    parts = [
        PROMPT_VERSION,
        instructions(guidelines, max_grade),
        pair_message("{query}", "{title}", "{text}"),
        _form(max_grade),
        TEMPERATURE,
    ]
    encoded = json.dumps(parts, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()[:12]


# ---------------------------------------------------------------------------------------- reading answers


def _quoted(text: str) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= _SHOWN else line[: _SHOWN - 1] + "…")


def read_grade(
    content: str | None, max_grade: int, *, refusal: str | None = None, finish_reason: str | None = None
) -> tuple[int | None, str | None]:
    """``(grade, None)`` when the answer is one integer on the scale (surrounding whitespace aside), else
    ``(None, problem)``: a refusal, an empty answer, a grade outside ``0..max_grade`` or text that is not an
    integer. Nothing else is read as a grade: not "2.", not "Grade: 2", not "2 (partly)"."""
    if refusal:
        return None, f"refused: {_quoted(refusal)}"
    if finish_reason == "content_filter":
        return None, "refused: the endpoint's content filter stopped the answer"
    answer = (content or "").strip()
    if not answer:
        return None, "an empty answer"
    if not _INTEGER.fullmatch(answer):
        return None, f"not a grade: {_quoted(answer)}"
    grade = int(answer)
    if not 0 <= grade <= max_grade:
        return None, f"grade {grade} is outside the scale 0..{max_grade}"
    return grade, None


# ----------------------------------------------------------------------------------------------- requests


@dataclasses.dataclass(frozen=True, slots=True)
class Exchange:
    """One request and its answer, as the audit file records it."""

    attempt: int
    request: Mapping[str, Any]
    content: str | None
    refusal: str | None
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    grade: int | None
    problem: str | None

    def record(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "request": dict(self.request),
            "answer": {"content": self.content, "refusal": self.refusal, "finish_reason": self.finish_reason},
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "grade": self.grade,
            "problem": self.problem,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Judgment:
    """A pair's grade (None: left ungraded, ``problem`` says why) and every exchange it took."""

    grade: int | None
    problem: str | None
    exchanges: tuple[Exchange, ...]

    @property
    def input_tokens(self) -> int:
        return sum(exchange.input_tokens for exchange in self.exchanges)

    @property
    def output_tokens(self) -> int:
        return sum(exchange.output_tokens for exchange in self.exchanges)


class Judge:
    """A chat model grading pairs by ``guidelines`` on ``0..max_grade``; `grade` may be called from
    several threads at once (the client is shared)."""

    def __init__(self, settings: JudgeSettings, guidelines: str, max_grade: int) -> None:
        if isinstance(max_grade, bool) or not isinstance(max_grade, int) or max_grade < 1:
            raise ValueError(f"max_grade must be an integer >= 1, got {max_grade!r}")
        self.settings = settings
        self.max_grade = max_grade
        self.digest = prompt_digest(guidelines, max_grade)
        self._system = instructions(guidelines, max_grade)
        self._client = OpenAIClient(settings.connection)

    @property
    def name(self) -> str:
        """What a sheet's ``judge`` cell holds for this judge's grades."""
        return f"{self.settings.identity}{PROMPT_MARK}{self.digest}"

    def redact(self, text: str) -> str:
        return self._client.redact(text)

    def messages(self, query: str, title: str, text: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": pair_message(query, title, text)},
        ]

    def grade(self, query: str, title: str, text: str) -> Judgment:
        """Ask for the pair's grade until an answer is one, at most ``attempts`` times; `JudgeError` when
        the endpoint fails (after the client's own retries)."""
        first = self.messages(query, title, text)
        messages = first
        exchanges: list[Exchange] = []
        for attempt in range(1, self.settings.attempts + 1):
            exchange = self._ask(messages, attempt)
            exchanges.append(exchange)
            if exchange.grade is not None:
                break
            # Our retry, of an answer rather than of a request: the model sees what it said and the form
            # again (a request the endpoint failed was already retried by the client, and is not retried).
            messages = [
                *first,
                {"role": "assistant", "content": exchange.content or exchange.refusal or ""},
                {"role": "user", "content": _form(self.max_grade)},
            ]
        last = exchanges[-1]
        return Judgment(last.grade, last.problem, tuple(exchanges))

    def _ask(self, messages: Sequence[Mapping[str, str]], attempt: int) -> Exchange:
        settings = self.settings
        request: dict[str, Any] = {
            "model": settings.connection.model,
            "messages": [dict(message) for message in messages],
            "temperature": TEMPERATURE,
            "max_tokens": settings.max_tokens,
        }
        try:
            openai, client = self._client.connect(settings.url)
        except EndpointError as error:
            raise JudgeError(str(error)) from None
        try:
            response = client.chat.completions.create(**request)
        except openai.OpenAIError as error:
            raise JudgeError(self._client.explain(openai, error, settings.url)) from None
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        content = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        finish = getattr(choices[0], "finish_reason", None) if choices else None
        usage = getattr(response, "usage", None)
        grade, problem = read_grade(
            content if isinstance(content, str) else None,
            self.max_grade,
            refusal=refusal if isinstance(refusal, str) else None,
            finish_reason=finish if isinstance(finish, str) else None,
        )
        return Exchange(
            attempt=attempt,
            request=request,
            content=content if isinstance(content, str) else None,
            refusal=refusal if isinstance(refusal, str) else None,
            finish_reason=finish if isinstance(finish, str) else None,
            input_tokens=_count(getattr(usage, "prompt_tokens", None)),
            output_tokens=_count(getattr(usage, "completion_tokens", None)),
            grade=grade,
            problem=problem,
        )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
