"""A team's own vector database through pytest: the documentation's SQLite adapter declared as a service.

The report is the same with and without ``-n 2``; a golden file's ``keep`` leaves the collections; a run
interrupted with Ctrl-C drops what it built, one killed outright leaves its collection, which the next run
of the same golden file removes (and says so); an arm that fuses two embedding arms builds and drops one
collection per part; corpus slices are searched in collections of their own. In a shortlist, the incumbent's
collection is built once (once per process under xdist) and each candidate builds its own, named by it; each
candidate's Δ is split by its own exact twin; an engine fault in a candidate's collection, or an engine gone
when a later candidate runs, is that candidate's error alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import golden_files
from test_interrupted import pytest_process

from pytest_embeval.reports.json_report import without_timings
from pytest_embeval.search.vector_index import COLLECTION_PREFIX

Golden = Callable[..., Path]
EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "sqlite_index.py"

#: An adapter that waits, once the candidate's collection is built and first searched, until it is stopped.
STALLING = """
import os
import time

from sqlite_index import SqliteIndex


class Stalling(SqliteIndex):
    def search(self, name, queries, k, where):
        flag = os.environ.get("EMBEVAL_STALL_FLAG")
        if flag and "-candidate-" in name:
            open(flag, "w").close()
            time.sleep(60)
        return super().search(name, queries, k, where)
