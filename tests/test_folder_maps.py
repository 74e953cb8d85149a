"""The folder maps stay true: each folder's ``__init__.py`` docstring names every module of the folder (how a
newcomer finds their way), names none that does not exist, and the package's docstring chains every folder
in the layer order that ``pyproject.toml`` declares for import-linter."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_embeval"
FOLDERS = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))

#: A name in single backticks (the docstrings' mark for a module, or a name inside one: `options.Settings`);
#: double backticks mark other folders, options and literals.
SINGLE_BACKTICKED = re.compile(r"(?<!`)`([^`\s]+)`(?!`)")


def folder_map(init: Path) -> str:
    """The part of a folder's docstring that maps its modules: everything before ``May import:``."""
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    return docstring.split("May import:", 1)[0]


def map_problems(folder: Path) -> list[str]:
    """Modules of ``folder`` its map leaves out, and names its map gives as modules that are not."""
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    folders = {path.parent.name for path in folder.parent.glob("*/__init__.py")} | {"pytest_embeval"}
    named = SINGLE_BACKTICKED.findall(folder_map(folder / "__init__.py"))
    # `data_files.GoldenError` names a module's member; `arms.embedding.embed` a folder's.
    heads = {name.split(".", 1)[0] for name in named if name.replace(".", "").replace("_", "").isalnum()}
    problems = [f"{folder.name}/{module}.py is not in the folder's map" for module in sorted(modules - heads)]
    problems += [
        f"{folder.name}'s map names `{head}`, which is no module of the folder"
        for head in sorted(heads - modules - folders)
    ]
    return problems


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folder_map_names_every_module_and_only_modules(folder: str) -> None:
    assert map_problems(PACKAGE / folder) == []


def test_a_module_missing_from_the_map_or_a_map_naming_no_module_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "pytest_embeval" / "golden"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        '"""Golden sets: the schema (`schema`, its error `schema.SchemaError`), the loader (`loader`) and\n'
        'the retired `old_reader`.\n\nMay import: ``core`` (`gone` here is not part of the map)."""\n',
        encoding="utf-8",
    )
    for module in ("schema", "loader", "draws"):
        (folder / f"{module}.py").write_text("", encoding="utf-8")
    assert map_problems(folder) == [
        "golden/draws.py is not in the folder's map",
        "golden's map names `old_reader`, which is no module of the folder",
    ]


def test_the_package_docstring_chains_every_folder_in_layer_order() -> None:
    docstring = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))) or ""
    chain = docstring.split("follow the pipeline", 1)[1]
    links = [re.findall(r"``(\w+)``", link) for link in chain.split("←")]
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        contract["layers"]
        for contract in pyproject["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    ]
    declared = [sorted(name.strip() for name in layer.split("|")) for layer in reversed(layers)]
    assert [sorted(link) for link in links] == declared
    assert sorted(name for link in links for name in link) == FOLDERS
