"""Hostile output paths: an output is never an input, nor a special file replaced (`files.output_paths`,
`files.atomic`), for every ``embeval`` command that writes and for the plugin.

Each case asserts the exact one line, the exit status, and that every input is byte-identical afterwards
(`file_snapshots`). Special files are made in the test's folder where the system lets us (``mknod`` needs
root); elsewhere the real ``/dev/null`` and ``/dev/full`` stand in, which nobody but root could replace.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from file_snapshots import snapshot
from suite_helpers import CliResult, golden_files
from test_decision import run

from pytest_embeval.files.atomic import write_atomic
from pytest_embeval.judging.pooling import pair_id

Embeval = Callable[..., CliResult]

#: A query log of three searches, in two languages.
LOG = "query\tlang\nhello\ten\nworld\tes\nhello\ten\n"
SAMPLE = ["--by", "lang", "--size", "2", "--floor", "1"]
MODELS = ["--model", "fake_models:good", "--model", "fake_models:bad"]
CORPUS_SAMPLE = [
    "corpus-sample",
    "support/corpus.jsonl",
    "--size",
    "50",
    "--keep-judged",
    "support/qrels.tsv",
]


@pytest.fixture(autouse=True)
def never_renamed_over_a_special_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A safety net for the machine running the suite as root: a write that regressed to renaming over a
    device would replace it; here it fails the test instead, and leaves the device alone."""
    replace = os.replace

    def guarded(source: object, target: object, *args: object, **kwargs: object) -> None:
        if isinstance(target, (str, os.PathLike)) and os.path.lexists(target):
            mode = os.lstat(target).st_mode
            assert stat.S_ISREG(mode) or stat.S_ISLNK(mode), f"renamed over {target}"
        replace(source, target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", guarded)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The conftest golden set, a query log, and a sheet per judge, in the current folder."""
    monkeypatch.chdir(tmp_path)
    golden_files(tmp_path)
    (tmp_path / "log.tsv").write_text(LOG, encoding="utf-8")
    header = "query_id,doc_id,pair_id,query,document,grade,judge,notes\n"
    (tmp_path / "people.csv").write_text(
        header + "".join(f"q{i:02d},d{i:02d},p{i},x,y,{i % 2},ana,\n" for i in range(30)), encoding="utf-8"
    )
    (tmp_path / "model.csv").write_text(
        header + "".join(f"q{i:02d},d{i:02d},p{i},x,y,{i % 2},openai:m,\n" for i in range(30)),
        encoding="utf-8",
    )
    return tmp_path


def special(path: Path, kind: int, device: tuple[int, int], stand_in: str) -> Path:
    """A device node at ``path`` (root only), else the system's own ``stand_in``."""
    try:
        os.mknod(path, kind | 0o666, os.makedev(*device))
    except (PermissionError, AttributeError):
        return Path(stand_in)
    return path


# --- 1. --force overwrites an earlier output, never an input -------------------------------------------


def _link(project: Path, kind: str) -> str:
    """``log.tsv`` named another way: through a symlink, a hard link, or ``..``."""
    if kind == "symlink":
        (project / "alias.tsv").symlink_to("log.tsv")
        return "alias.tsv"
    if kind == "hard link":
        os.link(project / "log.tsv", project / "alias.tsv")
        return "alias.tsv"
    return "support/../log.tsv"


@pytest.mark.parametrize("kind", ["symlink", "hard link", ".."])
def test_sample_never_overwrites_its_log_named_any_way(project: Path, embeval: Embeval, kind: str) -> None:
    out = _link(project, kind)
    before = snapshot(project)
    status, stdout, stderr = embeval("sample", "log.tsv", *SAMPLE, "--out", out, "--force")
    assert (status, stdout) == (2, "")
    assert stderr == (
        f"embeval sample: error: --out {out}: is the query log, which this command reads; name another path\n"
    )
    assert snapshot(project) == before


@pytest.mark.parametrize(
    ("args", "what"),
    [
        pytest.param(
            ["sample", "log.tsv", *SAMPLE, "--out", "log.tsv"], "the query log", id="sample-its-log"
        ),
        pytest.param(
            [*CORPUS_SAMPLE, "--out", "support/corpus.jsonl"], "the corpus", id="corpus-sample-its-corpus"
        ),
        pytest.param(
            [*CORPUS_SAMPLE, "--out", "support/qrels.tsv"], "the judgments", id="corpus-sample-its-qrels"
        ),
        pytest.param(
            ["refresh", "support.yaml", "--out", "support/qrels.tsv"],
            "the qrels of support.yaml",
            id="refresh-the-qrels",
        ),
        pytest.param(
            ["refresh", "support.yaml", "--out", "support.yaml"],
            "the golden file support.yaml",
            id="refresh-the-golden-file",
        ),
        pytest.param(
            ["pool", "support.yaml", *MODELS, "--out", "support/qrels.tsv"],
            "the qrels of support.yaml",
            id="pool-the-qrels",
        ),
        # Found by the hostile cases of this round: a sheet handed out, and a sheet a person graded.
        pytest.param(
            ["pool", "support.yaml", *MODELS, "--exclude", "people.csv", "--out", "people.csv"],
            "a sheet left out (--exclude)",
            id="pool-its-excluded-sheet",
        ),
        pytest.param(
            ["calibrate", "people.csv", "model.csv", "--record", "people.csv"],
            "the people's sheet",
            id="calibrate-the-people's-sheet",
        ),
        pytest.param(
            ["sample", "log.tsv", *SAMPLE, "--out", "support/queries.jsonl"],
            None,
            id="sample-over-an-earlier-output",
        ),
    ],
)
def test_an_output_naming_an_input_is_refused_whatever_force_says(
    project: Path, embeval: Embeval, args: list[str], what: str | None
) -> None:
    """``--force`` is given wherever the command has it (calibrate --record overwrites without it)."""
    args = [*args, "--force"] if args[0] != "calibrate" else args
    option, value = args[-3:-1] if args[-1] == "--force" else args[-2:]
    line = (
        f"embeval {args[0]}: error: {option} {value}: is {what}, which this command reads; name another path"
    )
    inputs = snapshot(
        project / "log.tsv", project / "support", project / "support.yaml", project / "people.csv"
    )
    status, _, stderr = embeval(*args)
    if what is None:  # an earlier output that no command here reads: --force overwrites it
        assert (status, stderr) == (0, "")
        assert (project / "support" / "queries.draw.json").is_file()
        return
    assert (status, stderr) == (2, line + "\n")
    assert snapshot(
        project / "log.tsv", project / "support", project / "support.yaml", project / "people.csv"
    ) == (inputs)


def test_the_plugin_refuses_an_output_hard_linked_to_an_input(
    pytester: pytest.Pytester, golden: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hard link is the same file: the step summary is appended to in place, so GitHub's summary linked
    to the qrels would have grown them by a Markdown report (found by this round's hostile cases)."""
    golden()
    os.link(pytester.path / "support" / "qrels.tsv", pytester.path / "summary.md")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    before = snapshot(pytester.path / "support")
    result = run(pytester, "good", "--embeval-step-summary")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.errlines == [
        f"ERROR: $GITHUB_STEP_SUMMARY {pytester.path / 'summary.md'}: is the qrels of support.yaml, which "
        "this run reads; name another path",
        "",
    ]
    assert snapshot(pytester.path / "support") == before


def test_an_output_written_beside_a_device_is_refused(project: Path, embeval: Embeval) -> None:
    """A draw record, an audit file or split sheets are named after --out: next to /dev/null they would be
    created in /dev (as root), so --out is refused there."""
    before = snapshot(project)
    status, _, stderr = embeval("sample", "log.tsv", *SAMPLE, "--out", "/dev/null")
    assert (status, stderr) == (
        2,
        "embeval sample: error: --out /dev/null: is a character device; its draw record would be written "
        "beside it (/dev/null.draw.json): name a regular file\n",
    )
    assert snapshot(project) == before


# --- 2. a special file is written through or refused, never replaced ---------------------------------------


def test_a_character_device_is_written_through_and_stays_one(project: Path, embeval: Embeval) -> None:
    null = special(project / "null", stat.S_IFCHR, (1, 3), "/dev/null")
    inputs, device = snapshot(project), snapshot(null)
    status, stdout, stderr = embeval("refresh", "support.yaml", "--out", null)
    assert (status, stderr) == (0, "")
    assert f"sheet written to {null} (5 pairs" in stdout
    assert snapshot(null) == device and stat.S_ISCHR(os.stat(null).st_mode)
    assert snapshot(project) == inputs


def test_a_full_device_is_no_space_left_naming_it(project: Path, embeval: Embeval) -> None:
    full = special(project / "full", stat.S_IFCHR, (1, 7), "/dev/full")
    before = snapshot(project)
    status, _, stderr = embeval("refresh", "support.yaml", "--out", full)
    assert (status, stderr) == (2, f"embeval refresh: error: {full}: No space left on device\n")
    assert snapshot(project) == before


def test_a_fifo_is_written_through_to_its_reader_and_refused_without_one(
    project: Path, embeval: Embeval
) -> None:
    fifo = project / "sheet.fifo"
    os.mkfifo(fifo)
    before = snapshot(project)
    status, _, stderr = embeval("refresh", "support.yaml", "--out", fifo)
    assert (status, stderr) == (2, f"embeval refresh: error: {fifo}: a FIFO no process is reading\n")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that the sheet (5 rows) cannot fill
    try:
        status, _, stderr = embeval("refresh", "support.yaml", "--out", fifo)
        read = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert (status, stderr) == (0, "")
    assert read.startswith(b"pair_id,query_id,") and read.count(b"\n") == 6
    assert snapshot(project) == before


def test_a_block_device_and_a_symlink_loop_are_refused(project: Path, embeval: Embeval) -> None:
    (project / "loop").symlink_to("loop")
    targets = [("loop", "a symlink loop")]
    try:
        os.mknod(project / "disk", stat.S_IFBLK | 0o600, os.makedev(7, 0))
        targets.append(("disk", "a block device"))
    except PermissionError:
        pass  # only root makes device nodes: the loop alone
    before = snapshot(project)
    for name, kind in targets:
        status, _, stderr = embeval("refresh", "support.yaml", "--out", name)
        assert (status, stderr) == (
            2,
            f"embeval refresh: error: --out {name}: is {kind}, not a regular file; name another path\n",
        )
    assert snapshot(project) == before


def test_the_plugin_writes_through_a_device_and_names_a_full_one(
    pytester: pytest.Pytester, golden: Callable[..., Path]
) -> None:
    golden()
    null = special(pytester.path / "null", stat.S_IFCHR, (1, 3), "/dev/null")
    full = special(pytester.path / "full", stat.S_IFCHR, (1, 7), "/dev/full")
    before = snapshot(pytester.path / "support", pytester.path / "support.yaml", null, full)
    outputs = [
        f"--embeval-json={full}",
        f"--embeval-md={null}",
        f"--embeval-html={pytester.path / 'report.html'}",
    ]
    result = run(pytester, "good", *outputs)
    # Every output that can be written is; a run that would pass exits 4 for the one that could not.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"embeval: ERROR: JSON report not written: {full}: No space left on device",
            f"embeval: Markdown report written to {null}",
            f"embeval: HTML report written to {pytester.path / 'report.html'}",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert snapshot(pytester.path / "support", pytester.path / "support.yaml", null, full) == before


def test_a_folder_without_write_permission_is_blamed(project: Path, embeval: Embeval) -> None:
    """Read-only by its mode (not for root, whom modes do not stop) or by its mount (a read-only bind mount
    in a user and mount namespace of its own, where the system allows one)."""
    locked = project / "locked"
    locked.mkdir()
    before = snapshot(project)
    if os.geteuid() != 0:
        locked.chmod(0o555)
        try:
            status, _, stderr = embeval("refresh", "support.yaml", "--out", locked / "sheet.csv")
            with pytest.raises(PermissionError) as raised:
                write_atomic(locked / "report.json", "{}")
        finally:
            locked.chmod(0o755)
        assert (status, stderr) == (
            2,
            f"embeval refresh: error: --out {locked / 'sheet.csv'}: cannot write in {locked}: Permission "
            "denied\n",
        )
        assert str(raised.value) == f"[Errno 13] cannot write in {locked}: Permission denied"
    else:
        if shutil.which("unshare") is None:
            pytest.skip("running as root, and unshare (util-linux) is not installed")
        script = (
            "import sys\nfrom pytest_embeval.files.atomic import write_atomic\n"
            "try:\n    write_atomic(__import__('pathlib').Path(sys.argv[1]), '{}')\n"
            "except OSError as error:\n    print(error)\n"
        )
        command = 'mount --bind -o ro "$1" "$1" && exec "$0" -c "$2" "$1/report.json"'
        done = subprocess.run(
            ["unshare", "-rm", "sh", "-c", command, sys.executable, str(locked), script],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0 and "unshare" in done.stderr:
            pytest.skip(f"user and mount namespaces are not allowed here: {done.stderr.strip()}")
        assert done.stdout == f"[Errno 30] cannot write in {locked}: Read-only file system\n", done.stderr
    assert snapshot(project) == before


def test_a_symlinked_input_merged_into_keeps_its_link(project: Path, embeval: Embeval) -> None:
    """The write follows a symlink: judgments kept in a shared folder and linked into the golden set are
    appended to there, and the link stays (found by this round's hostile cases: the link was replaced by a
    file of its own, and the shared judgments never saw the merge)."""
    shared = project / "shared"
    shared.mkdir()
    (project / "support" / "qrels.tsv").rename(shared / "qrels.tsv")
    (project / "support" / "qrels.tsv").symlink_to(shared / "qrels.tsv")
    sheet = project / "graded.csv"
    sheet.write_text(
        "query_id,doc_id,pair_id,query,document,grade,judge,notes\n" + _pair_row("q00", "d01"),
        encoding="utf-8",
    )
    status, stdout, stderr = embeval("merge", "support.yaml", sheet, "--judged-on", "2024-01-01")
    assert (status, stderr) == (0, ""), stdout
    assert (project / "support" / "qrels.tsv").is_symlink()
    assert (shared / "qrels.tsv").read_text(encoding="utf-8").endswith("q00\td01\t2\n")


def _pair_row(query: str, doc: str) -> str:
    return f"{query},{doc},{pair_id('support', query, doc)},x,y,2,ana,\n"


def test_a_symlink_left_in_the_runs_folder_never_leads_a_run_file_onto_an_input(
    pytester: pytest.Pytester, golden: Callable[..., Path]
) -> None:
    """A write follows a symlink (so judgments linked from a shared folder are merged there): every run file
    is checked against the inputs as the folder was, so a link planted in it is refused, not followed."""
    golden()
    runs = pytester.path / "runs"
    runs.mkdir()
    (runs / "support.incumbent.run").symlink_to(pytester.path / "support" / "qrels.tsv")
    before = snapshot(pytester.path / "support")
    result = run(pytester, "good", f"--embeval-runs={runs}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"embeval: ERROR: TREC run files not written: --embeval-runs {runs}/support.incumbent.run: is "
            "the qrels of support.yaml, which this run reads; name another path"
        ]
    )
    assert snapshot(pytester.path / "support") == before
