"""Hostile data (items 5 to 10 of this round, and its own cases): text that is not valid Unicode, files that
tracebacks came from, the suggested qrels mapping, seeds, stray entries of the cache, and messages that
misled. Each case asserts the exact one line, the exit status, and that every input is byte-identical
afterwards (`file_snapshots`)."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from file_snapshots import snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_helpers import CliResult, golden_files
from test_decision import run

from pytest_embeval.golden.data_files import GoldenError, is_integer
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.qrels_files import HEADER_NAMES

Embeval = Callable[..., CliResult]
Golden = Callable[..., Path]
MODELS = ["--model", "fake_models:good", "--model", "fake_models:bad"]


def collection_error(result: pytest.RunResult, line: str) -> None:
    """The run stopped at collection (exit 2) with ``line``, and no traceback."""
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert line in result.stdout.lines, result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def rewrite_line(path: Path, number: int, old: str, new: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


# --- 5. a lone surrogate -----------------------------------------------------------------------------------

SURROGATE = (
    "not valid Unicode: a lone surrogate \\ud83d in 'text' (an escape of half a character, e.g. an emoji cut "
    "in two); write the whole character"
)


@pytest.mark.parametrize(
    ("file", "line", "old"),
    [("queries.jsonl", 4, '"en 3"'), ("corpus.jsonl", 6, '"doc 5"')],
)
def test_a_lone_surrogate_in_a_data_file_is_one_line_at_load(
    pytester: pytest.Pytester, golden: Golden, file: str, line: int, old: str
) -> None:
    """Valid JSON, not valid text: in a query it was three errors with tracebacks; in a document it loaded,
    and --embeval-pool crashed at the end with neither the sheet nor the report written."""
    golden()
    rewrite_line(pytester.path / "support" / file, line, old, old[:-1] + ' \\ud83d"')
    before = snapshot(pytester.path)
    outputs = [f"--embeval-pool={pytester.path / 'pool'}", f"--embeval-json={pytester.path / 'r.json'}"]
    result = run(pytester, "good", *outputs)
    collection_error(result, f"support/{file}:{line}: {SURROGATE}")
    assert snapshot(pytester.path) == before


def test_a_lone_surrogate_inline_in_the_golden_file_is_one_line_at_load(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    path = golden(
        queries=[{"id": "q1", "text": "en \ud83d", "language": "en", "relevant": {"d01": 1}}],
        strata=["language"],
    )
    before = snapshot(pytester.path)
    line = next(
        i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "\\uD83D" in text
    )
    collection_error(
        run(pytester, "good"),
        f"support.yaml:{line}: not valid Unicode: a lone surrogate \\ud83d (an escape of half a character, "
        "e.g. an emoji cut in two); write the whole character",
    )
    assert snapshot(pytester.path) == before


@pytest.mark.parametrize(
    ("command", "file", "text", "line"),
    [
        pytest.param(
            ["sample", "log.jsonl", "--by", "lang", "--size", "1", "--floor", "1", "--out", "s.jsonl"],
            "log.jsonl",
            '{"query": "ok", "lang": "en"}\n{"query": "bad \\ud83d", "lang": "en"}\n',
            "embeval sample: error: log.jsonl:2: not valid Unicode: a lone surrogate \\ud83d in 'query' (an "
            "escape of half a character, e.g. an emoji cut in two); write the whole character",
            id="a-query-log",
        ),
        pytest.param(
            ["pool", "support.yaml", *MODELS, "--seeds", "seeds.jsonl", "--out", "s.csv"],
            "seeds.jsonl",
            '{"query_id": "q00", "doc_id": "d05", "source": "tick\\ud83det"}\n',
            "embeval pool: error: seeds.jsonl:1: not valid Unicode: a lone surrogate \\ud83d in 'source' (an "
            "escape of half a character, e.g. an emoji cut in two); write the whole character",
            id="a-seed's-source",
        ),
        pytest.param(
            ["refresh", "support.yaml", "--out", "r.csv"],
            "support/qrels.provenance.jsonl",
            '{"query_id": "q00", "doc_id": "d00", "grade": 1, "judge": "an\\ud83da", "kind": "person"}\n',
            "embeval refresh: error: {root}/support/qrels.provenance.jsonl:1: not valid Unicode: a lone "
            "surrogate \\ud83d in 'judge' (an escape of half a character, e.g. an emoji cut in two); write "
            "the whole character",
            id="a-judge-in-the-provenance",
        ),
    ],
)
def test_a_lone_surrogate_read_by_a_command_is_one_line(
    tmp_path: Path,
    embeval: Embeval,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    file: str,
    text: str,
    line: str,
) -> None:
    """Found by this round's own cases: a seed's source was a traceback when its sheet was written, a
    judge's name in the provenance was accepted and broke the next rewrite of it."""
    monkeypatch.chdir(tmp_path)
    golden_files(tmp_path)
    (tmp_path / file).write_text(text, encoding="utf-8")
    before = snapshot(tmp_path)
    assert embeval(*command) == (2, "", line.format(root=tmp_path) + "\n")
    assert snapshot(tmp_path) == before


