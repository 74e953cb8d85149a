"""`embeval sample` and `embeval corpus-sample`: the draw on a small log computed by hand, the output loading
as a golden set's data with its draw in the report's control, the corpus sample's uniformity (chi-square on
a known partition), and every bad input as one line, exit 2, nothing written."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import chisquare
from suite_helpers import CliResult

from pytest_embeval.core.draws_ahead import Draws
from pytest_embeval.core.sampling import Reservoir
from pytest_embeval.golden.corpus_draw import draw_corpus
from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden

Embeval = Callable[..., CliResult]


def write_log(path: Path) -> Path:
    """100 searches. English (90): "track my parcel" 40 times in three spellings, "refund" 20 times, 30
    queries once each. German (10): "paket" 5 times, 5 queries once each."""
    rows: list[dict[str, Any]] = []
    rows += [{"query": "Track my parcel", "language": "en"}] * 28
    rows += [{"query": "track  MY parcel ", "language": "en"}] * 10
    rows += [{"query": "\uff34rack my parcel", "language": "en"}] * 2  # a full-width T
    rows += [{"query": "refund", "language": "en"}] * 20
    rows += [{"query": f"english {i}", "language": "en"} for i in range(30)]
    rows += [{"query": "paket", "language": "de"}] * 5
    rows += [{"query": f"deutsch {i}", "language": "de"} for i in range(5)]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


SAMPLE = ["--by", "language", "--size", "12", "--floor", "5", "--bands", "head=0.4,torso=0.2"]


def test_the_draw_equals_the_hand_computation(tmp_path: Path, embeval: Embeval) -> None:
    # Distinct queries, most frequent first: "track my parcel" 40 (starts at 0 < 40: head), "refund" 20
    # (starts at 40, ends at 60: torso), "paket" 5 (starts at 60: tail), 35 singletons (tail).
    # Strata: en has 90 % of traffic and 32 distinct queries, de 10 % and 6. Proportion gives de 1.2 of 12
    # seats, below the floor of 5: de gets 5, en the other 7. Within en, the bands by traffic: head 40,
    # torso 20, tail 30 of 90 would be 3.1, 1.6 and 2.3 seats, but head and torso have one query each:
    # capped at 1, the tail gets 5. Within de every query is tail: 5 of its 6.
    log = write_log(tmp_path / "log.jsonl")
    out = tmp_path / "queries.jsonl"
    status, stdout, stderr = embeval("sample", log, *SAMPLE, "--out", out)
    assert (status, stderr) == (0, "")
    queries = read_jsonl(out)
    assert len(queries) == 12 and len({q["_id"] for q in queries}) == 12
    assert Counter((q["language"], q["band"]) for q in queries) == {
        ("en", "head"): 1,
        ("en", "torso"): 1,
        ("en", "tail"): 5,
        ("de", "tail"): 5,
    }
    by_text = {q["text"]: q for q in queries}
    # The first spelling seen, the frequency of all three, the stable id of the normalised text.
    assert by_text["Track my parcel"]["frequency"] == 40 and by_text["refund"]["frequency"] == 20
    assert list(by_text["Track my parcel"]) == ["_id", "text", "language", "band", "frequency", "inclusion"]
    assert all(q["frequency"] == 1 for q in queries if q["band"] == "tail" and q["text"] != "paket")
    # Each query's inclusion is its cell's sampled over distinct: en head 1 of 1, torso 1 of 1, tail 5 of
    # 30; de tail 5 of 6. So en's drawn queries stand for 40 + 20 + 5 x 6 = 90 searches, its traffic.
    assert Counter((q["language"], q["band"], q["inclusion"]) for q in queries) == {
        ("en", "head", 1.0): 1,
        ("en", "torso", 1.0): 1,
        ("en", "tail", 5 / 30): 5,
        ("de", "tail", 5 / 6): 5,
    }
    assert sum(q["frequency"] / q["inclusion"] for q in queries if q["language"] == "en") == pytest.approx(90)
    lines = stdout.splitlines()
    assert lines[0] == (
        f"{log}: 100 searches, 38 distinct queries (case, whitespace and Unicode compatibility forms "
        "normalised)"
    )
    assert lines[2:5] == [
        "  head: 1 distinct query, 40.0% of the traffic",
        "  torso: 1 distinct query, 20.0% of the traffic",
        "  tail: 36 distinct queries, 40.0% of the traffic",
    ]
    assert lines[5:10] == [
        "stratum      traffic  distinct  floor  sampled  head drawn  torso drawn  tail drawn",
        "-----------  -------  --------  -----  -------  ----------  -----------  ----------",
        "language=en    90.0%        32      5        7           1            1           5",
        "language=de    10.0%         6      5        5           0            0           5",
        "total         100.0%        38              12           1            1          10",
    ]
    sidecar = json.loads((tmp_path / "queries.draw.json").read_text(encoding="utf-8"))
    assert sidecar["command"] == "sample" and sidecar["source"]["rows"] == 100
    assert [(s["stratum"], s["sampled"], s["floor"]) for s in sidecar["strata"]] == [
        ("language=en", 7, 5),
        ("language=de", 5, 5),
    ]
    assert sidecar["strata"][0]["bands"]["tail"] == {"distinct": 30, "sampled": 5, "inclusion": 5 / 30}
    assert sidecar["strata"][1]["bands"]["head"] == {"distinct": 0, "sampled": 0}
    assert sidecar["inclusion"].startswith("each query's inclusion probability")
    # 40 + 20 + 5 singletons of en; de: 5 of paket's and 4 singletons, or 5 singletons.
    covered = sum(q["frequency"] for q in queries) / 100
    assert sidecar["traffic_covered"] == pytest.approx(covered, abs=1e-6)


def test_the_draw_is_deterministic_for_a_seed(tmp_path: Path, embeval: Embeval) -> None:
    log = write_log(tmp_path / "log.jsonl")
    outputs = []
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        embeval("sample", log, *SAMPLE, "--seed", seed, "--out", tmp_path / f"{name}.jsonl")
        outputs.append((tmp_path / f"{name}.jsonl").read_bytes())
    assert outputs[0] == outputs[1] and outputs[0] != outputs[2]


def test_a_stratum_below_its_floor_is_reported_and_band_can_stratify(
    tmp_path: Path, embeval: Embeval
) -> None:
    log = write_log(tmp_path / "log.jsonl")
    out = tmp_path / "queries.jsonl"
    status, stdout, _ = embeval(
        "sample", log, "--by", "language", "--size", "20", "--floor", "7", "--out", out
    )
    assert status == 0
    assert "language=de: 6 distinct queries, fewer than the floor of 7: all 6 drawn" in stdout.splitlines()
    status, stdout, _ = embeval(
        "sample", log, "--by", "language,band", "--size", "12", "--floor", "2", "--out", tmp_path / "b.jsonl"
    )
    assert status == 0 and "language=en, band=head" in stdout


def test_the_sample_loads_as_a_golden_sets_queries_with_its_draw(tmp_path: Path, embeval: Embeval) -> None:
    log = write_log(tmp_path / "log.jsonl")
    embeval("sample", log, *SAMPLE, "--out", tmp_path / "queries.jsonl")
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "a document"}\n', encoding="utf-8")
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n", encoding="utf-8")
    plan = {
        "corpus": "corpus.jsonl",
        "queries": "queries.jsonl",
        "qrels": "qrels.tsv",
        "strata": ["language", "band"],
        "metric": "recall@5",
    }
    path = tmp_path / "golden.yaml"
    path.write_text(yaml.safe_dump(plan), encoding="utf-8")
    golden = load_golden(path)
    assert sorted(q.frequency for q in golden.queries)[-2:] == [20.0, 40.0]
    # Each query weighs the traffic it stands for: en's 90 searches and de's 10 (give or take the draw:
    # 6 with paket left out, 10.8 with it in).
    en = sum(q.traffic_weight or 0 for q in golden.queries if q.fields["language"] == "en")
    de = sum(q.traffic_weight or 0 for q in golden.queries if q.fields["language"] == "de")
    assert en == pytest.approx(90) and de in (pytest.approx(6), pytest.approx(10.8))
    assert [s.name for s in golden.strata()] == [
        "overall",
        "language=de",
        "language=en",
        "band=head",
        "band=tail",
        "band=torso",
    ]
    assert set(golden.draws) == {"queries"}
    assert golden.draws["queries"]["command"] == "sample" and golden.draws["queries"]["unchanged"] is True
    queries = tmp_path / "queries.jsonl"
    queries.write_text(queries.read_text(encoding="utf-8").replace("refund", "refunds"), encoding="utf-8")
    assert load_golden(path).draws["queries"]["unchanged"] is False
    (tmp_path / "queries.draw.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(GoldenError, match=r"queries\.draw\.json: not a draw record"):
        load_golden(path)


def test_a_tsv_log_reads_the_same(tmp_path: Path, embeval: Embeval) -> None:
    log = write_log(tmp_path / "log.jsonl")
    rows = read_jsonl(log)
    tsv = tmp_path / "log.tsv"
    tsv.write_text("language\tquery\n" + "".join(f"{r['language']}\t{r['query']}\n" for r in rows), "utf-8")
    embeval("sample", log, *SAMPLE, "--out", tmp_path / "a.jsonl")
    embeval("sample", tsv, *SAMPLE, "--out", tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


# ------------------------------------------------------------------------------------- sample: bad inputs


def _lines(path: Path, *rows: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), "utf-8")
    return path


SAMPLE_BAD = [
    pytest.param(["--size", "0"], None, "argument --size: expected a positive integer, got '0'", id="size-0"),
    pytest.param(["--floor", "13"], None, "--floor 13 is larger than --size 12", id="floor-above-size"),
    pytest.param(
        ["--bands", "head=0.7,torso=0.5"],
        None,
        "argument --bands: the bands' shares add up to 1.2: they must leave traffic for the 'tail' band",
        id="bad-bands",
    ),
    pytest.param(
        ["--by", "language,"], None, "argument --by: expected FIELD[,FIELD...], got 'language,'", id="by"
    ),
    pytest.param(
        ["--head-boost", "0.5"], None, "argument --head-boost: expected a number >= 1, got '0.5'", id="boost"
    ),
    pytest.param([], [], "{log}: the log is empty: no rows", id="empty-log"),
    pytest.param(
        [],
        [{"query": "a", "language": "en"}, {"text": "b", "language": "en"}],
        "{log}:2: query: the row has no field 'query'",
        id="missing-text",
    ),
    pytest.param(
        [],
        [{"query": "a", "languages": "en"}],
        "{log}:1: language: the row has no field 'language'; did you mean 'languages'?",
        id="missing-field",
    ),
    pytest.param(
        [],
        [{"query": "a", "language": None}],
        "{log}:1: language: must be a string or number, got null",
        id="null",
    ),
    pytest.param(
        [],
        ["{not json"],
        "{log}:1: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        id="not-json",
    ),
    pytest.param(
        [],
        [{"query": " ", "language": "en"}],
        "{log}: query: the log has no query: every one of its 1 rows has an empty 'query'",
        id="only-empty",
    ),
    pytest.param(
        ["--floor", "1"],
        [{"query": "a", "language": "en"}] * 3,
        "--size 12 is more than the log's 1 distinct queries",
        id="size-above-distinct",
    ),
    pytest.param(
        ["--by", "query"],
        None,
        "--text 'query' is also in --by: the query's text cannot be a stratum field",
        id="text-in-by",
    ),
    pytest.param(
        ["--by", "language,frequency"],
        None,
        "--by 'frequency': a key of the queries file written, not a stratum field",
        id="reserved-by",
    ),
    pytest.param(
        ["--by", "inclusion"],
        None,
        "--by 'inclusion': a key of the queries file written, not a stratum field",
        id="reserved-by-inclusion",
    ),
]


@pytest.mark.parametrize(("options", "rows", "message"), SAMPLE_BAD)
def test_sample_bad_inputs_give_one_line_exit_2_and_write_nothing(
    tmp_path: Path, embeval: Embeval, options: list[str], rows: list[object] | None, message: str
) -> None:
    log = write_log(tmp_path / "log.jsonl") if rows is None else _lines(tmp_path / "log.jsonl", *rows)
    defaults = dict(zip(SAMPLE[::2], SAMPLE[1::2], strict=True))
    defaults.update(zip(options[::2], options[1::2], strict=True))
    args = [item for pair in defaults.items() for item in pair]
    status, stdout, stderr = embeval("sample", log, *args, "--out", tmp_path / "out.jsonl")
    assert status == 2 and stdout == ""
    assert stderr == f"embeval sample: error: {message.format(log=log)}\n"
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "out.draw.json").exists()


def test_sample_missing_unreadable_log_and_taken_output(tmp_path: Path, embeval: Embeval) -> None:
    missing = tmp_path / "nope.jsonl"
    status, _, stderr = embeval("sample", missing, *SAMPLE, "--out", tmp_path / "out.jsonl")
    assert (status, stderr) == (2, f"embeval sample: error: {missing}: file not found: {missing.resolve()}\n")
    status, _, stderr = embeval("sample", tmp_path, *SAMPLE, "--out", tmp_path / "out.jsonl")
    assert (status, stderr) == (2, f"embeval sample: error: {tmp_path}: cannot read: Is a directory\n")
    log = write_log(tmp_path / "log.jsonl")
    (tmp_path / "out.draw.json").write_text("{}", encoding="utf-8")
    status, _, stderr = embeval("sample", log, *SAMPLE, "--out", tmp_path / "out.jsonl")
    out = tmp_path / "out.jsonl"
    assert (status, stderr) == (
        2,
        f"embeval sample: error: --out {out}: its draw record {tmp_path / 'out.draw.json'} exists; choose "
        "another name or pass --force\n",
    )
    assert not out.exists()
    assert embeval("sample", log, *SAMPLE, "--out", out, "--force")[0] == 0


def test_too_many_strata_for_the_floor(tmp_path: Path, embeval: Embeval) -> None:
    log = write_log(tmp_path / "log.jsonl")
    status, _, stderr = embeval("sample", log, *SAMPLE, "--floor", "7", "--out", tmp_path / "out.jsonl")
    assert (status, stderr) == (
        2,
        "embeval sample: error: the floor of 7 in each of the 2 strata needs 13 queries, more than --size "
        "12; lower --floor, raise --size or stratify by fewer fields\n",
    )


# ------------------------------------------------------------------------------------------ corpus-sample


def write_corpus(path: Path, documents: int) -> Path:
    path.write_text(
        "".join(json.dumps({"_id": f"d{i:05d}", "text": f"document {i}"}) + "\n" for i in range(documents)),
        encoding="utf-8",
    )
    return path


def write_qrels(path: Path, doc_ids: list[str]) -> Path:
    rows = [f"q{i % 3}\t{doc_id}\t{i % 2}" for i, doc_id in enumerate(doc_ids)]
    path.write_text("query-id\tcorpus-id\tscore\n" + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


JUDGED = [f"d{i:05d}" for i in range(0, 2000, 100)]  # 20 documents spread over the corpus


def test_corpus_sample_keeps_every_judged_document_and_reports_the_missing(
    tmp_path: Path, embeval: Embeval
) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 2000)
    qrels = write_qrels(tmp_path / "qrels.tsv", [*JUDGED, "gone-1", "gone-2"])
    out = tmp_path / "sample.jsonl"
    status, stdout, stderr = embeval(
        "corpus-sample", corpus, "--size", "222", "--keep-judged", qrels, "--out", out
    )
    assert (status, stderr) == (0, "")
    assert stdout.splitlines() == [
        f"{corpus}: 2,000 documents",
        f"{qrels}: 22 judged documents, 20 in the corpus, all kept",
        "WARNING: 2 judged documents are not in the corpus: gone-1, gone-2",
        "202 of the other 1,980 documents drawn uniformly (seed 0)",
        f"wrote 222 documents to {out}; how they were drawn: {tmp_path / 'sample.draw.json'}",
    ]
    lines = out.read_text(encoding="utf-8").splitlines()
    source = corpus.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 222 and set(lines) <= set(source)  # byte for byte
    assert lines == sorted(lines, key=source.index)  # in corpus order
    assert {json.loads(line)["_id"] for line in lines} >= set(JUDGED)
    draw = json.loads((tmp_path / "sample.draw.json").read_text(encoding="utf-8"))
    assert draw["source"]["rows"] == 2000 and draw["size"] == 222 and draw["seed"] == 0
    assert draw["judged"] == {"qrels": str(qrels), "documents": 22, "found": 20, "missing": 2}
    assert draw["source"]["sha256"].startswith("sha256:") and draw["output"]["rows"] == 222


def _block_counts(seeds: range, corpus: Path, judged: set[str]) -> list[int]:
    """How often the documents of each of ten blocks of 198 unjudged documents (in corpus order: the
    first ones, ..., the most recent) are drawn, over one sample per seed. Ten of the judged documents
    are missing from the corpus, so each reservoir of 230 is thinned to the 210 the sample still needs."""
    counts = [0] * 10
    for seed in seeds:
        draw = draw_corpus(corpus, size=230, judged=judged | {f"gone-{i}" for i in range(10)}, seed=seed)
        assert draw.sampled == 230 and draw.judged_found == 20
        for line in draw.lines:
            i = int(json.loads(line)["_id"][1:])
            if f"d{i:05d}" not in judged:
                counts[(i - i // 100 - 1) // 198] += 1
    return counts


def test_the_rest_of_the_corpus_sample_is_uniform(tmp_path: Path) -> None:
    # 1,980 unjudged documents in ten blocks of 198 in corpus order; 210 drawn per sample, 100 seeded
    # samples: 2,100 expected per block. A sampler that favours the start or the end of the corpus (the
    # most recent chunks) moves whole blocks; seeded, so the p-value is one fixed number, not a flake.
    corpus = write_corpus(tmp_path / "corpus.jsonl", 2000)
    counts = _block_counts(range(100), corpus, set(JUDGED))
    assert sum(counts) == 100 * 210
    assert chisquare(counts).pvalue > 0.01


def test_the_uniformity_check_rejects_a_reservoir_biased_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: the same counts from a reservoir that skips one document too few
    (so later documents replace earlier ones too often) are rejected."""
    corpus = write_corpus(tmp_path / "corpus.jsonl", 2000)
    skip = Reservoir._skip

    def one_too_few(self: Reservoir[Any], draws: Draws) -> None:
        skip(self, draws)
        self._next -= 1

    monkeypatch.setattr(Reservoir, "_skip", one_too_few)
    assert chisquare(_block_counts(range(100), corpus, set(JUDGED))).pvalue < 1e-6


