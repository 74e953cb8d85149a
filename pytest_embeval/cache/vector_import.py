"""Vectors a user's own batch job computed, checked and keyed for the embedding cache (`embeval import`).

Two inputs:

* Parquet (the ``[parquet]`` extra: pyarrow): one row per text, a key column (the document or query id,
  ``id`` or ``_id`` by default; or the exact text embedded) and a vector column (a list of numbers,
  ``vector`` or ``embedding`` by default);
* ``.npy``: a 2-D array, row *i* the vector of the *i*-th id of an id list (a text file, one id a line).

`read_vectors` reads either; `check_vectors` matches its keys to the golden set's texts and checks what
`embedding.embed` checks of a model's output: one row per key, one dimension, finite values, no zero vector.
Vectors are normalised exactly as `embedding.embed` normalises a model's (`embedding.unit_rows`), so a
batch job that saved the model's raw output imports the vectors the plugin would have computed; a vector
that was not of unit length is normalised with a warning. Every problem is an `ImportProblem` whose
message is one line naming the first offending row and its key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np

from pytest_embeval.arms.embedding import unit_rows

__all__ = ["UNIT_TOLERANCE", "CheckedVectors", "ImportProblem", "Imported", "check_vectors", "read_vectors"]

KeyKind = Literal["id", "text"]
ID_COLUMNS = ("id", "_id")
VECTOR_COLUMNS = ("vector", "embedding")
#: A vector whose L2 norm is further than this from 1 was not normalised by the job: it is, with a warning.
UNIT_TOLERANCE = 1e-3


class ImportProblem(Exception):
    """Vectors that cannot be imported; the message is one line naming the file and the first bad row."""


@dataclasses.dataclass(frozen=True, slots=True)
class Imported:
    """What a file holds: one key per row (ids or texts, by ``key_kind``) and the rows' vectors, as read."""

    path: Path
    key_kind: KeyKind
    keys: tuple[str, ...]
    vectors: np.ndarray  # (len(keys), d), float64


@dataclasses.dataclass(frozen=True, slots=True)
class CheckedVectors:
    """The rows that name a text of the golden set: its texts, their unit float32 vectors, and what to say."""

    texts: tuple[str, ...]
    vectors: np.ndarray  # float32, unit rows
    #: rows whose key is not a text of the golden set (left out), and the first of them
    unknown: int = 0
    first_unknown: str | None = None
    #: rows that were not of unit length (normalised), and the first of them
    rescaled: int = 0
    first_rescaled: str | None = None


def read_vectors(
    path: str | Path,
    *,
    ids: str | Path | None = None,
    id_column: str | None = None,
    text_column: str | None = None,
    vector_column: str | None = None,
) -> Imported:
    """Read ``path``: Parquet (by its columns) or ``.npy`` (with the id list ``ids``)."""
    source = Path(path)
    if source.suffix == ".npy":
        if ids is None:
            raise ImportProblem(f"{source}: a .npy file needs --ids IDS.txt (one id a line, row by row)")
        return _read_npy(source, Path(ids))
    if ids is not None:
        raise ImportProblem(
            f"{source}: --ids goes with a .npy file; a Parquet file names its ids in a column"
        )
    return _read_parquet(source, id_column=id_column, text_column=text_column, vector_column=vector_column)


def _read_npy(source: Path, ids_path: Path) -> Imported:
    try:
        array = np.load(source, allow_pickle=False)
        keys = ids_path.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError) as error:
        raise ImportProblem(f"{error.__class__.__name__}: {error}") from None
    if keys and keys[-1] == "":
        keys.pop()
    if array.ndim != 2 or array.shape[1] == 0:
        raise ImportProblem(f"{source}: expected a 2-D array of vectors (rows x d), got shape {array.shape}")
    if array.dtype.kind not in "iuf":
        raise ImportProblem(f"{source}: expected real numbers, got {array.dtype}")
    if array.shape[0] != len(keys):
        raise ImportProblem(
            f"{source} has {array.shape[0]:,} rows but {ids_path} lists {len(keys):,} ids: row i must be the "
            "vector of the i-th id"
        )
    return Imported(source, "id", tuple(keys), array.astype(np.float64))