"""


def collections(database: Path) -> dict[str, dict[str, str]]:
    """What the SQLite file holds, read as the adapter reads it."""
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        from sqlite_index import SqliteIndex
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    index = SqliteIndex(str(database))
    try:
        return {name: dict(marker) for name, marker in index.markers(COLLECTION_PREFIX).items()}
    finally:
        index.close()


def service(**more: Any) -> dict[str, Any]:
    return {"service": "sqlite_index:SqliteIndex", "path": "vectors.sqlite", **more}


def subclassed(pytester: pytest.Pytester, name: str, methods: str) -> dict[str, Any]:
    """Class ``name`` in module ``name.lower()`` beside the golden file: the example adapter with
    ``methods`` (a class body); the ``index`` that declares it."""
    body = textwrap.indent(textwrap.dedent(methods).strip(), "    ")
    module = f"import os\n\nfrom sqlite_index import SqliteIndex\n\n\nclass {name}(SqliteIndex):\n{body}\n"
    pytester.makepyfile(**{name.lower(): module})
    return {"service": f"{name.lower()}:{name}", "path": "vectors.sqlite"}


@pytest.fixture
def adapter(pytester: pytest.Pytester) -> Path:
    """The example adapter beside the golden file, importable by the runs (their rootdir is on sys.path)."""
    pytester.makepyfile(sqlite_index=EXAMPLE.read_text(encoding="utf-8"), stalling=STALLING)
    return pytester.path / "vectors.sqlite"


def run(
    pytester: pytest.Pytester, *args: str, candidates: Sequence[str] = ("fake_models:bad_english",)
) -> tuple[pytest.RunResult, dict[str, Any] | None]:
    """``pytest --embeval`` with the good incumbent and the ``candidates`` (by default the one that misses
    English), and its JSON report (None if none was written)."""
    path = pytester.path / "report.json"
    path.unlink(missing_ok=True)
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-no-cache",
        f"--embeval-json={path}",
        "--embeval-incumbent=fake_models:good",
        *(f"--embeval-candidate={candidate}" for candidate in candidates),
        *args,
    )
    return result, json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def test_a_service_run_is_the_same_serially_and_under_xdist(
    pytester: pytest.Pytester, golden: Golden, adapter: Path
) -> None:
    golden(index=service())
    serial, report = run(pytester)
    serial.assert_outcomes(failed=2, passed=0)
    parallel, again = run(pytester, "-n", "2")
    parallel.assert_outcomes(failed=2, passed=0)
    assert report is not None and without_timings(report) == without_timings(again)
    (golden_set,) = report["golden_sets"]
    assert golden_set["index"] == {
        "service": {"factory": "sqlite_index:SqliteIndex", "path": "vectors.sqlite"}
    }
    index = golden_set["incumbent"]["index"]
    assert (index["kind"], index["parameters"], index["ann_recall"]) == (
        "sqlite",
        {"scan": "exhaustive"},
        1.0,
    )
    assert index["version"].startswith("sqlite ")
    assert "incumbent index: sqlite " in serial.stdout.str()
    assert collections(adapter) == {}


def test_keep_in_the_golden_file_leaves_the_collections(
    pytester: pytest.Pytester, golden: Golden, adapter: Path
) -> None:
    golden(index=service(keep=True))
    result, report = run(pytester)
    result.assert_outcomes(failed=2, passed=0)
    assert report is not None
    kept = collections(adapter)
    assert len(kept) == 2 and all(marker["embeval_kept"] == "1" for marker in kept.values())
    assert report["golden_sets"][0]["candidate"]["index"]["kept"] is True
    assert "collection kept after the run" in result.stdout.str()


def test_a_fused_arm_and_corpus_slices_build_and_drop_collections_of_their_own(
    pytester: pytest.Pytester, golden: Golden, adapter: Path
) -> None:
    watching = subclassed(
        pytester,
        "Watching",
        """
        def create(self, name, records, marker):
            with open("created.log", "a", encoding="utf-8") as log:
                log.write(f"{len(records.ids)}\\n")
            super().create(name, records, marker)
        """,
    )
    golden(
        index=watching,
        corpus_sample={"sizes": [0.9, 1.0], "seed": 3},
    )
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-no-cache",
        "--embeval-incumbent=rrf:fake_models:good,fake_models:bad",
        "--embeval-candidate=fake_models:bad_english",
    )
    assert result.ret == pytest.ExitCode.OK
    # No split: a fused arm has no exact twin of its own to split by.
    assert "Δ split" not in result.stdout.str()
    sizes = sorted(int(line) for line in (pytester.path / "created.log").read_text().split())
    # Incumbent: two parts on the largest slice (all 60) and on the 90 % slice (54); candidate: one each.
    assert sizes == [54, 54, 54, 60, 60, 60]
    assert collections(adapter) == {}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    golden_files(root, index={"service": "stalling:Stalling", "path": "vectors.sqlite"})
    (root / "conftest.py").write_text("", encoding="utf-8")
    for name in ("fake_models.py",):
        (root / name).write_text(Path(__file__).with_name(name).read_text(encoding="utf-8"), encoding="utf-8")
    (root / "sqlite_index.py").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    (root / "stalling.py").write_text(STALLING, encoding="utf-8")
    return root


ARMS = ("--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad")


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_ctrl_c_mid_run_drops_what_the_run_built(project: Path, tmp_path: Path) -> None:
    flag = tmp_path / "stalled"
    running = pytest_process(project, tmp_path / "log", *ARMS, env={"EMBEVAL_STALL_FLAG": str(flag)})
    output = stop_once(running, flag, signal.SIGINT)
    assert running.returncode == pytest.ExitCode.INTERRUPTED and "KeyboardInterrupt" in output
    assert collections(project / "vectors.sqlite") == {}


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals and process ids")
def test_a_killed_runs_collection_is_removed_by_the_next_run_of_its_golden_file(
    project: Path, tmp_path: Path
) -> None:
    flag = tmp_path / "stalled"
    database = project / "vectors.sqlite"
    running = pytest_process(project, tmp_path / "log", *ARMS, env={"EMBEVAL_STALL_FLAG": str(flag)})
    stop_once(running, flag, signal.SIGKILL)
    assert running.returncode == -signal.SIGKILL
    (left,) = collections(database)  # the candidate's: the incumbent's was dropped when it was done
    assert "-candidate-" in left
    # Another golden file's leftover, in the same database, is not this run's to remove.
    other = golden_files(project, "other", index={"service": "stalling:Stalling", "path": "vectors.sqlite"})
    running = pytest_process(
        project, tmp_path / "log", str(other), *ARMS, env={"EMBEVAL_STALL_FLAG": str(flag)}
    )
    flag.unlink()
    stop_once(running, flag, signal.SIGKILL)
    assert len(collections(database)) == 2
    again = pytest_process(project, tmp_path / "log", "support.yaml", *ARMS)
    output, _ = again.communicate(timeout=120)
    assert again.returncode == pytest.ExitCode.TESTS_FAILED, output
    assert f"removed 1 collection(s) an interrupted run of this golden file left behind: {left}" in output
    remaining = collections(database)
    assert len(remaining) == 1 and left not in remaining


def stop_once(running: subprocess.Popen[str], flag: Path, stop: signal.Signals) -> str:
    """Send ``stop`` once the run is stalled in the candidate's search (within two minutes); its output."""
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert running.poll() is None, running.communicate()[0]
            assert time.monotonic() < deadline, "the run never got that far"
            time.sleep(0.05)
        running.send_signal(stop)
        output, _ = running.communicate(timeout=60)
    finally:
        running.kill()
    return output