# --- 6. tracebacks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"query_id": "q00"', "invalid JSON: Expecting ',' delimiter (column 19)"),
        ("[1, 2]", "expected a JSON object, got a list"),
        (
            '{"query_id": "q00", "doc_id": "d00", "grade": "x", "judge": "a", "kind": "person"}',
            "grade: missing or not a grade",
        ),
    ],
)
def test_refresh_with_a_damaged_provenance_sidecar_is_one_line(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    golden_files(tmp_path)
    (tmp_path / "support" / "qrels.provenance.jsonl").write_text(text + "\n", encoding="utf-8")
    before = snapshot(tmp_path)
    sidecar = tmp_path / "support" / "qrels.provenance.jsonl"
    assert embeval("refresh", "support.yaml", "--out", "r.csv") == (
        2,
        "",
        f"embeval refresh: error: {sidecar}:1: {problem}\n",
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("nested", "line", "depth", "column"),
    [
        ("metric: " + "[" * 2000 + "]" * 2000, 13, 2001, 2008),
        ("metric:\n" + "".join(" " * i + "k:\n" for i in range(1, 600)), 612, 600, 600),
    ],
    ids=["flow", "block"],
)
def test_a_yaml_file_nested_deeper_than_the_parser_recurses_is_one_line(
    pytester: pytest.Pytester, golden: Golden, nested: str, line: int, depth: int, column: int
) -> None:
    path = golden()
    text = re.sub(r"(?m)^metric: .*\n", "", path.read_text(encoding="utf-8"))
    path.write_text(text + nested + "\n", encoding="utf-8")
    before = snapshot(pytester.path)
    collection_error(
        run(pytester, "good"),
        f"support.yaml:{line}: invalid YAML: lists or mappings nested {depth} deep, more than the parser can "
        f"read (column {column})",
    )
    assert snapshot(pytester.path) == before


def test_a_billion_laughs_yaml_file_is_read_once_per_node(pytester: pytest.Pytester, golden: Golden) -> None:
    """Found by this round's own cases: the text check walked every alias again, 10^9 times here."""
    path = golden()
    laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)
    )
    path.write_text(path.read_text(encoding="utf-8") + laughs, encoding="utf-8")
    result = run(pytester, "good")
    collection_error(result, f"support.yaml:14: a0: unknown key (expected one of: {_golden_keys()})")


def _golden_keys() -> str:
    from pytest_embeval.golden.loader import KNOWN_KEYS

    return ", ".join(KNOWN_KEYS)


# --- 7. the suggested qrels mapping -----------------------------------------------------------------------

_KNOWN = frozenset().union(*HEADER_NAMES.values())
_NAME = (
    st.text(
        st.characters(min_codepoint=0x20, max_codepoint=0x24F, exclude_characters="\x7f"),
        min_size=1,
        max_size=8,
    )
    .map(str.strip)
    .filter(lambda name: bool(name) and name.lower() not in _KNOWN)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.lists(_NAME, min_size=3, max_size=3, unique_by=str.lower).filter(lambda h: not is_integer(h[2]))
)
def test_every_suggested_qrels_mapping_parses_and_reads_the_file(
    tmp_path_factory: pytest.TempPathFactory, header: list[str]
) -> None:
    """A header of names the reader does not know is refused with a mapping to paste under 'qrels:'; pasted,
    it must be valid YAML and read the file, whatever the names (``#query``, ``doc: id``, ``[rel]``)."""
    root = tmp_path_factory.mktemp("mapping")
    path = golden_files(root)
    mapping = refused_header(path, header).split("name them under 'qrels:' with ", 1)[1]
    plan = yaml.safe_load(path.read_text(encoding="utf-8"))
    plan["qrels"] = yaml.safe_load(mapping.replace("FILE", "support/qrels.tsv"))
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    assert load_golden(path).qrels == load_golden(golden_files(root / "plain")).qrels


