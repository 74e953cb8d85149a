"""Plugin behaviour, end to end through pytest, with the deterministic fake encoders of fake_models.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_embeval.cli import embeval as cli

XDIST = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]

Golden = Callable[..., Path]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--embeval", "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("xdist", XDIST)
def test_better_candidate_passes_every_stratum(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    result = run(
        pytester, "--embeval-incumbent=fake_models:bad", "--embeval-candidate=fake_models:good", "-v", *xdist
    )
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.re_match_lines([r".*(support.yaml::language=es BETTER|BETTER support.yaml::language=es)"])
    result.stdout.fnmatch_lines(
        ["support (support.yaml)*", "stratum*n*incumbent*candidate*", "*", "overall*48*BETTER"]
    )


@pytest.mark.parametrize("xdist", XDIST)
def test_worse_candidate_fails_with_table_and_movers(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad", *xdist
    )
    result.assert_outcomes(failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*overall: WORSE*",
            "*metric*incumbent*candidate*",
            "hit@1 (primary)*1.000*0.250*-0.750*",
            "*queries that moved most:*",
            "*q01*1.000*0.000*-1.000*en 1*",
        ]
    )


@pytest.mark.parametrize("xdist", XDIST)
def test_same_model_both_arms_ties_everywhere(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good", *xdist
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*3 tie*"])
    assert "passed" not in result.stdout.lines[-1]
    result.stdout.fnmatch_lines(["overall*48*+0.000*TIE"])


def test_strata_get_their_own_verdicts(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad_english", "-v"
    )
    result.stdout.fnmatch_lines(["*::overall WORSE*", "*::language=en WORSE*", "*::language=es TIE*"])
    result.stdout.fnmatch_lines(["*2 failed, 1 tie*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_stratum_under_the_floor_never_passes(pytester: pytest.Pytester, golden: Golden) -> None:
    golden(min_queries=30)
    result = run(
        pytester, "--embeval-incumbent=fake_models:bad", "--embeval-candidate=fake_models:good", "-v"
    )
    result.stdout.fnmatch_lines(["*::overall BETTER*", "*::language=en TIE*", "*::language=es TIE*"])
    result.assert_outcomes(passed=1)
    # Why each stratum tied, under the table, where people look first (not only in the reports' files).
    result.stdout.fnmatch_lines(
        [
            "language=es*TIE",
            "language=en: TIE — below floor: n=24 < min_queries=30*",
            "language=es: TIE — below floor: n=24 < min_queries=30*",
        ]
    )


def test_items_have_stable_readable_ids(pytester: pytest.Pytester, golden: Golden) -> None:
    golden(strata=["language", "shape"])
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "support.yaml::overall",
            "support.yaml::language=en",
            "support.yaml::language=es",
            "support.yaml::shape=even",
            "support.yaml::shape=odd",
        ]
    )


def test_without_the_flag_nothing_is_collected_nor_imported(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    pytester.makeconftest(
        """
        import sys

        def pytest_sessionfinish(session):
            heavy = ("numpy", "yaml", "torch", "sentence_transformers", "scipy")
            heavy = sorted(m for m in heavy if m in sys.modules)
            print("HEAVY:", heavy)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["HEAVY: []"])


