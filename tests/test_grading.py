"""A blind sheet graded by the LLM judge (`grading.grade_sheet`) against the tests' chat server: every pair
graded with the golden set's texts and nothing else, rows and audit lines written as they come, a stopped
run resumed with only the missing pairs asked for, ungraded pairs listed and asked for again, tokens and
cost summed, and the key nowhere."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai")

import yaml
from openai_server import ChatReply, EmbeddingServer, word_vectors
from test_judge import KEY, KEY_ENV, MODEL, answers

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.judging.grading import audit_path, grade_sheet
from pytest_embeval.judging.llm_judge import Judge, JudgeError, Price, judge_settings
from pytest_embeval.judging.pooling import SHEET_COLUMNS, pool_from_rankings, read_sheet, write_sheet

GUIDELINES = "Grade 2 when the page answers the question, 1 when it helps, 0 otherwise.\n"
#: document id -> (text, the grade the scripted judge gives it)
DOCUMENTS = {f"d{i}": (f"page about topic {i}", i % 3) for i in range(8)}
QUERIES = {f"q{i}": f"question {i}" for i in range(3)}
ARMS = ("incumbent-arm-alpha", "candidate-arm-beta")


def judging_set(root: Path, guidelines: str = GUIDELINES) -> Path:
    """A golden set with guidelines: 3 queries, 8 documents, one judged pair per query (the people's)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": d, "title": f"Title {d}", "text": t}) + "\n" for d, (t, _) in DOCUMENTS.items()
        ),
        encoding="utf-8",
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()), encoding="utf-8"
    )
    (root / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\td0\t0\n" for q in QUERIES), encoding="utf-8"
    )
    (root / "judging.md").write_text(guidelines, encoding="utf-8")
    plan = {
        "name": "judged",
        "corpus": "corpus.jsonl",
        "queries": "queries.jsonl",
        "qrels": "qrels.tsv",
        "metric": "ndcg@5",
        "guidelines": "judging.md",
    }
    path = root / "golden.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def pool_sheet(golden: GoldenSet, path: Path) -> Path:
    """The blind sheet of two arms that rank the documents in opposite orders (depth 4: every document)."""
    order = sorted(DOCUMENTS)
    rankings = {
        ARMS[0]: {q: order for q in QUERIES},
        ARMS[1]: {q: order[::-1] for q in QUERIES},
    }
    write_sheet(path, pool_from_rankings(golden, rankings, depth=4))
    return path


def script() -> dict[str, list[str | ChatReply]]:
    return {text: [str(grade)] for text, grade in DOCUMENTS.values()}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with EmbeddingServer(word_vectors(), models=(MODEL,), key=KEY, lifetime=60, max_requests=200) as running:
        running.chat = answers(script())
        yield running


def judge_spec(server: EmbeddingServer, **parameters: object) -> str:
    """The judge's spec for the tests' server: one request at a time unless told otherwise."""
    query = {"base_url": server.base_url, "api_key_env": KEY_ENV, "concurrency": 1, **parameters}
    return f"openai:{MODEL}?" + "&".join(f"{name}={value}" for name, value in query.items())


def make_judge(server: EmbeddingServer, golden: GoldenSet, **parameters: object) -> Judge:
    assert golden.guidelines is not None
    return Judge(judge_settings(judge_spec(server, **parameters)), golden.guidelines.text, 2)


@pytest.fixture
def setup(tmp_path: Path, server: EmbeddingServer) -> tuple[GoldenSet, Path, Path]:
    golden = load_golden(judging_set(tmp_path / "golden"))
    return golden, pool_sheet(golden, tmp_path / "pool.csv"), tmp_path / "graded.csv"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def expected_grade(doc_id: str) -> str:
    return str(DOCUMENTS[doc_id][1])


