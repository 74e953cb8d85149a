"""File digests remembered across runs: only for the very file they were computed from."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_embeval.files import digests


@pytest.fixture
def memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Digests remembered under tmp_path/memo, hashing counted, and the clock 10 s ahead so that a file
    written by the test has settled (`SETTLED_SECONDS`)."""
    folder = tmp_path / "memo"
    digests.remember_in(folder)
    monkeypatch.setattr(digests, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + 10 * 10**9))
    yield folder
    digests.remember_in(None)


def counting(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    hashed: list[Path] = []
    real = digests._hash

    def counted(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(digests, "_hash", counted)
    return hashed


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_without_a_folder_every_digest_is_computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = counting(monkeypatch)
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"weights" * 1000)
    assert digests.file_sha256(path) == digests.file_sha256(path) == sha256(b"weights" * 1000)
    assert len(hashed) == 2


def test_a_settled_file_is_hashed_once(tmp_path: Path, memo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = counting(monkeypatch)
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"weights")
    assert digests.file_sha256(path) == sha256(b"weights")
    assert digests.file_sha256(tmp_path / "." / "model.safetensors") == sha256(b"weights")  # same file
    assert len(hashed) == 1 and len(list(memo.iterdir())) == 1


def test_a_file_changed_in_place_with_its_old_size_and_mtime_is_hashed_again(
    tmp_path: Path, memo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its change time moved: what `touch -r` or a copy that keeps times cannot undo."""
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"weights A")
    before = path.stat()
    assert digests.file_sha256(path) == sha256(b"weights A")
    time.sleep(0.05)  # past the file system's clock tick
    path.write_bytes(b"weights B")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert digests.file_sha256(path) == sha256(b"weights B")


def test_a_file_replaced_by_another_is_hashed_again(tmp_path: Path, memo: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"weights A")
    assert digests.file_sha256(path) == sha256(b"weights A")
    other = tmp_path / "new.safetensors"
    other.write_bytes(b"weights B")
    os.replace(other, path)
    assert digests.file_sha256(path) == sha256(b"weights B")


def test_a_file_changed_just_before_hashing_is_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written within `SETTLED_SECONDS` of being hashed, it could be written again within the same clock
    tick and keep its times: hashed again by every run until it has settled."""
    digests.remember_in(tmp_path / "memo")
    try:
        hashed = counting(monkeypatch)
        path = tmp_path / "model.safetensors"
        path.write_bytes(b"weights")
        assert digests.file_sha256(path) == digests.file_sha256(path) == sha256(b"weights")
        assert len(hashed) == 2 and not (tmp_path / "memo").exists()
    finally:
        digests.remember_in(None)


def test_a_damaged_note_is_computed_again_and_rewritten(
    tmp_path: Path, memo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"weights")
    digests.file_sha256(path)
    (note,) = memo.iterdir()
    note.write_text("not a digest", encoding="ascii")
    hashed = counting(monkeypatch)
    assert digests.file_sha256(path) == sha256(b"weights") and len(hashed) == 1
    assert note.read_text(encoding="ascii") == sha256(b"weights")


def test_a_folder_that_cannot_be_written_only_costs_the_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    digests.remember_in(blocker / "memo")  # under a file: never creatable
    monkeypatch.setattr(digests, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + 10 * 10**9))
    try:
        path = tmp_path / "model.safetensors"
        path.write_bytes(b"weights")
        assert digests.file_sha256(path) == digests.file_sha256(path) == sha256(b"weights")
    finally:
        digests.remember_in(None)


def test_a_file_larger_than_the_read_buffer_is_hashed_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    data = os.urandom(3 * (1 << 20) + 12345)
    path.write_bytes(data)
    assert digests.file_sha256(path) == sha256(data)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert digests.file_sha256(empty) == sha256(b"")


def test_digests_ahead_are_the_files_digests_in_order(tmp_path: Path) -> None:
    paths = [tmp_path / f"{i}.bin" for i in range(3)]
    for i, path in enumerate(paths):
        path.write_bytes(bytes([i]) * (i + 1) * 1000)
    ahead = digests.sha256_ahead(paths)
    assert ahead.result(timeout=10) == [sha256(path.read_bytes()) for path in paths]


def test_digests_ahead_raise_what_hashing_raised(tmp_path: Path) -> None:
    ahead = digests.sha256_ahead([tmp_path / "missing.bin"])
    with pytest.raises(FileNotFoundError):
        ahead.result(timeout=10)
