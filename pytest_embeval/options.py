"""Every command-line and ini setting of the plugin, declared once and resolved once into `Settings`.

Precedence is command line > ini file > default; model specs have a third source, the session fixtures
`embeval_incumbent` / `embeval_candidate`, which the items consult only when neither option nor ini key
is set.
Only pytest and the standard library are imported here: this module loads in every pytest run of everyone
who installs us.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

import pytest


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """The plugin's settings for one session, resolved from command line and ini."""

    enabled: bool
    incumbent: str | None
    candidate: str | None
    json_path: Path | None
    runs_dir: Path | None
    progress: bool
    #: where embeddings are cached (absolute); None with --embeval-no-cache
    cache_dir: Path | None
    #: where to write blind judging sheets after the run, and how deep to pool each arm
    pool_dir: Path | None
    pool_depth: int


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("embeval", "embedding-model regression tests (pytest-embeval)")
    group.addoption(
        "--embeval",
        action="store_true",
        default=False,
        help="collect golden-set YAML files and compare the incumbent and candidate embedding models.",
    )
    group.addoption(
        "--embeval-incumbent",
        metavar="SPEC",
        default=None,
        help="incumbent model: a sentence-transformers name or path, or module:attr "
        "(overrides the ini key embeval_incumbent and the embeval_incumbent fixture).",
    )
    group.addoption(
        "--embeval-candidate",
        metavar="SPEC",
        default=None,
        help="candidate model, as --embeval-incumbent.",
    )
    group.addoption(
        "--embeval-json",
        metavar="PATH",
        default=None,
        help="write the JSON report (schema_version 1) to PATH.",
    )
    group.addoption(
        "--embeval-runs",
        metavar="DIR",
        default=None,
        help="write TREC run files (qid Q0 docid rank score tag), one per arm per golden set, into DIR.",
    )
    group.addoption(
        "--embeval-no-progress",
        action="store_true",
        default=False,
        help="do not print progress while encoding long corpora.",
    )
    group.addoption(
        "--embeval-cache-dir",
        metavar="DIR",
        default=None,
        help="cache embeddings in DIR (overrides the ini key embeval_cache_dir; default: .embeval_cache "
        "in the rootdir). Shared safely by xdist workers and by machines.",
    )
    group.addoption(
        "--embeval-pool",
        metavar="DIR",
        default=None,
        help="after the run, write a blind judging sheet per golden set into DIR: every arm's top "
        "--embeval-pool-depth documents per query not judged yet (see `embeval pool`).",
    )
    group.addoption(
        "--embeval-pool-depth",
        metavar="K",
        type=int,
        default=20,
        help="documents per arm and query pooled by --embeval-pool (1 to 100, default 20).",
    )
    group.addoption(
        "--embeval-no-cache",
        action="store_true",
        default=False,
        help="neither read nor write the embedding cache: embed every text.",
    )
    parser.addini("embeval_incumbent", "incumbent model spec (see --embeval-incumbent).", default=None)
    parser.addini("embeval_candidate", "candidate model spec (see --embeval-candidate).", default=None)
    parser.addini(
        "embeval_cache_dir",
        "embedding cache folder, relative to the rootdir (default: .embeval_cache).",
        default=None,
    )


def _nonempty(value: object) -> str | None:
    """An unset ini key reads as None or an empty string; both mean "not given"."""
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def resolve_settings(config: pytest.Config) -> Settings:
    def spec(role: str) -> str | None:
        return _nonempty(config.getoption(f"--embeval-{role}")) or _nonempty(config.getini(f"embeval_{role}"))

    json_path = config.getoption("--embeval-json")
    runs_dir = config.getoption("--embeval-runs")
    pool_dir = config.getoption("--embeval-pool")
    pool_depth = config.getoption("--embeval-pool-depth")
    # The report ranks 100 documents per query (more only for deeper metrics): pooling reads from it.
    if not 1 <= pool_depth <= 100:
        raise pytest.UsageError(f"--embeval-pool-depth must be between 1 and 100, got {pool_depth}")
    enabled = bool(config.getoption("--embeval"))
    outputs = {
        "--embeval-json": (json_path, "file"),
        "--embeval-runs": (runs_dir, "folder"),
        "--embeval-pool": (pool_dir, "folder"),
    }
    if enabled:
        for option, (value, kind) in outputs.items():
            if value:
                problem = output_problem(Path(value), kind)
                if problem is not None:
                    raise pytest.UsageError(f"{option} {value}: {problem}")
    return Settings(
        enabled=enabled,
        incumbent=spec("incumbent"),
        candidate=spec("candidate"),
        json_path=Path(json_path) if json_path else None,
        runs_dir=Path(runs_dir) if runs_dir else None,
        progress=not config.getoption("--embeval-no-progress"),
        cache_dir=_cache_dir(config),
        pool_dir=Path(pool_dir) if pool_dir else None,
        pool_depth=pool_depth,
    )


def output_problem(path: Path, kind: str) -> str | None:
    """Why ``path`` cannot be written as a ``kind`` ("file" or "folder") at the end of the run, or None.

    Checked when the session starts, so a bad output path costs nothing: an existing path of the other kind,
    a path under a file, and a folder this process cannot create files in (tried with a temporary file in
    the deepest folder that exists, which is where the missing ones would be created).
    """
    existing = path.parent
    try:
        if kind == "file" and path.is_dir():
            return "is a folder; name the report file, e.g. " + str(path / "embeval.json")
        if kind == "folder" and path.exists() and not path.is_dir():
            return "is a file, not a folder"
        existing = path if kind == "folder" and path.is_dir() else path.parent
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir():
            return f"{existing} is a file, not a folder"
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return f"cannot write in {existing}: {error.strerror or error}"
    return None


def _cache_dir(config: pytest.Config) -> Path | None:
    """--embeval-cache-dir relative to where pytest was started (like every path on the command line), the
    ini key relative to the rootdir (like pytest's own cache_dir), else <rootdir>/.embeval_cache."""
    if config.getoption("--embeval-no-cache"):
        return None
    option = _nonempty(config.getoption("--embeval-cache-dir"))
    if option is not None:
        return Path(config.invocation_params.dir, _expand(option)).resolve()
    configured = _nonempty(config.getini("embeval_cache_dir"))
    return Path(config.rootpath, _expand(configured or ".embeval_cache")).resolve()


def _expand(path: str) -> str:
    """``~`` and ``$VARIABLES`` expanded, so a CI config can say ``$RUNNER_TEMP/embeval``."""
    return os.path.expanduser(os.path.expandvars(path))
