"""`embeval import`: vectors computed elsewhere (Parquet, or .npy with an id list) into the cache.

The golden set is the plugin tests' (60 documents, 48 queries) and the vectors are the fake models' own,
scaled (as a job that saved a model's raw output would have them), so the imported cache must give the
report the plugin gives when it embeds with the same models itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import fake_models
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from suite_helpers import CliResult, golden_files
from test_sharding import MODELS, packs, plugin_report

from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.cache.vector_import import ImportProblem, check_vectors, read_vectors
from pytest_embeval.golden.loader import load_golden

INCUMBENT, CANDIDATE = MODELS
Result = CliResult


def write_parquet(path: Path, columns: dict[str, Any]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def write_npy(folder: Path, name: str, ids: list[str], vectors: np.ndarray) -> tuple[Path, Path]:
    np.save(folder / f"{name}.npy", vectors)
    (folder / f"{name}.ids.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return folder / f"{name}.npy", folder / f"{name}.ids.txt"


DOC_IDS = [f"d{i:02d}" for i in range(60)]
DOC_TEXTS = [f"doc {i}" for i in range(60)]


def test_imported_vectors_give_the_report_of_vectors_the_plugin_embeds(
    pytester: pytest.Pytester, golden: Callable[..., Path], embeval: Callable[..., Result], tmp_path: Path
) -> None:
    path = golden()
    loaded = load_golden(path)
    query_ids = [query.id for query in loaded.queries]
    query_texts = [query.text for query in loaded.queries]
    cache = tmp_path / "imported"
    # The incumbent's documents by id in Parquet (vectors of length 2.5: normalised, with a warning), its
    # queries as .npy; the candidate's documents keyed by their text, in another order, as float32 lists.
    good, bad = fake_models.counted_good, fake_models.counted_bad
    raw = 2.5 * good.encode_document(DOC_TEXTS)
    documents = write_parquet(tmp_path / "good-docs.parquet", {"_id": DOC_IDS, "embedding": raw.tolist()})
    status, out, err = embeval("import", path, documents, "--model", INCUMBENT, f"--cache-dir={cache}")
    assert status == 0, err
    assert out.splitlines() == [
        f"{documents}: 60 rows of 128 dimensions, keyed by id",
        f"60 document vectors of {INCUMBENT} ({resolve_model(INCUMBENT).digest[:19]}…) stored in {cache}/: "
        "60 of the golden set's 60 document texts",
    ]
    assert err == (
        "embeval import: warning: 60 of 60 vectors were not of unit length, normalised as the plugin "
        "normalises a model's (first: row 0, id 'd00', norm 2.5)\n"
    )
    vectors, ids = write_npy(tmp_path, "good-queries", query_ids, good.encode_query(query_texts))
    status, _, err = embeval(
        "import", path, vectors, "--ids", ids, "--kind=query", "--model", INCUMBENT, f"--cache-dir={cache}"
    )
    assert (status, err) == (0, "")
    order = np.random.default_rng(0).permutation(60)
    shuffled = bad.encode_document(DOC_TEXTS)[order]
    by_text = pa.array(shuffled.tolist(), type=pa.list_(pa.float32()))
    texts = write_parquet(
        tmp_path / "bad-docs.parquet", {"text": [DOC_TEXTS[i] for i in order], "vector": by_text}
    )
    status, out, err = embeval("import", path, texts, "--model", CANDIDATE, f"--cache-dir={cache}")
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == f"{texts}: 60 rows of 128 dimensions, keyed by text"
    vectors, ids = write_npy(tmp_path, "bad-queries", query_ids, bad.encode_query(query_texts))
    status, _, err = embeval(
        "import", path, vectors, "--ids", ids, "--kind=query", "--model", CANDIDATE, f"--cache-dir={cache}"
    )
    assert (status, err) == (0, "")

    imported, imported_report = plugin_report(pytester, cache, tmp_path / "imported.json")
    imported.stdout.fnmatch_lines(["*embedding cache*: 216 texts read, 0 embedded"])
    embedded, embedded_report = plugin_report(pytester, tmp_path / "embedded", tmp_path / "embedded.json")
    embedded.stdout.fnmatch_lines(["*embedding cache*: 0 texts read, 216 embedded"])
    assert imported_report == embedded_report


def test_importing_writes_the_packs_embeval_embed_writes(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    path = golden_files(tmp_path)
    imported, embedded = tmp_path / "imported", tmp_path / "embedded"
    vectors = fake_models.counted_good.encode_document(DOC_TEXTS)
    parquet = write_parquet(
        tmp_path / "docs.parquet", {"id": DOC_IDS[::-1], "vector": vectors[::-1].tolist()}
    )
    assert embeval("import", path, parquet, "--model", INCUMBENT, f"--cache-dir={imported}")[0] == 0
    status, _, err = embeval("embed", path, "--model", INCUMBENT, f"--cache-dir={embedded}")
    assert (status, err) == (0, "")
    # The same document packs, byte for byte, and the same fingerprint file.
    assert packs(imported) == {name: data for name, data in packs(embedded).items() if "/query/" not in name}


def test_rows_naming_no_text_of_the_golden_set_are_left_out_with_a_warning(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    path = golden_files(tmp_path)
    vectors = np.vstack([fake_models.good.encode_document(DOC_TEXTS[:10]), np.ones((1, 128))])
    npy, ids = write_npy(tmp_path, "docs", [*DOC_IDS[:10], "elsewhere"], vectors)
    status, out, err = embeval(
        "import", path, npy, "--ids", ids, "--model", INCUMBENT, f"--cache-dir={tmp_path}"
    )
    assert status == 0
    assert err == (
        "embeval import: warning: 1 rows name no document the golden set's arms embed, left out "
        "(first: row 10, id 'elsewhere')\n"
    )
    assert out.splitlines()[-1].endswith(": 10 of the golden set's 60 document texts")
    arm = resolve_model(INCUMBENT)
    held = EmbeddingCache(tmp_path).contains(arm, "document", DOC_TEXTS)
    assert held.tolist() == [True] * 10 + [False] * 50


def bad_npy(tmp_path: Path, vectors: np.ndarray, ids: list[str] | None = None) -> tuple[Path, Path]:
    return write_npy(tmp_path, "bad", DOC_IDS[: len(vectors)] if ids is None else ids, vectors)


def unit(n: int, d: int = 4) -> np.ndarray:
    vectors = np.zeros((n, d))
    vectors[:, 0] = 1.0
    return vectors


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (
            lambda t: bad_npy(t, unit(3), ids=DOC_IDS[:2]),
            "{npy} has 3 rows but {ids} lists 2 ids: row i must be the vector of the i-th id",
        ),
        (
            lambda t: bad_npy(t, np.ones(3)),
            "{npy}: expected a 2-D array of vectors (rows x d), got shape (3,)",
        ),
        (
            lambda t: bad_npy(t, np.array([[1, 0], [np.nan, 1.0]])),
            "{npy}: row 1 (id 'd01'): NaN or inf in the vector",
        ),
        (lambda t: bad_npy(t, np.array([[1, 0], [0, 0.0]])), "{npy}: row 1 (id 'd01'): an all-zero vector"),
        (
            lambda t: bad_npy(t, unit(2), ids=["d00", "d00"]),
            "{npy}: row 1 (id 'd00'): a second vector for it (first on row 0)",
        ),
        (
            lambda t: bad_npy(t, unit(2), ids=["x", "y"]),
            "{npy}: no row's id is one of those the golden set's arms embed "
            "(row 0: id 'x'): is it the right column, --kind and golden set?",
        ),
    ],
)
def test_a_bad_npy_file_is_named_by_its_first_bad_row(
    embeval: Callable[..., Result], tmp_path: Path, make: Callable[[Path], tuple[Path, Path]], problem: str
) -> None:
    path = golden_files(tmp_path)
    npy, ids = make(tmp_path)
    status, out, err = embeval(
        "import", path, npy, "--ids", ids, "--model", INCUMBENT, f"--cache-dir={tmp_path}"
    )
    assert (status, out) == (2, "")
    assert err == f"embeval import: error: {problem.format(npy=npy, ids=ids)}\n"
    assert not (tmp_path / "embeddings").exists()


@pytest.mark.parametrize(
    ("columns", "options", "problem"),
    [
        (
            {"_id": ["d00", "d01"], "vector": [[1.0, 0.0], [0.0, 1.0, 0.0]]},
            (),
            "{file}: row 1 (id 'd01'): 3 dimensions, but row 0 has 2",
        ),
        (
            {"_id": ["d00", "d01"], "vector": [[1.0, 0.0], None]},
            (),
            "{file}: row 1 (id 'd01'): no vector (null)",
        ),
        (
            {"_id": ["d00", "d01"], "vector": [[1.0, 0.0], [0.0, None]]},
            (),
            "{file}: row 1 (id 'd01'): a null value in the vector",
        ),
        (
            {"_id": ["d00", None], "vector": [[1.0, 0.0], [0.0, 1.0]]},
            (),
            "{file}: row 1: no id (null in column '_id')",
        ),
        (
            {"_id": ["d00"], "vector": [["a", "b"]]},
            (),
            "{file}: column 'vector' holds lists of string, not numbers",
        ),
        ({"_id": ["d00"], "vec": [[1.0]]}, (), "{file}: no a vector column (columns: _id, vec)"),
        ({"_id": ["d00"], "vec": [[1.0]]}, ("--vector-column=v",), "{file}: no 'v' (columns: _id, vec)"),
        ({"_id": ["d00"], "vector": [1.0]}, (), "{file}: column 'vector' holds double, not lists of numbers"),
    ],
)
def test_a_bad_parquet_file_is_named_by_its_first_bad_row(
    embeval: Callable[..., Result],
    tmp_path: Path,
    columns: dict[str, Any],
    options: tuple[str, ...],
    problem: str,
) -> None:
    path = golden_files(tmp_path)
    parquet = write_parquet(tmp_path / "bad.parquet", columns)
    status, out, err = embeval(
        "import", path, parquet, *options, "--model", INCUMBENT, f"--cache-dir={tmp_path}"
    )
    assert (status, out) == (2, "")
    assert err == f"embeval import: error: {problem.format(file=parquet)}\n"


def test_vectors_of_another_dimension_than_the_cached_ones_are_refused(
    embeval: Callable[..., Result], tmp_path: Path
) -> None:
    path = golden_files(tmp_path)
    cache = tmp_path / "cache"
    assert embeval("embed", path, "--model", INCUMBENT, f"--cache-dir={cache}")[0] == 0
    npy, ids = bad_npy(tmp_path, unit(2, d=64))
    status, _, err = embeval("import", path, npy, "--ids", ids, "--model", INCUMBENT, f"--cache-dir={cache}")
    assert status == 2
    assert err == (
        f"embeval import: error: the cache holds 128-dimensional document vectors of {INCUMBENT} already, "
        "these have 64: another model, or the model changed without its fingerprint changing\n"
    )


def test_read_and_check_are_pure_functions_of_the_file(tmp_path: Path) -> None:
    npy, ids = write_npy(tmp_path, "v", ["d00", "d01"], np.array([[3.0, 4.0], [0.0, 1.0]]))
    imported = read_vectors(npy, ids=ids)
    assert imported.key_kind == "id" and imported.keys == ("d00", "d01")
    checked = check_vectors(imported, {"d00": "doc 0", "d01": "doc 1"})
    assert checked.texts == ("doc 0", "doc 1")
    assert checked.vectors.dtype == np.float32
    np.testing.assert_array_equal(checked.vectors, np.array([[0.6, 0.8], [0.0, 1.0]], dtype=np.float32))
    assert (checked.rescaled, checked.first_rescaled) == (1, "row 0, id 'd00', norm 5")
    with pytest.raises(ImportProblem, match=r"a \.npy file needs --ids IDS\.txt"):
        read_vectors(npy)
