"""Reading a corpus file: `datafiles.read_documents` against its floor, `json.loads` per line.

    python benchmarks/bench_corpus_reader.py [--data DIR] [--documents 100000] [--repeat 15] [--against DIR]
                                             [--memory]

CPU times, best of --repeat and alternating so that the machine's load weighs on all alike, reading a JSONL
corpus (bytes, UTF-8 decoding, parsing, validation, `Document` records): DIR/corpus.jsonl if given, and a
synthetic corpus of --documents documents with texts of 20 to 200 words (and the same corpus as TSV). The
floor reads the same bytes, decodes them and calls `json.loads` on each line, validating nothing. With
--against DIR, the reader of another checkout of the project (a `git worktree` of an older commit) is
timed alongside. With --memory, each reader also reads each file once more in a fresh process, which
reports how far its peak resident memory grew while reading (MiB).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_embeval.golden.data_files import read_documents

Reader = Callable[[Path], object]
#: The readers by name, as the table's columns call them.
LABELS = {"floor": "floor", "jsonl": "JSONL", "tsv": "TSV", "against": "--against JSONL"}


def floor(path: Path) -> object:
    text = path.read_bytes().decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line]


def other_reader(checkout: Path) -> Reader:
    """The corpus reader of another checkout: golden/data_files.read_documents, datafiles.read_documents
    before the package had a folder per concern, or golden._read_documents before datafiles.py existed. Its
    module is loaded under another name; it imports this checkout's others."""
    places = (
        ("golden/data_files", "read_documents"),
        ("datafiles", "read_documents"),
        ("golden", "_read_documents"),
    )
    for module, function in places:
        path = checkout / "pytest_embeval" / f"{module}.py"
        if path.exists() and function in path.read_text(encoding="utf-8"):
            spec = importlib.util.spec_from_file_location(f"against_{module.replace('/', '_')}", path)
            assert spec is not None and spec.loader is not None
            loaded = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = loaded  # dataclasses look their module up
            spec.loader.exec_module(loaded)
            reader: Reader = getattr(loaded, function)
            return reader
    raise SystemExit(f"{checkout}: no corpus reader found")


def synthetic(folder: Path, documents: int) -> tuple[Path, Path]:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    jsonl, tsv = folder / "corpus.jsonl", folder / "corpus.tsv"
    with jsonl.open("w", encoding="utf-8") as j, tsv.open("w", encoding="utf-8") as t:
        for i in range(documents):
            text = " ".join(rng.choices(words, k=rng.randint(20, 200)))
            title = " ".join(rng.choices(words, k=5))
            j.write(json.dumps({"_id": f"doc{i}", "title": title, "text": text}) + "\n")
            t.write(f"doc{i}\t{text}\t{title}\n")
    return jsonl, tsv


def timed(readers: dict[str, tuple[Reader, Path]], repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(repeat):
        for name, (reader, path) in readers.items():
            # CPU time of this (single-threaded) process: on a machine shared with others, wall time
            # measures them as much as the reader.
            start = time.process_time()
            reader(path)
            times[name].append(time.process_time() - start)
    return {name: min(values) for name, values in times.items()}


def peak_growth(reader: Reader, path: Path) -> float:
    """MiB this process's peak resident memory grows by while ``reader`` reads ``path`` (what it returns
    included): meaningful in a fresh process, whose peak so far is what it holds."""
    before = _peak_kib()
    kept = reader(path)
    grown = _peak_kib() - before
    del kept
    return grown / 1024


def _peak_kib() -> int:
    """The process's peak resident memory: Linux's VmHWM, which starts afresh at exec (ru_maxrss keeps the
    forking parent's peak across it), else ru_maxrss."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(status.split("VmHWM:")[1].split()[0])


def peak_in_child(name: str, path: Path, against: Path | None) -> float:
    """`peak_growth` of reader ``name`` (a key of `LABELS`) reading ``path``, in a fresh process."""
    command = [sys.executable, __file__, "--peak-of", name, str(path)]
    if name == "against" and against is not None:
        command += ["--against", str(against)]
    return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def _cell(best: dict[str, float], key: str, width: int) -> str:
    """Seconds and the ratio to the floor, or a dash."""
    if key not in best:
        return "—".rjust(width)
    return f"{best[key]:.3f} {best[key] / best['floor']:.2f}x".rjust(width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a BEIR folder whose corpus.jsonl is read too")
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", type=Path, help="another checkout whose reader is timed too")
    parser.add_argument("--memory", action="store_true", help="each reader's peak memory growth too")
    parser.add_argument("--peak-of", nargs=2, metavar=("READER", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    against = other_reader(args.against) if args.against else None
    if args.peak_of is not None:  # the fresh process of peak_in_child
        name, file = args.peak_of
        named = {"floor": floor, "jsonl": read_documents, "tsv": read_documents}
        print(peak_growth(against if name == "against" and against is not None else named[name], Path(file)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        jsonl, tsv = synthetic(Path(tmp), args.documents)
        cases: list[tuple[str, Path, Path | None]] = [
            (f"synthetic, {args.documents:,} documents", jsonl, tsv)
        ]
        if args.data is not None:
            cases.insert(0, (f"{args.data.name}", args.data / "corpus.jsonl", None))
        print(
            f"{'corpus':34} {'MB':>5} {'floor cpu s':>11} {'JSONL':>12} {'TSV':>12} {'--against JSONL':>16}"
        )
        for name, path, tsv_path in cases:
            readers: dict[str, tuple[Reader, Path]] = {
                "floor": (floor, path),
                "jsonl": (read_documents, path),
            }
            if tsv_path is not None:
                readers["tsv"] = (read_documents, tsv_path)
            if against is not None:
                readers["against"] = (against, path)
            best = timed(readers, args.repeat)
            size = path.stat().st_size / 1e6
            print(
                f"{name:34} {size:5.1f} {best['floor']:11.3f} {_cell(best, 'jsonl', 12)} "
                f"{_cell(best, 'tsv', 12)} {_cell(best, 'against', 16)}"
            )
            if args.memory:
                grown = ", ".join(
                    f"{LABELS[reader]} {peak_in_child(reader, file, args.against):.0f}"
                    for reader, (_, file) in readers.items()
                )
                print(f"{'':34} peak memory growth while reading, MiB: {grown}")


if __name__ == "__main__":
    main()