@pytest.mark.parametrize("header", [["#query", "doc: id", "[rel]"], ["'q'", "- d", "*g"]])
def test_the_suggested_mapping_quotes_what_yaml_reads_otherwise(tmp_path: Path, header: list[str]) -> None:
    message = refused_header(golden_files(tmp_path), header)
    quoted = ", ".join(
        f"{role}: '{name.replace(chr(39), chr(39) * 2)}'"
        for role, name in zip(("query", "document", "grade"), header, strict=True)
    )
    assert message.endswith(f"with {{path: FILE, columns: {{{quoted}}}}}")


def refused_header(golden: Path, header: list[str]) -> str:
    """The error loading ``golden`` gives once its qrels file's header is ``header``."""
    qrels = golden.parent / "support" / "qrels.tsv"
    rows = qrels.read_text(encoding="utf-8").splitlines()[1:]
    qrels.write_text("\t".join(header) + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(GoldenError) as refused:
        load_golden(golden)
    return str(refused.value)


# --- 8. seeds -----------------------------------------------------------------------------------------------


def numeric_ids(root: Path) -> Path:
    """The conftest golden set with JSON integer ids (query 7, document 1007), as a database exports them."""
    path = golden_files(root)
    data = root / "support"
    for name, offset in (("queries.jsonl", 0), ("corpus.jsonl", 1000)):
        rows = [json.loads(line) for line in (data / name).read_text(encoding="utf-8").splitlines()]
        text = "".join(json.dumps({**row, "_id": offset + int(row["_id"][1:])}) + "\n" for row in rows)
        (data / name).write_text(text, encoding="utf-8")
    qrels = (data / "qrels.tsv").read_text(encoding="utf-8").splitlines()
    body = [f"{int(q[1:])}\t{1000 + int(d[1:])}\t{g}" for q, d, g in (line.split("\t") for line in qrels[1:])]
    (data / "qrels.tsv").write_text("\n".join([qrels[0], *body]) + "\n", encoding="utf-8")
    return path


def test_integer_ids_in_a_json_seed_file_are_read_as_the_golden_loader_reads_them(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    numeric_ids(tmp_path)
    (tmp_path / "seeds.jsonl").write_text(
        '{"query_id": 7, "doc_id": 1020, "source": "ticket"}\n', encoding="utf-8"
    )
    before = snapshot(tmp_path / "support", tmp_path / "seeds.jsonl")
    status, out, err = embeval("pool", "support.yaml", *MODELS, "--seeds", "seeds.jsonl", "--out", "s.csv")
    assert (status, err) == (0, "")
    assert (
        out.splitlines()[0]
        == "seeds from seeds.jsonl: 1 (ticket 1); already judged or on an excluded sheet: 0"
    )
    sheet = (tmp_path / "s.csv").read_text(encoding="utf-8")
    seeded = [line for line in sheet.splitlines() if line.endswith(",ticket")]
    assert len(seeded) == 1 and ",7,en 7,1020," in seeded[0]
    assert snapshot(tmp_path / "support", tmp_path / "seeds.jsonl") == before


def test_a_day_in_the_future_is_refused_wherever_it_is_written(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seed dated 2099 was trusted into the qrels (their age then read 2099); a sheet last modified in the
    future dated the judgments merged from it (found by this round's own cases)."""
    monkeypatch.chdir(tmp_path)
    golden_files(tmp_path)
    (tmp_path / "seeds.jsonl").write_text(
        '{"query_id": "q00", "doc_id": "d05", "source": "ticket", "judged_on": "2099-01-01"}\n',
        encoding="utf-8",
    )
    sheet = tmp_path / "graded.csv"
    sheet.write_text("query_id,doc_id,pair_id,query,document,grade,judge,notes\n", encoding="utf-8")
    future = datetime(2099, 1, 1, tzinfo=timezone.utc).timestamp()
    os.utime(sheet, (future, future))
    before = snapshot(tmp_path)
    trust = ["--seeds", "seeds.jsonl", "--trust-seeds"]
    assert embeval("pool", "support.yaml", *MODELS, *trust, "--out", "s.csv") == (
        2,
        "",
        f"embeval pool: error: seeds.jsonl:1: judged_on: 2099-01-01 is in the future (today is {today()}, "
        "UTC)\n",
    )
    assert embeval("merge", "support.yaml", "graded.csv") == (
        2,
        "",
        f"embeval merge: error: graded.csv: last modified on 2099-01-01 is in the future (today is "
        f"{today()}, UTC); give the day with --judged-on\n",
    )
    assert snapshot(tmp_path) == before


# --- 9. stray entries of the cache --------------------------------------------------------------------------


@pytest.fixture
def cache(pytester: pytest.Pytester, golden: Golden) -> Path:
    """The embedding cache a run of the conftest golden set left."""
    golden()
    assert run(pytester, "good").ret == pytest.ExitCode.OK
    return pytester.path / ".embeval_cache"


def test_an_entry_named_like_a_pack_that_is_not_one_stops_neither_verify_nor_prune(
    cache: Path, embeval: Embeval
) -> None:
    packs = sorted(cache.rglob("*.pack"))
    shelf = packs[0].parent
    (shelf / "aaaa.pack").mkdir()
    os.mkfifo(shelf / "bbbb.pack")
    rel = shelf.relative_to(cache)
    status, out, err = embeval("cache", "stats", "--cache-dir", cache)
    assert (status, err) == (0, "")
    assert out.splitlines()[-2:] == [
        f"{rel}/aaaa.pack: a folder, not a pack file (not counted)",
        f"{rel}/bbbb.pack: a FIFO, not a pack file (not counted)",
    ]
    assert f"in {len(packs)} packs of 1 model" in out
    status, out, err = embeval("cache", "verify", "--cache-dir", cache)
    assert (status, err) == (1, "")
    assert out.splitlines()[:3] == [
        f"checked {len(packs)} packs (108 entries) in {cache}/: 0 damaged; 2 not packs or unreadable",
        f"{rel}/aaaa.pack: a folder, not a pack file",
        f"{rel}/bbbb.pack: a FIFO, not a pack file",
    ]
    status, out, err = embeval("cache", "prune", "--max-size", "0", "--cache-dir", cache)
    assert (status, err) == (1, "")
    assert out.splitlines()[1:] == [
        f"{rel}/aaaa.pack: a folder, not a pack file (left alone)",
        f"{rel}/bbbb.pack: a FIFO, not a pack file (left alone)",
    ]
    assert sorted(cache.rglob("*.pack")) == [shelf / "aaaa.pack", shelf / "bbbb.pack"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_pack_the_user_cannot_read_is_reported_and_the_others_checked(
    cache: Path, embeval: Embeval
) -> None:
    packs = sorted(cache.rglob("*.pack"))
    packs[0].chmod(0)
    try:
        status, out, _ = embeval("cache", "verify", "--cache-dir", cache)
    finally:
        packs[0].chmod(0o644)
    assert status == 1
    assert f"{packs[0].relative_to(cache)}: cannot be read: Permission denied" in out.splitlines()


# --- 10. messages that misled -----------------------------------------------------------------------------


def test_an_emptied_pack_is_counted_as_a_pack_whose_entries_are_unknown(
    pytester: pytest.Pytester, cache: Path
) -> None:
    pack = max(cache.rglob("*.pack"), key=lambda path: path.stat().st_size)
    pack.write_bytes(b"")
    result = run(pytester, "good")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "embeval: found 1 cache pack in .embeval_cache/ whose header could not be read (how many entries "
            "it held is unknown): discarded, its texts embedded again"
        ]
    )
    result.stdout.no_fnmatch_line("*corrupt cache entr*")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["refresh", "support.yaml", "--fraction", "-1", "--out", "r.csv"],
            "argument --fraction: expected a number in (0, 1], got '-1'",
        ),
        (
            ["refresh", "support.yaml", "--fraction", "0", "--out", "r.csv"],
            "argument --fraction: expected a number in (0, 1], got '0'",
        ),
    ],
)
def test_refresh_fraction_says_the_interval_it_takes(
    tmp_path: Path, embeval: Embeval, monkeypatch: pytest.MonkeyPatch, args: list[str], line: str
) -> None:
    monkeypatch.chdir(tmp_path)
    golden_files(tmp_path)
    before = snapshot(tmp_path)
    status, _, err = embeval(*args)
    assert status == 2 and err.splitlines()[-1] == f"embeval refresh: error: {line}"
    assert snapshot(tmp_path) == before


