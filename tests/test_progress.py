"""Progress lines: the steps of a golden set's run (`StepLine`, fed through `core.step_progress`), one line
rewritten in place on a real terminal (checked under a pseudo-terminal), a line per step in a CI log,
nothing with ``-q -q``, ``--embeval-no-progress`` or on xdist workers; and the `embeval` commands' line."""

from __future__ import annotations

import codecs
import fcntl
import io
import itertools
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_embeval.core import step_progress
from pytest_embeval.reports import progress_lines

# --- core.step_progress: who hears of a step ---------------------------------------------------------------


class Recorder:
    """A `core.step_progress.Progress` that records what it is told."""

    def __init__(self) -> None:
        self.told: list[tuple[str, object]] = []

    def begin(self, what: str, total: int | None = None, label: str = "") -> None:
        self.told.append(("begin", (what, total, label)))

    def advance(self, done: int) -> None:
        self.told.append(("advance", done))

    def end(self) -> None:
        self.told.append(("end", None))


def test_steps_reach_whoever_reports_and_only_inside() -> None:
    recorder = Recorder()
    with step_progress.step("unheard"):
        pass
    with (
        step_progress.reporting(recorder),
        step_progress.labelled("candidate"),
        step_progress.step("loading model m", total=3) as advance,
    ):
        advance(2)
    with step_progress.step("unheard again"):
        pass
    assert recorder.told == [("begin", ("loading model m", 3, "candidate")), ("advance", 2), ("end", None)]


def test_a_step_ends_when_its_work_raises() -> None:
    recorder = Recorder()
    with pytest.raises(RuntimeError), step_progress.reporting(recorder), step_progress.step("failing"):
        raise RuntimeError("boom")
    assert recorder.told[-1] == ("end", None)


def test_a_counted_step_begins_with_its_first_count_and_one_never_counted_is_never_begun() -> None:
    recorder = Recorder()
    with step_progress.reporting(recorder):
        with step_progress.counting("encoding document texts"):
            pass  # every text was in the cache
        with step_progress.counting("encoding query texts") as advance:
            advance(64, 100)
            advance(100, 100)
    assert recorder.told == [
        ("begin", ("encoding query texts", 100, "")),
        ("advance", 64),
        ("advance", 100),
        ("end", None),
    ]


# --- StepLine: when a line is due, and what it says --------------------------------------------------------


class FakeTerminal:
    def __init__(self, tty: bool, width: int | None = None) -> None:
        self.tty = tty
        self.width = width
        self.lines: list[str] = []
        self.closed = 0

    def line(self, text: str) -> None:
        self.lines.append(text)

    def close(self) -> None:
        self.closed += 1


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def stepline(tty: bool) -> tuple[progress_lines.StepLine, FakeTerminal, Clock]:
    terminal, clock = FakeTerminal(tty), Clock()
    return progress_lines.StepLine("support", terminal, clock=clock, tick=None), terminal, clock


def test_a_quick_step_prints_nothing() -> None:
    line, terminal, clock = stepline(tty=False)
    with line:
        line.begin("incumbent loading model m")
        clock.now = 0.9
        line.tick()
        line.end()
    assert terminal.lines == [] and terminal.closed == 0


def test_a_ci_log_gets_a_line_once_a_step_lasts_then_every_five_seconds_and_at_its_end() -> None:
    line, terminal, clock = stepline(tty=False)
    with line:
        line.begin("incumbent loading model m")
        for clock.now in (0.5, 1.0, 2.0, 5.5, 6.0, 9.0, 11.0):
            line.tick()
        line.end()
    assert terminal.lines == [
        "embeval support: incumbent loading model m (1s)",
        "embeval support: incumbent loading model m (6s)",
        "embeval support: incumbent loading model m (11s)",
        "embeval support: incumbent loading model m, done in 11.0s",
    ]
    assert terminal.closed == 1


def test_a_counted_step_tells_its_rate_and_time_left() -> None:
    line, terminal, clock = stepline(tty=False)
    with line:
        line.begin("incumbent encoding document texts", 400)
        line.advance(100)  # the first count: the rate counts from here
        clock.now = 1.0
        line.advance(200)
        clock.now = 6.0
        line.advance(300)
        clock.now = 7.0
        line.advance(400)
        line.end()
    assert terminal.lines == [
        "embeval support: incumbent encoding document texts 200/400 (100/s, ETA 2s)",
        "embeval support: incumbent encoding document texts 300/400 (33/s, ETA 3s)",
        "embeval support: incumbent encoding document texts 400/400 (43/s), done in 7.0s",
    ]


