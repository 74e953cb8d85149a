"""The golden file's ``index: {faiss: FACTORY, nprobe | efSearch | recall_target}`` key: what it loads into,
what it refuses (one line naming the file, the line and the key), and that it needs FAISS installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_golden import BASE, load

from pytest_embeval.golden.loader import GoldenError
from pytest_embeval.golden.schema import IndexSpec


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        ("{faiss: 'IVF1024,PQ48'}", IndexSpec("faiss", factory="IVF1024,PQ48")),
        (
            "{faiss: 'IVF1024,PQ48', nprobe: 16}",
            IndexSpec("faiss", factory="IVF1024,PQ48", faiss_parameter=("nprobe", 16)),
        ),
        (
            "{faiss: HNSW32, efSearch: 64}",
            IndexSpec("faiss", factory="HNSW32", faiss_parameter=("efSearch", 64)),
        ),
        ("{faiss: BIVF256, recall_target: 0.95}", IndexSpec("faiss", factory="BIVF256", recall_target=0.95)),
    ],
)
def test_faiss_index_forms(tmp_path: Path, index: str, expected: IndexSpec) -> None:
    golden = load(tmp_path, BASE + f"index: {index}\n")
    assert golden.index == expected
    assert golden.plan()["index"] == expected.as_dict()


@pytest.mark.parametrize(
    ("index", "line"),
    [
        ("{faiss: 'IVF16,Flat', nprobe: 0}", "7: index.nprobe: must be an integer >= 1, got 0"),
        (
            "{faiss: 'IVF16,Flat', nprobe: 4, recall_target: 0.9}",
            "7: index.recall_target: give one of nprobe, recall_target: the recall target chooses the "
            "parameter per arm",
        ),
        (
            "{faiss: 'IVF16,Flat', recall_target: 1.5}",
            "7: index.recall_target: must be a number in (0, 1], got 1.5",
        ),
        (
            "{faiss: ''}",
            "7: index.faiss: must be a FAISS index factory string such as 'IVF1024,PQ48', got an empty value",
        ),
        ("{faiss: 'IVF16,Flat', nprob: 4}", "7: index.nprob: unknown key, did you mean 'nprobe'?"),
    ],
)
def test_bad_faiss_index_keys_are_one_line(tmp_path: Path, index: str, line: str) -> None:
    with pytest.raises(GoldenError) as caught:
        load(tmp_path, BASE + f"index: {index}\n")
    assert str(caught.value) == f"{tmp_path}/golden.yaml:{line}"


def test_a_faiss_index_without_faiss_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(GoldenError) as caught:
        load(tmp_path, BASE + "index: {faiss: 'IVF16,Flat'}\n")
    assert str(caught.value) == (
        f"{tmp_path}/golden.yaml:7: index.faiss: needs FAISS, which is not installed: "
        "pip install 'pytest-embeval[faiss]'"
    )


def test_a_faiss_index_is_not_offered_with_filters(tmp_path: Path) -> None:
    from test_filters import LANGUAGE_CORPUS
    from test_golden import INLINE

    text = INLINE.replace("relevant: {d4: 1}}", "relevant: {d4: 1}, filters: {language: en}}")
    with pytest.raises(GoldenError) as caught:
        load(tmp_path, text + "index: {faiss: 'IVF16,Flat', nprobe: 4}\n", {"corpus.jsonl": LANGUAGE_CORPUS})
    assert str(caught.value) == (
        f"{tmp_path}/golden.yaml:9: index.faiss: query 'q3' has filters, and a FAISS index is not offered "
        "with filters (it searches every document, whatever a query's filters allow): search exactly, with "
        "hnsw or with a vector database"
    )
