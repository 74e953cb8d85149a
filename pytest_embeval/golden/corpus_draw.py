"""The corpus sample ``embeval corpus-sample`` writes: every judged document of a corpus of any size, and a
uniform draw of the others, in one streaming pass.

The corpus is JSONL or TSV, as a golden set's corpus (`data_files`). Each line's id is read as the loader
reads it; a judged document's line is kept, every other line is offered to a `sampling.Reservoir` of
``size`` lines (Algorithm L). After the pass, the reservoir is thinned to ``size`` minus the judged documents
found (a uniform subset of a uniform sample is uniform), so judged documents missing from the corpus do not
shrink the sample. Memory holds at most ``size`` offered lines and the judged ones, whatever the corpus's
length. The sample keeps the corpus's order (and a TSV file's header row), each line byte for byte.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Set
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_embeval.core.sampling import Reservoir
from pytest_embeval.golden.data_files import GoldenError, id_problem, is_tsv_header, record_id
from pytest_embeval.golden.query_log import decoded_lines, opened

__all__ = ["CorpusDraw", "draw_corpus"]


@dataclass(frozen=True, slots=True)
class CorpusDraw:
    format: str
    #: documents in the corpus (its lines, a header row aside)
    documents: int
    sha256: str
    #: judged documents found in the corpus, and the judged ids it does not hold (sorted)
    judged_found: int
    missing: tuple[str, ...]
    #: the sample's lines in corpus order, a TSV header row first
    lines: tuple[str, ...]
    #: documents in the sample
    sampled: int


def _ids(path: Path, lines: Iterator[tuple[int, str]], kind: str) -> Iterator[tuple[int, str, str]]:
    for number, line in lines:
        if kind == "jsonl":
            yield number, line, record_id(path, number, line)
            continue
        doc_id = line.split("\t", 1)[0]
        problem = id_problem(doc_id)
        if problem is not None:
            raise GoldenError(path, "id", number, problem)
        yield number, line, doc_id


def draw_corpus(path: Path, *, size: int, judged: Set[str], seed: int) -> CorpusDraw:
    """Every judged document and a uniform draw of the rest, ``size`` documents in all when the corpus has
    them; `GoldenError` for a missing or unreadable corpus, an empty one, a line without an id, or a judged
    document on two lines (duplicates among the others are left to the golden loader, which reads the
    sample: finding them in the pass would hold every id of the corpus)."""
    stream = opened(path)
    lines = decoded_lines(path, stream)
    first = next(lines, None)
    if first is None:
        raise GoldenError(path, None, None, "the corpus is empty: no documents")
    header: list[str] = []
    if first[1].lstrip().startswith("{"):
        kind = "jsonl"
    elif "\t" in first[1]:
        kind = "tsv"
        if is_tsv_header(first[1]):
            header = [first[1]]
            first = next(lines, None)
    else:
        problem = "unsupported format: expected JSONL (one object per line) or TSV (id<TAB>text ...)"
        raise GoldenError(path, "format", first[0], problem)

    rng = np.random.default_rng(seed)
    reservoir: Reservoir[tuple[int, str]] = Reservoir.of(size, rng)
    kept: list[tuple[int, str]] = []
    found: dict[str, int] = {}
    documents = 0
    for number, line, doc_id in _ids(path, itertools.chain([] if first is None else [first], lines), kind):
        documents += 1
        if doc_id in judged:
            if doc_id in found:
                problem = f"duplicate document id {doc_id!r} (first on line {found[doc_id]})"
                raise GoldenError(path, "_id", number, problem)
            found[doc_id] = number
            kept.append((number, line))
        else:
            reservoir.offer((number, line))
    if not documents:
        raise GoldenError(path, None, None, "the corpus is empty: no documents")
    rest = size - len(found)
    # In the order offered, so that thinning depends on the seed and the corpus only.
    drawn = [item for _, item in sorted(reservoir.items)]
    if len(drawn) > rest:
        chosen = rng.choice(len(drawn), size=rest, replace=False).tolist()
        drawn = [drawn[i] for i in chosen]
    merged = [line for _, line in sorted(kept + drawn)]
    return CorpusDraw(
        kind,
        documents,
        stream.sha256,
        len(found),
        tuple(sorted(judged - found.keys())),
        (*header, *merged),
        len(kept) + len(drawn),
    )
