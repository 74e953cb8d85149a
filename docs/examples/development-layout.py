"""The package's folders in layer order, each with its modules and the first sentence of each docstring."""

import ast
import sys
from pathlib import Path

import tomllib

package = Path(sys.argv[1]) / "pytest_embeval"
config = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
(layers,) = (c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")


def summary(path: Path) -> str:
    text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(text.split("\n\n")[0].split())
    sentence = first.split(". ")[0].rstrip(".")
    return sentence if len(sentence) <= 64 else sentence[:61].rsplit(" ", 1)[0] + " …"


for layer in layers:
    for folder in (name.strip() for name in layer.split("|")):
        modules = sorted(p for p in (package / folder).glob("*.py") if p.name != "__init__.py")
        print(f"{folder}/  {summary(package / folder / '__init__.py')}")
        for module in modules:
            lines = len(module.read_text(encoding="utf-8").splitlines())
            print(f"    {module.name:<26} {lines:>4}  {summary(module)}")
