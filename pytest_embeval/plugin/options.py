"""Every command-line and ini setting of the plugin, declared once and resolved once into `Settings`.

Precedence is command line > ini file > default; model specs have more sources, which the items consult
only when neither option nor ini key is set: the ``pytest_embeval_candidates`` hook (a shortlist of named
candidates, `hooks`), then the session fixtures `embeval_incumbent` / `embeval_candidate`.
Only pytest and the standard library are imported here: this module loads in every pytest run of everyone
who installs us.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_embeval.files.output_paths import clash, file_output_problem, output_problem

if TYPE_CHECKING:
    from pytest_embeval.arms.candidates import NamedCandidate


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """The plugin's settings for one session, resolved from command line and ini."""

    enabled: bool
    incumbent: str | None
    #: the candidates named on the command line or in the ini file, in order; () when neither names one
    candidates: tuple[NamedCandidate, ...]
    json_path: Path | None
    runs_dir: Path | None
    progress: bool
    #: where embeddings are cached (absolute); None with --embeval-no-cache
    cache_dir: Path | None
    #: where to write blind judging sheets after the run, and how deep to pool each arm
    pool_dir: Path | None
    pool_depth: int
    #: the Markdown report, the GitHub step summary it is appended to, the HTML page, the forest plot's PNG
    markdown_path: Path | None = None
    step_summary: Path | None = None
    html_path: Path | None = None
    plot_path: Path | None = None
    #: the device of the models whose spec does not say (``device=``): auto, cpu, cuda, cuda:N or mps
    device: str = "auto"
    #: leave each arm's collection in the vector database a golden set declares, after the run
    keep_collections: bool = False

    def outputs(self) -> dict[str, Path]:
        """Every output asked for: the option (or variable) that names it and its value -> its path."""
        named = {
            "--embeval-json": self.json_path,
            "--embeval-runs": self.runs_dir,
            "--embeval-pool": self.pool_dir,
            "--embeval-md": self.markdown_path,
            "--embeval-html": self.html_path,
            "--embeval-plot": self.plot_path,
            f"${STEP_SUMMARY}": self.step_summary,
        }
        return {f"{option} {path}": path for option, path in named.items() if path is not None}


def add_options(parser: pytest.Parser) -> None:
    """Every option and ini key, in the group ``pytest --help`` shows them under."""
    group = parser.getgroup("embeval", "embedding-model regression tests (pytest-embeval)")
    _run_options(group)
    _output_options(group)
    _cache_and_pool_options(group)
    _ini_keys(parser)


def _run_options(group: pytest.OptionGroup) -> None:
    """What runs: the switch, the arms, where the models run, what the run leaves behind and shows."""
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
        metavar="[NAME=]SPEC",
        action="append",
        default=None,
        help="candidate model, as --embeval-incumbent; repeat it to compare a shortlist of candidates in one "
        "run, each named NAME (default: derived from SPEC) in node ids and reports.",
    )
    group.addoption(
        "--embeval-device",
        metavar="DEVICE",
        default=None,
        help="where sentence-transformers models run: auto (CUDA if torch sees one, else MPS, else the CPU; "
        "the default), cpu, cuda, cuda:N or mps (overrides the ini key embeval_device; a spec's own "
        "?device= wins over both).",
    )
    group.addoption(
        "--embeval-keep-collections",
        action="store_true",
        default=False,
        help="leave each arm's collection in the vector database a golden file's index names (Chroma, "
        "LanceDB, a service adapter) after the run, to inspect it; by default each is dropped.",
    )
    group.addoption(
        "--embeval-no-progress",
        action="store_true",
        default=False,
        help="do not print progress lines while models load, texts are encoded and graphs built.",
    )


def _output_options(group: pytest.OptionGroup) -> None:
    """The reports written at the end of the session."""
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
        "--embeval-md",
        metavar="PATH",
        default=None,
        help="write the Markdown report (for a pull-request comment) to PATH; '-' appends it to the GitHub "
        "step summary ($GITHUB_STEP_SUMMARY).",
    )
    group.addoption(
        "--embeval-step-summary",
        action="store_true",
        default=None,
        help="append the Markdown report to the GitHub step summary when $GITHUB_STEP_SUMMARY is set "
        "(overrides the ini key embeval_step_summary).",
    )
    group.addoption(
        "--embeval-html",
        metavar="PATH",
        default=None,
        help="write the HTML report (one self-contained file: forest plot, strata, movers) to PATH.",
    )
    group.addoption(
        "--embeval-plot",
        metavar="PATH.png",
        default=None,
        help="draw the forest plot of every golden set into a PNG picture (needs the [plot] extra).",
    )


