"""Run a command and print each line of its output (standard output and error, as a CI log receives them)
after the seconds since it started; then its exit status and the longest wait between two lines.

    python elapsed.py pytest --embeval golden/
"""

from __future__ import annotations

import subprocess
import sys
import time


def main(command: list[str]) -> int:
    start = time.monotonic()
    last, longest, before = start, 0.0, ""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert child.stdout is not None
    for raw in iter(child.stdout.readline, b""):
        now = time.monotonic()
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        if now - last > longest:
            longest, before = now - last, line
        last = now
        print(f"{now - start:6.1f}s  {line}", flush=True)
    status = child.wait()
    print(f"(exit {status})")
    print(f"longest wait between two lines: {longest:.1f} s, before: {before[:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
