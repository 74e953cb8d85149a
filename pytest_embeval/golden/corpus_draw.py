"""The corpus sample ``embeval corpus-sample`` writes: every judged document of a corpus of any size, and a
uniform draw of the others, in one streaming pass.

The corpus is JSONL or TSV, as a golden set's corpus (`data_files`), one file or many (a glob pattern,
`files.sources`: read in the order of their paths, as one corpus). Each line's id is read as the loader
reads it; a judged document's line is kept, every other line is offered to a `sampling.Reservoir` of
``size`` lines (Algorithm L). After the pass, the reservoir is thinned to ``size`` minus the judged documents
found (a uniform subset of a uniform sample is uniform), so judged documents missing from the corpus do not
shrink the sample. Memory holds at most ``size`` offered lines and the judged ones, whatever the corpus's
length. The sample keeps the corpus's order (and a TSV file's header row, which every file must share), each
line byte for byte.

The draw depends only on the number of documents offered and the seed (`choose_documents`): the engine's
reader (`columnar_corpus`) counts them, and picks the same documents.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from pytest_embeval.core.sampling import Reservoir
from pytest_embeval.files.compressed import compression_of
from pytest_embeval.files.digests import file_sha256
from pytest_embeval.files.sources import Source, source_sha256
from pytest_embeval.golden.data_files import GoldenError, id_problem, is_tsv_header, record_id
from pytest_embeval.golden.query_log import decoded_lines, log_format, opened, refuse_engine_only

__all__ = ["CorpusDraw", "choose_documents", "draw_corpus", "duplicate_problem", "picked_lines"]

T = TypeVar("T")


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
    #: each file read and its sha256, in order
    files: tuple[tuple[Path, str], ...] = ()


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


def duplicate_problem(doc_id: str, first: tuple[Path, int], path: Path) -> str:
    """A judged document on two lines: where it was first (the line, or the file and line in another file)."""
    where = f"on line {first[1]}" if first[0] == path else f"at {first[0]}:{first[1]}"
    return f"duplicate document id {doc_id!r} (first {where})"


def _thinned(reservoir: Reservoir[T], rest: int) -> list[T]:
    """The reservoir's items, thinned to ``rest`` by a uniform draw without replacement."""
    # In the order offered, so that thinning depends on the seed and the corpus only.
    drawn = [item for _, item in sorted(reservoir.items, key=lambda offered: offered[0])]
    if len(drawn) > rest:
        chosen = reservoir.rng.choice(len(drawn), size=rest, replace=False).tolist()
        drawn = [drawn[i] for i in chosen]
    return drawn


def choose_documents(offered: int, *, size: int, keep: int, seed: int) -> list[int]:
    """The draw of the documents not kept, as positions among them (ascending): a reservoir of ``size`` over
    the ``offered``, thinned to ``size`` minus the ``keep`` judged documents found. The same draws as
    `draw_corpus` offering each document in turn: the reservoir's choices depend on positions and the seed
    alone."""
    reservoir: Reservoir[int] = Reservoir.of(size, np.random.default_rng(seed))
    reservoir.offer_positions(offered)
    return sorted(_thinned(reservoir, size - keep))


def draw_corpus(source: Source | Path, *, size: int, judged: Set[str], seed: int) -> CorpusDraw:
    """Every judged document and a uniform draw of the rest, ``size`` documents in all when the corpus has
    them; `GoldenError` for a missing or unreadable file, an empty corpus, a line without an id, or a judged
    document on two lines (duplicates among the others are left to the golden loader, which reads the
    sample: finding them in the pass would hold every id of the corpus)."""
    if isinstance(source, Path):
        source = Source(str(source), (source,), False)
    header: list[str] = []
    kinds: list[str] = []
    streams = []
    reservoir: Reservoir[tuple[int, str]] = Reservoir.of(size, np.random.default_rng(seed))
    kept: list[tuple[int, str]] = []
    found: dict[str, tuple[Path, int]] = {}
    documents = 0
    for path in source.files:
        refuse_engine_only(path)
        stream = opened(path)
        streams.append((path, stream))
        lines = decoded_lines(path, stream)
        first = next(lines, None)
        if first is None:
            continue
        kind = log_format(path, first, "JSONL (one object per line) or TSV (id<TAB>text ...)")
        if kinds and kind != kinds[0]:
            raise GoldenError(
                path, "format", first[0], f"is {kind} while the corpus's first file is {kinds[0]}"
            )
        kinds.append(kind)
        if kind == "tsv" and is_tsv_header(first[1]):
            if header and header != [first[1]]:
                problem = f"its header row differs from the first file's ({header[0]!r})"
                raise GoldenError(path, None, first[0], problem)
            header = [first[1]]
            first = next(lines, None)
        for number, line, doc_id in _ids(
            path, itertools.chain([] if first is None else [first], lines), kind
        ):
            if doc_id in judged:
                if doc_id in found:
                    raise GoldenError(path, "_id", number, duplicate_problem(doc_id, found[doc_id], path))
                found[doc_id] = (path, number)
                kept.append((documents, line))
            else:
                reservoir.offer((documents, line))
            documents += 1
    if not documents:
        raise GoldenError(source.given, None, None, "the corpus is empty: no documents")
    drawn = _thinned(reservoir, size - len(found))
    merged = [line for _, line in sorted(kept + drawn)]
    files = tuple((path, stream.sha256) for path, stream in streams)
    return CorpusDraw(
        kinds[0],
        documents,
        source_sha256([digest for _, digest in files]),
        len(found),
        tuple(sorted(judged - found.keys())),
        (*header, *merged),
        len(kept) + len(drawn),
        files,
    )


def picked_lines(source: Source, positions: Sequence[int]) -> tuple[list[str], list[tuple[Path, str]]]:
    """The lines of the documents at ``positions`` (ascending, counted over the source's non-blank lines)
    byte for byte, in one pass over JSONL files (decompressed as they are read), and each file's sha256 (of
    its bytes as they are on disk)."""
    wanted = iter(positions)
    target = next(wanted, None)
    picked: list[str] = []
    digests: list[tuple[Path, str]] = []
    documents = 0
    for path in source.files:
        stream = opened(path, decompressed=True)
        for _, line in decoded_lines(path, stream):
            if documents == target:
                picked.append(line)
                target = next(wanted, None)
            documents += 1
        digests.append((path, stream.sha256 if compression_of(path) is None else file_sha256(path)))
    return picked, digests