CORPUS_BAD = [
    pytest.param(["--size", "0"], "argument --size: expected a positive integer, got '0'", id="size-0"),
    pytest.param(
        ["--size", "19"],
        "--size 19 is smaller than the 20 documents {qrels} judges, which the sample keeps",
        id="size-below-judged",
    ),
]


@pytest.mark.parametrize(("options", "message"), CORPUS_BAD)
def test_corpus_sample_bad_options(
    tmp_path: Path, embeval: Embeval, options: list[str], message: str
) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 100)
    qrels = write_qrels(tmp_path / "qrels.tsv", [f"d{i:05d}" for i in range(20)])
    status, stdout, stderr = embeval(
        "corpus-sample", corpus, *options, "--keep-judged", qrels, "--out", tmp_path / "s.jsonl"
    )
    assert status == 2 and stdout == ""
    assert stderr == f"embeval corpus-sample: error: {message.format(qrels=qrels)}\n"
    assert not list(tmp_path.glob("s.*"))


def test_corpus_sample_bad_files(tmp_path: Path, embeval: Embeval) -> None:
    qrels = write_qrels(tmp_path / "qrels.tsv", ["d00001"])
    out = tmp_path / "s.jsonl"

    def error(corpus: Path, judged: Path = qrels) -> tuple[int, str]:
        status, _, stderr = embeval(
            "corpus-sample", corpus, "--size", "5", "--keep-judged", judged, "--out", out
        )
        assert not list(tmp_path.glob("s.*"))
        return status, stderr

    missing = tmp_path / "nope.jsonl"
    assert error(missing) == (
        2,
        f"embeval corpus-sample: error: {missing}: file not found: {missing.resolve()}\n",
    )
    empty = _lines(tmp_path / "empty.jsonl")
    assert error(empty) == (2, f"embeval corpus-sample: error: {empty}: the corpus is empty: no documents\n")
    no_id = _lines(tmp_path / "no-id.jsonl", {"_id": "d00001", "text": "a"}, {"text": "b"})
    assert error(no_id) == (2, f"embeval corpus-sample: error: {no_id}:2: _id: missing required key\n")
    twice = _lines(tmp_path / "twice.jsonl", {"_id": "d00001", "text": "a"}, {"_id": "d00001", "text": "b"})
    assert error(twice) == (
        2,
        f"embeval corpus-sample: error: {twice}:2: _id: duplicate document id 'd00001' (first on line 1)\n",
    )
    corpus = write_corpus(tmp_path / "corpus.jsonl", 10)
    bad_qrels = _lines(tmp_path / "bad.tsv", "query-id\tcorpus-id")
    assert error(corpus, bad_qrels) == (
        2,
        f"embeval corpus-sample: error: {bad_qrels}:1: format: unsupported format: expected BEIR TSV "
        "(a header such as 'query-id<TAB>corpus-id<TAB>score') or TREC qrels ('qid iter docid rel', "
        "whitespace-separated), got 'query-id\\tcorpus-id'\n",
    )
    assert error(corpus, tmp_path / "none.tsv")[1].endswith(
        f"none.tsv: file not found: {tmp_path / 'none.tsv'}\n"
    )


