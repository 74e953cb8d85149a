"""Regenerates every example output the documentation shows, so that no page drifts from the code.

Each example is a bash script ``docs/examples/NAME.sh``, run with ``bash -eo pipefail`` in a fresh temporary
folder (its working directory) with these variables set:

* ``REPO``   -- the repository's root (copy what the example needs from it: ``cp -r "$REPO/golden" .``);
* ``PYTHON`` -- the interpreter running this script (its folder is first on ``PATH``, so ``pytest`` and
  ``embeval`` are this environment's);
* ``SHARED`` -- the ``../shared`` folder beside the repository; an example that needs it starts with
  ``need_shared`` and is skipped (its last output kept) where it is missing.

Whatever the script writes to stdout and stderr is the example's output, ``docs/generated/NAME.txt``, after
the temporary folder's and the repository's absolute paths are replaced by ``.``. A page shows it with the
snippets extension: ``--8<-- "docs/generated/NAME.txt"`` inside a fenced block. A script shows the command it
runs with ``show COMMAND...``, which prints ``$ COMMAND`` and runs it (its exit status is printed when it is
not 0, and does not stop the example).

README.md cannot include files, so the script copies outputs into it: the lines between
``<!-- generated: NAME.txt -->`` (or ``NAME.txt:FIRST:LAST``, 1-based lines, both included) and
``<!-- end generated -->`` become that output in a ``text`` block.

    python docs/generate.py              # every example
    python docs/generate.py demo plan    # these only
    python docs/generate.py --check      # exit 1 if an output differs from the committed one (timings aside)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
EXAMPLES = DOCS / "examples"
GENERATED = DOCS / "generated"
SHARED = REPO.parent / "shared"

PRELUDE = r"""
show() {
    printf '$ %s\n' "$*"
    local status=0
    "$@" || status=$?
    if [ "$status" != 0 ]; then printf '(exit %s)\n' "$status"; fi
}
need_shared() {
    if [ ! -d "$SHARED/data" ]; then echo "needs $SHARED/data" >&2; exit 77; fi
}
"""

#: Numbers that change from run to run on the same code: durations and rates.
_TIMING = re.compile(r"\d[\d,]*(\.\d+)?(\s?(s|ms|µs|min|texts/s|/s)\b|s\)| seconds)")
#: A skipped example (``need_shared`` without the data).
SKIPPED = 77


def run_example(name: str) -> tuple[str, int]:
    """The normalised output of example ``name`` and its script's exit status."""
    script = (EXAMPLES / f"{name}.sh").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="embeval-docs-") as work:
        env = dict(os.environ)
        env.update(
            REPO=str(REPO),
            PYTHON=sys.executable,
            SHARED=str(SHARED),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            COLUMNS="110",
            HF_HUB_OFFLINE="1",
            # the demo candidate is distilled once, into the repository's own cache folder, not per example
            EMBEVAL_DEMO_CACHE=env.get(
                "EMBEVAL_DEMO_CACHE", str(REPO / ".embeval_cache" / "models" / "static-minilm-pca256")
            ),
        )
        env.pop("PYTEST_ADDOPTS", None)
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", PRELUDE + script],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        real = os.path.realpath(work)
        text = done.stdout
        for absolute in sorted({real, work, str(REPO), str(SHARED)}, key=len, reverse=True):
            text = text.replace(absolute, ".")
    return text, done.returncode


_README_BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[\w-]+)\.txt(?::(?P<first>\d+):(?P<last>\d+))? -->\n)"
    r"(?P<body>.*?)(<!-- end generated -->)",
    re.DOTALL,
)


def readme_with_outputs(readme: str) -> str:
    """``readme`` with every generated block holding the current output it names."""

    def block(match: re.Match[str]) -> str:
        lines = (GENERATED / f"{match['name']}.txt").read_text(encoding="utf-8").splitlines()
        if match["first"]:
            lines = lines[int(match["first"]) - 1 : int(match["last"])]
        body = "```text\n" + "\n".join(lines) + "\n```\n"
        return match.group(1) + body + match.group(6)

    return _README_BLOCK.sub(block, readme)


def comparable(text: str) -> str:
    """``text`` with its timings masked, for ``--check``."""
    return _TIMING.sub("<t>", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="examples to run (default: all)")
    parser.add_argument("--check", action="store_true", help="compare with docs/generated, write nothing")
    args = parser.parse_args(argv)
    names = args.names or sorted(path.stem for path in EXAMPLES.glob("*.sh"))
    GENERATED.mkdir(exist_ok=True)
    stale = []
    for name in names:
        if not (EXAMPLES / f"{name}.sh").is_file():
            parser.error(f"no example {name!r} in {EXAMPLES.relative_to(REPO)}")
        text, status = run_example(name)
        target = GENERATED / f"{name}.txt"
        if status == SKIPPED:
            print(f"{name}: skipped ({text.strip()})")
            continue
        if status != 0:
            print(f"{name}: the script failed (exit {status}):\n{text}", file=sys.stderr)
            return 2
        if args.check:
            old = target.read_text(encoding="utf-8") if target.exists() else ""
            if comparable(old) != comparable(text):
                stale.append(name)
            print(f"{name}: {'differs' if name in stale else 'current'}")
        else:
            target.write_text(text, encoding="utf-8")
            print(f"{name}: {len(text.splitlines())} lines written to {target.relative_to(REPO)}")
    readme = REPO / "README.md"
    current = readme.read_text(encoding="utf-8")
    refreshed = readme_with_outputs(current)
    if args.check and comparable(refreshed) != comparable(current):
        stale.append("README.md")
    elif not args.check and refreshed != current:
        readme.write_text(refreshed, encoding="utf-8")
        print("README.md: generated blocks refreshed")
    if stale:
        print(f"out of date: {', '.join(stale)} (run python docs/generate.py {' '.join(stale)})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