def _cache_and_pool_options(group: pytest.OptionGroup) -> None:
    """The embedding cache, and the judging sheet pooled from what the run retrieved."""
    group.addoption(
        "--embeval-cache-dir",
        metavar="DIR",
        default=None,
        help="cache embeddings in DIR (overrides the ini key embeval_cache_dir; default: .embeval_cache "
        "in the rootdir). Shared safely by xdist workers and by machines.",
    )
    group.addoption(
        "--embeval-no-cache",
        action="store_true",
        default=False,
        help="neither read nor write the embedding cache: embed every text.",
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


def _ini_keys(parser: pytest.Parser) -> None:
    parser.addini("embeval_incumbent", "incumbent model spec (see --embeval-incumbent).", default=None)
    parser.addini("embeval_device", "device of the models (see --embeval-device).", default=None)
    parser.addini(
        "embeval_candidate",
        "candidate model specs, one per line, each [NAME=]SPEC (see --embeval-candidate).",
        type="linelist",
        default=[],
    )
    parser.addini(
        "embeval_cache_dir",
        "embedding cache folder, relative to the rootdir (default: .embeval_cache).",
        default=None,
    )
    parser.addini(
        "embeval_step_summary",
        "append the Markdown report to $GITHUB_STEP_SUMMARY when it is set (see --embeval-step-summary).",
        type="bool",
        default=False,
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
    device = _device(config) if enabled else "auto"
    reports = _report_outputs(config)

    # Each output as given (a trailing '/' kept): what it is ("folder", or the file name a folder given for
    # it could hold).
    def given(option: str, path: Path | None) -> str | None:
        return None if path is None else _nonempty(config.getoption(option))

    outputs = {
        "--embeval-json": (json_path, "embeval.json"),
        "--embeval-runs": (runs_dir, "folder"),
        "--embeval-pool": (pool_dir, "folder"),
        "--embeval-md": (given("--embeval-md", reports["markdown_path"]), "embeval.md"),
        "--embeval-html": (given("--embeval-html", reports["html_path"]), "embeval.html"),
        "--embeval-plot": (given("--embeval-plot", reports["plot_path"]), "forest.png"),
        f"${STEP_SUMMARY}": (
            None if reports["step_summary"] is None else _nonempty(os.environ.get(STEP_SUMMARY)),
            "summary.md",
        ),
    }
    cache_dir = _cache_dir(config)
    if enabled:
        for option, (value, kind) in outputs.items():
            if value:
                problem = (kind != "folder" and file_output_problem(str(value), kind)) or output_problem(
                    Path(value), kind, make_folders=True
                )
                if problem is not None:
                    raise pytest.UsageError(f"{option} {value}: {problem}")
        written = {f"{option} {value}": Path(value) for option, (value, _) in outputs.items() if value}
        cache = {} if cache_dir is None else {cache_dir: "the embedding cache folder"}
        problem = clash(written, folders=cache)
        if problem is not None:
            raise pytest.UsageError(problem)
    return Settings(
        enabled=enabled,
        incumbent=spec("incumbent"),
        candidates=_candidates(config) if enabled else (),
        json_path=Path(json_path) if json_path else None,
        runs_dir=Path(runs_dir) if runs_dir else None,
        progress=not config.getoption("--embeval-no-progress"),
        cache_dir=cache_dir,
        pool_dir=Path(pool_dir) if pool_dir else None,
        pool_depth=pool_depth,
        device=device,
        keep_collections=bool(config.getoption("--embeval-keep-collections")),
        **reports,
    )


#: The variable GitHub Actions names the job step's summary file in.
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def _report_outputs(config: pytest.Config) -> dict[str, Path | None]:
    """The Markdown, step-summary, HTML and PNG outputs; `-` for the Markdown is the step summary, which
    must then exist, while --embeval-step-summary (or its ini key) appends to it only when it is set."""
    markdown = _nonempty(config.getoption("--embeval-md"))
    summary = _nonempty(os.environ.get(STEP_SUMMARY))
    wanted = config.getoption("--embeval-step-summary")
    if wanted is None:
        wanted = config.getini("embeval_step_summary")
    if markdown == "-" and summary is None and config.getoption("--embeval"):
        raise pytest.UsageError(f"--embeval-md -: ${STEP_SUMMARY} is not set (GitHub Actions sets it)")
    html = _nonempty(config.getoption("--embeval-html"))
    plot = _nonempty(config.getoption("--embeval-plot"))
    if plot is not None and config.getoption("--embeval"):
        if not plot.lower().endswith(".png"):
            raise pytest.UsageError(f"--embeval-plot {plot}: the picture is a PNG; name it PATH.png")
        if importlib.util.find_spec("matplotlib") is None:
            from pytest_embeval.reports.forest_png import PLOT_MISSING  # only now: the reports import numpy

            raise pytest.UsageError(PLOT_MISSING)
    return {
        "markdown_path": Path(markdown) if markdown not in (None, "-") else None,
        "step_summary": Path(summary) if summary is not None and (markdown == "-" or wanted) else None,
        "html_path": Path(html) if html else None,
        "plot_path": Path(plot) if plot else None,
    }


def _candidates(config: pytest.Config) -> tuple[NamedCandidate, ...]:
    """--embeval-candidate, each given once or more, else the ini key's lines, named (`candidates`); two
    candidates of one name, or a name that is not one, are a usage error."""
    from pytest_embeval.arms.candidates import CandidateError, name_candidates  # standard library only

    given = [text for text in config.getoption("--embeval-candidate") or () if _nonempty(text)]
    where = "--embeval-candidate"
    if not given:
        given = [text for text in config.getini("embeval_candidate") if _nonempty(text)]
        where = "embeval_candidate (ini file)"
    try:
        return name_candidates(given, where)
    except CandidateError as error:
        raise pytest.UsageError(str(error)) from None


def _device(config: pytest.Config) -> str:
    """--embeval-device, else the ini key, else auto; written as a device (whether this machine has it is
    checked when the session starts, `session.start`)."""
    from pytest_embeval.arms.devices import DeviceError, parse_device  # standard library only

    given = _nonempty(config.getoption("--embeval-device"))
    where = "--embeval-device" if given is not None else "embeval_device (ini file)"
    value = given or _nonempty(config.getini("embeval_device")) or "auto"
    try:
        return parse_device(value, where)
    except DeviceError as error:
        raise pytest.UsageError(str(error)) from None


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
