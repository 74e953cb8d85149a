"""The files a golden file names, read from its YAML alone (its data files are not opened), so that an output
path naming one of them is refused before a run can overwrite it (`files.output_paths`).

`golden_inputs(path)` returns each input's resolved path and what it is: the golden file itself, its corpus,
queries and qrels (or the BEIR folder and the files in it), the sidecars read beside them (the corpus's and
the queries' draw records, `draws`; each qrels file's provenance, `qrels_files.provenance_path`), its
guidelines, and the reranker's model folder. A key that is malformed is left out: loading the golden file
reports it.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import yaml

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.draws import draw_path
from pytest_embeval.golden.qrels_files import provenance_path
from pytest_embeval.golden.yaml_nodes import NodeReader, compose

__all__ = ["GoldenInputs", "golden_inputs"]

#: The keys of a golden file that name a data file, as `golden_inputs` calls them.
_DATA_FILES = {"corpus": "corpus", "queries": "queries", "qrels": "qrels", "guidelines": "guidelines"}
#: The data files a draw sidecar may accompany (`embeval sample`, `embeval corpus-sample`).
_DRAWN = ("corpus", "queries")
#: What a BEIR folder holds, as it is read (see `data_sections.DataReader.beir`).
_BEIR_FILES = ("corpus.jsonl", "queries.jsonl")


class GoldenInputs:
    """A golden file's inputs: ``files`` (resolved path -> what it is) and ``folders``, within which every
    path is an input (a model folder: anything written there changes the model)."""

    def __init__(self, golden: Path) -> None:
        self.golden = golden
        self.files: dict[Path, str] = {}
        self.folders: dict[Path, str] = {}

    def add(self, path: Path, what: str, *, folder: bool = False) -> None:
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: loading names it
            return
        (self.folders if folder else self.files).setdefault(resolved, f"{what} of {self.golden}")

    def add_qrels(self, path: Path, what: str, sidecar: str) -> None:
        """A judgments file (``what``), and the provenance sidecar read beside it (``sidecar``)."""
        self.add(path, what)
        self.add(provenance_path(path), sidecar)


def golden_inputs(path: str | PathLike[str], shown: str | None = None) -> GoldenInputs:
    """Every input the golden file at ``path`` names, described as of ``shown`` (default: ``path``)."""
    location = Path(path)
    inputs = GoldenInputs(Path(shown) if shown is not None else location)
    inputs.files[location.resolve()] = f"the golden file {inputs.golden}"
    try:
        root = compose(location)
        if root is None:  # an empty file names no input (loading it says what is wrong)
            return inputs
        reader = NodeReader(location)
        top = reader.entries(root, None)
    except GoldenError:
        return inputs
    for key, (_, node) in top.items():
        try:
            if key in _DATA_FILES:
                if isinstance(node, yaml.MappingNode):
                    node = reader.entries(node, key)["path"][1]
                if isinstance(node, yaml.ScalarNode):
                    location, what = reader.location(node, key), f"the {_DATA_FILES[key]}"
                    if key == "qrels":
                        inputs.add_qrels(location, what, "the judgments' provenance")
                        continue
                    inputs.add(location, what)
                    if key in _DRAWN:
                        inputs.add(draw_path(location), f"the draw record of {what}")
            elif key == "beir":
                folder = reader.location(node, key)
                inputs.add(folder, "the BEIR folder")
                for name in _BEIR_FILES:
                    inputs.add(folder / name, f"the BEIR folder's {name}")
                for split in [folder / "qrels.tsv", *sorted((folder / "qrels").glob("*.tsv"))]:
                    name = split.relative_to(folder).as_posix()
                    inputs.add_qrels(split, f"the BEIR folder's {name}", f"the provenance of {name}")
            elif key == "rerank":
                model = reader.entries(node, key)["model"][1]
                if isinstance(model, yaml.ScalarNode) and ":" not in str(model.value):
                    inputs.add(
                        reader.location(model, "rerank.model"), "the reranker's model folder", folder=True
                    )
        except (GoldenError, KeyError, OSError):
            continue
    return inputs