def test_a_tsv_corpus_keeps_its_header(tmp_path: Path, embeval: Embeval) -> None:
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("id\ttext\n" + "".join(f"d{i:05d}\tdoc {i}\n" for i in range(50)), encoding="utf-8")
    qrels = write_qrels(tmp_path / "qrels.tsv", ["d00003"])
    out = tmp_path / "sample.tsv"
    assert embeval("corpus-sample", corpus, "--size", "5", "--keep-judged", qrels, "--out", out)[0] == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id\ttext" and len(lines) == 6 and "d00003\tdoc 3" in lines


def test_the_corpus_draw_is_in_the_reports_control(
    pytester: pytest.Pytester, golden: Callable[..., Path], embeval: Embeval
) -> None:
    golden()
    support = pytester.path / "support"
    corpus = support / "corpus.jsonl"
    with corpus.open("a", encoding="utf-8") as handle:  # production documents nobody judged
        handle.writelines(json.dumps({"_id": f"x{i}", "text": f"other {i}"}) + "\n" for i in range(200))
    out = support / "sample.jsonl"
    status, _, _ = embeval(
        "corpus-sample", corpus, "--size", "100", "--keep-judged", support / "qrels.tsv", "--out", out
    )
    assert status == 0
    golden(corpus="support/sample.jsonl")
    reports = []
    for extra in ([], ["-n", "2"]):
        path = pytester.path / "report.json"
        result = pytester.runpytest(
            "--embeval",
            "-p",
            "no:cacheprovider",
            "--embeval-no-cache",
            f"--embeval-json={path}",
            "--embeval-incumbent=fake_models:good",
            "--embeval-candidate=fake_models:good",
            *extra,
        )
        assert result.ret == 0
        reports.append(json.loads(path.read_text(encoding="utf-8")))
    controls = [report["golden_sets"][0]["control"] for report in reports]
    assert controls[0] == controls[1]
    draw = controls[0]["draws"]["corpus"]
    assert draw["command"] == "corpus-sample" and draw["size"] == 100 and draw["unchanged"] is True
    assert draw["source"]["rows"] == 260 and draw["judged"]["found"] == 48


