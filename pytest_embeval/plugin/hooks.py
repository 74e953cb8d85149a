"""The hook a ``conftest.py`` implements to give a shortlist of named candidates in Python (registered by
`pytest_embeval.plugin.pytest_addhooks`; only pytest and the standard library are imported here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest


@pytest.hookspec(firstresult=True)
def pytest_embeval_candidates(config: pytest.Config) -> Mapping[str, object] | Sequence[object] | None:
    """The candidates to compare with the incumbent, when neither ``--embeval-candidate`` nor the ini key
    ``embeval_candidate`` names any: a mapping of name to model, or a list of models named as
    ``--embeval-candidate`` names them (``NAME=SPEC`` strings, or objects with a ``name``).

    A model is a spec string, an object with ``encode_query`` / ``encode_document``, or a function of no
    arguments that builds one: it is called when the candidate is first needed, in the run, so that
    collecting (``--collect-only``) builds nothing::

        def pytest_embeval_candidates(config):
            return {"static-256": "path/to/static-256", "small": load_small_model}

    Called when a golden file is collected, so the names are in the node ids
    (``golden/support.yaml::overall[small]``); a hook in a ``conftest.py`` beside a golden file applies to
    it. Return None to leave the choice to the ``embeval_candidate`` fixture.
    """
    return None
