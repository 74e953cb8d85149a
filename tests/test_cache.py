"""The embedding cache on its own: keys, packs, damage, concurrency; fake encoders, no pytest plugin."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytest_embeval.cache.pack_reads as pack_reads
import pytest_embeval.cache.packs as packs_module
import pytest_embeval.cache.store as cache_module
from pytest_embeval.arms.embedding import Arm, EncoderError, Kind, LazyEncoder, embed
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.store import CacheStats, EmbeddingCache
from pytest_embeval.core.canonical import KeyedTexts, text_key

DIM = 16


class Recorder:
    """Deterministic vectors from crc32 of the text (plus the query prompt); records every text encoded."""

    def __init__(self, name: str = "recorder", dim: int = DIM) -> None:
        self.name = name
        self.dim = dim
        self.prompts = {"query": "query: ", "document": ""}
        self.encoded: list[tuple[str, str]] = []

    def _vectors(self, texts: list[str]) -> np.ndarray:
        rows = [
            np.random.default_rng(zlib.crc32(text.encode("utf-8", "surrogatepass"))).standard_normal(self.dim)
            for text in texts
        ]
        return np.array(rows, dtype=np.float32)

    def encode_query(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(("query", text) for text in texts)
        return self._vectors([self.prompts["query"] + text for text in texts])

    def encode_document(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(("document", text) for text in texts)
        return self._vectors(texts)


TEXTS = [f"document {i} about parcels" for i in range(150)]


def packs(root: Path) -> list[Path]:
    return sorted(root.rglob("*.pack"))


def reference(texts: list[str], kind: Kind = "document") -> np.ndarray:
    """The vectors `embed` gives without a cache, from a Recorder of its own (nothing recorded elsewhere)."""
    return embed(resolve_model(Recorder()), texts, kind)


def fresh(root: Path) -> EmbeddingCache:
    """A new cache object on the same folder: what the next pytest session (or another worker) sees."""
    return EmbeddingCache(root)


# ------------------------------------------------------------------------------------------------ hits/misses


def test_second_session_reads_everything_and_embeds_nothing(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    first = EmbeddingCache(tmp_path).embed(arm, TEXTS, "document")
    np.testing.assert_array_equal(first, embed(arm, TEXTS, "document"))
    model.encoded.clear()

    again = fresh(tmp_path)
    second = again.embed(arm, TEXTS, "document")
    assert model.encoded == []
    np.testing.assert_array_equal(second, first)
    assert second.dtype == np.float32 and second.flags.c_contiguous
    assert again.stats() == CacheStats(read=150, embedded=0)


def test_a_changed_text_is_embedded_alone(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    EmbeddingCache(tmp_path).embed(arm, TEXTS, "document")
    model.encoded.clear()
    changed = [*TEXTS[:7], "document 7 about parcels, revised", *TEXTS[8:]]
    cache = fresh(tmp_path)
    vectors = cache.embed(arm, changed, "document")
    assert model.encoded == [("document", "document 7 about parcels, revised")]
    assert cache.stats() == CacheStats(read=149, embedded=1)
    np.testing.assert_array_equal(vectors, embed(arm, changed, "document"))


def test_queries_and_documents_are_separate_entries(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    cache = EmbeddingCache(tmp_path)
    as_document = cache.embed(arm, ["same text"], "document")
    as_query = cache.embed(arm, ["same text"], "query")
    assert model.encoded == [("document", "same text"), ("query", "same text")]
    assert not np.array_equal(as_document, as_query)  # the query prompt differs
    assert sorted(p.parent.name for p in packs(tmp_path)) == ["document", "query"]


def test_another_model_fingerprint_is_another_entry(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.embed(resolve_model(Recorder("model-a")), TEXTS[:3], "document")
    other = Recorder("model-b")
    cache.embed(resolve_model(other), TEXTS[:3], "document")
    assert len(other.encoded) == 3
    assert len({p.parent.parent.name for p in packs(tmp_path)}) == 2


def test_duplicate_texts_are_embedded_once_and_returned_in_order(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    texts = ["b", "a", "b", "c", "a"]
    vectors = EmbeddingCache(tmp_path).embed(arm, texts, "document")
    assert model.encoded == [("document", "b"), ("document", "a"), ("document", "c")]
    np.testing.assert_array_equal(vectors, embed(arm, texts, "document"))


def test_texts_hashed_already_are_looked_up_alike(tmp_path: Path) -> None:
    """`KeyedTexts` (a golden set's documents, hashed once for the cache and the digests) with duplicates:
    the same vectors, in order, and the same entries as plain texts."""
    model = Recorder()
    arm = resolve_model(model)
    texts = ["b", "a", "b", "c", "a"]
    vectors = EmbeddingCache(tmp_path).embed(arm, KeyedTexts(texts), "document")
    assert model.encoded == [("document", "b"), ("document", "a"), ("document", "c")]
    np.testing.assert_array_equal(vectors, embed(arm, texts, "document"))
    again = fresh(tmp_path)
    np.testing.assert_array_equal(again.embed(arm, texts, "document"), vectors)
    assert again.stats() == CacheStats(read=3)


@pytest.mark.parametrize(
    "pick",
    [
        pytest.param(lambda texts: texts, id="as stored"),
        pytest.param(lambda texts: texts[::-1], id="reversed"),
        pytest.param(lambda texts: texts[40:90], id="a run of them"),
        pytest.param(lambda texts: [*texts[::7], "new one"], id="every seventh and a new one"),
    ],
)
def test_any_selection_and_order_of_cached_texts_gets_their_vectors(tmp_path: Path, pick: Any) -> None:
    arm = resolve_model(Recorder())
    EmbeddingCache(tmp_path).embed(arm, TEXTS, "document")
    wanted = pick(TEXTS)
    cache = fresh(tmp_path)
    np.testing.assert_array_equal(cache.embed(arm, wanted, "document"), reference(wanted))
    assert cache.stats().read == len(set(wanted) & set(TEXTS))


def test_texts_stored_a_block_after_another_are_found_without_reindexing_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`embeval embed` checks and stores one block at a time: each check must find what the blocks before
    stored (and nothing else), without rebuilding the index of every key each time (quadratic in the
    corpus): the locator is rebuilt only when the keys added since are a quarter of it."""
    for module in (cache_module, packs_module):
        monkeypatch.setattr(module, "PACK_ROWS", 8)
    built: list[int] = []
    real = packs_module._Locator.__init__

    def counted(self: Any, packs: Any) -> None:
        real(self, packs)
        built.append(self.keys.size)

    monkeypatch.setattr(packs_module._Locator, "__init__", counted)
    arm = resolve_model(Recorder())
    cache = EmbeddingCache(tmp_path)
    texts = [f"text {i}" for i in range(400)]
    for start in range(0, 400, 8):
        block = texts[start : start + 8]
        assert not cache.contains(arm, "document", block).any()
        assert cache.contains(arm, "document", texts[:start]).all()
        cache.embed(arm, block, "document")
    assert cache.contains(arm, "document", texts).all()
    np.testing.assert_array_equal(cache.embed(arm, texts[::-1], "document"), reference(texts[::-1]))
    assert cache.stats() == CacheStats(read=400, embedded=400)  # checks read indexes, never vectors
    assert len(built) < 15, built  # 50 blocks; about log(50) / log(1.25) rebuilds


def test_keys_sharing_their_first_eight_bytes_are_told_apart() -> None:
    """The locator searches the keys' first 8 bytes, then compares whole keys: keys sharing a prefix (one
    pair in 10^8 at a million texts, so made here) are each found, in the pack and row of their first
    copy."""
    prefix = b"\x07" * 8

    def key(tail: int) -> bytes:
        return prefix + tail.to_bytes(24, "big")

    def pack(name: str, keys: list[bytes]) -> Any:
        zeros = np.zeros(len(keys), dtype="<u4")
        return packs_module.Pack(path=Path(name), dim=1, offset=0, keys=tuple(keys), crcs=zeros, tokens=zeros)

    first = pack("first", [key(5), text_key("plain"), key(3)])
    second = pack("second", [key(3), key(9), key(5)])
    locator = packs_module._Locator([first, second])
    wanted = packs_module._key_array([key(9), key(3), key(4), text_key("plain"), key(5), text_key("absent")])
    found, pack_numbers, rows = locator.find(wanted)
    assert found.tolist() == [True, True, False, True, True, False]
    assert list(zip(pack_numbers.tolist(), rows.tolist(), strict=True)) == [(1, 1), (0, 2), (0, 1), (0, 0)]


def test_a_fully_cached_run_never_loads_the_model(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path).embed(resolve_model(Recorder()), TEXTS, "query")

    def load() -> Any:
        raise AssertionError("the model was loaded")

    recorded = resolve_model(Recorder())
    lazy = Arm(
        spec="lazy",
        encoder=LazyEncoder(load, "lazy"),
        fingerprint=recorded.fingerprint,
        prompts=recorded.prompts,
    )
    fresh(tmp_path).embed(lazy, TEXTS, "query")
    assert isinstance(lazy.encoder, LazyEncoder) and not lazy.encoder.loaded


def test_texts_are_keyed_by_their_exact_bytes(tmp_path: Path) -> None:
    texts = ["café", "cafe\u0301", "cafe", "lone \udc80 surrogate", ""]
    assert len({text_key(text) for text in texts}) == len(texts)
    model = Recorder()
    cache = EmbeddingCache(tmp_path)
    cache.embed(resolve_model(model), texts, "document")
    fresh(tmp_path).embed(resolve_model(model), texts, "document")
    assert len(model.encoded) == len(texts)


def test_no_texts_touch_nothing(tmp_path: Path) -> None:
    model = Recorder()
    vectors = EmbeddingCache(tmp_path / "cache").embed(resolve_model(model), [], "document")
    assert vectors.shape == (0, 0) and model.encoded == []
    assert not (tmp_path / "cache").exists()


class FailsOnCall(Recorder):
    """A Recorder whose call number ``fail_on`` (from 1) raises, as a model or an endpoint may mid-corpus."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.fail_on = fail_on
        self.calls = 0

    def encode_document(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("the model fell over")
        return super().encode_document(texts)


def test_each_encoder_call_is_stored_as_it_returns(tmp_path: Path) -> None:
    texts = [f"document {i:03d} about parcels" for i in range(300)]  # equal lengths: corpus order
    failing = FailsOnCall(fail_on=3)
    with pytest.raises(EncoderError, match="failed on a batch of 64 document texts"):
        EmbeddingCache(tmp_path).embed(resolve_model(failing), texts, "document")
    # The two calls that returned are on disk, merged into one pack of their 128 texts.
    assert set(fresh(tmp_path).lookup(resolve_model(Recorder()), "document", texts)) == set(texts[:128])
    assert len(packs(tmp_path)) == 1
    model = Recorder()
    cache = fresh(tmp_path)
    vectors = cache.embed(resolve_model(model), texts, "document")
    assert [text for _, text in model.encoded] == texts[128:]
    assert cache.stats() == CacheStats(read=128, embedded=172)
    np.testing.assert_array_equal(vectors, reference(texts))


def test_progress_counts_the_missing_texts_batch_by_batch(tmp_path: Path) -> None:
    arm = resolve_model(Recorder())
    cache = EmbeddingCache(tmp_path)
    cache.embed(arm, TEXTS[:10], "document")
    calls: list[tuple[int, int]] = []
    vectors = cache.embed(arm, TEXTS, "document", progress=lambda *call: calls.append(call))
    assert calls == [(0, 140), (64, 140), (128, 140), (140, 140)]
    np.testing.assert_array_equal(vectors, embed(arm, TEXTS, "document"))


def test_small_packs_are_merged_when_a_call_that_stored_ends(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    # What an interrupted run leaves: one small pack per encoder call that returned.
    for start in (0, 64, 128):
        EmbeddingCache(tmp_path).store(
            arm, "document", TEXTS[start : start + 10], reference(TEXTS[start : start + 10])
        )
    assert len(packs(tmp_path)) == 3
    # A call that reads everything it needs writes nothing and merges nothing.
    EmbeddingCache(tmp_path).embed(arm, TEXTS[:10], "document")
    assert len(packs(tmp_path)) == 3
    # One that embeds merges the small packs of its own texts into the pack one store of them would give,
    # in its order; the pack of other texts (TEXTS[128:138]) is left for a call that covers them.
    cache = fresh(tmp_path)
    cache.embed(arm, TEXTS[:100], "document")
    other = {p for p in packs(tmp_path) if struct.unpack_from("<I", p.read_bytes(), 44) == (10,)}
    (pack,) = set(packs(tmp_path)) - other
    data = pack.read_bytes()
    assert struct.unpack_from("<I", data, 44) == (100,)
    assert [data[84 + i * 32 : 84 + (i + 1) * 32] for i in range(100)] == [text_key(t) for t in TEXTS[:100]]
    replica = tmp_path.with_name(tmp_path.name + "-replica")
    EmbeddingCache(replica).store(arm, "document", TEXTS[:100], reference(TEXTS[:100]))
    assert [p.name for p in packs(replica)] == [pack.name]  # byte for byte
    assert len(other) == 1
    fresh(tmp_path).embed(arm, TEXTS, "document")
    assert not other & set(packs(tmp_path))  # merged by the call that covers its texts
    assert len(fresh(tmp_path).lookup(arm, "document", TEXTS)) == len(TEXTS)
    np.testing.assert_array_equal(fresh(tmp_path).embed(arm, TEXTS, "document"), reference(TEXTS))


def test_a_call_never_merges_packs_of_texts_it_was_not_given(tmp_path: Path) -> None:
    """Another process may still be storing them, call by call (a shard of `embeval embed`): the packs a
    call leaves depend on its texts alone."""
    arm = resolve_model(Recorder())
    for text in TEXTS[100:103]:
        EmbeddingCache(tmp_path).store(arm, "document", [text], reference([text]))
    before = set(packs(tmp_path))
    EmbeddingCache(tmp_path).embed(arm, TEXTS[:100], "document")
    assert before <= set(packs(tmp_path))
    alone = tmp_path.with_name(tmp_path.name + "-alone")
    EmbeddingCache(alone).embed(arm, TEXTS[:100], "document")
    assert {p.name for p in packs(tmp_path)} - {p.name for p in before} == {p.name for p in packs(alone)}


def test_big_packs_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "MERGE_BELOW", 100)
    arm = resolve_model(Recorder())
    EmbeddingCache(tmp_path).store(arm, "document", TEXTS[:120], reference(TEXTS[:120]))
    (big,) = packs(tmp_path)
    fresh(tmp_path).embed(arm, TEXTS, "document")  # 30 more texts: one call
    fresh(tmp_path).embed(arm, [*TEXTS, "one more"], "document")
    assert big in packs(tmp_path) and len(packs(tmp_path)) == 2


def test_token_counts_are_kept_with_the_vectors(tmp_path: Path) -> None:
    arm = resolve_model(Recorder())
    EmbeddingCache(tmp_path).store(arm, "document", TEXTS[:3], reference(TEXTS[:3]), tokens=[5, 0, 7])
    cache = fresh(tmp_path)
    _, found, tokens = cache._find(
        cache._shelf(arm, "document"), [text_key(t) for t in TEXTS[:3]], who="encoder", kind="document"
    )
    assert found.all() and tokens.tolist() == [5, 0, 7]
    with pytest.raises(
        ValueError, match=re.escape("tokens must be 2 integers from 0 to 2**32 - 1, got int64 (1,)")
    ):
        cache.store(arm, "document", TEXTS[:2], reference(TEXTS[:2]), tokens=np.array([1]))


def test_packs_of_version_1_are_read_as_costing_no_tokens(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    vectors = reference(TEXTS[:2])
    shelf = EmbeddingCache(tmp_path)._shelf(arm, "document")
    shelf.directory.mkdir(parents=True)
    # The layout pytest-embeval 0.1 wrote: no token counts in the index.
    fields = struct.pack("<8s32sB3xII", b"EMBVPK01", shelf.model, shelf.code, 2, DIM)
    crcs = struct.pack("<2I", *(zlib.crc32(row.astype("<f4").tobytes()) for row in vectors))
    index = b"".join(text_key(text) for text in TEXTS[:2]) + crcs
    (shelf.directory / "old.pack").write_bytes(
        fields + hashlib.sha256(fields + index).digest() + index + vectors.astype("<f4").tobytes()
    )
    cache = fresh(tmp_path)
    np.testing.assert_array_equal(cache.embed(arm, TEXTS[:2], "document"), vectors)
    assert model.encoded == [] and cache.stats() == CacheStats(read=2)


def test_a_model_that_changed_without_a_new_fingerprint_is_an_error(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path).embed(resolve_model(Recorder("same-name", dim=16)), TEXTS[:2], "document")
    message = (
        f"candidate encoder 'same-name': the embedding cache {tmp_path} holds document vectors of [8, 16]"
    )
    with pytest.raises(EncoderError, match=re.escape(message)):  # the cached 16 and the fresh 8
        fresh(tmp_path).embed(
            resolve_model(Recorder("same-name", dim=8)), TEXTS[:3], "document", role="candidate"
        )
    # Two packs of either dimension: found while reading, before anything is embedded.
    EmbeddingCache(tmp_path).store(
        resolve_model(Recorder("same-name")), "document", TEXTS[5:6], np.ones((1, 8))
    )
    with pytest.raises(EncoderError, match=re.escape(message)):
        fresh(tmp_path).embed(
            resolve_model(Recorder("same-name")), [TEXTS[0], TEXTS[5]], "document", role="candidate"
        )


def test_an_unwritable_cache_is_noted_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: Path, parts: Any) -> None:
        raise OSError(30, "Read-only file system")

    for module in (cache_module, packs_module):
        monkeypatch.setattr(module, "write_named", refuse)
    cache = EmbeddingCache(tmp_path)
    arm = resolve_model(Recorder())
    vectors = cache.embed(arm, TEXTS[:5], "document")
    cache.embed(arm, TEXTS[5:9], "document")
    np.testing.assert_array_equal(vectors, embed(arm, TEXTS[:5], "document"))
    assert cache.stats() == CacheStats(
        read=0, embedded=9, write_error="OSError: [Errno 30] Read-only file system"
    )


def test_store_validates_its_vectors(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    arm = resolve_model(Recorder())
    with pytest.raises(ValueError, match=re.escape("vectors must have shape (2, d) with d >= 1, got (3, 4)")):
        cache.store(arm, "document", ["a", "b"], np.ones((3, 4)))
    with pytest.raises(ValueError, match="vectors must be finite"):
        cache.store(arm, "document", ["a"], np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="kind must be 'query' or 'document', got 'passage'"):
        cache.store(arm, "passage", ["a"], np.ones((1, 4)))  # type: ignore[arg-type]


def test_embeddings_computed_elsewhere_are_brought_in_by_the_same_key(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    EmbeddingCache(tmp_path).store(arm, "document", TEXTS, embed(arm, TEXTS, "document"))
    model.encoded.clear()
    fresh(tmp_path).embed(arm, TEXTS, "document")
    assert model.encoded == []


# ------------------------------------------------------------------------------------------------ the format


def test_packs_are_raw_float32_without_pickle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle or np.load used")

    for module, name in [(pickle, "load"), (pickle, "loads"), (np, "load")]:
        monkeypatch.setattr(module, name, forbidden)
    arm = resolve_model(Recorder())
    vectors = embed(arm, TEXTS, "document")
    EmbeddingCache(tmp_path).embed(arm, TEXTS, "document")
    np.testing.assert_array_equal(fresh(tmp_path).embed(arm, TEXTS, "document"), vectors)

    (pack,) = packs(tmp_path)
    data = pack.read_bytes()
    magic, model, kind, n, dim = struct.unpack_from("<8s32sB3xII", data)
    assert (magic, model.hex(), kind, n, dim) == (
        b"EMBVPK02",
        arm.digest.removeprefix("sha256:"),
        1,
        150,
        DIM,
    )
    assert data.endswith(vectors.astype("<f4").tobytes())
    assert pack.name == f"{hashlib.sha256(data).hexdigest()}.pack"
    model_dir = pack.parent.parent
    assert model_dir.name == arm.digest.removeprefix("sha256:")[:16]
    assert (model_dir / "fingerprint.json").read_text(encoding="utf-8") == arm.fingerprint + "\n"


def test_a_corpus_the_size_of_a_real_one_is_quick(tmp_path: Path) -> None:
    arm = resolve_model(Recorder())
    texts = [f"passage {i}" for i in range(3395)]
    vectors = np.random.default_rng(0).standard_normal((3395, 384)).astype(np.float32)
    started = time.perf_counter()
    EmbeddingCache(tmp_path).store(arm, "document", texts, vectors)
    found = fresh(tmp_path).lookup(arm, "document", texts)
    elapsed = time.perf_counter() - started
    assert len(found) == 3395 and np.array_equal(found["passage 7"], vectors[7])
    assert len(packs(tmp_path)) == 1
    assert elapsed < 2.0, f"writing and reading 3,395 x 384 vectors took {elapsed:.2f} s"


# ------------------------------------------------------------------------------------------------ damage


def stored(tmp_path: Path, texts: list[str] = TEXTS) -> tuple[Recorder, Arm, Path]:
    model = Recorder()
    arm = resolve_model(model)
    EmbeddingCache(tmp_path).embed(arm, texts, "document")
    model.encoded.clear()
    (pack,) = packs(tmp_path)
    return model, arm, pack


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


def vectors_offset(n: int) -> int:
    return 84 + n * 40  # header, then per row a text key, a crc32 and a token count


def test_bit_flipped_rows_are_recomputed_and_the_rest_kept(tmp_path: Path) -> None:
    model, arm, pack = stored(tmp_path)
    for row in (3, 80, 149):
        flip(pack, vectors_offset(150) + row * DIM * 4 + 5)
    cache = fresh(tmp_path)
    vectors = cache.embed(arm, TEXTS, "document")
    assert sorted(model.encoded) == sorted(("document", TEXTS[row]) for row in (3, 80, 149))
    assert cache.stats() == CacheStats(read=147, embedded=3, corrupt=3)
    np.testing.assert_array_equal(vectors, reference(TEXTS))
    # The damaged pack was replaced by a pack of its intact rows, and the recomputed rows were merged with
    # them: into the very bytes first written, so under the same name.
    assert packs(tmp_path) == [pack]
    model.encoded.clear()
    healed = fresh(tmp_path)
    healed.embed(arm, TEXTS, "document")
    assert model.encoded == [] and healed.stats() == CacheStats(read=150)


def test_bit_flipped_rows_read_out_of_order_are_recomputed_too(tmp_path: Path) -> None:
    """Texts looked up in another order than stored are copied row by row, not read into place: the
    damaged rows are found all the same."""
    model, arm, pack = stored(tmp_path)
    for row in (3, 80):
        flip(pack, vectors_offset(150) + row * DIM * 4 + 5)
    cache = fresh(tmp_path)
    wanted = TEXTS[::-1]
    np.testing.assert_array_equal(cache.embed(arm, wanted, "document"), reference(wanted))
    assert sorted(model.encoded) == sorted(("document", TEXTS[row]) for row in (3, 80))
    assert cache.stats() == CacheStats(read=148, embedded=2, corrupt=2)


def test_a_pack_truncated_in_its_vectors_keeps_its_whole_rows(tmp_path: Path) -> None:
    model, arm, pack = stored(tmp_path)
    with pack.open("r+b") as handle:
        handle.truncate(vectors_offset(150) + 100 * DIM * 4 + 10)  # 100 whole rows and a piece
    cache = fresh(tmp_path)
    np.testing.assert_array_equal(cache.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert [text for _, text in model.encoded] == TEXTS[100:]
    assert cache.stats() == CacheStats(read=100, embedded=50, corrupt=50)


@pytest.mark.parametrize(
    ("damage", "lost", "unreadable"),
    [
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[:2000]), 150, 0, id="truncated in the index"),
        pytest.param(lambda p: flip(p, 84 + 40 * 32 + 3), 150, 0, id="bit flip in a text key"),
        pytest.param(lambda p: flip(p, 50), 150, 0, id="bit flip in the dimension"),
        # No header: how many entries it held is unknown, and the pack is counted, not an entry.
        pytest.param(lambda p: p.write_bytes(b""), 0, 1, id="empty file"),
        pytest.param(lambda p: p.write_bytes(b"not a pack at all" * 10), 0, 1, id="not a pack"),
    ],
)
def test_a_pack_with_a_damaged_index_is_discarded_whole(
    tmp_path: Path, damage: Any, lost: int, unreadable: int
) -> None:
    model, arm, pack = stored(tmp_path)
    damage(pack)
    cache = fresh(tmp_path)
    np.testing.assert_array_equal(cache.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert len(model.encoded) == 150
    assert cache.stats() == CacheStats(read=0, embedded=150, corrupt=lost, unreadable=unreadable)
    # The recomputed pack holds the very bytes the damaged one was written with: same content, same name.
    assert packs(tmp_path) == [pack]
    healed = fresh(tmp_path)
    assert len(healed.lookup(arm, "document", TEXTS)) == 150
    assert healed.stats().corrupt == 0


def test_bytes_appended_to_a_pack_are_dropped_without_losing_entries(tmp_path: Path) -> None:
    model, arm, pack = stored(tmp_path)
    original = pack.read_bytes()
    pack.write_bytes(original + b"junk")
    cache = fresh(tmp_path)
    cache.embed(arm, TEXTS, "document")
    assert model.encoded == [] and cache.stats() == CacheStats(read=150)
    assert packs(tmp_path) == [pack] and pack.read_bytes() == original


def test_a_damaged_pack_in_a_read_only_cache_is_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, arm, pack = stored(tmp_path)
    flip(pack, vectors_offset(150) + 2 * DIM * 4)

    def refuse(*args: object) -> None:
        raise OSError(30, "Read-only file system")

    for module in (cache_module, packs_module):
        monkeypatch.setattr(module, "write_named", refuse)
    monkeypatch.setattr(cache_module, "remove_damaged", refuse)
    cache = fresh(tmp_path)
    np.testing.assert_array_equal(cache.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert model.encoded == [("document", TEXTS[2])]
    # A second golden set in the same session: the damaged pack is not read, nor counted, again.
    np.testing.assert_array_equal(cache.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert cache.stats().corrupt == 1
    assert packs(tmp_path) == [pack]


# ------------------------------------------------------------------------------------------------ concurrency


class Held(Recorder):
    """A Recorder whose first encoder call waits for ``go``, after saying it started."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.go = threading.Event(), threading.Event()

    def encode_document(self, texts: list[str]) -> np.ndarray:
        self.started.set()
        assert self.go.wait(10)
        return super().encode_document(texts)


@pytest.mark.skipif(sys.platform == "win32", reason="claims need fcntl")
def test_texts_another_process_is_embedding_are_waited_for_not_embedded_again(tmp_path: Path) -> None:
    """Two processes (two xdist workers running golden sets with texts in common) embed overlapping texts at
    once: the second waits for the first's claim, reads what it stored, and embeds only the rest."""
    first_model, second_model = Held(), Recorder()
    first_arm, second_arm = resolve_model(first_model), resolve_model(second_model)
    assert first_arm.digest == second_arm.digest  # one model, as two processes see it
    first = threading.Thread(target=lambda: fresh(tmp_path).embed(first_arm, TEXTS[:100], "document"))
    first.start()
    assert first_model.started.wait(10)
    second = fresh(tmp_path)
    texts = TEXTS[50:]
    done: list[np.ndarray] = []
    waiting = threading.Thread(target=lambda: done.append(second.embed(second_arm, texts, "document")))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and second_model.encoded == []  # waiting for the first process's claim
    first_model.go.set()
    first.join(10)
    waiting.join(10)
    np.testing.assert_array_equal(done[0], reference(texts))
    assert second_model.encoded == [("document", text) for text in TEXTS[100:]]
    assert second.stats() == CacheStats(read=50, embedded=50)
    assert not list(tmp_path.rglob("*.claim"))


def test_a_claim_left_by_a_killed_process_is_ignored_and_deleted(tmp_path: Path) -> None:
    model = Recorder()
    arm = resolve_model(model)
    cache = fresh(tmp_path)
    cache.embed(arm, TEXTS[:1], "document")
    (shelf,) = {pack.parent for pack in packs(tmp_path)}
    left = shelf / ".4242-0000dead.claim"  # its process is gone, and its lock with it
    left.write_bytes(b"".join(text_key(text) for text in TEXTS))
    cache.embed(arm, TEXTS, "document")
    assert len(model.encoded) == 150 and not left.exists()


def test_a_pack_replaced_by_another_process_is_found_again(tmp_path: Path) -> None:
    model, arm, pack = stored(tmp_path)
    reader = fresh(tmp_path)
    assert len(reader.lookup(arm, "document", TEXTS[:1])) == 1  # the pack is indexed
    # Meanwhile another process writes a pack with the first 100 texts and deletes the old one.
    fresh(tmp_path).store(arm, "document", TEXTS[:100], reference(TEXTS[:100]))
    pack.unlink()
    assert len(reader.lookup(arm, "document", TEXTS)) == 100
    # ... then writes all 150 again: the very bytes of the deleted pack, under its name, indexed again.
    fresh(tmp_path).store(arm, "document", TEXTS, reference(TEXTS))
    assert pack.exists()
    assert len(reader.lookup(arm, "document", TEXTS)) == 150
    assert model.encoded == [] and reader.stats().corrupt == 0


def test_a_chain_of_replacements_by_other_processes_is_followed_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each time the reader is about to read a pack, another process has written a replacement and deleted
    it (a repair, then a merge, by two processes): the reader follows the chain, and recomputes nothing."""
    model, arm, pack = stored(tmp_path)
    reader = fresh(tmp_path)
    assert len(reader.lookup(arm, "document", TEXTS[:1])) == 1  # the pack is indexed
    chain = [TEXTS[:149], TEXTS[1:], TEXTS[:148], TEXTS[2:], TEXTS[::-1], TEXTS]
    real = pack_reads.read_rows

    def replaced_just_before(indexed: Any, into: Any = None) -> Any:
        if chain:
            rows = chain.pop(0)
            fresh(tmp_path).store(arm, "document", rows, reference(rows))
            indexed.path.unlink()
        return real(indexed, into)

    monkeypatch.setattr(pack_reads, "read_rows", replaced_just_before)
    np.testing.assert_array_equal(reader.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert chain == [] and model.encoded == [] and reader.stats() == CacheStats(read=150)
    assert packs(tmp_path) == [pack]  # the last replacement holds the very bytes of the first pack


def test_a_listed_pack_replaced_before_its_index_is_read_is_found_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader lists the folder; before it reads the listed pack's index, another process writes a
    replacement (after the listing) and deletes the listed pack: the reader lists again, and recomputes
    nothing."""
    model, arm, pack = stored(tmp_path)
    real = cache_module.read_index
    replaced: list[Path] = []

    def replaced_just_before(path: Path, shelf: Any) -> Any:
        if not replaced:
            replaced.append(path)
            fresh(tmp_path).store(arm, "document", TEXTS[::-1], reference(TEXTS[::-1]))
            path.unlink()
        return real(path, shelf)

    monkeypatch.setattr(cache_module, "read_index", replaced_just_before)
    reader = fresh(tmp_path)
    np.testing.assert_array_equal(reader.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert replaced == [pack] and model.encoded == [] and reader.stats() == CacheStats(read=150)


def test_a_good_pack_that_takes_a_damaged_packs_name_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes meet one damaged pack. The first to finish deletes it, recomputes the lost row and
    merges it with the intact ones: the very bytes first written, under the damaged pack's name. When that
    lands after the second process found the file damaged and before it deletes it, the second must not
    delete the good pack (nor count the lost row again): every text stays cached."""
    model, arm, pack = stored(tmp_path)
    original = pack.read_bytes()
    flip(pack, vectors_offset(150) + 2 * DIM * 4)
    real = packs_module._holds_its_name
    raced: list[EmbeddingCache] = []

    def other_process_lands(handle: Any, path: Path) -> bool:
        holds = real(handle, path)
        if not raced:  # the second process has found the file damaged: the first one runs to its end
            raced.append(fresh(tmp_path))
            raced[0].embed(arm, TEXTS, "document")
            assert pack.read_bytes() == original
        return holds

    monkeypatch.setattr(packs_module, "_holds_its_name", other_process_lands)
    second = fresh(tmp_path)
    np.testing.assert_array_equal(second.embed(arm, TEXTS, "document"), reference(TEXTS))
    assert raced[0].stats() == CacheStats(read=149, embedded=1, corrupt=1)
    assert second.stats() == CacheStats(read=149, embedded=1, corrupt=0)
    assert model.encoded == [("document", TEXTS[2])] * 2
    assert not list(pack.parent.glob("*.tmp"))  # nothing left aside
    assert pack.read_bytes() == original
    model.encoded.clear()
    again = fresh(tmp_path)
    again.embed(arm, TEXTS, "document")
    assert model.encoded == [] and again.stats() == CacheStats(read=150)


def test_remove_damaged_deletes_only_a_file_whose_bytes_are_not_its_name(tmp_path: Path) -> None:
    good = tmp_path / f"{hashlib.sha256(b'vectors').hexdigest()}.pack"
    good.write_bytes(b"vectors")
    assert not packs_module.remove_damaged(good) and good.read_bytes() == b"vectors"
    damaged = tmp_path / f"{hashlib.sha256(b'vectors!').hexdigest()}.pack"
    damaged.write_bytes(b"vectorz!")
    assert packs_module.remove_damaged(damaged) and not damaged.exists()
    assert not packs_module.remove_damaged(damaged)  # gone already: deleted by another process
    assert sorted(tmp_path.iterdir()) == [good]


class Shared:
    """The writers' model, as far as its fingerprint goes."""

    name = "shared"

    def encode_query(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("not to be called")

    def encode_document(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("not to be called")


WRITER = textwrap.dedent(
    """
    import sys, time, zlib
    from pathlib import Path
    import numpy as np
    from pytest_embeval.cache.store import EmbeddingCache
    from pytest_embeval.arms.embedding import embed
    from pytest_embeval.arms.model_specs import resolve_model

    class Shared:
        name = "shared"
        def encode_query(self, texts):
            return self.encode_document(texts)
        def encode_document(self, texts):
            return np.array([np.random.default_rng(zlib.crc32(t.encode())).standard_normal(8) for t in texts])

    root, go, first, last = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    arm = resolve_model(Shared())
    texts = [f"text {i}" for i in range(first, last)]
    vectors = embed(arm, texts, "document")
    while not go.exists():
        time.sleep(0.001)
    for _ in range(40):
        cache = EmbeddingCache(root)
        found = cache.lookup(arm, "document", texts)
        assert all(np.array_equal(found[t], v) for t, v in zip(texts, vectors) if t in found)
        cache.store(arm, "document", texts, vectors)
        assert cache.stats().corrupt == 0, cache.stats()
    """
)


def test_processes_writing_the_same_entries_at_once_all_end_valid(tmp_path: Path) -> None:
    root, go = tmp_path / "cache", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # Two writers of the very same pack (same name, same bytes) and one of an overlapping pack.
    ranges = [(0, 300), (0, 300), (150, 450)]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(go), str(first), str(last)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for first, last in ranges
    ]
    time.sleep(0.5)  # let all three import and wait at the start line
    go.touch()
    for writer in writers:
        _, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors

    files = sorted(p.name for p in root.rglob("*") if p.is_file())
    assert len(files) == 3 and not [name for name in files if name.endswith(".tmp")]
    cache = fresh(root)
    found = cache.lookup(resolve_model(Shared()), "document", [f"text {i}" for i in range(450)])
    assert len(found) == 450 and cache.stats().corrupt == 0


def test_a_lookup_sets_the_last_use_of_the_packs_it_reads(tmp_path: Path) -> None:
    """Last use is a pack's modification time (what `embeval cache prune` goes by): set when a lookup reads
    a pack last used more than an hour ago, not when only its index is read."""
    _, arm, pack = stored(tmp_path)
    old = time.time_ns() - 2 * 86400 * 10**9
    os.utime(pack, ns=(old, old))
    assert fresh(tmp_path).contains(arm, "document", TEXTS).all()
    assert pack.stat().st_mtime_ns == old
    fresh(tmp_path).lookup(arm, "document", TEXTS[:1])
    assert pack.stat().st_mtime_ns > time.time_ns() - 60 * 10**9
