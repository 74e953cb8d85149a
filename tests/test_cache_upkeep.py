"""``embeval cache stats|verify|prune``: what it shows, what it removes (and what the next run then embeds),
its bad inputs, and its safety while a run uses the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cache import DIM, TEXTS, Recorder, flip, packs, vectors_offset

from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.store import CacheStats, EmbeddingCache
from pytest_embeval.cache.upkeep import ORPHAN_AGE_NS
from pytest_embeval.cli.cache_upkeep import parse_duration, parse_size
from pytest_embeval.cli.embeval import main

#: A pack of n rows of DIM float32: header (84 bytes), per row a key, crc32 and token count (40), the row.
PACK_BYTES = {n: 84 + n * (40 + DIM * 4) for n in (50, 100, 150)}
DAY = 86400 * 10**9


def fill(root: Path) -> tuple[Recorder, Recorder]:
    """Two models: "old" with 150 documents (one pack) last used 40 days ago, "new" with 100 queries and 50
    documents, used now."""
    old, new = Recorder("old"), Recorder("new")
    cache = EmbeddingCache(root)
    cache.embed(resolve_model(old), TEXTS, "document")
    cache.embed(resolve_model(new), TEXTS[:100], "query")
    cache.embed(resolve_model(new), TEXTS[:50], "document")
    then = time.time_ns() - 40 * DAY
    for path in packs(root):
        if json.loads((path.parent.parent / "fingerprint.json").read_text(encoding="utf-8"))["name"] == "old":
            os.utime(path, ns=(then, then))
    old.encoded.clear()
    new.encoded.clear()
    return old, new


def digest_of(model: Recorder) -> str:
    return resolve_model(model).digest.removeprefix("sha256:")[:16]


def embeval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def test_stats_shows_entries_packs_size_and_last_use_per_model_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = fill(tmp_path)
    status, out, err = embeval(capsys, "cache", "stats", "--cache-dir", str(tmp_path))
    total = PACK_BYTES[150] + PACK_BYTES[100] + PACK_BYTES[50]
    assert (status, err) == (0, [])
    n, o = digest_of(new), digest_of(old)
    assert out == [
        f"cache directory {tmp_path}{os.sep}",
        f"model  digest{' ' * 12}kind      entries  packs     size  last use",
        f"new    {n}  query         100      1  10.5 kB  <1 h ago",
        f"new    {n}  document       50      1   5.3 kB  <1 h ago",
        f"old    {o}  document      150      1  15.7 kB  40 d ago",
        "HNSW graphs: 0 files, 0 B",
        "orphaned temporary files: 0, 0 B",
        f"total: 300 entries in 3 packs of 2 models, 31.5 kB ({total:,} bytes)",
    ]


def test_prune_older_than_frees_the_stated_bytes_and_the_next_run_embeds_exactly_those(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = fill(tmp_path)
    status, out, _ = embeval(capsys, "cache", "prune", "--older-than", "30d", "--cache-dir", str(tmp_path))
    assert status == 0
    assert out == [
        f"removed 1 pack (150 entries), 0 HNSW graphs and 0 orphaned temporary files from "
        f"{tmp_path}{os.sep}: {PACK_BYTES[150]:,} bytes (15.7 kB) freed, 15.8 kB left"
    ]
    cache = EmbeddingCache(tmp_path)
    cache.embed(resolve_model(old), TEXTS, "document")
    cache.embed(resolve_model(new), TEXTS[:100], "query")
    cache.embed(resolve_model(new), TEXTS[:50], "document")
    assert sorted(old.encoded) == sorted(("document", text) for text in TEXTS) and new.encoded == []
    assert cache.stats() == CacheStats(read=150, embedded=150)


def test_prune_max_size_removes_the_least_recently_used_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, new = fill(tmp_path)
    (documents,) = [p for p in packs(tmp_path) if p.parent.name == "document" and digest_of(new) in str(p)]
    then = time.time_ns() - 2 * DAY
    os.utime(documents, ns=(then, then))  # new's documents: used after old's, before new's queries
    limit = PACK_BYTES[100]  # room for new's queries only
    status, out, _ = embeval(
        capsys, "cache", "prune", "--max-size", f"{limit}B", "--cache-dir", str(tmp_path)
    )
    assert status == 0 and f"{PACK_BYTES[150] + PACK_BYTES[50]:,} bytes" in out[0]
    assert [p.parent.name for p in packs(tmp_path)] == ["query"]
    EmbeddingCache(tmp_path).embed(resolve_model(new), TEXTS[:50], "document")
    assert sorted(new.encoded) == sorted(("document", text) for text in TEXTS[:50])


def test_prune_model_by_digest_name_or_spec_removes_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, new = fill(tmp_path)
    status, out, _ = embeval(capsys, "cache", "prune", "--model", "old", "--cache-dir", str(tmp_path))
    assert status == 0 and f"{PACK_BYTES[150]:,} bytes" in out[0]
    assert sorted(p.name for p in (tmp_path / "embeddings").iterdir()) == [digest_of(new)]
    status, out, _ = embeval(
        capsys, "cache", "prune", "--model", digest_of(new)[:6], "--dry-run", "--cache-dir", str(tmp_path)
    )
    assert (
        status == 0 and out[0].startswith("would remove 2 packs (150 entries)") and len(packs(tmp_path)) == 2
    )


def graph(root: Path, name: str, size: int, days_ago: float) -> Path:
    """A file where `GraphStore` keeps a graph, last used ``days_ago``."""
    path = root / "graphs" / f"{name * 32}-{name * 64}.hnsw"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"g" * size)
    then = time.time_ns() - int(days_ago * DAY)
    os.utime(path, ns=(then, then))
    return path


def test_prune_older_than_removes_the_graphs_no_run_loaded_lately_and_model_leaves_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, new = fill(tmp_path)
    stale, fresh = graph(tmp_path, "a", 7000, days_ago=40), graph(tmp_path, "b", 3000, days_ago=1)
    status, out, _ = embeval(
        capsys, "cache", "prune", "--model", digest_of(new), "--cache-dir", str(tmp_path)
    )
    assert status == 0 and ", 0 HNSW graphs and " in out[0] and stale.exists() and fresh.exists()
    status, out, _ = embeval(capsys, "cache", "prune", "--older-than", "30d", "--cache-dir", str(tmp_path))
    assert status == 0
    assert out[0].startswith("removed 1 pack (150 entries), 1 HNSW graph and 0 orphaned temporary files")
    assert f": {PACK_BYTES[150] + 7000:,} bytes" in out[0]
    assert not stale.exists() and fresh.exists()


def test_prune_max_size_weighs_graphs_and_packs_by_last_use_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, new = fill(tmp_path)  # old's documents used 40 days ago, new's packs now
    oldest = graph(tmp_path, "a", 4000, days_ago=50)
    between = graph(tmp_path, "b", 4000, days_ago=20)
    recent = graph(tmp_path, "c", 4000, days_ago=0.5)
    # room for new's two packs and one graph: the oldest go first, the graph of 50 days before the pack of 40
    limit = PACK_BYTES[100] + PACK_BYTES[50] + 4000
    status, out, _ = embeval(
        capsys, "cache", "prune", "--max-size", f"{limit}B", "--dry-run", "--cache-dir", str(tmp_path)
    )
    assert status == 0 and out[0].startswith("would remove 1 pack (150 entries), 2 HNSW graphs and ")
    assert oldest.exists() and between.exists()
    status, out, _ = embeval(
        capsys, "cache", "prune", "--max-size", f"{limit}B", "--cache-dir", str(tmp_path)
    )
    assert status == 0 and f": {PACK_BYTES[150] + 8000:,} bytes" in out[0]
    assert sorted((tmp_path / "graphs").iterdir()) == [recent]
    assert sorted(p.parent.name for p in packs(tmp_path)) == ["document", "query"]
    assert all(digest_of(new) in str(p) for p in packs(tmp_path))


def test_orphaned_temporary_files_are_removed_and_a_live_writers_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path)
    shelf = packs(tmp_path)[0].parent
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    killed = shelf / f".x.pack.{int(dead.stdout)}-0badc0de.tmp"  # its writer is gone
    writing = shelf / f".y.pack.{os.getpid()}-00c0ffee.tmp"  # this process: a write in progress
    stale = shelf / f".z.pack.{os.getpid()}-0000beef.tmp"
    for path in (killed, writing, stale):
        path.write_bytes(b"12345")
    then = time.time_ns() - ORPHAN_AGE_NS - 10**9
    os.utime(stale, ns=(then, then))
    status, out, _ = embeval(capsys, "cache", "prune", "--cache-dir", str(tmp_path))
    assert status == 0
    assert (
        out[0].startswith("removed 0 packs (0 entries), 0 HNSW graphs and 2 orphaned temporary files")
        and "10 bytes" in out[0]
    )
    assert writing.exists() and not killed.exists() and not stale.exists()


def test_verify_reports_damage_without_changing_anything_and_repair_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, _ = fill(tmp_path)
    (pack,) = [p for p in packs(tmp_path) if digest_of(old) in str(p)]
    for row in (3, 80):
        flip(pack, vectors_offset(150) + row * DIM * 4 + 5)
    damaged = pack.read_bytes()
    status, out, _ = embeval(capsys, "cache", "verify", "--cache-dir", str(tmp_path))
    assert status == 1 and pack.read_bytes() == damaged
    assert out == [
        f"checked 3 packs (300 entries) in {tmp_path}{os.sep}: 1 damaged",
        f"{pack.relative_to(tmp_path)}: 2 rows damaged (of 150 entries)",
        "nothing changed: embeval cache verify --repair removes the damaged packs, whose texts a run "
        "embeds again",
    ]
    status, out, _ = embeval(capsys, "cache", "verify", "--repair", "--cache-dir", str(tmp_path))
    assert status == 0 and not pack.exists()
    assert out[-1] == "removed 1 damaged pack (150 entries): the next run embeds those texts again"
    assert embeval(capsys, "cache", "verify", "--cache-dir", str(tmp_path))[:2] == (
        0,
        [f"checked 2 packs (150 entries) in {tmp_path}{os.sep}: 0 damaged"],
    )


def test_verify_finds_a_truncated_pack_and_a_damaged_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path)
    first, second, _ = packs(tmp_path)
    first.write_bytes(first.read_bytes()[:-10])
    second.write_bytes(b"not a pack")
    status, out, _ = embeval(capsys, "cache", "verify", "--cache-dir", str(tmp_path))
    assert status == 1
    assert sorted(out[1:3]) == sorted(
        [
            f"{first.relative_to(tmp_path)}: 1 rows damaged (of {pack_rows(first)} entries)",
            f"{second.relative_to(tmp_path)}: header damaged (how many entries it held is unknown)",
        ]
    )


def pack_rows(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[44:48], "little")  # after magic, model digest, kind


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["prune", "--max-size", "2 gigs"],
            "embeval cache prune: error: --max-size: expected a size such as 2GB, 500MB or 1.5GiB, "
            "got '2 gigs'",
        ),
        (
            ["prune", "--older-than", "30 days"],
            "embeval cache prune: error: --older-than: expected a duration such as 30d, 12h, 90m or 2w, "
            "got '30 days'",
        ),
        (
            ["prune", "--model", "tests_nothing:here"],
            "embeval cache prune: error: --model: model spec 'tests_nothing:here': cannot import module "
            "'tests_nothing': ModuleNotFoundError: No module named 'tests_nothing'; nor is it a digest or "
            "name embeval cache stats shows",
        ),
    ],
)
def test_bad_inputs_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    fill(tmp_path)
    before = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    status, out, err = embeval(capsys, "cache", *args, "--cache-dir", str(tmp_path))
    assert (status, out) == (2, [])
    assert err == [line.format(root=f"{tmp_path}{os.sep}")]
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


def test_a_missing_cache_folder_or_an_absent_model_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for action in ("stats", "verify", "prune"):
        status, out, err = embeval(capsys, "cache", action, "--cache-dir", str(tmp_path / "nowhere"))
        assert (status, out) == (2, [])
        assert err == [
            f"embeval cache {action}: error: no embedding cache at {tmp_path / 'nowhere'}: give --cache-dir, "
            "the folder pytest --embeval uses (--embeval-cache-dir, embeval_cache_dir)"
        ]
    fill(tmp_path)
    status, _, err = embeval(
        capsys, "cache", "prune", "--model", "fake_models:counted_good", "--cache-dir", str(tmp_path)
    )
    assert status == 2 and len(err) == 1 and "nothing of that model" in err[0]


def test_sizes_and_durations() -> None:
    assert [parse_size(text) for text in ("2GB", "2G", "500MB", "1.5GiB", "100KiB", "0", "42B", "3tb")] == [
        2 * 10**9,
        2 * 10**9,
        500 * 10**6,
        int(1.5 * 2**30),
        100 * 1024,
        0,
        42,
        3 * 10**12,
    ]
    assert [parse_duration(text) // 10**9 for text in ("30d", "12h", "90m", "45s", "2w", "1.5d")] == [
        30 * 86400,
        12 * 3600,
        90 * 60,
        45,
        14 * 86400,
        int(1.5 * 86400),
    ]
    for bad in ("", "GB", "-1GB", "2 gigs", "1e3"):
        with pytest.raises(ValueError, match="expected a size"):
            parse_size(bad)
    for bad in ("30", "30 days", "d", "-1d"):
        with pytest.raises(ValueError, match="expected a duration"):
            parse_duration(bad)


GOOD_VS_BAD = ("--embeval-incumbent=fake_models:counted_good", "--embeval-candidate=fake_models:counted_bad")


def test_pruning_while_a_run_uses_the_cache_changes_none_of_its_results(
    pytester: pytest.Pytester,
    golden: object,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run embeds slowly while prune removes every pack it can, again and again (and verify reads them):
    the run's report is the report of a run without a cache."""
    golden()  # type: ignore[operator]
    golden("second", strata=["shape"])  # type: ignore[operator]
    pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        *GOOD_VS_BAD,
        "--embeval-no-cache",
        "--embeval-json=reference.json",
    )
    monkeypatch.setenv("EMBEVAL_FAKE_SECONDS", "0.05")
    root = pytester.path / ".embeval_cache"
    run = pytester.popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--embeval",
            "-p",
            "no:cacheprovider",
            *GOOD_VS_BAD,
            "--embeval-json=cached.json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    prunes = 0
    while run.poll() is None:
        if root.is_dir():
            assert embeval(capsys, "cache", "prune", "--max-size", "0", "--cache-dir", str(root))[0] == 0
            assert embeval(capsys, "cache", "verify", "--cache-dir", str(root))[0] == 0
            prunes += 1
        time.sleep(0.01)
    assert run.returncode == 1 and prunes > 0  # WORSE strata: the gate working
    reference = json.loads((pytester.path / "reference.json").read_text(encoding="utf-8"))
    assert json.loads((pytester.path / "cached.json").read_text(encoding="utf-8")) == reference