def test_nested_steps_show_the_step_they_are_in() -> None:
    line, terminal, clock = stepline(tty=False)
    with line:
        line.begin("building the demo model s once", label="candidate")
        line.begin("1/2 distillation", label="candidate")
        clock.now = 1.0
        line.tick()
        line.begin("encoding the vocabulary", 1_000, label="candidate")
        line.advance(0)
        clock.now = 1.5
        line.advance(500)  # a short inner count: not shown on its own
        line.end()
        line.end()
        line.begin("2/2 saving")
        line.end()
        line.end()
    assert terminal.lines == [
        "embeval support: candidate building the demo model s once: 1/2 distillation (1s)",
        "embeval support: candidate building the demo model s once: 1/2 distillation, done in 1.5s",
        "embeval support: candidate building the demo model s once, done in 1.5s",
    ]


def test_a_terminal_line_is_rewritten_each_second() -> None:
    line, terminal, clock = stepline(tty=True)
    with line:
        line.begin("incumbent loading model m")
        for clock.now in (1.0, 1.5, 2.0, 3.0):
            line.tick()
        line.end()
    assert terminal.lines == [
        "embeval support: incumbent loading model m (1s)",
        "embeval support: incumbent loading model m (2s)",
        "embeval support: incumbent loading model m (3s)",
        "embeval support: incumbent loading model m, done in 3.0s",
    ]


def test_the_watching_thread_shows_a_step_that_counts_nothing() -> None:
    terminal = FakeTerminal(tty=False)
    clock = Clock()
    line = progress_lines.StepLine("support", terminal, clock=clock, tick=0.01)
    with line:
        line.begin("incumbent loading model m")
        clock.now = 1.0
        for _ in range(500):  # the thread looks every 10 ms
            if terminal.lines:
                break
            time.sleep(0.01)
        line.end()
    assert terminal.lines[0] == "embeval support: incumbent loading model m (1s)"


# --- a line fitted to the terminal: what moves is never cut -------------------------------------------------

#: The steps of the demo's first run, as the issue found them cut at 120 columns.
DEMO_STEPS = [
    "candidate building the demo model static-minilm-pca256 once",
    "1/2 model2vec distillation of all-MiniLM-L6-v2",
    "encoding the vocabulary",
]
COUNTED = " 3,328/29,525 (3,283/s, ETA 8s)"


def test_elided_keeps_a_texts_start_and_end() -> None:
    assert progress_lines.elided("support-search-hnsw", 19) == "support-search-hnsw"
    assert progress_lines.elided("support-search-hnsw", 12) == "suppor…-hnsw"  # 6 + the ellipsis + 5
    assert progress_lines.elided("abcdef", 2) == "a…"
    assert [progress_lines.elided("abcdef", width) for width in (1, 0)] == ["…", ""]


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        # 79 of 80 columns: the outer steps give way to one ellipsis, the name keeps 12 characters
        (79, "embeval suppor…-hnsw: …: encoding the vocabulary" + COUNTED),
        # 119 of 120: the two outer steps share the 32 characters left (16 each), the name is whole
        (
            119,
            "embeval support-search-hnsw: candidat…56 once: 1/2 mode…M-L6-v2: encoding the vocabulary"
            + COUNTED,
        ),
        # 39 of 40: only the count, its rate and time left, and the ends of the fixed part
        (39, "embe…ary" + COUNTED),
    ],
)
def test_the_demos_first_run_fits_the_terminal_with_its_count_whole(width: int, expected: str) -> None:
    fitted = progress_lines.fitted_line("embeval ", "support-search-hnsw", DEMO_STEPS, COUNTED, width)
    assert fitted == expected and len(fitted) == width


