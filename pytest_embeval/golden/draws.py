"""How a golden set's data file was drawn from production: the *draw* sidecar that ``embeval sample`` writes
beside a queries file and ``embeval corpus-sample`` beside a corpus sample, and that the loader reads.

``queries.jsonl`` -> ``queries.draw.json`` (``sample.jsonl`` -> ``sample.draw.json``): one JSON object with
the ``command`` that drew the file, its ``source`` (the file it was drawn from: path as given, sha256, rows),
the options that decide the draw (size, seed, ...), what the draw found (the allocation table, judged
documents missing from the corpus) and the ``output`` (the drawn file's sha256 and rows). A golden set whose
corpus or queries file has a draw sidecar carries it (`GoldenSet.draws`), and the JSON report records it in
the golden set's ``control`` with ``unchanged``: whether the file is still the one drawn (its sha256 is the
sidecar's), so a report says how its corpus and queries came to be, and when they were edited since.
A draw is not part of the control fingerprint: the corpus and query digests already hold the content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_embeval.files.digests import file_sha256
from pytest_embeval.golden.data_files import GoldenError

__all__ = ["DRAW_COMMANDS", "DRAW_SUFFIX", "draw_path", "draw_text", "read_draw"]

DRAW_SUFFIX = ".draw.json"
#: The commands that write a draw sidecar.
DRAW_COMMANDS = ("sample", "corpus-sample")


def draw_path(path: Path) -> Path:
    """The draw sidecar of a data file: ``queries.jsonl`` -> ``queries.draw.json``."""
    return path.with_name(path.stem + DRAW_SUFFIX)


def draw_text(record: Mapping[str, Any]) -> str:
    """A draw record as its sidecar holds it: indented JSON, keys in the order given, one final newline."""
    return json.dumps(record, indent=2, ensure_ascii=False) + "\n"


def read_draw(path: Path) -> dict[str, Any] | None:
    """The draw record beside the data file ``path`` with ``unchanged`` added (whether ``path``'s sha256 is
    the sidecar's ``output.sha256``), or None when there is no sidecar; `GoldenError` naming the sidecar
    when it is not a draw record."""
    sidecar = draw_path(path)
    try:
        text = sidecar.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise GoldenError(
            sidecar, None, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GoldenError(
            sidecar, None, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    output = record.get("output") if isinstance(record, dict) else None
    if (
        not isinstance(record, dict)
        or record.get("command") not in DRAW_COMMANDS
        or not isinstance(output, dict)
        or not isinstance(output.get("sha256"), str)
    ):
        problem = (
            "not a draw record (a JSON object with 'command' (sample or corpus-sample) and 'output.sha256', "
            "as embeval sample and corpus-sample write)"
        )
        raise GoldenError(sidecar, None, None, problem)
    return {**record, "unchanged": f"sha256:{file_sha256(path)}" == output["sha256"]}