def test_a_recall_target_on_an_adapter_without_a_search_parameter_is_an_error(
    pytester: pytest.Pytester, golden: Golden, adapter: Path
) -> None:
    golden(index=service(recall_target=0.9))
    result, report = run(pytester)
    result.assert_outcomes(errors=3)
    assert report is not None
    (error,) = report["errors"]
    assert error["message"] == (
        "incumbent: index.recall_target: sqlite's adapter offers no search parameter to tune for this "
        "collection (TunableIndex)"
    )
    assert collections(adapter) == {}


# ------------------------------------------------------------------------------------- a shortlist

#: An adapter's methods that log each collection it builds and drops: "created|dropped TAB name TAB pid".
LOGGING = """
def create(self, name, records, marker):
    self._log("created", name)
    super().create(name, records, marker)

def drop(self, name):
    self._log("dropped", name)
    super().drop(name)

def _log(self, what, name):
    # One append per line: O_APPEND keeps concurrent workers' lines whole.
    with open("collections.log", "a", encoding="utf-8") as log:
        log.write(f"{what}\\t{name}\\t{os.getpid()}\\n")
"""

#: Two candidates: one that misses half the English queries, one that misses half of both languages.
SHORTLIST = ("english=fake_models:bad_english", "bad=fake_models:bad")


def run_shortlist(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """`run` with the `SHORTLIST`; its JSON report, which a shortlist's run always writes."""
    result, report = run(pytester, *args, candidates=SHORTLIST)
    assert report is not None, result.stdout.str()
    return result, report


def built_and_dropped(pytester: pytest.Pytester) -> tuple[list[tuple[str, int]], list[str]]:
    """The collections the logging adapter built, (name, process id) in order, and those it dropped; the
    log is emptied for the next run."""
    log = pytester.path / "collections.log"
    lines = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()]
    log.unlink()
    built = [(name, int(pid)) for what, name, pid in lines if what == "created"]
    return built, [name for what, name, _ in lines if what == "dropped"]


def arm_of(name: str) -> str:
    """The arm a collection was built for, read from its name (``embeval-<golden>-<arm>-<token>``)."""
    return name.split("-", 2)[2].rsplit("-", 1)[0]


@pytest.fixture
def logging_adapter(pytester: pytest.Pytester, golden: Golden, adapter: Path) -> Path:
    golden(index=subclassed(pytester, "Logged", LOGGING))
    return adapter


