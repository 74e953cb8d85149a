"""Tables and atomic files shared by the report, the judging commands and the cache."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_embeval.core.text_table import table
from pytest_embeval.files.atomic import append_text, write_atomic


def test_table_aligns_names_left_and_numbers_right() -> None:
    assert table(["id", "n", "text"], [["q1", "7", "a b"], ["q22", "10", "c"]], text_last=True) == [
        "id    n  text",
        "---  --  ----",
        "q1    7  a b",
        "q22  10  c",
    ]
    assert table(["a", "b", "n"], [["x", "yy", "1"]], names=2) == ["a  b   n", "-  --  -", "x  yy  1"]


def test_a_new_file_gets_the_umask_default_not_0600(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        write_atomic(tmp_path / "report.json", "{}\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "report.json").stat().st_mode) == 0o644
    assert (tmp_path / "report.json").read_bytes() == b"{}\n"


def test_a_replaced_file_keeps_its_mode_and_no_temporary_is_left(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("old\n")
    path.chmod(0o640)
    write_atomic(path, [b"new\r\n", b"lines\n"])
    assert path.read_bytes() == b"new\r\nlines\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["qrels.tsv"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_text("graded\n")

    def parts() -> Iterator[bytes]:
        yield b"half"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, parts())
    assert path.read_text() == "graded\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sheet.csv"]


def test_append_text_adds_to_what_is_there_and_creates_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    append_text(path, "## first step\n")
    append_text(path, "## embeval — Δ\n")
    assert path.read_bytes() == "## first step\n## embeval — Δ\n".encode()
