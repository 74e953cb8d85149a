"""Golden files distributed to workers on other hosts (`--tx socket=...`), sharing one embedding cache.

Each "host" is execnet's own socket server (`execnet/script/socketserver.py`), started by the test as a
subprocess listening on 127.0.0.1 on a free port, in a folder of its own, and stopped by the test. The
project reaches the hosts by `--rsyncdir` (pytest-xdist copies it into each server's folder), so the
workers collect their own copy, as on a remote machine; the cache folder is one absolute path, the shared
volume. The report must be the serial run's, and the cache filled by one run must serve the other.
"""

from __future__ import annotations

import json
import re
import selectors
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import execnet
import pytest

from pytest_embeval.reports.json_report import without_timings

Golden = Callable[..., Path]

SOCKET_SERVER = Path(execnet.__file__).parent / "script" / "socketserver.py"
LISTENING = re.compile(r"Entering Accept loop \('127\.0\.0\.1', (\d+)\)")
#: Seconds a server may take to listen, and a distributed run to finish.
START_TIMEOUT = 30
RUN_TIMEOUT = 240
MODELS = ("--embeval-incumbent=fake_models:counted_good", "--embeval-candidate=fake_models:counted_bad")


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the counting fakes log what they encode, here and on the hosts (started after this is set)."""
    path = tmp_path / "encoded.log"
    monkeypatch.setenv("EMBEVAL_FAKE_LOG", str(path))
    return path


@pytest.fixture
def hosts(tmp_path: Path, log: Path) -> Iterator[list[str]]:
    """Two socket servers on 127.0.0.1, each in its own folder: the `--tx` specs that reach them."""
    servers: list[subprocess.Popen[str]] = []
    specs = []
    try:
        for name in ("host-a", "host-b"):
            home = tmp_path / name
            home.mkdir()
            server = subprocess.Popen(
                [sys.executable, "-u", str(SOCKET_SERVER), "127.0.0.1:0"],
                cwd=home,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            servers.append(server)
            assert server.stdout is not None
            # The server prints its address before it accepts; readline would block past a dead server, so
            # the wait is bounded by the server's own exit or START_TIMEOUT.
            port = _port(server, START_TIMEOUT)
            specs.append(f"socket=127.0.0.1:{port}")
        yield specs
    finally:
        for server in servers:
            server.kill()
            server.wait(timeout=START_TIMEOUT)
            if server.stdout is not None:
                server.stdout.close()


def _port(server: subprocess.Popen[str], timeout: float) -> int:
    assert server.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(server.stdout, selectors.EVENT_READ)
    seen = []
    while selector.select(timeout):
        line = server.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = LISTENING.search(line)
        if match:
            return int(match[1])
    raise AssertionError(f"the socket server did not listen within {timeout} s: {''.join(seen)!r}")


def test_golden_files_on_remote_workers_give_the_serial_report_from_one_shared_cache(
    pytester: pytest.Pytester,
    golden: Golden,
    hosts: list[str],
    log: Path,
    tmp_path: Path,
) -> None:
    golden()
    golden("second", strata=["shape"])
    pytester.makeini("[pytest]\n")  # the rootdir here and in each host's copy: node ids agree
    shared = tmp_path / "shared-cache"

    def run(name: str, *args: str) -> Any:
        report = tmp_path / f"{name}.json"
        result = pytester.runpytest_subprocess(
            "--embeval",
            "-p",
            "no:cacheprovider",
            *MODELS,
            f"--embeval-cache-dir={shared}",
            f"--embeval-json={report}",
            *args,
            # Absolute: xdist names it on each host relative to the rsynced folder, where the ini is.
            str(pytester.path),
            timeout=RUN_TIMEOUT,
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
        return result, without_timings(json.loads(report.read_text(encoding="utf-8")))

    distributed = [item for spec in hosts for item in ("--tx", spec)]
    # xdist warns that --rsyncdir is deprecated (it will go in xdist 4): see the README for the alternative.
    rsync = (f"--rsyncdir={pytester.path}", "-W", "ignore::DeprecationWarning")
    remote, remote_report = run("remote", *distributed, "--dist=loadfile", *rsync, "-v")
    # Both hosts worked, each on a whole golden file (every stratum of a file on one worker).
    workers: dict[str, set[str]] = {}
    for line in remote.stdout.lines:
        match = re.match(r"\[(gw\d)\] .*? (\S+\.yaml)::", line)
        if match:
            workers.setdefault(match[2], set()).add(match[1])
    assert sorted(workers) == ["second.yaml", "support.yaml"]
    assert all(len(ids) == 1 for ids in workers.values()) and len(set().union(*workers.values())) == 2
    # Both golden sets hold the same texts: whichever host stores a text first serves it to the other.
    counts = re.search(r"embedding cache .*: (\d+) texts read, (\d+) embedded", remote.stdout.str())
    assert counts is not None and int(counts[1]) + int(counts[2]) == 2 * 2 * (60 + 48)
    embedded = log.read_text(encoding="utf-8").splitlines()
    assert len(set(embedded)) == 2 * (60 + 48)
    # The hosts filled the shared folder: a serial run reads everything from it and reports the same.
    serial, serial_report = run("serial")
    serial.stdout.fnmatch_lines(["*embedding cache*: 432 texts read, 0 embedded"])
    assert serial_report == remote_report
    assert log.read_text(encoding="utf-8").splitlines() == embedded  # nothing embedded again