def run_worse_in_a_subprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A fresh process (nothing imported by earlier tests) comparing a worse candidate, output not captured;
    it must end as the failure it is."""
    result = pytester.runpytest_subprocess(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "-s",
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:bad",
        *args,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    return result


def test_a_run_imports_no_scipy_torch_endpoint_client_nor_what_it_did_not_ask_for(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    # scipy.stats alone costs about a second of every run; only calibration and huge sign tests need it.
    # Nor are the plugin's modules for what the run did not ask for (a judge, merging and pooling sheets,
    # an endpoint, the readable reports, the numpy.ma that numpy.quantile and numpy.unique import), each
    # some milliseconds of its start.
    golden()
    pytester.makeconftest(
        """
        import sys

        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_unconfigure(config):
            heavy = ("scipy", "torch", "sentence_transformers", "openai", "matplotlib", "hnswlib", "numpy.ma",
                     "chromadb", "lancedb")
            unasked = ("judge", "merging", "disagreement", "agreement", "pooling", "endpoint", "htmlpage",
                       "markdown", "plot", "calibration_records", "grading", "search.engines.chroma",
                       "search.engines.lance")
            loaded = [m for m in heavy if m in sys.modules]
            loaded += [m for m in unasked if "pytest_embeval." + m in sys.modules]
            print("HEAVY:", sorted(loaded))
        """
    )
    result = run_worse_in_a_subprocess(pytester, f"--embeval-json={pytester.path / 'report.json'}")
    result.stdout.fnmatch_lines(["*HEAVY: []"])


def test_golden_sets_are_let_go_when_the_session_ends(pytester: pytest.Pytester, golden: Golden) -> None:
    """Once every item has run, nothing holds a golden set's documents or its run any more, and once the
    outputs are written, no query's record (its ranked documents and similarities) either: pytest's own
    garbage collections at the end (five and more, from its cleanups) would walk every one of them."""
    golden()
    pytester.makeconftest(
        """
        import gc

        import pytest

        def held():
            from pytest_embeval.golden.schema import GoldenSet
            from pytest_embeval.run.pipeline import GoldenRun

            gc.collect()
            objects = gc.get_objects()
            alive = sorted({type(o).__name__ for o in objects if isinstance(o, (GoldenSet, GoldenRun))})
            records = sum(isinstance(o, dict) and {"id", "similarities"} <= o.keys() for o in objects)
            print("ALIVE:", alive, "QUERY RECORDS:", records)

        @pytest.hookimpl(tryfirst=True)
        def pytest_unconfigure(config):
            held()  # before the plugin's own unconfigure: the records still serve its outputs

        def pytest_configure(config):
            config.add_cleanup(held)  # after every unconfigure hook, where pytest collects
        """
    )
    result = run_worse_in_a_subprocess(pytester, f"--embeval-json={pytester.path / 'report.json'}")
    result.stdout.fnmatch_lines(["ALIVE: [] QUERY RECORDS: 48", "ALIVE: [] QUERY RECORDS: 0"])
    assert json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))["golden_sets"]


def test_other_yaml_files_are_left_alone(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    pytester.makefile(".yaml", ci="steps:\n  - run: echo hello\n")
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["3 tests collected*"])


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            {"metric": "recal@5"},
            "support.yaml:*: metric: unknown metric 'recal@5': expected one of recall@k*",
        ),
        ({"tie_margin": -0.1}, "support.yaml:*: tie_margin: must be a number >= 0, got -0.1"),
        (
            {"confidence": 1.5},
            "support.yaml:*: confidence: must be a number strictly between 0 and 1, got 1.5",
        ),
        ({"corpus": "missing.jsonl"}, "support.yaml:1: corpus: file not found: */missing.jsonl"),
        ({"colour": "blue"}, "support.yaml:*: colour: unknown key (expected one of: *)"),
    ],
)
def test_malformed_golden_file_is_a_one_line_collection_error(
    pytester: pytest.Pytester, golden: Golden, setting: dict[str, object], message: str
) -> None:
    golden(**setting)
    result = run(pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting support.yaml*", message, "*short test summary*"])
    assert "Traceback" not in result.stdout.str()


def test_unknown_document_in_qrels_is_a_collection_error(pytester: pytest.Pytester, golden: Golden) -> None:
    path = golden()
    qrels = path.parent / "support" / "qrels.tsv"
    qrels.write_text(qrels.read_text(encoding="utf-8") + "q00\tnope\t1\n", encoding="utf-8")
    result = run(pytester)
    result.stdout.fnmatch_lines(
        ["support/qrels.tsv:50: corpus-id: unknown document 'nope' (not in the corpus)"]
    )


@pytest.mark.parametrize("xdist", XDIST)
def test_a_broken_encoder_is_an_error_of_its_golden_set_reported_once(
    pytester: pytest.Pytester, golden: Golden, tmp_path: Path, xdist: list[str]
) -> None:
    golden()
    report = tmp_path / "report.json"
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:broken",
        f"--embeval-json={report}",
        "-rE",
        *xdist,
    )
    result.assert_outcomes(errors=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    problem = (
        "candidate encoder 'fake_models:broken' returned NaN or inf in 48 of 48 query vectors (first: row 0)"
    )
    output = result.stdout.str()
    # In full once in the ERRORS section (the short summary repeats it, trimmed to the terminal's width or
    # not, so it is not counted) ...
    errors_section = output.split(" ERRORS ", 1)[1].split(" embeval ", 1)[0]
    assert errors_section.count(f"support: {problem}") == 1
    result.stdout.fnmatch_lines(["ERROR support.yaml::overall - support: candidate encoder*"])
    # ... and the golden set's other strata say where to look.
    assert errors_section.count("support: not run; the error is reported under support.yaml::overall") == 2
    result.stdout.fnmatch_lines([f"embeval: support (support.yaml) not run: {problem}"])
    assert "Traceback" not in output and "failed" not in result.stdout.lines[-1]
    assert json.loads(report.read_text(encoding="utf-8")) == {
        "schema_version": 1,
        "golden_sets": [],
        "errors": [
            {
                "path": "support.yaml",
                "name": "support",
                "role": "candidate",
                "spec": "fake_models:broken",
                "message": problem,
            }
        ],
    }


def test_a_missing_model_is_an_error_naming_every_way_to_set_it(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    result = run(pytester, "--embeval-incumbent=fake_models:good")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "support: no candidate model: pass --embeval-candidate SPEC, set embeval_candidate in the ini "
            "file, or override the embeval_candidate fixture in conftest.py"
        ]
    )


def test_precedence_is_option_then_ini_then_fixture(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    pytester.makeconftest(
        """
        import pytest
        import fake_models

        @pytest.fixture(scope="session")
        def embeval_incumbent():
            return fake_models.good

        @pytest.fixture(scope="session")
        def embeval_candidate():
            return fake_models.good
        """
    )
    # Fixtures alone: the same model twice ties.
    run(pytester).stdout.fnmatch_lines(["*3 tie*"])
    # The ini key beats the fixture.
    pytester.makeini("[pytest]\nembeval_candidate = fake_models:bad\n")
    run(pytester).stdout.fnmatch_lines(["*3 failed*"])
    # The option beats the ini key.
    run(pytester, "--embeval-candidate=fake_models:good").stdout.fnmatch_lines(["*3 tie*"])


def _report(pytester: pytest.Pytester, path: Path, *args: str) -> dict[str, object]:
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:bad_english",
        f"--embeval-json={path}",
        *args,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_json_report_is_identical_with_and_without_xdist(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    golden("second", strata=["shape"])
    serial = _report(pytester, pytester.path / "serial.json")
    parallel = _report(pytester, pytester.path / "parallel.json", "-n", "2")
    assert serial == parallel
    assert [g["path"] for g in serial["golden_sets"]] == ["second.yaml", "support.yaml"]  # type: ignore[index]


def test_json_report_content(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    report = _report(pytester, pytester.path / "r.json")
    assert report["schema_version"] == 1
    (golden_set,) = report["golden_sets"]  # type: ignore[misc]
    assert golden_set["name"] == "support"
    assert golden_set["path"] == "support.yaml"
    assert golden_set["fingerprint"].startswith("sha256:")
    assert golden_set["incumbent"]["spec"] == "fake_models:good"
    assert [s["stratum"] for s in golden_set["strata"]] == ["overall", "language=en", "language=es"]
    en = golden_set["strata"][1]
    assert en["n"] == 24 and en["excluded"] == 0
    assert en["incumbent"] == 1.0 and en["candidate"] == pytest.approx(6 / 24)
    assert en["delta"] == pytest.approx(-18 / 24)
    assert en["wins"] == 0 and en["losses"] == 18
    assert en["verdict"] == "WORSE"
    q01 = next(q for q in golden_set["queries"] if q["id"] == "q01")
    assert q01["strata"] == {"language": "en"}
    assert q01["scores"]["incumbent"]["hit@1"] == 1.0
    assert q01["scores"]["candidate"]["hit@1"] == 0.0
    assert q01["ranked"]["incumbent"][0] == "d01"
    assert q01["ranked"]["candidate"][0] == "d02"
    assert len(q01["ranked"]["candidate"]) == 60  # all documents: fewer than the depth of 100
    assert (golden_set["interval"], golden_set["ties"], golden_set["multiple_comparisons"]) == (
        "studentized",
        "docid",
        "none",
    )
    assert (en["interval"], en["ci_confidence"], en["effective_n"]) == ("studentized", 0.95, 18)
    assert 0 <= en["p_value"] < 0.05
    assert en["family"] == {"method": "none", "size": 3, "level": 0.05}
    assert en["tied"]["metric"] == "hit@1" and en["tied"]["could_change"] is False
    assert en["consensus_failures"] == []


@pytest.mark.parametrize("xdist", XDIST)
def test_ties_that_change_a_verdict_are_counted_and_warned_about(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    path = pytester.path / "r.json"
    result = run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:tied_spanish",
        f"--embeval-json={path}",
        *xdist,
    )
    result.stdout.fnmatch_lines(
        [
            "embeval: WARNING: language=es: tied scores across hit@1 in 0 incumbent and 24 candidate queries "
            "of 24: the tie order changes the verdict: WORSE (docid), TIE (docid-ascending), "
            "WORSE (expected);*"
        ]
    )
    es = json.loads(path.read_text(encoding="utf-8"))["golden_sets"][0]["strata"][2]
    assert es["verdict"] == "WORSE"
    assert es["tied"]["verdicts"] == {"docid": "WORSE", "docid-ascending": "TIE", "expected": "WORSE"}


def test_expected_ties_score_a_tie_at_the_cutoff_as_half_a_hit(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden(ties="expected")
    path = pytester.path / "r.json"
    run(
        pytester,
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:tied_spanish",
        f"--embeval-json={path}",
    )
    report = json.loads(path.read_text(encoding="utf-8"))
    es_query = next(q for q in report["golden_sets"][0]["queries"] if q["strata"] == {"language": "es"})
    assert es_query["scores"]["candidate"]["hit@1"] == 0.5


def test_holm_reports_the_level_of_each_stratum(pytester: pytest.Pytester, golden: Golden) -> None:
    golden(multiple_comparisons="holm", strata=["language", "shape"])
    result = run(
        pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad_english"
    )
    result.stdout.fnmatch_lines(
        ["multiple comparisons: holm over 5 strata, family-wise level 0.05; levels: *"]
    )
    result.stdout.fnmatch_lines(["*stratum*n*differ*CI (holm)*"])


def test_trec_run_files_reproduce_the_report(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    runs = pytester.path / "runs"
    report = _report(pytester, pytester.path / "r.json", f"--embeval-runs={runs}")
    assert sorted(p.name for p in runs.iterdir()) == ["support.candidate.run", "support.incumbent.run"]
    lines = (runs / "support.candidate.run").read_text(encoding="utf-8").splitlines()
    assert lines[0].split() == ["q00", "Q0", "d00", "1", "1.0", "embeval-candidate"]
    first_ranked = {line.split()[0]: line.split()[2] for line in lines if line.split()[3] == "1"}
    queries = report["golden_sets"][0]["queries"]  # type: ignore[index]
    assert first_ranked == {q["id"]: q["ranked"]["candidate"][0] for q in queries}


def test_an_arm_that_was_not_pooled_gets_a_coverage_warning(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    result = run(pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad")
    result.stdout.fnmatch_lines(
        ["embeval: WARNING: candidate's top 1 is less judged than another arm's by more than 10 points*"]
    )
    same = run(pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good")
    assert "WARNING" not in same.stdout.str()


@pytest.mark.parametrize("xdist", XDIST)
def test_pool_option_writes_the_sheet_embeval_pool_writes(
    pytester: pytest.Pytester, golden: Golden, xdist: list[str]
) -> None:
    golden()
    sheets = pytester.path / "sheets"
    arms = ["--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad"]
    result = run(
        pytester, *arms, f"--embeval-pool={sheets}", "--embeval-pool-depth=5", "--embeval-json=r.json", *xdist
    )
    result.stdout.fnmatch_lines([f"embeval pool: sheet written to {sheets / 'support.pool.csv'}"])
    expected = pytester.path / "expected.csv"
    assert (
        cli.main(["pool", "support.yaml", "--from-report", "r.json", "--depth", "5", "--out", str(expected)])
        == 0
    )
    assert (sheets / "support.pool.csv").read_text(encoding="utf-8") == expected.read_text(encoding="utf-8")
    # A second run finds nothing new (its pairs are on the unmerged sheet) and overwrites nothing.
    again = run(pytester, *arms, f"--embeval-pool={sheets}", "--embeval-pool-depth=5")
    again.stdout.fnmatch_lines(["embeval pool: to judge: 0 pairs*"])
    assert sorted(path.name for path in sheets.iterdir()) == ["support.pool.csv"]


def test_pool_depth_is_checked(pytester: pytest.Pytester, golden: Golden) -> None:
    golden()
    result = run(pytester, "--embeval-pool-depth=0")
    result.stderr.fnmatch_lines(["*--embeval-pool-depth must be between 1 and 100, got 0"])
