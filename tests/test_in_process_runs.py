"""The suite's own harness: what pytester's in-process runs keep of ``sys.modules`` (see conftest.py)."""

from __future__ import annotations

import sys

import pytest

#: A module of an installed library (pytest's own dependency) that nothing else in the suite imports.
LIBRARY_MODULE = "pygments.lexers._lasso_builtins"


def test_an_in_process_run_keeps_the_libraries_it_imported_and_drops_the_tests_own_modules(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, LIBRARY_MODULE, raising=False)
    pytester.makepyfile(
        helper_of_the_run="VALUE = 1\n",
        test_run=f"import {LIBRARY_MODULE}\nimport helper_of_the_run\n\ndef test_x():\n    pass\n",
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert LIBRARY_MODULE in sys.modules
    assert "helper_of_the_run" not in sys.modules
    assert "test_run" not in sys.modules
