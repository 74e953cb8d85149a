"""Reading a golden file's YAML nodes so that every error names the file, the key and the line.

`NodeReader` reads the composed node tree (not PyYAML's constructed objects, which have lost their lines):
a mapping's entries with duplicate keys refused, scalars as words, ids, numbers, margins, choices and
metrics, and paths to data files checked to exist. `loader._GoldenLoader` reads the golden file's sections
with it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from pytest_embeval.core.metrics import MetricSpec, parse_metric
from pytest_embeval.files.unicode import unicode_problem
from pytest_embeval.golden.data_files import (
    GoldenError,
    id_problem,
    read_text,
)

NULL_TAG = "tag:yaml.org,2002:null"


def describe_node(node: yaml.Node) -> str:
    """A YAML value as the user wrote it, for "got ..." in messages."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = str(node.value)
    return value if value else "an empty value"


def _unknown_key(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f"unknown key, did you mean {close[0]!r}?"
    return f"unknown key (expected one of: {', '.join(known)})"


def _finite(value: object, *, text: bool = False) -> float | None:
    """``value`` as a finite float: an integer or a float (with ``text``, a string such as ``1e7`` too); None
    for anything else, a boolean, or an integer too large for a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str) if text else (int, float)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _integral(value: object) -> int | None:
    """The integer a float or a text such as ``1e7`` stands for, when it stands for one."""
    number = _finite(value, text=True) if isinstance(value, (str, float)) else None
    return int(number) if number is not None and number == int(number) else None


def node_line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


Entry = tuple[yaml.Node, yaml.Node]  # (key node, value node)


class NodeReader:
    """Reads the nodes of one YAML file: knows the file, so every error can name it and a node's line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.folder = path.resolve().parent
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte: read_text names it
            self.folder = path.parent
        self._constructor = yaml.SafeLoader("")

    def error(self, node: yaml.Node | None, key: str | None, problem: str) -> GoldenError:
        return GoldenError(self.path, key, None if node is None else node_line(node), problem)

    # --- generic node readers

    def entries(self, node: yaml.Node, key: str | None) -> dict[str, Entry]:
        """A mapping node's entries by key as written, refusing duplicate keys (PyYAML keeps the last one)."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, key, f"must be a mapping, got {describe_node(node)}")
        result: dict[str, Entry] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, key, f"keys must be plain names, got {describe_node(key_node)}")
            name = str(key_node.value)
            if name in result:
                problem = f"duplicate key (first on line {node_line(result[name][0])})"
                raise self.error(key_node, name if key is None else f"{key}.{name}", problem)
            result[name] = (key_node, value_node)
        return result

    def check_keys(self, entries: Mapping[str, Entry], known: Sequence[str], prefix: str | None) -> None:
        for name, (key_node, _) in entries.items():
            if name not in known:
                key = name if prefix is None else f"{prefix}.{name}"
                raise self.error(key_node, key, _unknown_key(name, known))

    def construct(self, node: yaml.Node, key: str) -> object:
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            raise self.error(node, key, f"invalid YAML value: {problem}") from None

    def word(self, node: yaml.Node, key: str, what: str) -> str:
        """A scalar as written (ids, names, stratum values): YAML typing would make numbers, bools of them."""
        if not isinstance(node, yaml.ScalarNode) or node.tag == NULL_TAG or not str(node.value).strip():
            raise self.error(node, key, f"must be {what}, got {describe_node(node)}")
        return str(node.value)

    def identifier(self, node: yaml.Node, key: str) -> str:
        value = self.word(node, key, "an id")
        problem = id_problem(value)
        if problem is not None:
            raise self.error(node, key, problem)
        return value

    def string(self, node: yaml.Node, key: str) -> str:
        value = self.construct(node, key)
        if not isinstance(value, str) or not value.strip():
            raise self.error(node, key, f"must be a non-empty string, got {describe_node(node)}")
        return value

    def number(self, node: yaml.Node, key: str) -> float | None:
        """The value as a float if it is a finite number (booleans are not numbers, nor an integer too large
        for a float), else None."""
        return _finite(self.construct(node, key))

    def margin(self, node: yaml.Node, key: str) -> float:
        value = self.number(node, key)
        if value is None or value < 0:
            raise self.error(node, key, f"must be a number >= 0, got {describe_node(node)}")
        return value

    def choice(self, node: yaml.Node, key: str, choices: Sequence[str]) -> str:
        """One of ``choices``, as written."""
        quoted = [f"'{choice}'" for choice in choices]
        expected = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
        if not isinstance(node, yaml.ScalarNode) or str(node.value) not in choices:
            raise self.error(node, key, f"must be {expected}, got {describe_node(node)}")
        return str(node.value)

    def confidence(self, node: yaml.Node) -> float:
        value = self.number(node, "confidence")
        if value is None or not 0 < value < 1:
            problem = f"must be a number strictly between 0 and 1, got {describe_node(node)}"
            raise self.error(node, "confidence", problem)
        return value

    def integer(self, node: yaml.Node, key: str, minimum: int, maximum: int | None = None) -> int:
        """An integer in [minimum, maximum]; the message states the whole range, and for a number written
        with an exponent or a point (``1e7``, which YAML reads as text) the digits to write instead."""
        value = self.construct(node, key)
        whole = value if isinstance(value, int) and not isinstance(value, bool) else None
        if whole is not None and whole >= minimum and (maximum is None or whole <= maximum):
            return whole
        wanted = f">= {minimum}" if maximum is None else f"from {minimum:,} to {maximum:,}"
        problem = f"must be an integer {wanted}, got {describe_node(node)}"
        written = _integral(value)
        if written is not None and written >= minimum and (maximum is None or written <= maximum):
            problem += f" (a number YAML reads as text or a fraction: write it as digits, {written})"
        raise self.error(node, key, problem)

    def metric(self, node: yaml.Node, key: str) -> MetricSpec:
        value = self.construct(node, key)
        if not isinstance(value, str):
            raise self.error(node, key, f"must be a metric name such as ndcg@10, got {describe_node(node)}")
        try:
            return parse_metric(value)
        except ValueError as exc:
            raise self.error(node, key, str(exc)) from None

    def location(self, node: yaml.Node, key: str) -> Path:
        """A path as given in the YAML file: absolute, or relative to the folder of the YAML file (resolved,
        see `load_golden`)."""
        path = Path(self.string(node, key))
        return path if path.is_absolute() else self.folder / path

    def data_file(
        self, node: yaml.Node, key: str, formats: Sequence[str], more_keys: Sequence[str] = ()
    ) -> tuple[Path, str | None]:
        """A data file named by a path, or by ``{path: FILE, format: F}`` declaring one of ``formats`` (and
        ``more_keys`` the caller reads); the declared format is None when the file's first line is to tell."""
        if not isinstance(node, yaml.MappingNode):
            return self.require(node, key, self.location(node, key)), None
        entries = self.entries(node, key)
        self.check_keys(entries, (*_FILE_KEYS, *more_keys), key)
        if "path" not in entries:
            raise self.error(node, f"{key}.path", "missing required key")
        declared = None
        if "format" in entries:
            format_node = entries["format"][1]
            declared = self.word(format_node, f"{key}.format", "a format name")
            if declared not in formats:
                problem = f"unknown format {declared!r} (expected one of: {', '.join(formats)})"
                raise self.error(format_node, f"{key}.format", problem)
        path_node = entries["path"][1]
        return self.require(path_node, f"{key}.path", self.location(path_node, f"{key}.path")), declared

    def require(self, node: yaml.Node, key: str, path: Path, *, folder: bool = False) -> Path:
        """``path`` if it is an existing file (or folder), else an error at ``node`` naming the full path."""
        what = "folder" if folder else "file"
        try:
            if path.is_dir() if folder else path.is_file():
                return path
            problem = f"{'not a ' + what if path.exists() else what + ' not found'}: {path.resolve()}"
        except (OSError, RuntimeError, ValueError) as exc:  # name too long, symlink loop, NUL byte
            problem = f"unusable path {str(path)!r}: {getattr(exc, 'strerror', None) or exc}"
        raise self.error(node, key, problem)


#: The keys of the mapping form of a data file (``corpus: {path: docs.tsv, format: tsv}``).
_FILE_KEYS = ("path", "format")


def compose(path: Path) -> yaml.Node | None:
    """The node tree of the YAML file at ``path`` (None when it is empty), read once for every reader of a
    golden file: each problem is one `GoldenError` naming the file and the line, a syntax error, lists or
    mappings nested deeper than the parser recurses, or a string that is not valid Unicode (`unicode`)."""
    text = read_text(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        if exc.context and problem.startswith("but "):  # "expected a single document ... but found ..."
            problem = f"{exc.context} {problem}"
        where = "" if mark is None else f" (column {mark.column + 1})"
        line = None if mark is None else mark.line + 1
        raise GoldenError(path, None, line, f"invalid YAML: {problem}{where}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        problem = f"invalid YAML: {exc.reason} (character #x{exc.character:04x})"
        raise GoldenError(path, None, line, problem) from None
    except RecursionError:
        depth, mark = _deepest(text)
        problem = f"invalid YAML: lists or mappings nested {depth} deep, more than the parser can read"
        raise GoldenError(path, None, mark.line + 1, f"{problem} (column {mark.column + 1})") from None
    pending = [] if root is None else [root]
    seen: set[int] = set()
    while pending:  # iteratively: a tree the parser could build may still be deeper than a recursion
        node = pending.pop()
        if id(node) in seen:  # an alias: its node is checked once, however often it is repeated
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            problem = unicode_problem(node.value)
            if problem is not None:
                raise GoldenError(path, None, node_line(node), problem)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            pending.extend(item for entry in node.value for item in entry)
    return root


def _deepest(text: str) -> tuple[int, yaml.Mark]:
    """The greatest nesting of a YAML text and where it is first reached, from its tokens (the scanner does
    not recurse)."""
    opening = (
        yaml.FlowSequenceStartToken,
        yaml.FlowMappingStartToken,
        yaml.BlockSequenceStartToken,
        yaml.BlockMappingStartToken,
    )
    closing = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)
    depth = deepest = 0
    mark = yaml.Mark("", 0, 0, 0, None, None)
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            depth += isinstance(token, opening) - isinstance(token, closing)
            if depth > deepest:
                deepest, mark = depth, token.start_mark
    except yaml.YAMLError:
        pass  # the deepest point before the error is the one to report
    return deepest, mark


def declared_lines(path: str | Path) -> dict[str, int]:
    """The line of each top-level key of a golden file, and ``strata.FIELD`` for each stratum field it
    declares; {} when the file cannot be read as a mapping (it was read once already: nothing is reported)."""
    try:
        root = compose(Path(path))
    except GoldenError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    lines: dict[str, int] = {}
    for key_node, value_node in root.value:
        name = str(key_node.value)
        lines.setdefault(name, node_line(key_node))
        if name == "strata" and isinstance(value_node, yaml.SequenceNode):
            for item in value_node.value:
                if isinstance(item, yaml.ScalarNode):
                    lines.setdefault(f"strata.{item.value}", node_line(item))
    return lines
