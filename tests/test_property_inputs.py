"""Property: whatever is done to a valid golden set's files (keys, values, encodings, truncation, line
endings), loading it either succeeds or fails with one line naming one of its files; never a traceback, never
an input file changed, never half a report.

Two levels: `load_golden` directly, over many mutations; and the plugin through pytest, over a few, where an
invalid golden set must be a collection error (exit 2) printing that same line, and the JSON report, when
written, must be whole. The model of what the plugin refuses is the plugin's own: a set that loads but
judges nothing relevant (an emptied qrels file) is refused too (`unjudged_problem`). In CI the examples are
derandomised (the ``ci`` profile of conftest.py), so a run never draws what the last one did not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.qrels_files import unjudged_problem
from pytest_embeval.plugin.items import UNJUDGED_HINT

FILES = {
    "golden.yaml": (
        "name: prop\ncorpus: corpus.jsonl\nqueries: queries.jsonl\nqrels: qrels.tsv\nstrata: [language]\n"
        "metric: ndcg@10\nreport: [recall@5]\ntie_margin: 0.05\nmin_queries: 2\nbootstrap: 200\nseed: 0\n"
    ),
    "corpus.jsonl": "".join(
        json.dumps({"_id": f"d{i:02d}", "text": f"doc {i}", "title": "Título" if i % 3 == 0 else ""}) + "\n"
        for i in range(12)
    ),
    "queries.jsonl": "".join(
        json.dumps(
            {
                "_id": f"q{i:02d}",
                "text": f"{'en' if i < 4 else 'es'} {i}",
                "language": "en" if i < 4 else "es",
            }
        )
        + "\n"
        for i in range(8)
    ),
    "qrels.tsv": "query-id\tcorpus-id\tscore\n"
    + "".join(f"q{i:02d}\td{i:02d}\t{1 + i % 2}\n" for i in range(8)),
}
#: Values a mutation may put where a key or a value was.
ODD_VALUES = [
    "",
    " ",
    "-1",
    "1e309",
    "null",
    "[]",
    "{}",
    "x y",
    "é",
    "\t",
    '"',
    "0",
    "true",
    "ndcg@0",
    "../x",
]
Mutation = Callable[[bytes], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, Mutation, str]:
    """A file of the set, a change to its bytes, and a description (shown when the property fails)."""
    name = draw(st.sampled_from(sorted(FILES)))
    kind = draw(
        st.sampled_from(
            [
                "truncate",
                "crlf",
                "cr",
                "latin-1",
                "utf-16",
                "bytes",
                "drop-line",
                "repeat-line",
                "key",
                "value",
            ]
        )
    )
    position = draw(st.floats(0, 1))
    odd = draw(st.sampled_from(ODD_VALUES))
    noise = draw(st.binary(min_size=1, max_size=4))

    def at(data: bytes) -> int:
        return int(position * len(data))

    def line_of(data: bytes) -> int:
        return int(position * (len(_lines(data)) - 1))

    def mutate(data: bytes) -> bytes:
        if kind == "truncate":
            return data[: at(data)]
        if kind == "crlf":
            return data.replace(b"\n", b"\r\n")
        if kind == "cr":
            return data.replace(b"\n", b"\r")
        if kind == "latin-1":
            return data.decode("utf-8").encode("latin-1", errors="replace") + "é\n".encode("latin-1")
        if kind == "utf-16":
            return data.decode("utf-8").encode("utf-16")
        if kind == "bytes":
            return data[: at(data)] + noise + data[at(data) :]
        lines = _lines(data)
        i = line_of(data)
        if kind == "drop-line":
            del lines[i]
        elif kind == "repeat-line":
            lines.insert(i, lines[i])
        elif kind == "key":  # the first key-like token of the line: a YAML key, a JSON key, a TSV column
            lines[i] = _replace_first(lines[i], (b":", b'":', b"\t"), odd.encode("utf-8"), before=True)
        else:  # the value after the first separator
            lines[i] = _replace_first(lines[i], (b": ", b'": ', b"\t"), odd.encode("utf-8"), before=False)
        return b"\n".join(lines)

    return name, mutate, f"{kind} at {position:.3f} in {name} ({odd!r}, {noise!r})"


def _replace_first(line: bytes, separators: tuple[bytes, ...], new: bytes, *, before: bool) -> bytes:
    for separator in separators:
        if separator in line:
            head, _, tail = line.partition(separator)
            if before:
                return new + separator + tail
            end = min((tail.find(mark) for mark in (b",", b"}", b"\t") if mark in tail), default=len(tail))
            return head + separator + new + tail[end:]
    return new + line


def write_set(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return contents(folder)


def contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


#: A mutation that once drew a set which loads but which the plugin refuses: the qrels emptied.
EMPTIED_QRELS = ("qrels.tsv", lambda data: data[:0], "truncate at 0.000 in qrels.tsv")


def expected_outcome(folder: Path, *, plugin: bool = False) -> GoldenError | None:
    """What loading the golden set gives: None when it loads, else its one-line error naming one of its
    files; with ``plugin``, what the plugin gives, which also refuses a set judging nothing relevant. Any
    other exception fails the property."""
    try:
        golden = load_golden(folder / "golden.yaml")
        unjudged = unjudged_problem(golden) if plugin else None
        if unjudged is not None:
            raise GoldenError(unjudged.path, unjudged.key, None, unjudged.problem + UNJUDGED_HINT)
    except GoldenError as error:
        message = str(error)
        assert "\n" not in message and "\r" not in message, message
        assert error.path.name in FILES, message
        assert message.startswith(str(error.path)), message
        return error
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations())
@example(mutation=EMPTIED_QRELS)
def test_a_mutated_golden_set_loads_or_fails_in_one_line_naming_its_file(
    tmp_path_factory: pytest.TempPathFactory, mutation: tuple[str, Mutation, str]
) -> None:
    name, mutate, _ = mutation
    folder = tmp_path_factory.mktemp("set")
    write_set(folder)
    (folder / name).write_bytes(mutate((folder / name).read_bytes()))
    before = contents(folder)
    expected_outcome(folder)
    assert contents(folder) == before


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutation=mutations())
@example(mutation=EMPTIED_QRELS)
def test_through_pytest_an_invalid_golden_set_is_one_collection_error_and_no_half_report(
    pytester: pytest.Pytester, golden: object, mutation: tuple[str, Mutation, str]
) -> None:
    name, mutate, _ = mutation
    folder = Path(pytester.mkdir(f"set{len(list(pytester.path.glob('set*')))}"))
    write_set(folder)
    (folder / name).write_bytes(mutate((folder / name).read_bytes()))
    before = contents(folder)
    error = expected_outcome(folder, plugin=True)
    report = folder / "out" / "report.json"
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-no-cache",
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:good",
        f"--embeval-json={report}",
        str(folder / "golden.yaml"),
    )
    output = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in output, output
    if error is None:
        assert result.ret == pytest.ExitCode.OK, output
        assert json.loads(report.read_text(encoding="utf-8"))["golden_sets"][0]["name"]
    else:
        assert result.ret == pytest.ExitCode.INTERRUPTED, output
        shown = str(
            GoldenError(os.path.relpath(error.path, pytester.path), error.key, error.line, error.problem)
        )
        assert shown in result.outlines, output
        assert not report.exists()
    assert contents(folder) == before
    if report.parent.exists():  # no temporary file of an atomic write left behind
        assert [path.name for path in report.parent.iterdir()] == ["report.json"]


def test_under_the_ci_profile_a_property_draws_the_same_examples_on_every_run() -> None:
    """CI runs the properties derandomised and without a database (conftest.py's ``ci`` profile): two runs
    of one property draw the very same examples, so a fresh clone meets no example an earlier run found."""
    profile = settings.get_profile("ci")
    assert profile.derandomize and profile.database is None
    drawn: list[int] = []

    @settings(profile, max_examples=25)
    @given(st.integers())
    def draw(value: int) -> None:
        drawn.append(value)

    draw()
    first = list(drawn)
    drawn.clear()
    draw()
    assert drawn == first and len(set(first)) > 1
