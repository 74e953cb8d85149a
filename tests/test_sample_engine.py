"""`embeval sample` and `embeval corpus-sample` with the columnar engine (DuckDB): the same sample and draw
sidecar as the Python reader, byte for byte, on logs whose duplicates differ in case, width and whitespace
(a property); many files by glob; counted rows (``--count``); Parquet logs and corpora; the corpus sample
today's; every bad input as one line, exit 2, nothing written."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_helpers import CliResult

duckdb = pytest.importorskip("duckdb", reason="the columnar engine needs the [duckdb] extra")

from pytest_embeval.cli import embeval as command  # noqa: E402
from pytest_embeval.golden import columnar_log, columnar_queries  # noqa: E402

Embeval = Callable[..., CliResult]

BASES = ["track my parcel", "refund", "where is my order", "paket verfolgen", "ñandú rápido", "東京 配送"]
WHITESPACE = [" ", "  ", "\t", " \u3000", "\u00a0", "\n"]


def _full_width(text: str) -> str:
    """ASCII letters and digits as their full-width forms, which NFKC maps back."""
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in text)


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A base query spelt as people type it: case, full-width letters, runs of whitespace, padding."""
    text = draw(st.sampled_from(BASES))
    case = draw(st.sampled_from([str, str.upper, str.title, str.swapcase]))
    text = case(text)
    if draw(st.booleans()):
        text = _full_width(text)
    words = text.split(" ")
    gaps = draw(st.lists(st.sampled_from(WHITESPACE), min_size=len(words) - 1, max_size=len(words) - 1))
    text = words[0] + "".join(gap + word for gap, word in zip(gaps, words[1:], strict=True))
    return draw(st.sampled_from(["", " ", "\t"])) + text + draw(st.sampled_from(["", " ", "  "]))


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a JSONL log (a stratum field of strings and numbers, 1 and "1" one stratum), and the options
    of a sample from it."""
    counted = draw(st.booleans())
    row = st.fixed_dictionaries(
        {
            "query": spellings() | st.sampled_from(["", "   "]),
            # A tab or U+001F in a value: the engine joins a copied row's values with U+001F (escaped in
            # a JSON text, so never a separator).
            "language": st.sampled_from(["en", "de", "Ünï", "e\u001fn", "d\te"]),
            "shape": st.sampled_from(["k", 1, 2.5, "1"]),
            **({"n": st.integers(1, 5)} if counted else {}),
        }
    )
    rows = draw(st.lists(row, min_size=1, max_size=60))
    by = draw(st.sampled_from(["language", "language,shape", "band", "shape,band", "language,band,shape"]))
    options = [
        "--by",
        by,
        "--size",
        str(draw(st.integers(1, 14))),
        "--floor",
        str(draw(st.integers(0, 3))),
        "--bands",
        draw(st.sampled_from(["head=0.33,torso=0.33", "head=0.5", "a=0.1,b=0.2,c=0.3"])),
        "--head-boost",
        draw(st.sampled_from(["1", "2.5"])),
        "--seed",
        str(draw(st.integers(0, 3))),
        *(["--count", "n"] if counted else []),
    ]
    return rows, options


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.characters(max_codepoint=0x7F)) | spellings(), min_size=1, max_size=40))
def test_the_engine_normalises_every_spelling_as_normalise_query_does(texts: list[str]) -> None:
    """ASCII spellings are normalised by the engine (every ASCII character, each kind of whitespace
    ``str.split`` knows among them: tab to carriage return, U+001C to U+001F), the rest by Python: each
    spelling's key is `normalise_query`'s."""
    from pytest_embeval.core.sampling import normalise_query
    from pytest_embeval.files.columnar import engine

    with engine("300MB") as opened:
        opened.execute(
            f"CREATE TEMP TABLE raw AS SELECT c0, false AS normal, {columnar_queries.ascii_key('c0')} AS key "
            "FROM (SELECT unnest(?::VARCHAR[]) AS c0)",
            [texts],
        )
        columnar_queries.normalise_spellings(opened)
        keys = dict(
            opened.rows("SELECT c0, key FROM raw WHERE key IS NOT NULL UNION ALL SELECT * FROM changed")
        )
    assert keys == {text: normalise_query(text) for text in texts}


def test_two_stratum_combinations_of_one_hash_stop_the_command() -> None:
    """The rows are grouped by a hash of their stratum values: two combinations of one hash (a collision,
    here forced) stop the command, whether the values are read distinct (Parquet) or as the joined text of
    each hash's rows in a copied text log, and two rows of one combination do not."""
    from pytest_embeval.files.columnar import EngineError, engine

    collision = "two combinations of stratum values have one hash; stratify by other fields"
    with engine("300MB") as opened:
        values = "(SELECT unnest(['en', 'de', 'en']) AS c1)"
        with pytest.raises(EngineError, match=f"^{re.escape(collision)}$"):
            columnar_log._distinct_strata(opened, values, "42", ["c1"])
        assert len(columnar_log._distinct_strata(opened, values, "hash(c1)", ["c1"])) == 2
        opened.execute(
            "CREATE TEMP TABLE log_rows AS SELECT * FROM (VALUES ('en\tweb', 42::UBIGINT), ('de\tweb', 42), "
            "('en\tweb', 42)) AS rows(strata, combination)"
        )
        with pytest.raises(EngineError, match=f"^{re.escape(collision)}$"):
            columnar_log._copied_strata(opened, "tsv", 2)
        opened.execute("DELETE FROM log_rows WHERE strata LIKE 'de%'")
        assert columnar_log._copied_strata(opened, "tsv", 2) == [(42, "en", "web")]


def _run(*args: str | Path) -> CliResult:
    """``embeval`` in-process, its output captured here (hypothesis calls this many times in one test)."""
    out, err = mock.patch("sys.stdout", new=_Capture()), mock.patch("sys.stderr", new=_Capture())
    with out as stdout, err as stderr:
        status = command.main([str(arg) for arg in args])
    return status, stdout.getvalue(), stderr.getvalue()


