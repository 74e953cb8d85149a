"""The suite's own harness: what pytester's in-process runs keep of ``sys.modules`` and ``sys.meta_path``
(`pytester_snapshots`, which conftest.py installs)."""

from __future__ import annotations

import sys

import pytest
import pytester_snapshots

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


#: A library that puts an import finder on ``sys.meta_path`` when first imported, as sentence-transformers 6
#: does for its old module paths.
FINDING_LIBRARY = "library_with_a_finder"


def test_an_in_process_run_keeps_the_finders_libraries_added_and_drops_the_tests_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = pytester.mkdir("site")
    (site / f"{FINDING_LIBRARY}.py").write_text(
        "import sys\n\n"
        "class Finder:\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        return None\n\n"
        "sys.meta_path.insert(0, Finder())\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(
        pytester_snapshots, "INSTALLED_LIBRARIES", (*pytester_snapshots.INSTALLED_LIBRARIES, str(site))
    )
    # The run's changes land in a copy, the process's own list comes back afterwards; the library's module
    # goes too (set, then deleted: monkeypatch removes a key it set that was absent).
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setitem(sys.modules, FINDING_LIBRARY, None)
    monkeypatch.delitem(sys.modules, FINDING_LIBRARY)
    pytester.makepyfile(
        test_run=(
            f"import sys\nsys.path.insert(0, {str(site)!r})\nimport {FINDING_LIBRARY}\n\n"
            "class FinderOfTheTest:\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        return None\n\n"
            "sys.meta_path.insert(0, FinderOfTheTest())\n\n"
            "def test_x():\n    pass\n"
        )
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    kept = [type(finder).__module__ for finder in sys.meta_path]
    assert FINDING_LIBRARY in kept
    assert "test_run" not in kept
    assert kept.index(FINDING_LIBRARY) == 0