def test_a_shortlist_on_an_engine_builds_the_incumbent_once_and_each_candidate_its_own(
    pytester: pytest.Pytester, logging_adapter: Path
) -> None:
    serial, report = run_shortlist(pytester, "--embeval-md=report.md", "--embeval-html=report.html")
    assert serial.parseoutcomes() == {"failed": 5, "tie": 1}
    built, dropped = built_and_dropped(pytester)
    # One collection per arm: the incumbent's built once and shared by both comparisons, each candidate's
    # named by it; every one dropped when its arm was done.
    assert sorted(arm_of(name) for name, _ in built) == ["candidate-bad", "candidate-english", "incumbent"]
    assert sorted(dropped) == sorted(name for name, _ in built)
    assert collections(logging_adapter) == {}
    # Each candidate's Δ split by its own exact twin and the incumbent's: an exhaustive scan loses nothing,
    # so the model's part is the whole Δ, and the candidates' parts are their own.
    assert [g["candidate_name"] for g in report["golden_sets"]] == ["english", "bad"]
    model_parts = {}
    for golden_set in report["golden_sets"]:
        assert golden_set["candidate"]["index"]["kind"] == "sqlite"
        for stratum in golden_set["strata"]:
            split = stratum["index_split"]
            assert split["model"]["delta"] == stratum["delta"]
            for part in split["engine"].values():
                assert (part["recall"], part["delta"]) == (1.0, 0.0)
            model_parts[golden_set["candidate_name"], stratum["stratum"]] = split["model"]["delta"]
    assert model_parts[("english", "language=es")] == 0.0 and model_parts[("bad", "language=es")] < 0
    # Each candidate's split under its own table, in every report.
    assert serial.stdout.str().count("Δ split (each arm") == 2
    for page in ("report.md", "report.html"):
        assert (pytester.path / page).read_text(encoding="utf-8").count("Δ split (each arm") == 2

    parallel, again = run_shortlist(pytester, "-n", "2")
    assert parallel.parseoutcomes() == {"failed": 5, "tie": 1}
    assert without_timings(again) == without_timings(report)
    built, dropped = built_and_dropped(pytester)
    # Each process builds the arms it runs in collections of its own (the family's verdicts rest on both
    # candidates, so a process runs them all): at most once per arm and process, never a shared name.
    per_process = Counter((arm_of(name), pid) for name, pid in built)
    assert set(per_process.values()) == {1}
    assert {arm for arm, _ in per_process} == {"incumbent", "candidate-english", "candidate-bad"}
    assert len({name for name, _ in built}) == len(built)
    assert sorted(dropped) == sorted(name for name, _ in built)
    assert collections(logging_adapter) == {}


def test_kept_collections_of_two_shortlist_runs_do_not_collide(
    pytester: pytest.Pytester, logging_adapter: Path
) -> None:
    for _ in range(2):
        result, _ = run_shortlist(pytester, "--embeval-keep-collections")
        assert result.parseoutcomes() == {"failed": 5, "tie": 1}
    kept = collections(logging_adapter)
    built, dropped = built_and_dropped(pytester)
    assert dropped == [] and sorted(kept) == sorted(name for name, _ in built)
    assert sorted(arm_of(name) for name in kept) == sorted(
        ["incumbent", "candidate-english", "candidate-bad"] * 2
    )
    assert all(marker["embeval_kept"] == "1" for marker in kept.values())


def test_an_engine_refusing_one_candidates_collection_is_that_candidates_error(
    pytester: pytest.Pytester, golden: Golden, adapter: Path
) -> None:
    refusing = """
    def create(self, name, records, marker):
        if "-candidate-bad-" in name:
            raise PermissionError("quota exceeded")
        super().create(name, records, marker)
    """
    golden(index=subclassed(pytester, "Refusing", refusing))
    result, report = run_shortlist(pytester)
    # bad's three items are its error; english is still decided, in a family of its strata alone.
    assert result.parseoutcomes() == {"failed": 2, "tie": 1, "errors": 3}
    (error,) = report["errors"]
    assert error["candidate_name"] == "bad"
    assert error["message"].startswith("sqlite at vectors.sqlite: creating collection 'embeval-")
    assert error["message"].endswith("': PermissionError: quota exceeded")
    assert [g["candidate_name"] for g in report["golden_sets"]] == ["english"]
    assert collections(adapter) == {}


def test_an_engine_gone_when_a_later_candidate_runs_is_that_candidates_error(
    pytester: pytest.Pytester, golden: Golden, adapter: Path
) -> None:
    once = """
    opened = 0

    def __init__(self, path):
        Once.opened += 1
        if Once.opened > 1:
            raise ConnectionRefusedError("engine went away")
        super().__init__(path)
    """
    # Each candidate decided on its own: bad's items need only its arm, run (and the engine opened again)
    # after english's were decided with the incumbent.
    golden(index=subclassed(pytester, "Once", once), family="candidate")
    result, report = run_shortlist(pytester)
    assert result.parseoutcomes() == {"failed": 2, "tie": 1, "errors": 3}
    (error,) = report["errors"]
    assert (error["candidate_name"], error["message"]) == (
        "bad",
        "service at vectors.sqlite: cannot open: ConnectionRefusedError: engine went away",
    )
    assert [g["candidate_name"] for g in report["golden_sets"]] == ["english"]
    assert collections(adapter) == {}