def test_every_pair_is_graded_in_sheet_order_with_an_audit_line_per_request(
    server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path]
) -> None:
    golden, sheet_path, out = setup
    judge = make_judge(server, golden, price_per_million_tokens="1,4", concurrency=3)
    server.delay = 0.05  # long enough for requests to overlap
    run = grade_sheet(golden, read_sheet(sheet_path), judge, out)
    assert 1 < server.max_in_flight <= 3
    sheet = rows(sheet_path)
    graded = rows(out)
    assert [r["pair_id"] for r in graded] == [r["pair_id"] for r in sheet]
    assert list(graded[0]) == list(SHEET_COLUMNS)
    assert [r["grade"] for r in graded] == [expected_grade(r["doc_id"]) for r in sheet]
    assert {r["judge"] for r in graded} == {judge.name}
    assert (run.pairs, run.resumed, run.graded, run.ungraded) == (len(sheet), 0, len(sheet), ())
    records = [json.loads(line) for line in audit_path(out).read_text(encoding="utf-8").splitlines()]
    assert records[0]["run"]["judge"] == judge.name
    assert records[0]["run"]["temperature"] == 0
    exchanges = records[1:]
    assert sorted(r["pair_id"] for r in exchanges) == sorted(r["pair_id"] for r in sheet)
    assert all(r["answer"]["content"] == str(r["grade"]) for r in exchanges)
    inputs = sum(r["usage"]["input_tokens"] for r in exchanges)
    outputs = sum(r["usage"]["output_tokens"] for r in exchanges)
    assert (run.spend.requests, run.spend.input_tokens, run.spend.output_tokens) == (
        len(sheet),
        inputs,
        outputs,
    )
    assert run.spend.cost == pytest.approx((inputs * 1 + outputs * 4) / 1e6)
    assert run.total == run.spend
    assert audit_path(out) == out.with_name("graded.audit.jsonl")


def test_the_judge_sees_the_guidelines_query_and_document_and_nothing_else(
    server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path]
) -> None:
    golden, sheet_path, out = setup
    judge = make_judge(server, golden)
    grade_sheet(golden, read_sheet(sheet_path), judge, out)
    documents = {doc.id: doc for doc in golden.documents}
    queries = {query.id: query for query in golden.queries}
    bodies = [request.body for request in server.received]
    expected = []
    for row in rows(sheet_path):
        doc = documents[row["doc_id"]]
        expected.append(judge.messages(queries[row["query_id"]].text, doc.title, doc.text))
    assert sorted(map(json.dumps, (b["messages"] for b in bodies))) == sorted(map(json.dumps, expected))
    assert all(set(body) == {"model", "messages", "temperature", "max_tokens"} for body in bodies)
    sent = json.dumps(bodies)
    for secret in (
        *ARMS,
        "incumbent",
        "candidate",
        "rank",
        "score",
        *(r["pair_id"] for r in rows(sheet_path)),
    ):
        assert secret not in sent
    assert not any(
        f'"{doc_id}"' in sent or f'"{query_id}"' in sent for doc_id in DOCUMENTS for query_id in QUERIES
    )


def test_a_stopped_run_resumes_with_only_the_missing_pairs(
    server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path]
) -> None:
    golden, sheet_path, out = setup
    total = len(rows(sheet_path))
    server.max_requests = 5  # then 503 with x-should-retry: false, the client gives up at once
    with pytest.raises(JudgeError) as error:
        grade_sheet(golden, read_sheet(sheet_path), make_judge(server, golden, max_retries=0), out)
    url = f"{server.base_url}/chat/completions"
    assert str(error.value) == (
        f"{url} answered 503 Service Unavailable; gave up after 0 of 0 retries; 5 of {total} pairs are in "
        f"{out}: run the same command again to grade the other {total - 5}"
    )
    written = rows(out)
    assert len(written) == 5
    first = [r["pair_id"] for r in written]
    server.max_requests = 200
    asked_before = len(server.received)
    run = grade_sheet(golden, read_sheet(sheet_path), make_judge(server, golden), out)
    assert (run.resumed, run.graded) == (5, total - 5)
    assert len(server.received) - asked_before == total - 5
    again = {
        json.loads(line).get("pair_id") for line in audit_path(out).read_text().splitlines()[-(total - 5) :]
    }
    assert again.isdisjoint(first)
    assert [r["grade"] for r in rows(out)] == [expected_grade(r["doc_id"]) for r in rows(sheet_path)]
    assert (
        run.total.requests == total
    )  # every run's requests, from the audit: the refused one returned nothing


