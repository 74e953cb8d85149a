"""What pytester's in-process runs keep of ``sys.modules`` and ``sys.meta_path``: the modules and import
finders of installed libraries, which cannot be loaded twice in one process (``conftest.py`` installs this
before any test runs; ``tests/test_in_process_runs.py`` tests it)."""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import _pytest.pytester

import pytest_embeval

#: Where this interpreter's installed libraries live: the virtualenv's site-packages, and this package (an
#: editable install lives in the repository).
INSTALLED_LIBRARIES = (
    sysconfig.get_path("purelib"),
    sysconfig.get_path("platlib"),
    str(Path(pytest_embeval.__file__).parent),
)


def _of_an_installed_library(name: str) -> bool:
    module = sys.modules.get(name)
    where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", ())), None)
    return isinstance(where, str) and where.startswith(INSTALLED_LIBRARIES)


class _KeepingInstalledLibraries(_pytest.pytester.SysModulesSnapshot):
    """pytester's snapshot of ``sys.modules``, which also keeps the modules of installed libraries.

    After each in-process run (and each test that uses pytester), pytester drops every module imported since
    the snapshot, so that the next run imports the test's own modules afresh. A library does not survive
    that. torch registers its operators with its C core once per process: imported again, it fails with
    "Only a single TORCH_LIBRARY can be used to register the namespace c10d_functional", or crashes inside
    torch._C. numpy's and scipy's extension modules cannot load twice. The OpenAI client no longer recognises
    its own connection errors once httpx's modules are loaded afresh. A module of this package loaded afresh
    holds classes that are not those the tests imported. So a library's modules are kept, as in any real
    process; the test's own modules, which never live among the installed libraries, are dropped as before."""

    def __init__(self, preserve: Callable[[str], bool] | None = None) -> None:
        super().__init__(
            lambda name: _of_an_installed_library(name) or (preserve is not None and preserve(name))
        )


class _KeepingLibraryFinders(_pytest.pytester.SysPathsSnapshot):
    """pytester's snapshot of ``sys.path`` and ``sys.meta_path``, which also keeps the import finders that
    installed libraries added since.

    A library kept in ``sys.modules`` (above) may rely on a finder it put on ``sys.meta_path`` when first
    imported, and it adds that finder only once. sentence-transformers 6 serves its old module paths
    (``sentence_transformers.models.Transformer``, which the bundled MiniLM's modules.json names) through
    such a finder: restored away after the in-process run that first imported the library, every later load
    of that model in the same process failed with "No module named 'sentence_transformers.models'", which
    depends on which tests an xdist worker ran first. A finder of the test's own modules is dropped as
    before."""

    def __init__(self) -> None:
        super().__init__()
        self._finders_before = {id(finder) for finder in sys.meta_path}

    def restore(self) -> None:
        added_by_libraries = [
            finder
            for finder in sys.meta_path
            if id(finder) not in self._finders_before and _of_an_installed_library(type(finder).__module__)
        ]
        super().restore()
        # In front, where libraries put theirs, so that they answer before the path finder does.
        sys.meta_path[:0] = added_by_libraries


def keep_installed_libraries() -> None:
    """Make pytester snapshot ``sys.modules`` and ``sys.path`` with the classes above."""
    _pytest.pytester.SysModulesSnapshot = _KeepingInstalledLibraries  # type: ignore[misc]
    _pytest.pytester.SysPathsSnapshot = _KeepingLibraryFinders  # type: ignore[misc]
