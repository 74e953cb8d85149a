"""A shortlist: several candidates against the incumbent in one run, through pytest, with the counting fakes
of fake_models.py (each appends what it encodes to $EMBEVAL_FAKE_LOG, so a test counts encoder calls in any
process). The candidates of most tests: ``bad`` misses half the queries of both languages, ``english`` half
the English ones, ``spanish`` half the Spanish ones; the incumbent gets every query right."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_embeval.arms.candidates import CandidateError, derived_name, name_candidates, split_named
from pytest_embeval.cli import embeval as cli
from pytest_embeval.plugin.xdist_scheduling import scope_of
from pytest_embeval.reports.json_report import without_timings

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]
Golden = Callable[..., Path]

INCUMBENT = "--embeval-incumbent=fake_models:counted_good"
THREE = (
    "--embeval-candidate=bad=fake_models:counted_bad",
    "--embeval-candidate=english=fake_models:counted_bad_english",
    "--embeval-candidate=spanish=fake_models:counted_bad_spanish",
)
STRATA = ("overall", "language=en", "language=es")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--embeval", "-p", "no:cacheprovider", *args)


@pytest.fixture
def encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], Counter[tuple[str, str]]]:
    """How many texts each counting fake encoded, by (model, kind), since the last call."""
    path = tmp_path / "encoded.log"
    monkeypatch.setenv("EMBEVAL_FAKE_LOG", str(path))

    def take() -> Counter[tuple[str, str]]:
        if not path.exists():
            return Counter()
        lines = path.read_text(encoding="utf-8").splitlines()
        path.unlink()
        return Counter((line.split("\t")[0], line.split("\t")[1]) for line in lines)

    return take


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """The counts of pytest's last line, ``tie`` included (``assert_outcomes`` knows no ``tie``)."""
    return result.parseoutcomes()


def report(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return loaded


# ------------------------------------------------------------------------------------------- names


def test_names_are_given_or_derived_readably_from_the_spec() -> None:
    assert split_named("small=fake_models:good") == ("small", "fake_models:good")
    # A spec whose part before '=' is not a name is a spec: its parameters stay its own.
    assert split_named("bm25?k1=1.2") == (None, "bm25?k1=1.2")
    assert split_named("openai:m?dimensions=256") == (None, "openai:m?dimensions=256")
    assert derived_name("fake_models:good") == "good"
    assert derived_name("pkg.encoders:models.small") == "small"
    assert derived_name("sentence-transformers/all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    assert derived_name("models/static-256/") == "static-256"
    assert derived_name("bm25?k1=1.2&b=0.5") == "bm25-k1-1.2-b-0.5"
    assert derived_name("openai:text-embedding-3-small?dimensions=256&base_url=http://h") == (
        "text-embedding-3-small-dimensions-256"
    )
    assert derived_name("model?device=cuda:1&batch_size=8") == "model"
    assert derived_name("rrf:bm25,fake_models:good?k=60") == "rrf-bm25-good-k-60"
    named = name_candidates(["fake_models:good", "b=fake_models:bad", "openai:"], "--embeval-candidate")
    assert [one.name for one in named] == ["good", "b", "candidate-3"]  # nothing readable: its place
    assert [one.model for one in named] == ["fake_models:good", "fake_models:bad", "openai:"]
    # A spec whose own name is a role's is named by all of it; an object so named, by its place.
    role_named = name_candidates(
        ["slow_spec:candidate", "m.incumbent", type("M", (), {"name": "incumbent"})()], "w"
    )
    assert [one.name for one in role_named] == ["slow_spec-candidate", "m.incumbent", "incumbent-3"]


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        (["fake_models:good", "other.module:good"], "two candidates are named 'good'"),
        ({"a b": "fake_models:good"}, "candidate name 'a b' must be letters, digits"),
        (["incumbent=fake_models:good"], "'incumbent' names a role, not a candidate"),
    ],
)
def test_names_that_cannot_be_used_are_refused(given: Any, problem: str) -> None:
    with pytest.raises(CandidateError, match=rf"^where: {problem}"):
        name_candidates(given, "where")


def test_two_candidates_of_one_name_are_a_usage_error(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    result = run(pytester, INCUMBENT, "--embeval-candidate=fake_models:bad", "--embeval-candidate=x.y:bad")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --embeval-candidate: two candidates are named 'bad' ('fake_models:bad' and 'x.y:bad'): "
            "name them apart with NAME=SPEC"
        ]
    )


# ------------------------------------------------------------------------------------------- items


