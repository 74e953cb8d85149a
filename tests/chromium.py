"""Headless Chromium (Debian's ``chromium`` package) taking a screenshot of a local HTML file, for the HTML
report's tests and ``benchmarks/bench_reports.py``; and driven by Selenium through ``chromedriver``
(``chromium-driver``) for the judging page's tests and the docs' tour of it. Nothing is fetched: every
background service is off."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
#: Headless, and nothing that reaches the network on its own.
QUIET = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def screenshot(page: Path, png: Path, width: int, height: int) -> None:
    """What Chromium shows of ``page`` in a ``width`` x ``height`` window, written to ``png``."""
    if CHROMIUM is None:
        raise RuntimeError("no chromium on PATH (apt-get install chromium)")
    profile = tempfile.mkdtemp(dir=png.parent)
    subprocess.run(
        [
            CHROMIUM,
            *QUIET,
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


def driven(profile: Path, width: int, height: int) -> Any:
    """A Selenium session of headless Chromium in a ``width`` x ``height`` window, its profile in
    ``profile``; the caller quits it. Raises RuntimeError without chromium or chromedriver."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        raise RuntimeError("no chromium or chromedriver on PATH (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (*QUIET, "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={profile}")
    # an explicit driver: Selenium Manager would otherwise look for one on the network
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
