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
not 0, and does not stop the example); ``shown 'COMMAND'`` does the same for a command with quotes, pipes or
variables, printed as written and run with ``eval``; ``shown_any_status 'COMMAND'`` runs it with bash and
leaves its exit status unsaid.

README.md cannot include files, so the script copies outputs into it: the lines between
``<!-- generated: NAME.txt -->`` and ``<!-- end generated -->`` become that output in a ``text`` block
(``NAME.txt:FIRST:LAST``: those lines, 1-based, both included; ``NAME.txt from /REGEX/``: from the first line
REGEX matches to the end).

``--check`` compares without what varies between runs of the same code (durations, rates, progress lines); a
script with a line ``# not checked: REASON`` is left out of it, as its output is not a function of the code
alone; one with ``# compared without numbers: REASON`` is compared for its words and layout only, and one
with ``# compared without digests: REASON`` without its hexadecimal digests. A number printed to full
precision (seven significant digits or more) may differ by a relative 1e-6: a real model's float32 output
follows the machine's CPU kernels in its last bits. The prelude offers ``demo_project [--cached]`` (the
shipped golden sets and the demo models, with the repository's embedding cache) and ``small_golden_set``
(the tests' 48-query set and fake models).

    python docs/generate.py              # every example
    python docs/generate.py demo library # these only
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
shown() {
    # show, for a command with quotes, pipes or variables: printed as written, run with eval
    printf '$ %s\n' "$1"
    local status=0
    eval "$1" || status=$?
    if [ "$status" != 0 ]; then printf '(exit %s)\n' "$status"; fi
}
shown_any_status() {
    # shown, for a block that does not show the exit status (a run with a WORSE stratum exits 1)
    printf '$ %s\n' "$1"
    bash -c "$1" || true
}
derived_golden_files() {
    # The shipped golden/ and conftest.py, the BEIR collections as data/, and the golden files derive.py
    # makes of them (docs/pipeline.md shows derive.py)
    need_shared
    cp -r "$REPO/golden" "$REPO/conftest.py" "$REPO/docs/examples/derive.py" .
    ln -s "$SHARED/data" data
    "$PYTHON" derive.py . data
}
need_shared() {
    if [ ! -d "$SHARED/data" ]; then echo "needs $SHARED/data" >&2; exit 77; fi
}
demo_project() {
    # The shipped golden sets and the demo's conftest.py; with --cached, the repository's embedding cache
    # too (what the demo models embedded before), so the run embeds nothing.
    cp -r "$REPO/golden" "$REPO/conftest.py" .
    if [ "${1:-}" = --cached ]; then
        mkdir -p .embeval_cache
        for part in embeddings digests graphs; do
            [ ! -d "$REPO/.embeval_cache/$part" ] || cp -r "$REPO/.embeval_cache/$part" .embeval_cache/
        done
    fi
}
small_golden_set() {
    # The tests' small golden set (48 queries, English and Spanish, one relevant document each) as
    # support.yaml, with their deterministic fake models (tests/fake_models.py) beside it.
    cp "$REPO/tests/fake_models.py" .
    touch conftest.py
    "$PYTHON" "$REPO/docs/examples/small_golden_set.py"
}
"""

#: Numbers that change from run to run on the same code: durations, rates, pytest's (h:mm:ss).
_TIMING = re.compile(r"\d[\d,]*(\.\d+)?(\s?(s|ms|µs|min|texts/s|/s)\b|s\)| seconds)|\(\d+:\d\d:\d\d\)")
#: Progress lines, printed every few seconds: how many a run prints depends on the machine's speed.
_PROGRESS = re.compile(
    r"^embeval [^\n]*: (\w+ )?(encoding|embedding|building|loading|bootstrap)\b[^\n]*\n", re.MULTILINE
)
#: A script line ``# not checked: REASON`` keeps the example out of ``--check`` (its output is not a
#: function of the code alone: a killed process, a server's own timing).
_NOT_CHECKED = re.compile(r"^# not checked: (.+)$", re.MULTILINE)
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
        # An example runs pytest afresh, as on a user's terminal: not as part of a run that started it, and
        # not as on CI, where pytest writes its short summary untruncated.
        for variable in [
            name for name in env if name.startswith("PYTEST_") or name in ("CI", "BUILD_NUMBER")
        ]:
            env.pop(variable)
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
    r"(<!-- generated: (?P<name>[\w-]+)\.txt"
    r"(?::(?P<first>\d+):(?P<last>\d+)| from /(?P<start>[^/]+)/)? -->\n)"
    r"(?P<body>.*?)(?P<end><!-- end generated -->)",
    re.DOTALL,
)


def readme_with_outputs(readme: str) -> str:
    """``readme`` with every generated block holding the current output it names."""

    def block(match: re.Match[str]) -> str:
        lines = (GENERATED / f"{match['name']}.txt").read_text(encoding="utf-8").splitlines()
        if match["first"]:
            lines = lines[int(match["first"]) - 1 : int(match["last"])]
        elif match["start"]:
            start = re.compile(match["start"])
            lines = lines[next(i for i, line in enumerate(lines) if start.search(line)) :]
        body = "```text\n" + "\n".join(lines) + "\n```\n"
        return match.group(1) + body + match["end"]

    return _README_BLOCK.sub(block, readme)


def warm_demo_cache() -> None:
    """Fill the repository's embedding cache with what the demo embeds (the README's first command writes
    the same), so that examples copying it (``demo_project --cached``) embed nothing. Run even when the
    cache exists (a few seconds, nothing embedded then): a folder that exists may be partly filled, e.g.
    by a test that runs the shipped set while the suite's other worker checks the docs."""
    if not (REPO / ".embeval_cache" / "embeddings").is_dir():
        print("filling the demo's embedding cache (.embeval_cache/) once")
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    subprocess.run(
        [sys.executable, "-m", "pytest", "--embeval", "golden/", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        env={**env, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


#: A script line ``# compared without numbers: REASON``: ``--check`` compares its output's words and layout
#: only (an output made mostly of measured latencies and throughputs).
_WITHOUT_NUMBERS = re.compile(r"^# compared without numbers: (.+)$", re.MULTILINE)
#: A script line ``# compared without digests: REASON``: ``--check`` compares its output without its
#: hexadecimal digests (those of a model made on each machine, such as the demo's distilled static model).
_WITHOUT_DIGESTS = re.compile(r"^# compared without digests: (.+)$", re.MULTILINE)
_DIGEST = re.compile(r"\b[0-9a-f]{12,}\b")
#: pytest's (h:mm:ss) after a run's seconds, printed only past a minute.
_CLOCK = re.compile(r" \(\d+:\d\d:\d\d\)")
#: pytest's header lines that name the environment (its platform, versions and installed plugins, in the
#: order they were installed): a fresh install resolves newer releases, not another output of the code.
_ENVIRONMENT = re.compile(r"^(platform|plugins:) .*$", re.MULTILINE)
#: A line that holds a measured time, latency or rate: its numbers vary run to run.
_TIMED_LINE = re.compile(r"\bms\b|/s\b|latenc|\bp50\b|\bp95\b|seconds|core-hours|_ms\b|\bin \d[\d.]*s\b")
_NUMBER = re.compile(r"\d[\d,]*(\.\d+)?(e[-+]?\d+)?")
#: Runs of padding (table columns, pytest's ``====`` lines) whose width follows the numbers in them.
_PADDING = re.compile(r"[ =-]{2,}")
#: A real model's float32 output follows the machine's CPU kernels (which vector instructions, which order
#: of sums) in its last bits, about 1e-7 relative; a number printed to full precision (7 significant digits
#: or more) may differ from its committed value by this much and still be the same code's output.
_FULL_PRECISION = 7
_MACHINE_TOLERANCE = 1e-6


def comparable(text: str, *, numbers: bool = True, digests: bool = True) -> str:
    """``text`` without what varies from run to run of the same code: progress lines, pytest's environment
    lines (platform, plugins), timings (and every
    number on a line that reports a time, latency or rate; every number at all without ``numbers``), the
    padding that follows their widths, and without ``digests`` every hexadecimal digest."""
    lines = []
    text = _ENVIRONMENT.sub(r"\1 <environment>", _CLOCK.sub("", _PROGRESS.sub("", text)))
    for line in text.splitlines():
        if not digests:
            line = _DIGEST.sub("<digest>", line)
        timed = not numbers or _TIMED_LINE.search(line)
        line = _NUMBER.sub("<n>", line) if timed else _TIMING.sub("<t>", line)
        lines.append(_PADDING.sub(" ", line))
    return "\n".join(lines)


def _significant_digits(number: str) -> int:
    mantissa = number.lower().partition("e")[0]
    return len(mantissa.replace(",", "").replace(".", "").lstrip("0"))


def _within_machine_rounding(old: str, new: str) -> bool:
    if not all("." in number and _significant_digits(number) >= _FULL_PRECISION for number in (old, new)):
        return False
    x, y = float(old.replace(",", "")), float(new.replace(",", ""))
    return abs(x - y) <= _MACHINE_TOLERANCE * max(abs(x), abs(y))


def same_output(old: str, new: str, *, numbers: bool = True, digests: bool = True) -> bool:
    """Whether ``old`` and ``new`` are outputs of the same code: equal once `comparable`, but that each
    number printed to full precision may differ by a real model's rounding on another machine."""
    old, new = (
        comparable(old, numbers=numbers, digests=digests),
        comparable(new, numbers=numbers, digests=digests),
    )
    if _NUMBER.sub("<n>", old) != _NUMBER.sub("<n>", new):
        return False
    pairs = zip(_NUMBER.finditer(old), _NUMBER.finditer(new), strict=True)
    return all(a[0] == b[0] or _within_machine_rounding(a[0], b[0]) for a, b in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="examples to run (default: all)")
    parser.add_argument("--check", action="store_true", help="compare with docs/generated, write nothing")
    parser.add_argument(
        "--cache-filled",
        action="store_true",
        help="the demo's embedding cache is filled already: do not fill it (a caller running the examples "
        "one at a time fills it once)",
    )
    args = parser.parse_args(argv)
    names = args.names or sorted(path.stem for path in EXAMPLES.glob("*.sh"))
    GENERATED.mkdir(exist_ok=True)
    if not args.cache_filled and any(
        "demo_project --cached" in (EXAMPLES / f"{name}.sh").read_text(encoding="utf-8")
        for name in names
        if (EXAMPLES / f"{name}.sh").is_file()
    ):
        warm_demo_cache()
    stale = []
    for name in names:
        if not (EXAMPLES / f"{name}.sh").is_file():
            parser.error(f"no example {name!r} in {EXAMPLES.relative_to(REPO)}")
        target = GENERATED / f"{name}.txt"
        script = (EXAMPLES / f"{name}.sh").read_text(encoding="utf-8")
        not_checked = _NOT_CHECKED.search(script)
        if args.check and not_checked:
            print(f"{name}: not checked ({not_checked[1]})")
            continue
        text, status = run_example(name)
        if status == SKIPPED:
            print(f"{name}: skipped ({text.strip()})")
            continue
        if status != 0:
            print(f"{name}: the script failed (exit {status}):\n{text}", file=sys.stderr)
            return 2
        if args.check:
            old = target.read_text(encoding="utf-8") if target.exists() else ""
            numbers = _WITHOUT_NUMBERS.search(script) is None
            digests = _WITHOUT_DIGESTS.search(script) is None
            if not same_output(old, text, numbers=numbers, digests=digests):
                stale.append(name)
            print(f"{name}: {'differs' if name in stale else 'current'}")
        else:
            target.write_text(text, encoding="utf-8")
            print(f"{name}: {len(text.splitlines())} lines written to {target.relative_to(REPO)}")
    readme = REPO / "README.md"
    current = readme.read_text(encoding="utf-8")
    refreshed = readme_with_outputs(current)
    if args.check and not same_output(current, refreshed):
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
