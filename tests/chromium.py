"""Headless Chromium (Debian's ``chromium`` package) taking a screenshot of a local HTML file, for the HTML
report's tests and ``benchmarks/bench_reports.py``. Nothing is fetched: every background service is off."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(page: Path, png: Path, width: int, height: int) -> None:
    """What Chromium shows of ``page`` in a ``width`` x ``height`` window, written to ``png``."""
    if CHROMIUM is None:
        raise RuntimeError("no chromium on PATH (apt-get install chromium)")
    profile = tempfile.mkdtemp(dir=png.parent)
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=300,
        env={"HOME": profile, "PATH": "/usr/bin:/bin"},
    )
    shutil.rmtree(profile, ignore_errors=True)
