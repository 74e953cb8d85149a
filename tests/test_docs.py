"""The documentation as a specification: every page is in the site's navigation, every option, ini key,
golden-file key and ``embeval`` command a page names is a real one and every real one is documented, the
README is a landing page that begins with the two commands `.ci/run` runs, every example output comes from
a script in ``docs/examples``, and the site builds with ``mkdocs build --strict``."""

from __future__ import annotations

import argparse
import fcntl
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_embeval.cli.embeval import _parser
from pytest_embeval.golden.loader import KNOWN_KEYS
from pytest_embeval.plugin.options import add_options
from pytest_embeval.plugin.state import CACHE_PROPERTIES
from pytest_embeval.reports.decision_report import JUNIT_PROPERTIES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
#: The page that is the golden file's reference.
SCHEMA_PAGE = DOCS / "your-corpus.md"
#: Keys by which a YAML block on a page is a golden file (the plugin's own test, `plugin.GOLDEN_KEY`).
GOLDEN_MARKERS = {"corpus", "queries", "qrels", "beir", "metric"}


class _Recorder:
    """Stands in for pytest's parser and its option group: records what `add_options` declares."""

    def __init__(self) -> None:
        self.options: set[str] = set()
        self.ini: set[str] = set()

    def getgroup(self, *args: Any, **kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.update(names)

    def addini(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.ini.add(name)


def declared() -> _Recorder:
    recorder = _Recorder()
    add_options(recorder)  # type: ignore[arg-type]
    return recorder


def commands() -> set[str]:
    (subparsers,) = (a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(subparsers.choices)


def text_of(paths: list[Path]) -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in paths)


def nav_pages() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return [next(iter(entry.values())) for entry in config["nav"]]


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page() -> None:
    assert sorted(nav_pages()) == sorted(page.name for page in PAGES)


def test_every_option_and_ini_key_named_is_real_and_every_real_one_documented() -> None:
    real = declared()
    written = text_of([*PAGES, README])
    named_options = set(re.findall(r"--embeval(?:-[a-z]+)*", written))
    assert named_options - real.options == set(), "pages name options that do not exist"
    assert real.options - set(re.findall(r"--embeval(?:-[a-z]+)*", text_of(PAGES))) == set(), "undocumented"
    # ini keys, and the JUnit properties an item reports (the same prefix); not the `.embeval_cache/` folder
    ini_word = r"(?<![\w./-])embeval_[a-z_]+\b"
    properties = set(CACHE_PROPERTIES.values()) | set(JUNIT_PROPERTIES)
    assert set(re.findall(ini_word, written)) - real.ini - properties == set(), "unknown ini keys"
    assert real.ini - set(re.findall(ini_word, text_of(PAGES))) == set(), "undocumented ini keys"


def test_every_embeval_command_named_is_real_and_every_command_documented() -> None:
    real = commands()
    # a command as typed: at the start of a line (after `$ ` in a transcript) or in backticks
    typed = re.compile(r"(?:^(?:\$ )?|`)embeval ([a-z][a-z-]*)", re.MULTILINE)
    assert set(typed.findall(text_of([*PAGES, README]))) - real == set(), "commands that do not exist"
    assert real - set(typed.findall(text_of(PAGES))) == set(), "undocumented commands"


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"^```ya?ml\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def test_every_golden_key_is_in_the_reference_and_every_golden_file_shown_uses_real_keys() -> None:
    reference = SCHEMA_PAGE.read_text(encoding="utf-8")
    assert {key for key in KNOWN_KEYS if f"`{key}`" not in reference} == set(), (
        "keys missing from the reference"
    )
    for page in [*PAGES, README]:
        for block in _yaml_blocks(page.read_text(encoding="utf-8")):
            try:
                loaded = yaml.safe_load(block)
            except yaml.YAMLError:
                continue  # an excerpt with placeholders
            if isinstance(loaded, dict) and GOLDEN_MARKERS & set(loaded):
                assert set(loaded) - set(KNOWN_KEYS) == set(), f"{page.name}: {block[:200]}"


def _code_blocks(text: str) -> list[str]:
    """The shell blocks of a page, in order (every fenced block is read, so that the closing fence of a
    ``text`` block is not taken for an opening one)."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    return [body for language, body in blocks if language in ("", "bash", "sh", "console")]


def test_the_readme_is_a_landing_page_beginning_with_the_two_commands_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    first, second = (block.strip() for block in _code_blocks(text)[:2])
    assert "pytest --embeval golden/" in first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert second.splitlines()[-1] in ci.splitlines(), "`.ci/run` runs the README's second command"
    for page in re.findall(r"\]\((docs/[\w-]+\.md)(?:#[\w-]+)?\)", text):
        assert (ROOT / page).is_file(), page


def test_every_example_output_has_its_script_and_is_shown_somewhere() -> None:
    scripts = {path.stem for path in (DOCS / "examples").glob("*.sh")}
    outputs = {path.stem for path in (DOCS / "generated").glob("*.txt")}
    assert scripts == outputs
    shown = set(re.findall(r"generated/([\w-]+)\.txt", text_of([*PAGES, README])))
    assert outputs - shown == set(), "outputs no page shows"


@pytest.mark.skipif(
    shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None,
    reason="no mkdocs (the [docs] extra)",
)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "index.html").is_file()


#: The documentation's examples, each checked by a test of its own, so that the suite's workers share them.
EXAMPLES = sorted(path.stem for path in (DOCS / "examples").glob("*.sh"))
#: An example that reads the repository's embedding cache (``demo_project --cached``) needs it filled first.
_READS_THE_DEMO_CACHE = {
    name
    for name in EXAMPLES
    if "demo_project --cached" in (DOCS / "examples" / f"{name}.sh").read_text(encoding="utf-8")
}


@pytest.fixture(scope="session")
def demo_cache_filled(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The repository's embedding cache filled with what the demo embeds, once for the whole run: by the first
    worker to ask for it (the others wait on the lock, then find it done)."""
    run_folder = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run_folder = run_folder.parent  # the folder that this run's workers share
    with (run_folder / "demo-cache.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        filled = run_folder / "demo-cache.filled"
        if not filled.exists():
            _generate_module().warm_demo_cache()
            filled.touch()


@pytest.mark.slow
@pytest.mark.skipif(
    not (os.environ.get("CI") or os.environ.get("EMBEVAL_DOCS_CHECK")),
    reason="reruns a documentation example (all of them take about 30 minutes of one core): in CI, or with "
    "EMBEVAL_DOCS_CHECK=1",
)
@pytest.mark.parametrize("name", EXAMPLES)
def test_the_example_output_is_what_the_code_prints_now(name: str, request: pytest.FixtureRequest) -> None:
    """The pages cannot drift: the example runs again and its output must equal the one the pages show
    (timings and progress lines aside; an example whose output is not a function of the code alone says so
    and is left out; one needing ../shared or Infinity is skipped where it is missing)."""
    if name in _READS_THE_DEMO_CACHE:
        request.getfixturevalue("demo_cache_filled")
    done = subprocess.run(
        [sys.executable, str(DOCS / "generate.py"), "--check", "--cache-filled", name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    left_out = re.search(rf"^{re.escape(name)}: (skipped|not checked) \((.*)\)$", done.stdout, re.MULTILINE)
    if left_out:
        pytest.skip(f"{left_out[1]}: {left_out[2]}")


def test_the_readme_shows_the_generated_outputs() -> None:
    """README.md cannot include files: its generated blocks are copies of the examples' outputs, and must be
    the committed ones (the examples' tests check those against the code)."""
    generate = _generate_module()
    readme = README.read_text(encoding="utf-8")
    assert generate.same_output(readme, generate.readme_with_outputs(readme)), "python docs/generate.py"


def _generate_module() -> Any:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        # MiniLM's float32 score of one pair as two machines computed it (the committed docs' and a CI run's)
        ("q1 Q0 d3 1 0.6882546544075012 run", "q1 Q0 d3 1 0.688254714012146 run", True),
        # a bootstrap interval's bound after those scores, in its last float64 digits
        ('"ci": [-0.13002690872948278,', '"ci": [-0.13002690872948275,', True),
        # a change of the code: the seventh digit of a full-precision number
        ("q1 Q0 d3 1 0.6882546544075012 run", "q1 Q0 d3 1 0.6882646544075012 run", False),
        # a number printed short is exact: a metric's 0.5440 is not 0.5441
        ("hit@1 0.5440", "hit@1 0.5441", False),
        ("424 of 424 document texts", "424 of 423 document texts", False),
        ("the same words", "other words", False),
        # timings and the padding their widths move are not compared
        ("6 errors in 0.74s ====", "6 errors in 3.11s ===", True),
        # pytest's environment lines follow what a fresh install resolved, not the code
        (
            "plugins: html-4.2.0, xdist-3.8.0, hypothesis-6.170.17, anyio-4.16.0\ncollected 3 items",
            "plugins: html-4.2.0, xdist-3.8.0, anyio-4.16.0, hypothesis-6.170.27\ncollected 3 items",
            True,
        ),
        ("platform linux -- Python 3.11.7, pytest-9.2", "platform linux -- Python 3.12.1, pytest-9.3", True),
        ("plugins: xdist-3.8.0\ncollected 3 items", "plugins: xdist-3.8.0\ncollected 4 items", False),
    ],
)
def test_the_docs_check_allows_a_real_models_rounding_on_another_machine_and_nothing_else(
    old: str, new: str, same: bool
) -> None:
    assert _generate_module().same_output(old, new) is same


def test_the_docs_check_leaves_out_digests_only_where_the_example_says_so() -> None:
    generate = _generate_module()
    old = "model static (sha256:cc9c7af9c151…) into cache/: 168 texts"
    new = "model static (sha256:4a0bb2f5b41a…) into cache/: 168 texts"
    assert not generate.same_output(old, new)
    assert generate.same_output(old, new, digests=False)
    assert not generate.same_output(old, new.replace("168", "169"), digests=False)
