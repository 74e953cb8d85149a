"""The tokens a model reads for a text, counted with its own tokenizer, for the capacity projection.

A sentence-transformers model is counted from its folder's ``tokenizer.json`` with the ``tokenizers`` library
(a dependency of transformers; it needs neither torch nor the model's weights), the way the model's first
module tokenizes: a Transformer adds its special tokens and reads at most ``max_seq_length`` tokens; a
StaticEmbedding adds none and reads everything. The prompt the model prepends (``encode_query`` /
``encode_document``) is counted too, as part of the text it reads. A model loaded in memory is counted with
a copy of its own tokenizer. A custom encoder can count for itself with a ``count_tokens(texts, kind)``
method returning one count per text.

Counts are untruncated; `count` applies the model's maximum length, so the report can say how many texts
the model cuts short.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pytest_embeval.core.capacity import TokenCount

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["EncoderCounter", "TokenCounter", "TokenizerCounter", "count", "folder_counter", "model_counter"]

_TOKENIZER_FILE = "tokenizer.json"


class TokenCounter(Protocol):
    """Counts the tokens a model reads per text, before truncation at ``max_length``."""

    @property
    def max_length(self) -> int | None: ...

    @property
    def method(self) -> str: ...

    def __call__(self, texts: Sequence[str], kind: str) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class TokenizerCounter:
    """Counts with a ``tokenizers`` tokenizer, loaded on first use from ``source`` (a ``tokenizer.json`` path,
    or a tokenizer's JSON text), with truncation and padding switched off."""

    source: Path | str
    special_tokens: bool
    max_length: int | None
    prompts: Mapping[str, str]
    method: str

    def __call__(self, texts: Sequence[str], kind: str) -> np.ndarray:
        prompt = self.prompts.get(kind, "")
        tokenizer = _tokenizer(self.source)
        encodings = tokenizer.encode_batch(
            [prompt + text for text in texts], add_special_tokens=self.special_tokens
        )
        return np.array([len(encoding.ids) for encoding in encodings], dtype=np.int64)


@dataclass(frozen=True, slots=True)
class EncoderCounter:
    """A custom encoder's own ``count_tokens(texts, kind)``: one count per text, as the encoder reads it."""

    count_tokens: Callable[[list[str], str], Sequence[int]]
    max_length: int | None = None
    method: str = "the encoder's count_tokens"

    def __call__(self, texts: Sequence[str], kind: str) -> np.ndarray:
        counts = np.asarray(self.count_tokens(list(texts), kind))
        if counts.shape != (len(texts),) or counts.dtype.kind not in "iu" or (counts < 0).any():
            raise ValueError(
                f"count_tokens must return one integer >= 0 per text ({len(texts)}), got {counts.shape} "
                f"{counts.dtype}"
            )
        return counts.astype(np.int64)


def count(counter: TokenCounter, texts: Sequence[str], kind: str) -> tuple[TokenCount, np.ndarray]:
    """What the model reads of ``texts``: the total, and the tokens of each text cut at the counter's
    maximum length."""
    tokens = counter(texts, kind)
    limit = counter.max_length
    read = tokens if limit is None else np.minimum(tokens, limit)
    total = TokenCount(
        texts=len(texts),
        tokens=int(read.sum()),
        truncated=0 if limit is None else int((tokens > limit).sum()),
        max_length=limit,
        method=counter.method,
    )
    return total, read


def folder_counter(
    folder: Path, prompts: Mapping[str, str], max_seq_length: int | None
) -> TokenizerCounter | None:
    """A counter for a sentence-transformers folder whose first module is a Transformer or a StaticEmbedding
    with a ``tokenizer.json``; None for any other folder (its tokens are then not counted)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        first = modules[0]
        module_class = str(first["type"]).rsplit(".", 1)[-1]
        path = folder / str(first.get("path") or "") / _TOKENIZER_FILE
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return None
    if not path.is_file() or module_class not in ("Transformer", "StaticEmbedding"):
        return None
    transformer = module_class == "Transformer"
    return TokenizerCounter(
        source=path,
        special_tokens=transformer,
        max_length=max_seq_length if transformer else None,
        prompts=dict(prompts),
        method=_method(module_class, transformer),
    )


def model_counter(model: Any, prompts: Mapping[str, str]) -> TokenizerCounter | None:
    """A counter for a loaded sentence-transformers model, from a copy of its first module's tokenizer (the
    copy: counting switches truncation and padding off, which must not change the model's own)."""
    from tokenizers import Tokenizer

    tokenizer = getattr(model, "tokenizer", None)
    first = type(model[0]).__name__ if len(model) else ""
    if isinstance(tokenizer, Tokenizer) and first == "StaticEmbedding":
        return TokenizerCounter(tokenizer.to_str(), False, None, dict(prompts), _method(first, False))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    max_length = getattr(model, "max_seq_length", None)
    if isinstance(backend, Tokenizer) and first == "Transformer":
        limit = max_length if isinstance(max_length, int) else None
        return TokenizerCounter(backend.to_str(), True, limit, dict(prompts), _method(first, True))
    return None


def _method(module_class: str, special_tokens: bool) -> str:
    extras = "prompt and special tokens included" if special_tokens else "prompt included"
    return f"the model's own tokenizer ({module_class}; {extras})"


@functools.lru_cache(maxsize=16)
def _tokenizer(source: Path | str) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(source)) if isinstance(source, Path) else Tokenizer.from_str(source)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