@pytest.mark.parametrize("columns", [40, 80, 120])
@pytest.mark.parametrize("name", ["support", "a-golden-set-with-a-name-much-longer-than-any-terminal-" * 3])
def test_every_line_of_a_step_line_fits_and_ends_with_what_moves(columns: int, name: str) -> None:
    terminal, clock = FakeTerminal(tty=True, width=columns - 1), Clock()
    line = progress_lines.StepLine(name, terminal, clock=clock, tick=None)
    line.begin("building the demo model static-minilm-pca256 from all-MiniLM-L6-v2 once", label="candidate")
    line.begin("1/2 model2vec distillation of all-MiniLM-L6-v2 with a PCA to 256 dimensions")
    clock.now = 1.5
    line.tick()
    line.begin("encoding the vocabulary of the tokenizer", total=29_525)
    line.advance(0)
    for done in (3_328, 20_480):
        clock.now += 5.0
        line.advance(done)
    clock.now += 3.0
    line.advance(29_525)
    line.end()
    assert all(len(text) <= columns - 1 for text in terminal.lines), terminal.lines
    moving = [
        r"\(2s\)",  # the distillation's time so far, before the vocabulary counts
        r"3,328/29,525 \(666/s, ETA 39s\)",
        r"20,480/29,525 \(2,048/s, ETA 4s\)",
        r"29,525/29,525 \(2,271/s\)",
        r"29,525/29,525 \(2,271/s\), done in 13\.0s",  # at 40 columns, all there is room for
    ]
    assert len(terminal.lines) == len(moving), terminal.lines
    for text, ending in zip(terminal.lines, moving, strict=True):
        assert re.search(ending + "$", text), terminal.lines
    if columns == 120 and name == "support":  # room for every step, the outer ones shortened in the middle
        assert terminal.lines[1].startswith("embeval support: candida…")
        assert ": encoding the vocabulary of the tokenizer 3,328/29,525" in terminal.lines[1]


def test_a_ci_log_line_is_never_cut() -> None:
    terminal, clock = FakeTerminal(tty=False), Clock()
    line = progress_lines.StepLine("support-search-hnsw", terminal, clock=clock, tick=None)
    for what in DEMO_STEPS[:2]:
        line.begin(what)
    line.begin(DEMO_STEPS[2], total=29_525)
    line.advance(0)
    clock.now = 2.0
    line.advance(3_328)
    assert terminal.lines == [
        "embeval support-search-hnsw: " + ": ".join(DEMO_STEPS) + " 3,328/29,525 (1,664/s, ETA 16s)"
    ]


def test_a_stream_terminal_rewrites_one_line_and_blanks_what_a_shorter_one_leaves() -> None:
    stream = FakeStream(tty=True)
    terminal = progress_lines.StreamTerminal(stream)
    terminal.line("embeval x: loading 1/20")
    terminal.line("embeval x: y")
    terminal.close()
    assert stream.getvalue() == "\rembeval x: loading 1/20\rembeval x: y           \n"
    log = FakeStream(tty=False)
    progress_lines.StreamTerminal(log).line("embeval x: y")
    assert log.getvalue() == "embeval x: y\n" and progress_lines.StreamTerminal(log).width is None


# --- on pytest's terminal: a pseudo-terminal, a CI log, quiet runs, xdist -------------------------------

SLOW_MODEL = textwrap.dedent(
    """
    import time

    import pytest

    import fake_models
    from pytest_embeval.arms.embedding import Arm, LazyEncoder


    def _load():
        time.sleep(2.6)  # a model that takes seconds to load: its step is shown, then rewritten
        return fake_models.good


    @pytest.fixture(scope="session")
    def embeval_incumbent():
        encoder = LazyEncoder(_load, "slow-model")
        return Arm(spec="slow", encoder=encoder, fingerprint='{"name": "slow"}', prompts={})
    """
)


#: The model is loaded for the first batch of documents, inside their encoding step.
LOADING = "embeval support: incumbent encoding document texts 0/60: loading model slow-model"
#: The two steps' last states: loaded after the 2.6 s the slow model takes, then the documents encoded.
LOADED = LOADING + r", done in [23]\.\d+s"
ENCODED = r"embeval support: incumbent encoding document texts 60/60 \(\d+/s\), done in [23]\.\d+s"


@pytest.fixture
def slow_project(golden: Callable[..., Path], pytester: pytest.Pytester) -> Path:
    golden()
    pytester.makeconftest(SLOW_MODEL)
    return pytester.path