def test_a_torn_last_row_is_dropped_and_graded_again(
    server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path]
) -> None:
    golden, sheet_path, out = setup
    judge = make_judge(server, golden)
    grade_sheet(golden, read_sheet(sheet_path), judge, out)
    text = out.read_text(encoding="utf-8")
    cut = text[: len(text) - 20]  # the last row without its judge's name's end
    out.write_text(cut, encoding="utf-8", newline="")
    before = len(server.received)
    run = grade_sheet(golden, read_sheet(sheet_path), judge, out)
    assert (run.resumed, run.graded, len(server.received) - before) == (len(rows(sheet_path)) - 1, 1, 1)
    assert out.read_text(encoding="utf-8") == text


def test_an_answer_never_a_grade_is_listed_left_ungraded_and_asked_for_again(
    server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path]
) -> None:
    golden, sheet_path, out = setup
    bad = DOCUMENTS["d4"][0]
    server.chat = answers({**script(), bad: ["3", "maybe 1", ChatReply(content=None, refusal="No.")]})
    judge = make_judge(server, golden, attempts=3)
    run = grade_sheet(golden, read_sheet(sheet_path), judge, out)
    assert [(u.query_id, u.doc_id, u.problem) for u in run.ungraded] == [
        (q, "d4", "refused: 'No.'") for q in QUERIES
    ]
    ungraded = [r for r in rows(out) if r["doc_id"] == "d4"]
    assert [(r["grade"], r["notes"]) for r in ungraded] == [("", "ungraded: refused: 'No.'")] * len(QUERIES)
    # the next run asks only for them; the server now answers (its per-document script ran out: "No." again,
    # so give it a grade)
    server.chat = answers({**script(), bad: ["1"]})
    before = len(server.received)
    rerun = grade_sheet(golden, read_sheet(sheet_path), judge, out)
    assert (rerun.resumed, rerun.graded, rerun.ungraded, len(server.received) - before) == (
        len(rows(sheet_path)) - 3,
        3,
        (),
        3,
    )
    assert [r["grade"] for r in rows(out) if r["doc_id"] == "d4"] == ["1"] * 3


def test_an_output_of_another_judge_is_refused(
    server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path], tmp_path: Path
) -> None:
    golden, sheet_path, out = setup
    grade_sheet(golden, read_sheet(sheet_path), make_judge(server, golden), out)
    other = load_golden(
        judging_set(tmp_path / "other", guidelines=GUIDELINES + "Ties go to the lower grade.\n")
    )
    judge = make_judge(server, other)
    with pytest.raises(JudgeError) as error:
        grade_sheet(golden, read_sheet(sheet_path), judge, out)
    assert str(error.value).startswith(f"{out}: row 2: graded by 'openai:{MODEL}?base_url=")
    assert str(error.value).endswith(
        f"not by this judge {judge.name!r} (another model, endpoint, guidelines or scale); "
        "choose another --out"
    )
    people = tmp_path / "people.csv"
    people.write_text("query_id,doc_id,grade\nq0,d1,2\n", encoding="utf-8")
    with pytest.raises(JudgeError) as error:
        grade_sheet(golden, read_sheet(sheet_path), judge, people)
    assert str(error.value) == (
        f"{people} exists and is not a sheet this judge wrote (its header differs); choose another --out"
    )
    assert people.read_text(encoding="utf-8") == "query_id,doc_id,grade\nq0,d1,2\n"


def test_the_key_is_in_no_file(server: EmbeddingServer, setup: tuple[GoldenSet, Path, Path]) -> None:
    golden, sheet_path, out = setup
    grade_sheet(golden, read_sheet(sheet_path), make_judge(server, golden), out)
    for path in (out, audit_path(out)):
        assert KEY not in path.read_text(encoding="utf-8")
    assert all(request.headers["authorization"] == f"Bearer {KEY}" for request in server.received)


def test_price_costs_input_and_output_apart() -> None:
    assert Price(0.15, 0.6).cost(1_000_000, 500_000) == pytest.approx(0.45)