def test_a_one_column_tsv_log_is_read(tmp_path: Path, embeval: Embeval) -> None:
    log = tmp_path / "log.tsv"
    log.write_text("query\nhello\nworld\nhello\n", encoding="utf-8")
    before = snapshot(log)
    status, out, err = embeval(
        "sample", log, "--by", "band", "--size", "2", "--floor", "1", "--out", tmp_path / "s.jsonl"
    )
    assert (status, err) == (0, "")
    assert out.splitlines()[0].startswith(f"{log}: 3 searches, 2 distinct queries (")
    assert snapshot(log) == before


@pytest.mark.parametrize(
    ("split", "line", "key"),
    [(None, "qrels/test.tsv", "beir"), ("dev", "qrels/dev.tsv", "beir")],
)
def test_a_beir_folder_without_any_qrels_says_so(
    pytester: pytest.Pytester, golden: Golden, split: str | None, line: str, key: str
) -> None:
    golden()
    folder = pytester.path / "support"
    (folder / "qrels.tsv").unlink()
    settings_: dict[str, Any] = {"beir": "support"} | ({"split": split} if split else {})
    plan = {**settings_, "metric": "hit@1", "strata": ["language"]}
    (pytester.path / "support.yaml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    before = snapshot(pytester.path)
    result = run(pytester, "good")
    problem = f"no qrels file in {folder} (looked for {line} and qrels.tsv)"
    collection_error(result, f"support.yaml:1: beir: {problem}")
    assert "remove 'split'" not in result.stdout.str()
    assert snapshot(pytester.path) == before


# --- this round's own cases -------------------------------------------------------------------------------


def test_an_integer_of_more_digits_than_python_converts_is_invalid_json(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    rewrite_line(
        pytester.path / "support" / "corpus.jsonl", 3, '"doc 2"}', '"doc 2", "n": ' + "9" * 5000 + "}"
    )
    before = snapshot(pytester.path)
    collection_error(
        run(pytester, "good"),
        "support/corpus.jsonl:3: invalid JSON: Exceeds the limit (4300 digits) for integer string "
        "conversion: value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit",
    )
    assert snapshot(pytester.path) == before


def test_a_provenance_line_dated_in_the_future_is_refused(pytester: pytest.Pytester, golden: Golden) -> None:
    """It made the judgments look as fresh as one liked: the shelf life never ran out."""
    golden()
    sidecar = pytester.path / "support" / "qrels.provenance.jsonl"
    record = {"query_id": "q00", "doc_id": "d00", "grade": 1, "judge": "ana", "kind": "person"}
    sidecar.write_text(json.dumps({**record, "judged_on": "2099-01-01"}) + "\n", encoding="utf-8")
    before = snapshot(pytester.path)
    collection_error(
        run(pytester, "good"),
        f"support/qrels.provenance.jsonl:1: judged_on: 2099-01-01 is in the future (today is {today()}, UTC)",
    )
    assert snapshot(pytester.path) == before


def test_a_device_is_never_read_as_a_log_or_a_corpus(tmp_path: Path, embeval: Embeval) -> None:
    """/dev/zero holds no line break: the log was read into memory until the machine ran out of it."""
    golden_files(tmp_path)
    before = snapshot(tmp_path)
    for args in (
        ["sample", "/dev/zero", "--by", "band", "--size", "2", "--floor", "1"],
        ["corpus-sample", "/dev/zero", "--size", "100", "--keep-judged", tmp_path / "support" / "qrels.tsv"],
    ):
        status, _, err = embeval(*args, "--out", tmp_path / "s.jsonl")
        assert (status, err) == (
            2,
            f"embeval {args[0]}: error: /dev/zero: cannot read: a character device, not a file to read\n",
        )
    assert snapshot(tmp_path) == before


def test_a_fifo_named_like_an_earlier_pool_sheet_is_neither_read_nor_reused(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    """A FIFO nobody writes to never ends: read as an earlier sheet, it hung the run at its end."""
    golden()
    pool = pytester.path / "pool"
    pool.mkdir()
    os.mkfifo(pool / "support.pool.csv")
    result = run(pytester, "bad", f"--embeval-pool={pool}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"embeval pool: sheet written to {pool / 'support.pool-2.csv'}"])
    assert stat.S_ISFIFO(os.stat(pool / "support.pool.csv").st_mode)
