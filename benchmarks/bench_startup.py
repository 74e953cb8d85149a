"""What `--embeval` adds to a pytest run when nothing needs embedding: the shipped golden set, fully cached,
against the same pytest command without `--embeval`, pair by pair.

    python benchmarks/bench_startup.py [--pairs 10] [--repo DIR] [--importtime]

The embedding cache is filled first by one ``pytest --embeval golden/`` (the demo's two models, into a
fresh cache folder outside the repository, and Python's bytecode caches; the distilled model is reused
from ``$EMBEVAL_DEMO_CACHE`` or the repository's ``.embeval_cache/models``). Then ``--pairs`` times, each
time in a rotated order (so that a drift in the machine's load favours none of them):

* bare: ``python -m pytest golden/ -p no:cacheprovider -q`` (collects nothing: exit 5);
* embeval: the same with ``--embeval --embeval-cache-dir=CACHE``, the README's first command on a cache
  of its own (every text read from the cache: no model is loaded);
* embeval + JSON: the same with ``--embeval-json=FILE`` too, the JSON report of every query's ranking.

Each is timed from process start to exit (wall, and the child's CPU time). Target: the median over pairs
of (embeval - bare) <= 0.6 s, in wall time; the JSON report's figure is printed beside it. ``--importtime``
adds one embeval run under ``python -X importtime`` and prints the slowest imports. ``--repo`` measures
another checkout (a "before" figure).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TARGET = 0.6
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(.+)")


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int, str]:
    """Wall time from start to exit, the child's CPU time (wait4), its exit code and output."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, child.returncode, out.read().decode("utf-8", "replace")


def slowest_imports(stderr: str, limit: int) -> list[str]:
    rows = []
    for line in stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            rows.append((int(match[2]), int(match[1]), match[4].strip()))
    rows.sort(reverse=True)
    return [
        f"{total / 1e6:6.3f} s cumulative {own / 1e6:6.3f} s own  {name}" for total, own, name in rows[:limit]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose package is measured")
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    repo = args.repo.resolve()
    work = Path(tempfile.mkdtemp(prefix="embeval-startup-"))
    env = {**os.environ, "PYTHONPATH": str(repo), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    # Python caches compiled modules (pytest its assertion-rewritten ones too) unless told not to; this
    # machine's environment tells it not to, which makes every run compile every module it imports (about
    # a second here): measure what a user's runs cost, with the caches that the first run below writes.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if "EMBEVAL_DEMO_CACHE" not in env:
        built = REPO / ".embeval_cache" / "models" / "static-minilm-pca256"
        if built.is_dir():  # a copy, so that the measured checkout never writes into this one
            shutil.copytree(built, work / "static-minilm-pca256")
            env["EMBEVAL_DEMO_CACHE"] = str(work / "static-minilm-pca256")
    cache = work / "cache"
    bare = [sys.executable, "-m", "pytest", "golden/", "-p", "no:cacheprovider", "-q"]
    commands = {
        "bare": bare,
        "embeval": [*bare, "--embeval", f"--embeval-cache-dir={cache}"],
        "embeval + JSON": [
            *bare,
            "--embeval",
            f"--embeval-cache-dir={cache}",
            f"--embeval-json={work / 'r.json'}",
        ],
    }
    embeval = commands["embeval + JSON"]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    print(f"package: {repo}")
    wall, cpu, code, output = run(embeval, env, repo)
    if code not in (0, 1):
        sys.exit(f"filling the cache exited {code}:\n{output[-3000:]}")
    print(f"cache filled by one run: {wall:.1f} s wall, {cpu:.1f} s cpu, exit {code}")
    names = list(commands)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    differences: dict[str, list[float]] = {name: [] for name in names[1:]}
    for number in range(1, args.pairs + 1):
        turn = (number - 1) % len(names)
        order = names[turn:] + names[:turn]
        pair = {}
        for name in order:
            wall, cpu, code, output = run(commands[name], env, repo)
            expected = (5,) if name == "bare" else (0, 1)
            if code not in expected:
                sys.exit(f"{name} exited {code}:\n{output[-3000:]}")
            if name != "bare" and " 0 embedded" not in output:
                sys.exit(f"the {name} run embedded something:\n{output[-3000:]}")
            pair[name] = wall
            walls[name].append(wall)
            cpus[name].append(cpu)
        for name in differences:
            differences[name].append(pair[name] - pair["bare"])
        shown = ", ".join(
            f"{name} {pair[name]:5.2f} s ({pair[name] - pair['bare']:+.2f})" for name in names[1:]
        )
        print(f"pair {number:2d}: bare {pair['bare']:5.2f} s, {shown}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    middle = {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in names}
    bare_wall, bare_cpu = middle["bare"]
    print(f"median over {args.pairs} pairs: bare {bare_wall:.2f} s wall ({bare_cpu:.2f} s cpu)")
    for name, values in differences.items():
        median = statistics.median(values)
        verdict = "met" if median <= TARGET else "missed"
        print(
            f"  {name:15s} {middle[name][0]:.2f} s wall ({middle[name][1]:.2f} s cpu): difference "
            f"{median:+.2f} s wall (cpu {middle[name][1] - bare_cpu:+.2f} s); "
            f"target <= {TARGET} s: {verdict}"
        )
    if args.importtime:
        profiled = subprocess.run(
            [sys.executable, "-X", "importtime", *embeval[1:]],
            env=env,
            cwd=repo,
            capture_output=True,
            text=True,
        )
        print("\nslowest imports of one embeval run (python -X importtime):")
        for line in slowest_imports(profiled.stderr, 25):
            print(line)


if __name__ == "__main__":
    main()