def _pytest_command(*args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "--embeval",
        "--embeval-candidate=fake_models:good",
        "--embeval-no-cache",
        "-p",
        "no:cacheprovider",
        *args,
    ]


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.pop("CI", None)
    return {**env, "COLUMNS": "120", "PYTHONPATH": os.pathsep.join(sys.path)}


def _pseudo_terminal_chunks(
    folder: Path, command: list[str], env: dict[str, str], columns: int | None = None
) -> list[tuple[float, str]]:
    """What ``command`` writes when its output is a pseudo-terminal (``columns`` wide, if given), in the
    chunks the terminal received, each with the time it came (``time.time()``)."""
    leader, follower = pty.openpty()
    if columns is not None:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    child = subprocess.Popen(
        command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    decoder = codecs.getincrementaldecoder("utf-8")()  # a character may be split between two chunks
    chunks: list[tuple[float, str]] = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal: Linux reports EIO
            break
        if not chunk:
            break
        chunks.append((time.time(), decoder.decode(chunk)))
    os.close(leader)
    assert child.wait(timeout=120) == 0, "".join(text for _, text in chunks)
    return chunks


def _under_a_pseudo_terminal(folder: Path, *args: str) -> str:
    """What pytest writes when its output is a (pseudo-)terminal, as that terminal receives it."""
    chunks = _pseudo_terminal_chunks(folder, _pytest_command("--color=no", *args), _environment())
    return "".join(text for _, text in chunks).replace("\r\n", "\n")


def test_on_a_terminal_one_line_is_rewritten_in_place(slow_project: Path) -> None:
    shown = _under_a_pseudo_terminal(slow_project)
    progress_lines = [line for line in shown.split("\n") if "embeval support: " in line]
    assert len(progress_lines) == 1, shown  # every state of the step on one line of the terminal
    states = [state.rstrip() for state in progress_lines[0].split("\r") if state.strip()]
    assert states[:2] == [f"{LOADING} (1s)", f"{LOADING} (2s)"]
    assert re.fullmatch(LOADED, states[2]) and re.fullmatch(ENCODED, states[3]) and len(states) == 4
    # pytest's line of results goes on under the file's name, after the progress line
    assert re.search(r"\nsupport\.yaml [.t]+ +\[100%\]\n", shown), shown


def test_in_a_ci_log_each_state_is_a_line_of_its_own(slow_project: Path) -> None:
    done = subprocess.run(
        _pytest_command(), cwd=slow_project, env=_environment(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout
    assert "\r" not in done.stdout
    lines = done.stdout.splitlines()
    start = lines.index(f"{LOADING} (1s)")
    assert lines[start - 1] == "support.yaml "
    assert re.fullmatch(LOADED, lines[start + 1]) and re.fullmatch(ENCODED, lines[start + 2])
    assert re.fullmatch(r"support\.yaml [.t]+ +\[100%\]", lines[start + 3])


@pytest.mark.parametrize("quiet", [["-q", "-q"], ["--embeval-no-progress"], ["-n", "2"]])
def test_nothing_is_printed_with_q_q_without_progress_or_by_xdist_workers(
    slow_project: Path, pytester: pytest.Pytester, quiet: list[str]
) -> None:
    # In process: its output is no terminal, so without these options each step would print a line of its own.
    result = pytester.runpytest(*_pytest_command(*quiet)[3:])
    assert result.ret == 0, result.stdout.str()
    assert "loading model" not in result.stdout.str() + result.stderr.str()


# --- resolving a model spec, before pytest's header: the demo's candidate distils for minutes ---------------

SLOW_SPEC = textwrap.dedent(
    """
    import time
    from pathlib import Path

    import fake_models
    from pytest_embeval.core.step_progress import step


    def candidate():
        # A spec that builds its model while it resolves, as the demo's does: a long-named step, counted.
        Path("started").write_text(repr(time.time()))
        with step("building the cheap candidate from the incumbent's very long model name once"):
            with step("encoding the vocabulary of its tokenizer", total=20) as advance:
                for done in range(1, 21):
                    time.sleep(0.1)
                    advance(done)
        return fake_models.good
    """
)
SPEC_LINE = "embeval --embeval-candidate: "
RESOLVING = (
    "--embeval-incumbent=fake_models:good",
    "--embeval-candidate=slow_spec:candidate",
    "--embeval-no-cache",
)


def _resolving_command(*args: str) -> list[str]:
    """A pytest run that names the slow spec on its command line."""
    return [sys.executable, "-m", "pytest", "--embeval", "-p", "no:cacheprovider", *RESOLVING, *args]


def test_resolving_a_slow_spec_shows_its_count_within_seconds_on_an_80_column_terminal(
    golden: Callable[..., Path], pytester: pytest.Pytester
) -> None:
    golden()
    pytester.makepyfile(slow_spec=SLOW_SPEC)
    # An 80-column terminal as the system sets it, not pytest's COLUMNS.
    env = {name: value for name, value in _environment().items() if name not in ("COLUMNS", "LINES")}
    chunks = _pseudo_terminal_chunks(pytester.path, _resolving_command("--color=no"), env, columns=80)
    started = float((pytester.path / "started").read_text())
    received = "".join(text for _, text in chunks)
    assert received.index(SPEC_LINE) < received.index("test session starts"), received
    # Each state of the line as the terminal shows it, and when it came.
    states = [
        (when, state.rstrip())
        for when, text in chunks
        for state in text.replace("\r\n", "\n").split("\r")
        if state.startswith(SPEC_LINE)
    ]
    first_shown = states[0][0] - started
    assert first_shown < 5.0, f"the first progress line came {first_shown:.1f} s after the step began"
    assert max(later - earlier for (earlier, _), (later, _) in itertools.pairwise(states)) < 5.0
    assert all(len(state) <= 79 for _, state in states), states
    counted = [state for _, state in states if re.search(r" \d+/20( \(|$)", state)]
    assert len(counted) >= 2 and any("ETA" in state for state in counted), states
    assert re.search(r"tokenizer 20/20 \(\d+/s\), done in \d\.\ds$", counted[-1]), counted


def test_resolving_a_slow_spec_in_a_ci_log_prints_whole_lines(
    golden: Callable[..., Path], pytester: pytest.Pytester
) -> None:
    golden()
    pytester.makepyfile(slow_spec=SLOW_SPEC)
    done = subprocess.run(
        _resolving_command(),
        cwd=pytester.path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout
    header = done.stdout.index("test session starts")
    lines = [line for line in done.stdout[:header].splitlines() if line.startswith(SPEC_LINE)]
    building = (
        f"{SPEC_LINE}resolving slow_spec:candidate: building the cheap candidate from the incumbent's "
        "very long model name once"
    )
    counting = re.escape(f"{building}: encoding the vocabulary of its tokenizer ")
    assert re.fullmatch(counting + r"\d+/20 \(\d+/s, ETA \ds\)", lines[0]), lines
    assert re.fullmatch(counting + r"20/20 \(\d+/s\), done in \d\.\ds", lines[-3]), lines
    assert re.fullmatch(re.escape(building) + r", done in \d\.\ds", lines[-2]), lines
    assert re.fullmatch(
        re.escape(f"{SPEC_LINE}resolving slow_spec:candidate") + r", done in \d\.\ds", lines[-1]
    )


# --- the embeval commands' progress ---------------------------------------------------------------------


class FakeStream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_a_commands_progress_goes_to_its_stream_paced_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 5.0, 12.0, 14.0])
    monkeypatch.setattr(progress_lines.time, "perf_counter", lambda: next(clock))
    stream = FakeStream(tty=False)
    line = progress_lines.StreamProgress("embeval judge: pairs graded", stream)
    for done in (0, 50, 120, 140):
        line(done, 140)
    assert stream.getvalue() == (
        "embeval judge: pairs graded 0/140\n"
        "embeval judge: pairs graded 120/140 (10/s)\n"
        "embeval judge: pairs graded 140/140 (10/s)\n"
    )


def test_a_commands_progress_on_a_terminal_is_one_line_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 1.0, 2.0])
    monkeypatch.setattr(progress_lines.time, "perf_counter", lambda: next(clock))
    stream = FakeStream(tty=True)
    line = progress_lines.StreamProgress("embeval judge: pairs graded", stream)
    for done in (0, 1_000, 2_000):
        line(done, 2_000)
    assert stream.getvalue() == (
        "\rembeval judge: pairs graded 0/2,000"
        "\rembeval judge: pairs graded 1,000/2,000 (1,000/s)"
        "\rembeval judge: pairs graded 2,000/2,000 (1,000/s)\n"
    )
