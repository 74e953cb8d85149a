"""The test suite's shared helpers (plain functions and constants; the fixtures live in ``conftest.py``,
which no test imports): the small golden set the plugin and CLI tests run on, the fake models' file, the
public collections beside the repository, and the shape of an in-process ``embeval`` run's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

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