def test_each_candidate_has_an_item_per_stratum_named_by_it(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    result = run(pytester, INCUMBENT, *THREE, "--collect-only", "-q")
    # fnmatch patterns: "[[]" is a bracket, not a character class.
    ids = [
        f"support.yaml::{stratum}[[]{name}]" for name in ("bad", "english", "spanish") for stratum in STRATA
    ]
    result.stdout.fnmatch_lines([*ids, "", "9 tests collected*"], consecutive=True)


def test_k_selects_one_candidate(pytester: pytest.Pytester, golden: Golden, encoded: Any) -> None:
    golden()
    result = run(pytester, INCUMBENT, *THREE, "-k", "english", "-v", "--embeval-json=r.json")
    result.assert_outcomes(failed=2, deselected=6)
    result.stdout.fnmatch_lines(["*::overall[[]english] WORSE*", "*::language=es[[]english] TIE*"])
    assert [g["candidate_name"] for g in report(pytester)["golden_sets"]] == ["english"]
    # Only what the tested candidate's verdicts rest on is encoded: its model and the incumbent's.
    assert {model for model, _ in encoded()} == {"counted-good", "counted-bad-english"}


@pytest.mark.parametrize("xdist", XDIST)
def test_a_shortlist_run_reports_every_candidate_and_the_shortlist(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str], encoded: Any
) -> None:
    golden()
    same = "--embeval-candidate=same=fake_models:counted_good"
    result = run(pytester, INCUMBENT, *THREE, same, "-v", "--embeval-json=r.json", *xdist)
    # bad is WORSE everywhere; english and spanish in their language and overall; same ties everywhere.
    assert outcomes(result) == dict(failed=7, tie=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Each model encodes each of its texts once, whichever process needed it: 60 documents and 48 queries.
    assert encoded() == Counter(
        {
            (model, kind): count
            for model in ("counted-good", "counted-bad", "counted-bad-english", "counted-bad-spanish")
            for kind, count in (("document", 60), ("query", 48))
        }
    )
    made = report(pytester)
    assert [(g["candidate_name"], [s["stratum"] for s in g["strata"]]) for g in made["golden_sets"]] == [
        (name, list(STRATA)) for name in ("bad", "english", "spanish", "same")
    ]
    (shortlist,) = made["shortlist"]
    assert shortlist["family"] == {
        "method": "holm",
        "scope": "shortlist",
        "size": 12,
        "candidates": ["bad", "english", "spanish", "same"],
        "not_run": [],
    }
    rows = {row["name"]: row for row in shortlist["candidates"]}
    assert shortlist["candidates"][0]["name"] == "same"  # the one that passes comes first
    assert {name: row["passes"] for name, row in rows.items()} == {
        "same": True,
        "bad": False,
        "english": False,
        "spanish": False,
    }
    assert {stratum: cell["verdict"] for stratum, cell in rows["english"]["strata"].items()} == {
        "overall": "WORSE",
        "language=en": "WORSE",
        "language=es": "TIE",
    }
    assert rows["bad"]["bill"]["dimension"] == 128 and rows["bad"]["bill"]["bytes_per_vector"] == 512
    assert shortlist["cheapest_passing"] == "same"
    assert shortlist["line"] == "cheapest passing candidate: same (128 dimensions, 512 B per vector)"
    # Every stratum of every candidate is one family of 12, each adjusted in it.
    for golden_set in made["golden_sets"]:
        assert golden_set["multiple_comparisons"] == "holm"
        for stratum in golden_set["strata"]:
            assert stratum["family"]["size"] == 12
            assert stratum["family"]["candidates"] == ["bad", "english", "spanish", "same"]
    # The terminal: each candidate's table, then the shortlist's.
    result.stdout.fnmatch_lines(
        [
            "support [[]bad] (support.yaml): hit@1*candidate fake_models:counted_bad",
            "*",
            "shortlist of support (support.yaml): hit@1 against the incumbent fake_models:counted_good (128 "
            "dimensions, 512 B per vector); one family of 12 comparisons, the strata of 4 candidates, holm, "
            "family-wise level 5%:",
            "candidate*overall*language=en*language=es*gate*dims*B/vector*index",
            "*",
            "same *TIE +0.000 [[]+0.000, +0.000]*passes*128*512*30.0 KiB",
            "bad*WORSE -0.750 *fails*",
            "english*",
            "spanish*",
            "cheapest passing candidate: same (128 dimensions, 512 B per vector)",
        ]
    )


def test_markdown_and_html_show_the_shortlist_after_its_candidates(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    run(pytester, INCUMBENT, *THREE, "--embeval-md=r.md", "--embeval-html=r.html")
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert markdown.index("### Shortlist of support: no candidate passes: bad WORSE on 3 strata") > (
        markdown.index("### support [spanish]")
    )
    assert "| candidate | overall | language=en | language=es | gate | dims | B/vector | index |" in markdown
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    shortlist = page[page.index("<h2>Shortlist of support") :]
    # The forest plot: a row per stratum and candidate.
    assert len(re.findall(r'<g class="row"', shortlist)) == 9
    assert "overall · bad" in shortlist and "language=es · spanish" in shortlist


def test_the_report_is_the_same_serially_and_under_xdist(pytester: pytest.Pytester, golden: Golden) -> None:
    golden(decision={"proceed": {"overall": ["BETTER", "TIE"]}})
    run(pytester, INCUMBENT, *THREE, "--embeval-json=serial.json")
    run(pytester, INCUMBENT, *THREE, "--embeval-json=xdist.json", "-n", "2")
    serial, xdist = report(pytester, "serial.json"), report(pytester, "xdist.json")
    assert without_timings(serial) == without_timings(xdist)
    assert [row["decision"] for row in serial["shortlist"][0]["candidates"]] == ["CHANGE THE TARGET"] * 3


def test_xdist_hands_out_each_candidate_of_a_golden_file_as_a_unit() -> None:
    assert scope_of("golden/support.yaml::language=en[small]") == "golden/support.yaml[small]"
    assert scope_of("golden/support.yaml::decision[small]") == "golden/support.yaml[small]"
    assert scope_of("golden/support.yaml::language=en") == "golden/support.yaml"
    assert scope_of("tests/test_x.py::test_y[small]") == "tests/test_x.py"


def test_the_ini_key_lists_candidates(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    pytester.makeini(
        """
        [pytest]
        embeval_incumbent = fake_models:counted_good
        embeval_candidate =
            bad=fake_models:counted_bad
            fake_models:counted_bad_english
        """
    )
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["support.yaml::overall[[]bad]", "*", "support.yaml::overall[[]counted_bad_english]"]
    )


def test_one_candidate_keeps_the_ids_and_report_of_a_plain_run(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    run(pytester, INCUMBENT, "--embeval-candidate=bad=fake_models:counted_bad", "--embeval-json=named.json")
    run(pytester, INCUMBENT, "--embeval-candidate=fake_models:counted_bad", "--embeval-json=plain.json", "-v")
    named, plain = report(pytester, "named.json"), report(pytester, "plain.json")
    assert "shortlist" not in plain and "candidate_name" not in plain["golden_sets"][0]
    assert without_timings(named) == without_timings(plain)


# ------------------------------------------------------------------------------------------- conftest


def test_a_conftest_hook_gives_named_candidates_built_when_needed(
    pytester: pytest.Pytester, golden: Golden, encoded: Any
) -> None:
    golden()
    pytester.makeconftest(
        """
        import fake_models

        BUILT = []

        def spanish():
            BUILT.append("spanish")
            return fake_models.counted_bad_spanish

        def broken():
            raise RuntimeError("no GPU here")

        def pytest_embeval_candidates(config):
            return {"english": "fake_models:counted_bad_english", "spanish": spanish, "broken": broken}

        def pytest_sessionfinish(session):
            print("BUILT:", BUILT)
        """
    )
    collected = run(pytester, INCUMBENT, "--collect-only", "-q", "-s")
    collected.stdout.fnmatch_lines(["support.yaml::overall[[]english]", "*", "BUILT: []"])
    result = run(pytester, INCUMBENT, "-s", "--embeval-json=r.json")
    result.stdout.fnmatch_lines(
        [
            "*candidate english on its own device, candidates spanish, broken on the "
            "pytest_embeval_candidates hook's*",
            "*BUILT: [[]'spanish']",
        ]
    )
    # A function that fails to build its model is its candidate's error; the others are decided.
    assert outcomes(result) == {"failed": 4, "tie": 2, "errors": 3}
    result.stdout.fnmatch_lines(["support: candidate model: broken() raised RuntimeError: no GPU here"])
    assert [g["candidate_name"] for g in report(pytester)["golden_sets"]] == ["english", "spanish"]


def test_a_fixture_cannot_give_a_shortlist(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(scope="session")
        def embeval_candidate():
            return {"a": "fake_models:bad", "b": "fake_models:good"}
        """
    )
    result = run(pytester, INCUMBENT)
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "support: the embeval_candidate fixture returned 2 candidates, but a fixture runs after the "
            "items are named: give a shortlist with the pytest_embeval_candidates hook*"
        ]
    )


# ------------------------------------------------------------------------------------------- faults


@pytest.mark.parametrize("xdist", XDIST)
def test_a_failing_candidate_is_its_own_items_error_and_the_others_are_decided(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    candidates = (
        "--embeval-candidate=fake_models:raises",
        "--embeval-candidate=same=fake_models:counted_good",
    )
    result = run(pytester, INCUMBENT, *candidates, "--embeval-json=r.json", *xdist)
    assert outcomes(result) == dict(errors=3, tie=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    made = report(pytester)
    assert [g["candidate_name"] for g in made["golden_sets"]] == ["same"]
    (error,) = made["errors"]
    assert error["candidate_name"] == "raises" and error["role"] == "candidate"
    assert "RuntimeError: the model server went away" in error["message"]
    family = made["shortlist"][0]["family"]
    assert (family["size"], family["candidates"], family["not_run"]) == (3, ["same"], ["raises"])
    result.stdout.fnmatch_lines(
        [
            "embeval: WARNING: not run: raises (the error is reported with its items); the family holds the "
            "1 candidate that ran",
            "embeval: support [[]raises] (support.yaml) not run: candidate raises encoder*RuntimeError*",
        ]
    )


def test_a_failing_incumbent_is_every_items_error(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    result = run(pytester, "--embeval-incumbent=fake_models:raises", *THREE)
    result.assert_outcomes(errors=9)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of support::overall[[]bad]*",
            "support: incumbent encoder 'fake_models:raises' failed on a batch of 48 query texts*",
            "*ERROR at setup of support::language=en[[]bad]*",
            "support: not run; the error is reported under support.yaml::overall[[]bad]",
        ]
    )


# ------------------------------------------------------------------------------------------- families


def test_each_candidates_own_family_decides_as_a_run_of_it_alone(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(multiple_comparisons="holm", family="candidate")
    run(pytester, INCUMBENT, *THREE, "--embeval-json=shortlist.json")
    alone = []
    for name, spec in (("bad", THREE[0]), ("english", THREE[1]), ("spanish", THREE[2])):
        run(pytester, INCUMBENT, spec, f"--embeval-json={name}.json")
        alone.append(report(pytester, f"{name}.json")["golden_sets"][0]["strata"])
    made = report(pytester, "shortlist.json")
    named = [
        [{k: v for k, v in s.items() if k != "candidate_name"} for s in g["strata"]]
        for g in made["golden_sets"]
    ]
    assert named == alone
    assert made["shortlist"][0]["family"]["scope"] == "candidate"


def test_a_shortlist_is_adjusted_even_where_the_file_says_none(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(multiple_comparisons="none")
    run(pytester, INCUMBENT, *THREE, "--embeval-json=r.json")
    made = report(pytester)
    assert {s["family"]["method"] for g in made["golden_sets"] for s in g["strata"]} == {"holm"}


# ------------------------------------------------------------------------------------------- pooling


def test_pooling_a_shortlist_pools_every_arm_and_coverage_warns_per_candidate(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    sheets = pytester.path / "sheets"
    result = run(
        pytester,
        INCUMBENT,
        *THREE,
        f"--embeval-pool={sheets}",
        "--embeval-pool-depth=2",
        "--embeval-json=r.json",
    )
    result.stdout.fnmatch_lines(
        [
            "embeval: WARNING: bad's top 1 is less judged than another arm's*",
            "embeval: WARNING: english's top 1 is less judged*",
            "embeval: WARNING: spanish's top 1 is less judged*",
            "embeval pool: pooled 4 arms at depth 2*",
            f"embeval pool: sheet written to {sheets / 'support.pool.csv'}",
        ]
    )
    # The sheet is the one `embeval pool` writes from the report: every arm's top 2, the union.
    expected = pytester.path / "expected.csv"
    assert (
        cli.main(["pool", "support.yaml", "--from-report", "r.json", "--depth", "2", "--out", str(expected)])
        == 0
    )
    assert (sheets / "support.pool.csv").read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------- --lf


def test_last_failed_reruns_the_failed_candidates_items(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    candidates = (
        "--embeval-candidate=english=fake_models:bad_english",
        "--embeval-candidate=same=fake_models:good",
    )
    first = pytester.runpytest("--embeval", "--embeval-incumbent=fake_models:good", *candidates)
    assert outcomes(first) == {"failed": 2, "tie": 4}
    again = pytester.runpytest("--embeval", "--embeval-incumbent=fake_models:good", *candidates, "--lf", "-v")
    again.assert_outcomes(failed=2)
    again.stdout.fnmatch_lines(
        ["collecting ... collected 2 items", "run-last-failure: rerun previous 2 failures"]
    )
    again.stdout.fnmatch_lines(["*::overall[[]english] WORSE*", "*::language=en[[]english] WORSE*"])