class _Capture:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return "".join(self.parts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_the_engine_draws_the_same_sample_and_sidecar_as_python(
    log: tuple[list[dict[str, Any]], list[str]],
) -> None:
    rows, options = log
    # A bucket of one row: every rank is found by prefixes refined to the last (the large-log path).
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(columnar_queries, "_BUCKET_ROWS", 1):
        path = Path(folder) / "log.jsonl"
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        results = {}
        for engine in ("python", "duckdb"):
            out = Path(folder) / f"{engine}.jsonl"
            status, stdout, stderr = _run("sample", path, *options, "--engine", engine, "--out", out)
            written = (
                (out.read_bytes(), out.with_name(f"{engine}.draw.json").read_bytes()) if status == 0 else None
            )
            results[engine] = (status, stdout.replace(str(out.with_suffix("")), "OUT"), stderr, written)
        assert results["duckdb"] == results["python"]


@st.composite
def parquet_logs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Rows of a log of string fields (what one Parquet column holds), the row where its second file
    starts, and the options of a sample from it."""
    counted = draw(st.booleans())
    row = st.fixed_dictionaries(
        {
            "query": spellings() | st.sampled_from(["", "   "]),
            "language": st.sampled_from(["en", "de", "Ünï"]),
            **({"n": st.integers(1, 5)} if counted else {}),
        }
    )
    rows = draw(st.lists(row, min_size=2, max_size=60))
    options = [
        "--by",
        draw(st.sampled_from(["language", "band", "language,band"])),
        "--size",
        str(draw(st.integers(1, 14))),
        "--floor",
        str(draw(st.integers(0, 3))),
        "--seed",
        str(draw(st.integers(0, 3))),
        *(["--count", "n"] if counted else []),
    ]
    return rows, draw(st.integers(1, len(rows) - 1)), options


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parquet_logs())
def test_parquet_files_give_the_sample_python_draws_from_their_rows(
    log: tuple[list[dict[str, Any]], int, list[str]],
) -> None:
    """Two Parquet files, whose rows the engine numbers file by file, give the sample and draw of the same
    rows in one JSONL file read by Python: the first spelling seen is the same."""
    rows, second, options = log
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(columnar_queries, "_BUCKET_ROWS", 1):
        root = Path(folder)
        (root / "days").mkdir()
        write_parquet(root / "days" / "1.parquet", rows[:second])
        write_parquet(root / "days" / "2.parquet", rows[second:])
        jsonl = write_jsonl(root / "log.jsonl", rows)
        results = {}
        for engine, source in (("python", jsonl), ("duckdb", f"{root}/days/*.parquet")):
            out = root / f"{engine}.jsonl"
            status, _, stderr = _run("sample", source, *options, "--engine", engine, "--out", out)
            assert status == 0 or stderr.startswith("embeval sample: "), stderr
            written = None
            if status == 0:
                draw = json.loads(out.with_name(f"{engine}.draw.json").read_text("utf-8"))
                written = (out.read_bytes(), draw["strata"], draw["band_traffic"], draw["distinct"])
            results[engine] = (status, written)
        assert results["duckdb"] == results["python"]


# ------------------------------------------------------------------------------------------- test logs


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]], columns: str = "") -> Path:
    """The rows as Parquet, through DuckDB's JSON reader (``columns``: its columns argument)."""
    source = write_jsonl(path.with_suffix(".rows.jsonl"), rows)
    read = f"read_json('{source}'{', columns = ' + columns if columns else ''})"
    duckdb.sql(f"COPY (SELECT * FROM {read}) TO '{path}' (FORMAT parquet)")
    source.unlink()
    return path


def week(day: int) -> list[dict[str, Any]]:
    """A day of searches: a head query respelt, a torso, singletons; English and German."""
    rows: list[dict[str, Any]] = []
    rows += [{"query": "Track my parcel", "language": "en"}] * (20 + day)
    rows += [{"query": "track  MY parcel ", "language": "en"}] * 3
    rows += [{"query": "\uff34rack my parcel", "language": "en"}] * day
    rows += [{"query": "refund", "language": "en"}] * 9
    rows += [{"query": f"english {day} {i}", "language": "en"} for i in range(12)]
    rows += [{"query": "paket", "language": "de"}] * 4
    rows += [{"query": f"deutsch {day} {i}", "language": "de"} for i in range(6)]
    return rows


OPTIONS = ["--by", "language,band", "--size", "14", "--floor", "2", "--bands", "head=0.4,torso=0.2"]


def test_the_sample_is_the_one_drawn_before_the_engine(tmp_path: Path, embeval: Embeval) -> None:
    """The queries file of a fixed log and seed, by either reader, is byte for byte the one the reader
    before the engine wrote (its sha256, taken from that version)."""
    rows: list[dict[str, Any]] = []
    rows += [{"query": "Track my parcel", "language": "en"}] * 28
    rows += [{"query": "track  MY parcel ", "language": "en"}] * 10
    rows += [{"query": "\uff34rack my parcel", "language": "en"}] * 2
    rows += [{"query": "refund", "language": "en"}] * 20
    rows += [{"query": f"english {i}", "language": "en"} for i in range(30)]
    rows += [{"query": "paket", "language": "de"}] * 5
    rows += [{"query": f"deutsch {i}", "language": "de"} for i in range(5)]
    log = write_jsonl(tmp_path / "log.jsonl", rows)
    options = ["--by", "language,band", "--size", "12", "--floor", "2", "--bands", "head=0.4,torso=0.2"]
    before = {
        "0": "81417830554239da975905e7fbcc4d79a416584cf15f3b5be92d4cc1e6c60e93",
        "3": "7fb2be4554f6d308e92f447a8aa5ac5e570d2fe4080b7af883657bdcf8d8ddf3",
    }
    for seed, digest in before.items():
        for engine in ("python", "duckdb"):
            out = tmp_path / f"{engine}-{seed}.jsonl"
            run = (
                "sample",
                log,
                *options,
                "--head-boost",
                "1.5",
                "--seed",
                seed,
                "--engine",
                engine,
                "--out",
                out,
            )
            assert embeval(*run)[0] == 0
            assert hashlib.sha256(out.read_bytes()).hexdigest() == digest


def test_many_files_by_glob_are_one_log_in_the_order_of_their_names(tmp_path: Path, embeval: Embeval) -> None:
    days = [week(day) for day in (1, 2, 3)]
    logs = tmp_path / "logs"
    logs.mkdir()
    for day, rows in zip(("2026-11-03", "2026-11-01", "2026-11-02"), days, strict=True):
        write_jsonl(logs / f"{day}.jsonl", rows)
    write_jsonl(logs / "2026-10-31.jsonl", [{"query": "not in the pattern", "language": "en"}])
    # The same searches in one file, in the order of the files' names (the first spelling is the first seen).
    whole = write_jsonl(tmp_path / "whole.jsonl", days[1] + days[2] + days[0])
    pattern = f"{logs}/2026-11-*.jsonl"
    outputs = {}
    for name, source, engine in (
        ("whole", whole, "python"),
        ("python", pattern, "python"),
        ("duckdb", pattern, "duckdb"),
    ):
        out = tmp_path / f"out-{name}.jsonl"
        status, stdout, stderr = embeval("sample", source, *OPTIONS, "--engine", engine, "--out", out)
        assert status == 0, stderr
        outputs[name] = (
            out.read_bytes(),
            json.loads(out.with_name(f"out-{name}.draw.json").read_text("utf-8")),
        )
    assert outputs["python"][0] == outputs["duckdb"][0] == outputs["whole"][0]
    assert outputs["python"][1] == outputs["duckdb"][1]
    source = outputs["duckdb"][1]["source"]
    files = [logs / f"2026-11-0{day}.jsonl" for day in (1, 2, 3)]
    assert source["path"] == pattern and source["rows"] == outputs["whole"][1]["source"]["rows"]
    assert source["files"] == [
        {"path": str(path), "sha256": f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}"}
        for path in files
    ]
    digests = "".join(hashlib.sha256(path.read_bytes()).hexdigest() + "\n" for path in files)
    assert source["sha256"] == f"sha256:{hashlib.sha256(digests.encode()).hexdigest()}"
    assert stdout.splitlines()[0].startswith(f"{pattern} (3 files): {source['rows']:,} searches")


def test_a_parquet_log_and_parquet_files_by_glob_give_the_jsonl_sample(
    tmp_path: Path, embeval: Embeval
) -> None:
    rows = week(1) + week(2)
    jsonl = write_jsonl(tmp_path / "log.jsonl", rows)
    write_parquet(tmp_path / "log.parquet", rows)
    (tmp_path / "parts").mkdir()
    write_parquet(tmp_path / "parts" / "a.parquet", week(1))
    write_parquet(tmp_path / "parts" / "b.parquet", week(2))
    outputs = {}
    for name, source in (
        ("jsonl", jsonl),
        ("parquet", tmp_path / "log.parquet"),
        ("parts", f"{tmp_path}/parts/*.parquet"),
    ):
        out = tmp_path / f"out-{name}.jsonl"
        status, _, stderr = embeval("sample", source, *OPTIONS, "--out", out)  # auto: Parquet is the engine's
        assert status == 0, stderr
        draw = json.loads(out.with_name(f"out-{name}.draw.json").read_text("utf-8"))
        outputs[name] = (out.read_bytes(), draw.pop("source"), draw)
    assert outputs["jsonl"][0] == outputs["parquet"][0] == outputs["parts"][0]
    assert outputs["jsonl"][2] == outputs["parquet"][2] == outputs["parts"][2]
    assert outputs["parquet"][1]["format"] == "parquet" and outputs["parquet"][1]["rows"] == len(rows)


def _counted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A warehouse's GROUP BY query, language: each raw spelling once, with its searches, in the order of
    its first search."""
    counts: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["query"], row["language"])
        counts[key] = counts.get(key, 0) + 1
    return [{"query": query, "language": language, "searches": n} for (query, language), n in counts.items()]


@pytest.mark.parametrize("kind", ["jsonl", "tsv", "parquet"])
def test_a_counted_log_gives_the_sample_of_the_log_it_counts(
    tmp_path: Path, embeval: Embeval, kind: str
) -> None:
    rows = week(1) + week(2)
    log = write_jsonl(tmp_path / "log.jsonl", rows)
    counted = _counted(rows)
    if kind == "jsonl":
        table = write_jsonl(tmp_path / "counted.jsonl", counted)
    elif kind == "tsv":
        table = tmp_path / "counted.tsv"
        lines = [f"{r['language']}\t{r['searches']}\t{r['query']}\n" for r in counted]
        table.write_text("language\tsearches\tquery\n" + "".join(lines), encoding="utf-8")
    else:
        table = write_parquet(tmp_path / "counted.parquet", counted)
    assert embeval("sample", log, *OPTIONS, "--out", tmp_path / "raw.jsonl")[0] == 0
    raw = json.loads((tmp_path / "raw.draw.json").read_text("utf-8"))
    for engine in ("python", "duckdb") if kind != "parquet" else ("duckdb",):
        out = tmp_path / f"{engine}.jsonl"
        status, stdout, stderr = embeval(
            "sample", table, *OPTIONS, "--count", "searches", "--engine", engine, "--out", out
        )
        assert status == 0, stderr
        assert out.read_bytes() == (tmp_path / "raw.jsonl").read_bytes()
        draw = json.loads(out.with_name(f"{engine}.draw.json").read_text("utf-8"))
        assert draw["count_field"] == "searches" and draw["table_rows"] == len(counted)
        assert draw["source"]["rows"] == raw["source"]["rows"] == len(rows)
        assert draw["strata"] == raw["strata"] and draw["band_traffic"] == raw["band_traffic"]
        assert stdout.splitlines()[0].startswith(
            f"{table}: {len(counted):,} rows counting {len(rows):,} searches"
        )


def test_auto_reads_small_text_logs_in_python_and_large_ones_with_the_engine(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = write_jsonl(tmp_path / "log.jsonl", week(1))
    read: list[str] = []
    monkeypatch.setattr(
        "pytest_embeval.cli.sample_commands.read_columnar_log",
        _recording(read, "duckdb", columnar_log.read_columnar_log),
    )
    assert embeval("sample", log, *OPTIONS, "--out", tmp_path / "a.jsonl")[0] == 0
    monkeypatch.setattr("pytest_embeval.files.columnar.AUTO_ENGINE_BYTES", log.stat().st_size)
    assert embeval("sample", log, *OPTIONS, "--out", tmp_path / "b.jsonl")[0] == 0
    assert read == ["duckdb"]
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def _recording(read: list[str], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        read.append(name)
        return function(*args, **kwargs)

    return call


def test_a_long_read_shows_its_progress_on_stderr(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_embeval.reports.progress_lines.STEP_SHOW_AFTER", 0.0)
    log = write_parquet(tmp_path / "log.parquet", week(1) * 50)
    status, stdout, stderr = embeval("sample", log, *OPTIONS, "--out", tmp_path / "q.jsonl")
    assert status == 0 and stdout
    lines = stderr.splitlines()
    assert lines[0] == f"embeval sample: reading {log} 0/2,800"
    done = rf"embeval sample: reading {re.escape(str(log))} 2,800/2,800( \([0-9,]+/s\))?, done in [0-9.]+s"
    assert re.fullmatch(done, lines[1])
    # of the three spellings not in normal form, the engine normalises the two in ASCII, Python the third
    assert "embeval sample: normalising distinct spellings 0/1" in lines


@pytest.mark.parametrize("kind", ["jsonl", "tsv"])
def test_a_text_log_read_on_several_threads_keeps_each_rows_place(tmp_path: Path, kind: str) -> None:
    """A text log of tens of megabytes is read by the engine on several threads, in pieces that finish in
    any order; each raw text's first row (whose spelling a drawn query shows) is its place in the file all
    the same: the row numbers of the file itself, not of the order the pieces came in."""
    from pytest_embeval.files.columnar import engine
    from pytest_embeval.files.sources import resolve_source

    rows, keys = 1_000_000, 500_000  # first rows over the first half of the file
    texts = [("Q" if j % 3 == 0 else "q") + f" {j * 7919 % keys}" for j in range(rows)]
    first: dict[str, int] = {}
    for j, text in enumerate(texts):
        first.setdefault(text, j)
    log = tmp_path / f"log.{kind}"
    note = "x" * 20  # a column the sample does not read, making the file large enough to be read in pieces
    if kind == "jsonl":
        log.write_text(
            "".join(f'{{"query": "{text}", "language": "en", "note": "{note}"}}\n' for text in texts)
        )
    else:
        log.write_text("query\tlanguage\tnote\n" + "".join(f"{text}\ten\t{note}\n" for text in texts))
    assert log.stat().st_size > 30_000_000  # several of the engine's pieces
    with engine("1GB", threads=2) as opened:
        columnar_log.read_columnar_log(opened, resolve_source(str(log)), "query", ["language"])
        found = dict(opened.rows("SELECT c0, first FROM raw"))
    assert found == first


@pytest.mark.parametrize(("rows", "narrowed"), [(1, True), (2**32, True), (2**32 + 1, False), (None, False)])
def test_a_rows_place_is_narrowed_to_32_bits_only_where_every_place_fits(
    rows: int | None, narrowed: bool
) -> None:
    """The places of 2^32 rows (0 to 2^32 - 1) fit 32 bits: the last is read back as itself; one row more,
    or an unknown count, keeps the place as it is (the engine's 64 bits)."""
    from pytest_embeval.files.columnar import engine

    last = (rows or 2**40) - 1
    sql = columnar_log.narrowed_position(str(last), rows)
    assert sql == (f"CAST({last} AS UINTEGER)" if narrowed else str(last))
    with engine("1GB") as opened:
        assert opened.rows(f"SELECT {sql}") == [(last,)]


def test_the_engine_holds_to_its_memory_limit_and_leaves_no_spill_folder(tmp_path: Path) -> None:
    from pytest_embeval.files.columnar import engine

    with engine("300MB") as opened:
        ((limit, spill),) = opened.rows(
            "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
        )
        assert Path(spill).is_dir()
    assert limit in ("286.1 MiB", "300.0 MB") and not Path(spill).exists()


# ------------------------------------------------------------------------------------------- bad input


def _error(embeval: Embeval, tmp_path: Path, *args: str | Path) -> tuple[int, str]:
    out = tmp_path / "out.jsonl"
    status, stdout, stderr = embeval(*args, "--out", out)
    assert stdout == "" and not out.exists() and not out.with_name("out.draw.json").exists()
    return status, stderr


SAMPLE = ["--by", "language", "--size", "3", "--floor", "1"]


def test_bad_parquet_logs_give_one_line_naming_the_file(tmp_path: Path, embeval: Embeval) -> None:
    def sample(log: Path, *extra: str) -> tuple[int, str]:
        return _error(embeval, tmp_path, "sample", log, *SAMPLE, *extra)

    rows = [{"query": "a", "languages": "en", "n": 1}]
    missing = write_parquet(tmp_path / "missing.parquet", rows)
    assert sample(missing) == (
        2,
        f"embeval sample: error: {missing}: language: the file has no field 'language'; did you mean "
        "'languages'?\n",
    )
    numbers = write_parquet(tmp_path / "numbers.parquet", [{"query": 7, "language": "en"}])
    assert sample(numbers) == (
        2,
        f"embeval sample: error: {numbers}: query: must be a string, got a column of BIGINT\n",
    )
    null = write_parquet(
        tmp_path / "null.parquet", [{"query": "a", "language": "en"}, {"query": "b", "language": None}]
    )
    assert sample(null) == (
        2,
        f"embeval sample: error: {null}:2: language: must be a string or number, got null\n",
    )
    counts = write_parquet(
        tmp_path / "counts.parquet",
        [{"query": "a", "language": "en", "n": 2}, {"query": "b", "language": "en", "n": 0}],
    )
    assert sample(counts, "--count", "n") == (
        2,
        f"embeval sample: error: {counts}:2: n: must be a whole number of searches, at least 1, got 0\n",
    )
    fractions = write_parquet(tmp_path / "fractions.parquet", [{"query": "a", "language": "en", "n": 1.5}])
    assert sample(fractions, "--count", "n") == (
        2,
        f"embeval sample: error: {fractions}: n: must be a whole number of searches, at least 1, got a "
        "column of DOUBLE\n",
    )
    flags = write_parquet(tmp_path / "flags.parquet", [{"query": "a", "language": True}])
    assert sample(flags) == (
        2,
        f"embeval sample: error: {flags}: language: must be a string or number, got a column of BOOLEAN\n",
    )
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    status, stderr = sample(broken)
    assert status == 2 and stderr.startswith(f"embeval sample: error: {broken}: ") and stderr.count("\n") == 1


BAD_TEXT_LOGS = [
    pytest.param(
        [{"query": "a", "language": "en"}, {"query": "b", "language": None}],
        [],
        "{log}:2: language: must be a string or number, got null",
        id="null",
    ),
    pytest.param(
        [{"query": "a", "language": "en"}, {"query": 5, "language": "en"}],
        [],
        "{log}:2: query: must be a string, got int",
        id="text-number",
    ),
    pytest.param(
        [{"query": "a", "language": "en"}, {"query": "b"}],
        [],
        "{log}:2: language: the row has no field 'language'",
        id="missing",
    ),
    pytest.param(
        [{"query": "a", "language": "en"}, "{not json"],
        [],
        "{log}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        id="not-json",
    ),
    pytest.param(
        [{"query": "a", "language": "en", "n": 3}, {"query": "b", "language": "en", "n": 0}],
        ["--count", "n"],
        "{log}:2: n: must be a whole number of searches, at least 1, got 0",
        id="count-0",
    ),
    pytest.param(
        [{"query": "a", "language": "en", "n": 3}, {"query": "b", "language": "en", "n": "4"}],
        ["--count", "n"],
        "{log}:2: n: must be a whole number of searches, at least 1, got '4'",
        id="count-string",
    ),
    pytest.param(
        [{"query": "a", "language": "en", "n": 2.0}],
        ["--count", "n"],
        "{log}:1: n: must be a whole number of searches, at least 1, got 2.0",
        id="count-float",
    ),
    pytest.param(
        [{"query": " ", "language": "en"}],
        [],
        "{log}: query: the log has no query: every one of its 1 rows has an empty 'query'",
        id="only-empty",
    ),
]


@pytest.mark.parametrize("engine", ["python", "duckdb"])
@pytest.mark.parametrize(("rows", "extra", "message"), BAD_TEXT_LOGS)
def test_bad_jsonl_logs_give_the_same_line_on_either_reader(
    tmp_path: Path, embeval: Embeval, engine: str, rows: list[object], extra: list[str], message: str
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    status, stderr = _error(embeval, tmp_path, "sample", log, *SAMPLE, *extra, "--engine", engine)
    assert (status, stderr) == (2, f"embeval sample: error: {message.format(log=log)}\n")


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_bad_files_and_patterns(tmp_path: Path, embeval: Embeval, engine: str) -> None:
    def sample(log: str | Path, *extra: str) -> tuple[int, str]:
        return _error(embeval, tmp_path, "sample", log, *SAMPLE, "--engine", engine, *extra)

    missing = tmp_path / "nope.jsonl"
    assert sample(missing) == (2, f"embeval sample: error: {missing}: file not found: {missing.resolve()}\n")
    assert sample(tmp_path) == (2, f"embeval sample: error: {tmp_path}: cannot read: Is a directory\n")
    pattern = f"{tmp_path}/logs/2026-11-*.parquet"
    assert sample(pattern) == (2, f"embeval sample: error: {pattern}: no file matches this pattern\n")
    (tmp_path / "logs").mkdir()
    write_jsonl(tmp_path / "logs" / "a.jsonl", [{"query": "a", "language": "en"}])
    tsv = tmp_path / "logs" / "b.jsonl"
    tsv.write_text("query\tlanguage\nb\ten\n", encoding="utf-8")
    assert sample(f"{tmp_path}/logs/*.jsonl") == (
        2,
        f"embeval sample: error: {tsv}:1: format: is tsv while the log's first file is jsonl\n"
        if engine == "python"
        else f"embeval sample: error: {tsv}: format: is tsv while the first file is jsonl\n",
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    assert sample(empty) == (2, f"embeval sample: error: {empty}: the log is empty: no rows\n")
    log = write_jsonl(tmp_path / "log.jsonl", [{"query": "a", "language": "en"}])
    assert sample(log, "--count", "language") == (
        2,
        "embeval sample: error: --count 'language' is also --text or in --by: name the field holding the "
        "searches\n",
    )
    assert sample(log, "--memory-limit", "lots") == (
        2,
        "embeval sample: error: argument --memory-limit: expected a size such as 2GB or 500MB, got 'lots'\n",
    )


def test_a_missing_duckdb_is_one_line_naming_the_extra(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch
) -> None:
    parquet = write_parquet(tmp_path / "log.parquet", [{"query": "a", "language": "en"}])
    log = write_jsonl(tmp_path / "log.jsonl", [{"query": "a", "language": "en"}] * 3)
    monkeypatch.setitem(sys.modules, "duckdb", None)
    extra = "pip install 'pytest-embeval[duckdb]'"
    assert _error(embeval, tmp_path, "sample", parquet, *SAMPLE) == (
        2,
        f"embeval sample: error: {parquet}: is Parquet: reading it needs DuckDB: {extra}\n",
    )
    assert _error(embeval, tmp_path, "sample", log, *SAMPLE, "--engine", "duckdb") == (
        2,
        f"embeval sample: error: --engine duckdb needs DuckDB: {extra}\n",
    )
    assert _error(embeval, tmp_path, "corpus-sample", parquet, "--size", "1", "--keep-judged", log)[
        1
    ].startswith("embeval corpus-sample: error: ")
    monkeypatch.setattr("pytest_embeval.files.columnar.AUTO_ENGINE_BYTES", 1)
    status, _, stderr = embeval("sample", log, *SAMPLE, "--size", "1", "--out", tmp_path / "q.jsonl")
    assert status == 0 and stderr == (
        f"embeval sample: {log} is 0 MiB: read in Python, slowly ({extra} reads it faster)\n"
    )


def test_the_python_reader_refuses_parquet_and_compressed_files(tmp_path: Path, embeval: Embeval) -> None:
    parquet = write_parquet(tmp_path / "log.parquet", [{"_id": "d1", "query": "a", "language": "en"}])
    packed = tmp_path / "log.jsonl.gz"
    packed.write_bytes(b"\x1f\x8b")
    qrels = write_qrels(tmp_path / "qrels.tsv", ["d1"])
    for name, options in (("sample", SAMPLE), ("corpus-sample", ["--size", "1", "--keep-judged", qrels])):
        assert _error(embeval, tmp_path, name, parquet, *options, "--engine", "python") == (
            2,
            f"embeval {name}: error: {parquet}: is Parquet: the engine reads it (--engine auto or duckdb), "
            "not --engine python\n",
        )
        assert _error(embeval, tmp_path, name, packed, *options, "--engine", "python") == (
            2,
            f"embeval {name}: error: {packed}: is gzip-compressed: the engine reads it (--engine auto or "
            "duckdb), not --engine python\n",
        )


def test_the_engine_reads_tsv_files_that_share_their_header(tmp_path: Path, embeval: Embeval) -> None:
    (tmp_path / "logs").mkdir()
    first = tmp_path / "logs" / "a.tsv"
    first.write_text("query\tlanguage\na\ten\nb\ten\n", encoding="utf-8")
    second = tmp_path / "logs" / "b.tsv"
    second.write_text("language\tquery\nen\tc\n", encoding="utf-8")
    pattern = f"{tmp_path}/logs/*.tsv"
    status, stderr = _error(embeval, tmp_path, "sample", pattern, *SAMPLE, "--engine", "duckdb")
    assert (status, stderr) == (
        2,
        f"embeval sample: error: {second}:1: its header row differs from {first}'s: the engine reads files "
        "that share one (--engine python reads each by its own)\n",
    )
    assert embeval("sample", pattern, *SAMPLE, "--engine", "python", "--out", tmp_path / "q.jsonl")[0] == 0


def test_a_tsv_log_of_two_fields_gives_the_same_sample_on_either_reader(
    tmp_path: Path, embeval: Embeval
) -> None:
    """The engine joins a copied row's stratum values with a tab, which no TSV cell holds: values that hold
    U+001F (the separator of a JSON log's) or are empty are each their own."""
    log = tmp_path / "log.tsv"
    rows = [
        ("refund", "e\x1fn", "web"),
        ("Refund", "e", "\x1fnweb"),
        ("refund", "", "web"),
        ("track", "e", ""),
    ]
    log.write_text(
        "query\tlanguage\tdevice\n" + "".join("\t".join(row) + "\n" for row in rows * 3), encoding="utf-8"
    )
    options = ["--by", "language,device", "--size", "4", "--floor", "0"]
    for reader in ("python", "duckdb"):
        status, stdout, _ = embeval(
            "sample", log, *options, "--engine", reader, "--out", tmp_path / f"{reader}.jsonl"
        )
        assert status == 0 and "12 searches, 4 distinct queries" in stdout, stdout
    assert (tmp_path / "python.jsonl").read_bytes() == (tmp_path / "duckdb.jsonl").read_bytes()
    assert (tmp_path / "python.draw.json").read_bytes() == (tmp_path / "duckdb.draw.json").read_bytes()


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_a_tsv_header_naming_a_column_twice_is_one_line_on_either_reader(
    tmp_path: Path, embeval: Embeval, engine: str
) -> None:
    """Which of the two columns holds the language no reader can tell: the Python reader took the first, the
    engine refused the file with its own message."""
    log = tmp_path / "log.tsv"
    log.write_text("\nquery\tlanguage\tlanguage\nrefund\ten\tde\n", encoding="utf-8")
    assert _error(embeval, tmp_path, "sample", log, *SAMPLE, "--engine", engine) == (
        2,
        f"embeval sample: error: {log}:2: header: duplicate column 'language'\n",
    )


def test_a_tsv_log_of_the_text_column_alone_gives_the_same_sample_on_either_reader(
    tmp_path: Path, embeval: Embeval
) -> None:
    log = tmp_path / "log.tsv"
    log.write_text(
        "query\nTrack  parcel\ntrack parcel\nrefund\nREFUND\nrefund \nwhere is it\n", encoding="utf-8"
    )
    options = ["--by", "band", "--size", "2", "--floor", "0"]
    for reader in ("python", "duckdb"):
        status, stdout, _ = embeval(
            "sample", log, *options, "--engine", reader, "--out", tmp_path / f"{reader}.jsonl"
        )
        assert status == 0 and "6 searches, 3 distinct queries" in stdout
    assert (tmp_path / "python.jsonl").read_bytes() == (tmp_path / "duckdb.jsonl").read_bytes()
    assert (tmp_path / "python.draw.json").read_bytes() == (tmp_path / "duckdb.draw.json").read_bytes()


def test_a_compressed_jsonl_log_is_read_by_the_engine(tmp_path: Path, embeval: Embeval) -> None:
    import gzip

    rows = week(1)
    plain = write_jsonl(tmp_path / "log.jsonl", rows)
    packed = tmp_path / "log.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert embeval("sample", plain, *OPTIONS, "--out", tmp_path / "a.jsonl")[0] == 0
    assert embeval("sample", packed, *OPTIONS, "--out", tmp_path / "b.jsonl")[0] == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


# --------------------------------------------------------------------------------------- corpus-sample


def write_corpus(path: Path, documents: int) -> Path:
    rows = [{"_id": f"d{i:05d}", "text": f"document {i}", "area": f"a{i % 3}"} for i in range(documents)]
    return write_jsonl(path, rows)


def write_qrels(path: Path, doc_ids: list[str]) -> Path:
    rows = [f"q{i % 3}\t{doc_id}\t1" for i, doc_id in enumerate(doc_ids)]
    path.write_text("query-id\tcorpus-id\tscore\n" + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


JUDGED = [f"d{i:05d}" for i in range(0, 2000, 100)]


def test_the_corpus_sample_is_todays_by_either_reader(tmp_path: Path, embeval: Embeval) -> None:
    """The sample of a fixed corpus and seed is byte for byte the one the reader before the engine wrote
    (its sha256, taken from that version), and the engine's sidecar is the Python reader's."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"d{i:05d}", "text": f"document {i}"}) + "\n" for i in range(2000)),
        encoding="utf-8",
    )
    qrels = write_qrels(tmp_path / "qrels.tsv", [*JUDGED, "gone-1", "gone-2"])
    before = {
        "0": "3253291a9c21047523ac268d6238bd376c7b128cc81215caece3df7937f3dd7b",
        "1": "9c91012d0cf49466b970800f767e40ee3721769ada2365359f4791b5a2e7cc25",
        "7": "ca2145e95c6c08b13376c570e02f940971752167019ea45ba4fdf705111b086c",
    }
    for seed, digest in before.items():
        sidecars = []
        for engine in ("python", "duckdb"):
            out = tmp_path / f"{engine}-{seed}.jsonl"
            run = ("corpus-sample", corpus, "--size", "222", "--keep-judged", qrels, "--seed", seed)
            assert embeval(*run, "--engine", engine, "--out", out)[0] == 0
            assert hashlib.sha256(out.read_bytes()).hexdigest() == digest
            sidecars.append(out.with_name(f"{engine}-{seed}.draw.json").read_bytes())
        assert sidecars[0] == sidecars[1]


def test_a_parquet_corpus_and_many_files_give_the_same_documents(tmp_path: Path, embeval: Embeval) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 2000)
    qrels = write_qrels(tmp_path / "qrels.tsv", [*JUDGED, "gone-1"])
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    write_parquet(tmp_path / "corpus.parquet", rows)
    (tmp_path / "parts").mkdir()
    for part in range(4):
        write_parquet(tmp_path / "parts" / f"part-{part}.parquet", rows[part * 500 : (part + 1) * 500])
        write_jsonl(tmp_path / "parts" / f"part-{part}.jsonl", rows[part * 500 : (part + 1) * 500])
    samples = {}
    for name, source, engine in (
        ("jsonl", corpus, "python"),
        ("parquet", tmp_path / "corpus.parquet", "auto"),
        ("parquet-parts", f"{tmp_path}/parts/*.parquet", "auto"),
        ("jsonl-parts", f"{tmp_path}/parts/*.jsonl", "python"),
        ("jsonl-parts-engine", f"{tmp_path}/parts/*.jsonl", "duckdb"),
    ):
        out = tmp_path / f"out-{name}.jsonl"
        status, _, stderr = embeval(
            "corpus-sample", source, "--size", "150", "--keep-judged", qrels, "--engine", engine, "--out", out
        )
        assert status == 0, stderr
        samples[name] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert samples["jsonl"] == samples["parquet"] == samples["parquet-parts"] == samples["jsonl-parts"]
    assert samples["jsonl-parts"] == samples["jsonl-parts-engine"]
    assert {row["_id"] for row in samples["parquet"]} >= set(JUDGED) and len(samples["parquet"]) == 150
    draw = json.loads((tmp_path / "out-parquet-parts.draw.json").read_text(encoding="utf-8"))
    assert draw["source"]["format"] == "parquet" and len(draw["source"]["files"]) == 4
    assert draw["judged"] == {"qrels": str(qrels), "documents": 21, "found": 20, "missing": 1}


#: Columns a file may hold that carry the names of the engine's own: the file a row came from, the reader's
#: numbering of Parquet rows (which a file's own column of that name hides), a row's place in our queries.
ENGINE_NAMES = ["filename", "file_index", "file_row_number", "embeval_position"]


def _with_engine_names(rows: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The rows with columns of the engine's names, their values scrambled (``file_index`` falling): a
    reader that took them for its own would number the rows wrongly, and take a query's last spelling for
    its first."""
    values = {"filename": lambda i: f"doc-{i % 3}.pdf", "file_index": lambda i: 1000 - i}
    return [
        {**row, **{name: values.get(name, lambda i: (i * 7919) % 101)(i) for name in names}}
        for i, row in enumerate(rows)
    ]


@pytest.mark.parametrize(
    "names", [ENGINE_NAMES[:1], ENGINE_NAMES[1:2], ENGINE_NAMES], ids=["filename", "file_index", "all"]
)
def test_logs_with_columns_of_the_engines_names_give_the_sample_of_their_rows(
    tmp_path: Path, embeval: Embeval, names: list[str]
) -> None:
    """Two Parquet files, a TSV file and a JSONL log stratified by such a column, each holding columns named
    like the engine's own, give the Python reader's sample of the same rows."""
    rows = _with_engine_names(week(1) + week(2), names)
    (tmp_path / "days").mkdir()
    write_parquet(tmp_path / "days" / "1.parquet", rows[:40])
    write_parquet(tmp_path / "days" / "2.parquet", rows[40:])
    jsonl = write_jsonl(tmp_path / "log.jsonl", rows)
    tsv = tmp_path / "log.tsv"
    header = ["query", "language", *names]
    tsv.write_text(
        "\t".join(header) + "\n" + "".join("\t".join(str(r[k]) for k in header) + "\n" for r in rows),
        encoding="utf-8",
    )

    def sampled(source: str | Path, engine: str, *by: str) -> tuple[bytes, Any]:
        out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}.jsonl"
        options = [
            *OPTIONS[2:],
            "--by",
            ",".join(["language", *by, "band"]),
            *(["--floor", "0"] if by else []),
        ]
        status, _, stderr = embeval("sample", source, *options, "--engine", engine, "--out", out)
        assert status == 0, stderr
        draw = json.loads(out.with_suffix("").with_suffix(".draw.json").read_text("utf-8"))
        return out.read_bytes(), (draw["strata"], draw["band_traffic"], draw["distinct"])

    expected = sampled(jsonl, "python")
    assert sampled(f"{tmp_path}/days/*.parquet", "duckdb") == expected
    assert sampled(tsv, "duckdb") == sampled(tsv, "python") == expected
    assert sampled(jsonl, "duckdb", names[0]) == sampled(jsonl, "python", names[0])


def test_a_bad_row_of_a_parquet_log_holding_the_readers_names_is_found_where_it_is(
    tmp_path: Path, embeval: Embeval
) -> None:
    rows = _with_engine_names([{"query": f"q{i}", "language": "en"} for i in range(6)], ENGINE_NAMES)
    rows[4]["language"] = None
    first = write_parquet(tmp_path / "1.parquet", rows[:3])
    second = write_parquet(tmp_path / "2.parquet", rows[3:])
    assert first.exists()
    assert _error(embeval, tmp_path, "sample", f"{tmp_path}/*.parquet", *SAMPLE) == (
        2,
        f"embeval sample: error: {second}:2: language: must be a string or number, got null\n",
    )


def test_a_parquet_corpus_with_columns_of_the_engines_names_gives_the_same_documents(
    tmp_path: Path, embeval: Embeval
) -> None:
    corpus = write_jsonl(
        tmp_path / "corpus.jsonl",
        _with_engine_names(
            [
                json.loads(line)
                for line in write_corpus(tmp_path / "plain.jsonl", 2000).read_text().splitlines()
            ],
            ENGINE_NAMES,
        ),
    )
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    (tmp_path / "parts").mkdir()
    for part in range(2):
        write_parquet(tmp_path / "parts" / f"part-{part}.parquet", rows[part * 1000 : (part + 1) * 1000])
    qrels = write_qrels(tmp_path / "qrels.tsv", [*JUDGED, "gone-1"])
    samples = []
    for source, engine in ((corpus, "python"), (f"{tmp_path}/parts/*.parquet", "duckdb")):
        out = tmp_path / f"out-{engine}.jsonl"
        status, _, stderr = embeval(
            "corpus-sample", source, "--size", "150", "--keep-judged", qrels, "--engine", engine, "--out", out
        )
        assert status == 0, stderr
        samples.append([json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()])
    assert samples[0] == samples[1] and set(samples[1][0]) == {"_id", "text", "area", *ENGINE_NAMES}


def test_bad_corpora_give_one_line_on_either_reader(tmp_path: Path, embeval: Embeval) -> None:
    qrels = write_qrels(tmp_path / "qrels.tsv", ["d00001"])

    def corpus_sample(corpus: str | Path, engine: str) -> tuple[int, str]:
        return _error(
            embeval,
            tmp_path,
            "corpus-sample",
            corpus,
            "--size",
            "5",
            "--keep-judged",
            qrels,
            "--engine",
            engine,
        )

    no_id = write_jsonl(tmp_path / "no-id.jsonl", [{"_id": "d00001", "text": "a"}, {"text": "b"}])
    twice = write_jsonl(
        tmp_path / "twice.jsonl", [{"_id": "d00001", "text": "a"}, {"_id": "d00001", "text": "b"}]
    )
    spaced = write_jsonl(
        tmp_path / "spaced.jsonl", [{"_id": "d00001", "text": "a"}, {"_id": "d 2", "text": "b"}]
    )
    for engine in ("python", "duckdb"):
        assert corpus_sample(no_id, engine) == (
            2,
            f"embeval corpus-sample: error: {no_id}:2: _id: missing required key\n",
        )
        assert corpus_sample(twice, engine) == (
            2,
            f"embeval corpus-sample: error: {twice}:2: _id: duplicate document id 'd00001' (first on line "
            "1)\n",
        )
        assert corpus_sample(spaced, engine) == (
            2,
            f"embeval corpus-sample: error: {spaced}:2: _id: 'd 2' contains whitespace (ids must be single "
            "tokens, as in TREC run files)\n",
        )
    (tmp_path / "parts").mkdir()
    first = write_jsonl(tmp_path / "parts" / "a.jsonl", [{"_id": "d00001", "text": "a"}])
    again = write_jsonl(
        tmp_path / "parts" / "b.jsonl", [{"_id": "x", "text": "b"}, {"_id": "d00001", "text": "c"}]
    )
    for engine in ("python", "duckdb"):
        assert corpus_sample(f"{tmp_path}/parts/*.jsonl", engine) == (
            2,
            f"embeval corpus-sample: error: {again}:2: _id: duplicate document id 'd00001' (first at "
            f"{first}:1)\n",
        )
    parquet = write_parquet(
        tmp_path / "twice.parquet",
        [{"_id": "d00001", "text": "a"}, {"_id": "x", "text": "b"}, {"_id": "d00001", "text": "c"}],
    )
    assert corpus_sample(parquet, "auto") == (
        2,
        f"embeval corpus-sample: error: {parquet}:3: _id: duplicate document id 'd00001' (first on line 1)\n",
    )
    no_column = write_parquet(tmp_path / "no-column.parquet", [{"id": "d00001", "text": "a"}])
    assert corpus_sample(no_column, "auto") == (
        2,
        f"embeval corpus-sample: error: {no_column}: _id: the file has no field '_id'; did you mean 'id'?\n",
    )
    null_id = write_parquet(
        tmp_path / "null-id.parquet", [{"_id": "d00001", "text": "a"}, {"_id": None, "text": "b"}]
    )
    assert corpus_sample(null_id, "auto") == (
        2,
        f"embeval corpus-sample: error: {null_id}:2: _id: missing required key\n",
    )
    pattern = f"{tmp_path}/none/*.parquet"
    assert corpus_sample(pattern, "auto") == (
        2,
        f"embeval corpus-sample: error: {pattern}: no file matches this pattern\n",
    )
