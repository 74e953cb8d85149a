from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _pytest.pytester
import hypothesis
import pytest
import yaml

import pytest_embeval
from pytest_embeval.reports.json_report import without_timings  # noqa: F401  (the tests import it from here)

#: Where this interpreter's installed libraries live: the virtualenv's site-packages, and this package (an
#: editable install lives in the repository).
_LIBRARIES = (
    sysconfig.get_path("purelib"),
    sysconfig.get_path("platlib"),
    str(Path(pytest_embeval.__file__).parent),
)


def _of_an_installed_library(name: str) -> bool:
    module = sys.modules.get(name)
    where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", ())), None)
    return isinstance(where, str) and where.startswith(_LIBRARIES)


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


_pytest.pytester.SysModulesSnapshot = _KeepingInstalledLibraries  # type: ignore[misc]
_pytest.pytester.SysPathsSnapshot = _KeepingLibraryFinders  # type: ignore[misc]

# In CI (HYPOTHESIS_PROFILE=ci, which .ci/run sets) every property test draws the same examples on every run
# and keeps no database: a fresh clone never fails on an example an earlier run happened to find (those are
# turned into @example cases). Elsewhere hypothesis explores, and remembers what failed.
hypothesis.settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

FAKE_MODELS = Path(__file__).with_name("fake_models.py")

#: The public IR collections beside the repository (``../shared/data``), never inside it.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_collection(name: str) -> Path:
    """The folder of collection ``name`` under `SHARED_DATA`; the calling test is skipped, saying so, where
    it is missing (a fresh clone has no ``../shared``)."""
    folder = SHARED_DATA / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"needs ../shared/data/{name} beside the repository (the public collections)")
    return folder


#: Query i of each language is "<language> <i>"; its one relevant document is "doc <i>".
LANGUAGES = {"en": range(0, 24), "es": range(24, 48)}
DOCUMENTS = 60


def write_file(path: Path, text: str | bytes) -> None:
    """Write text (UTF-8) or bytes as given, creating the folders on the way."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def golden_files(root: Path, name: str = "support", **settings: Any) -> Path:
    """Write a small golden set (YAML + JSONL + TSV) under root; settings override the YAML keys."""
    data = root / name
    data.mkdir(parents=True, exist_ok=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i:02d}", "text": f"doc {i}"}) + "\n" for i in range(DOCUMENTS)),
        encoding="utf-8",
    )
    queries = [
        {
            "_id": f"q{i:02d}",
            "text": f"{language} {i}",
            "language": language,
            "shape": "even" if i % 2 else "odd",
        }
        for language, numbers in LANGUAGES.items()
        for i in numbers
    ]
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    qrels = ["query-id\tcorpus-id\tscore"] + [f"q{i:02d}\td{i:02d}\t1" for i in range(48)]
    (data / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    plan: dict[str, Any] = {
        "corpus": f"{name}/corpus.jsonl",
        "queries": f"{name}/queries.jsonl",
        "qrels": f"{name}/qrels.tsv",
        "strata": ["language"],
        "metric": "hit@1",
        "report": ["mrr@10"],
        "tie_margin": 0.05,
        "confidence": 0.95,
        "min_queries": 20,
        "bootstrap": 2000,
        "seed": 0,
    }
    plan.update(settings)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


#: What an in-process ``embeval`` run gives: exit status, stdout, stderr.
CliResult = tuple[int, str, str]


@pytest.fixture
def embeval(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``embeval`` in-process: (exit status, stdout, stderr)."""
    from pytest_embeval.cli import embeval as command

    def run(*args: str | Path) -> CliResult:
        status = command.main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture
def golden(pytester: pytest.Pytester) -> Callable[..., Path]:
    """Make `fake_models` importable in pytester runs (rootdir conftest puts it on sys.path, xdist workers
    included) and return the golden-set writer bound to pytester's directory."""
    pytester.makeconftest("")
    pytester.makepyfile(fake_models=FAKE_MODELS.read_text(encoding="utf-8"))

    def write(name: str = "support", **settings: Any) -> Path:
        return golden_files(pytester.path, name, **settings)

    return write


def run_good_against_bad_english(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest --embeval`` in pytester's folder, the fake models' good arm against the one that misses three
    English queries in four (`fake_models`)."""
    return pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:bad_english",
        *args,
    )