def _read_parquet(
    source: Path, *, id_column: str | None, text_column: str | None, vector_column: str | None
) -> Imported:
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportProblem("reading Parquet needs pyarrow: pip install 'pytest-embeval[parquet]'") from None
    if id_column is not None and text_column is not None:
        raise ImportProblem("give --id-column or --text-column, not both")
    try:
        names = pq.read_schema(source).names
    except (OSError, pa.ArrowException) as error:
        raise ImportProblem(f"{source}: not a readable Parquet file ({error})") from None
    key_kind: KeyKind = "text" if text_column is not None else "id"
    key = text_column or id_column or next((n for n in ID_COLUMNS if n in names), None)
    if key is None and "text" in names:
        key_kind, key = "text", "text"
    vector = vector_column or next((n for n in VECTOR_COLUMNS if n in names), None)
    for wanted, what in ((key, "an id column (id, _id) or a text column"), (vector, "a vector column")):
        if wanted is None or wanted not in names:
            found = ", ".join(names) or "none"
            raise ImportProblem(f"{source}: no {what if wanted is None else repr(wanted)} (columns: {found})")
    assert key is not None and vector is not None
    table = pq.read_table(source, columns=[key, vector])
    keys, values = table.column(key), table.column(vector).combine_chunks()
    if keys.null_count:
        row = pc.index(pc.is_null(keys), True).as_py()
        raise ImportProblem(f"{source}: row {row}: no {key_kind} (null in column {key!r})")
    if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type) or key_kind == "id"):
        raise ImportProblem(f"{source}: column {key!r} holds {keys.type}, not text")
    if not (pa.types.is_list(values.type) or pa.types.is_large_list(values.type)) and not (
        pa.types.is_fixed_size_list(values.type)
    ):
        raise ImportProblem(f"{source}: column {vector!r} holds {values.type}, not lists of numbers")
    texts = tuple(str(item) for item in keys.to_pylist())
    if values.null_count:
        row = int(np.flatnonzero(pc.is_null(values).to_numpy(zero_copy_only=False))[0])
        raise ImportProblem(f"{source}: row {row} ({key_kind} {texts[row]!r}): no vector (null)")
    lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    if len(texts) and (lengths != lengths[0]).any():
        row = int(np.flatnonzero(lengths != lengths[0])[0])
        raise ImportProblem(
            f"{source}: row {row} ({key_kind} {texts[row]!r}): {lengths[row]} dimensions, but row 0 has "
            f"{lengths[0]}"
        )
    if len(texts) and lengths[0] == 0:
        raise ImportProblem(f"{source}: row 0 ({key_kind} {texts[0]!r}): an empty vector")
    flat = pc.list_flatten(values)
    if not (pa.types.is_floating(flat.type) or pa.types.is_integer(flat.type)):
        raise ImportProblem(f"{source}: column {vector!r} holds lists of {flat.type}, not numbers")
    if flat.null_count:
        index = int(np.flatnonzero(pc.is_null(flat).to_numpy(zero_copy_only=False))[0])
        row = index // int(lengths[0])
        raise ImportProblem(f"{source}: row {row} ({key_kind} {texts[row]!r}): a null value in the vector")
    dim = int(lengths[0]) if len(texts) else 0
    matrix = flat.to_numpy(zero_copy_only=False).astype(np.float64).reshape(len(texts), dim)
    return Imported(source, key_kind, texts, matrix)


def check_vectors(imported: Imported, texts_by_id: Mapping[str, str]) -> CheckedVectors:
    """Match the rows to the texts the golden set's arms embed (``texts_by_id``: id -> text, of one kind)
    and check them; rows naming none of them are left out and counted (none matching at all is an error: a
    wrong column or golden set, most likely)."""
    source, kind = imported.path, imported.key_kind
    if not imported.keys:
        raise ImportProblem(f"{source}: no rows")
    known = set(texts_by_id.values())
    first_row: dict[str, int] = {}
    texts: list[str] = []
    rows: list[int] = []
    unknown: list[int] = []
    for row, key in enumerate(imported.keys):
        if key in first_row:
            raise ImportProblem(
                f"{source}: row {row} ({kind} {key!r}): a second vector for it "
                f"(first on row {first_row[key]})"
            )
        first_row[key] = row
        text = texts_by_id.get(key) if kind == "id" else key if key in known else None
        if text is None:
            unknown.append(row)
        else:
            texts.append(text)
            rows.append(row)
    if not rows:
        raise ImportProblem(
            f"{source}: no row's {kind} is one of those the golden set's arms embed (row 0: {kind} "
            f"{imported.keys[0]!r}): is it the right column, --kind and golden set?"
        )
    matrix = imported.vectors[rows]
    unit, finite, norms = unit_rows(matrix)
    for bad, problem in (
        (~finite, "NaN or inf in the vector"),
        (finite & (norms == 0.0), "an all-zero vector"),
    ):
        if bad.any():
            row = rows[int(np.flatnonzero(bad)[0])]
            raise ImportProblem(f"{source}: row {row} ({kind} {imported.keys[row]!r}): {problem}")
    off = np.flatnonzero(np.abs(norms - 1.0) > UNIT_TOLERANCE)
    first_rescaled = None
    if off.size:
        row = rows[int(off[0])]
        first_rescaled = f"row {row}, {kind} {imported.keys[row]!r}, norm {norms[off[0]]:.4g}"
    return CheckedVectors(
        texts=tuple(texts),
        vectors=unit,
        unknown=len(unknown),
        first_unknown=None if not unknown else f"row {unknown[0]}, {kind} {imported.keys[unknown[0]]!r}",
        rescaled=int(off.size),
        first_rescaled=first_rescaled,
    )
