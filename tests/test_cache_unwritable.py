"""A cache folder that cannot be created or written lets the run complete, with one line saying so.

Under a file (no privileges needed), and read-only or full: a read-only bind mount and a tiny tmpfs, each in
a user and mount namespace of its own (``unshare -rm``), so the test needs no root and leaves no mount
behind. Where namespaces cannot be made (some containers forbid them), those two skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Golden = Callable[..., Path]
GOOD_VS_GOOD = ("--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:good")
#: The conftest golden set's texts: 60 documents and 48 queries for each of two arms.
ALL_TEXTS = 2 * (60 + 48)


def stored_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "could not be stored" in line]


def namespaces_work() -> str | None:
    """Why a user and mount namespace cannot be made here, or None if it can."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"user and mount namespaces are not allowed here: {probe.stderr.strip()}"
    return None


def in_namespace(root: Path, mount: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest --embeval`` in ``root``, in a namespace where the shell command ``mount`` ran first."""
    command = f'{mount} && exec "$0" -m pytest --embeval -p no:cacheprovider "$@"'
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", command, sys.executable, *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--embeval", "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("where", ["a-file/cache", "a-file"], ids=["under a file", "is a file"])
def test_a_cache_folder_where_a_file_is_lets_the_run_complete(
    pytester: pytest.Pytester, golden: Golden, where: str
) -> None:
    golden()
    (pytester.path / "a-file").write_text("not a folder\n", encoding="utf-8")
    result = run(
        pytester, *GOOD_VS_GOOD, f"--embeval-cache-dir={where}", f"--embeval-json={pytester.path / 'r.json'}"
    )
    assert result.ret == pytest.ExitCode.OK and result.parseoutcomes() == {"tie": 3}
    assert json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["golden_sets"]
    (line,) = stored_lines(result.stdout.str())
    assert line.startswith(f"embeval: new embeddings could not be stored in {where}/: ")
    assert "Not a directory" in line or "File exists" in line
    result.stdout.fnmatch_lines([f"embeval: embedding cache {where}/: 0 texts read, {ALL_TEXTS} embedded"])
    assert (pytester.path / "a-file").read_text(encoding="utf-8") == "not a folder\n"


def test_a_read_only_cache_serves_what_it_holds_and_says_it_took_nothing(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    reason = namespaces_work()
    if reason is not None:
        pytest.skip(reason)
    path = golden()
    assert run(pytester, *GOOD_VS_GOOD).ret == pytest.ExitCode.OK  # fills .embeval_cache
    read_only = "mount --bind .embeval_cache .embeval_cache && mount -o remount,bind,ro .embeval_cache"
    served = in_namespace(pytester.path, read_only, *GOOD_VS_GOOD)
    assert served.returncode == 0, served.stdout + served.stderr
    assert stored_lines(served.stdout) == []
    assert f"embeval: embedding cache .embeval_cache/: {ALL_TEXTS} texts read, 0 embedded" in served.stdout
    # A changed document cannot be stored: said once, and the run completes.
    corpus = path.parent / "support" / "corpus.jsonl"
    corpus.write_text(
        corpus.read_text(encoding="utf-8").replace('"doc 5"', '"revised doc 5"'), encoding="utf-8"
    )
    changed = in_namespace(pytester.path, read_only, *GOOD_VS_GOOD)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    (line,) = stored_lines(changed.stdout)
    assert line.startswith(
        "embeval: new embeddings could not be stored in .embeval_cache/: OSError: [Errno 30]"
    )
    assert f"{ALL_TEXTS - 2} texts read, 2 embedded" in changed.stdout


def test_a_full_disk_lets_the_run_complete(pytester: pytest.Pytester, golden: Golden) -> None:
    reason = namespaces_work()
    if reason is not None:
        pytest.skip(reason)
    golden()
    (pytester.path / "full").mkdir()
    # 16 KiB: room for the model notes, not for 60 vectors of 128 float32 (30 KiB).
    result = in_namespace(
        pytester.path, "mount -t tmpfs -o size=16k tmpfs full", *GOOD_VS_GOOD, "--embeval-cache-dir=full"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = stored_lines(result.stdout)
    assert line.startswith(
        "embeval: new embeddings could not be stored in full/: OSError: [Errno 28] No space left"
    )
    assert "Traceback" not in result.stdout + result.stderr