@pytest.mark.parametrize(("boost", "head"), [("1", 6), ("1.5", 8), ("2", 9)])
def test_the_head_boost_equals_the_hand_computation(
    tmp_path: Path, embeval: Embeval, boost: str, head: int
) -> None:
    # 300 searches: ten queries 10 times each, then 200 once each. With head=0.3 the head is the first
    # nine (they start at 0, 10, ..., 80 < 90); the tenth starts at 90 and is tail. Head traffic 90, tail
    # 210 (201 distinct). 20 seats by traffic: head 20 * 90/300 = 6. Boost 1.5: 135 against 210, head
    # 20 * 135/345 = 7.83, tail 12.17: integer parts 7 + 12, the seat left to the larger fraction: 8.
    # Boost 2: 180 against 210, head 9.23, above its 9 distinct queries: all 9.
    rows = [{"query": f"popular {i}", "language": "en"} for i in range(10) for _ in range(10)]
    rows += [{"query": f"rare {i}", "language": "en"} for i in range(200)]
    log = _lines(tmp_path / "log.jsonl", *rows)
    out = tmp_path / "queries.jsonl"
    options = [
        "--by",
        "language",
        "--size",
        "20",
        "--floor",
        "0",
        "--bands",
        "head=0.3",
        "--head-boost",
        boost,
    ]
    assert embeval("sample", log, *options, "--out", out)[0] == 0
    bands = Counter(q["band"] for q in read_jsonl(out))
    assert bands == {"head": head, "tail": 20 - head}
