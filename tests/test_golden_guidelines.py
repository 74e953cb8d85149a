"""The golden-file key ``guidelines``: the written relevance definition people and the LLM judge grade by.
What it loads into, that it changes no fingerprint, and the exact one-line error for each bad value."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_golden import BASE, G, load

from pytest_embeval.golden.data_files import GoldenError
from pytest_embeval.golden.schema import Guidelines

DEFINITION = "2: answers the query.\n1: answers part of it.\n0: does not help.\n"


def test_guidelines_load_relative_to_the_golden_file(tmp_path: Path) -> None:
    golden = load(tmp_path, BASE + "guidelines: judging/scale.md\n", {"judging/scale.md": DEFINITION})
    assert golden.guidelines == Guidelines(tmp_path / "judging" / "scale.md", DEFINITION)
    assert load(tmp_path / "none").guidelines is None


def test_guidelines_change_neither_fingerprint(tmp_path: Path) -> None:
    without = load(tmp_path / "a")
    declared = load(tmp_path / "b", BASE + "guidelines: scale.md\n", {"scale.md": DEFINITION})
    assert declared.fingerprint() == without.fingerprint()
    assert declared.plan_fingerprint() == without.plan_fingerprint()


@pytest.mark.parametrize(
    ("line", "files", "expected"),
    [
        pytest.param(
            "guidelines: missing.md",
            {},
            f"{G}:7: guidelines: file not found: {{abs}}/missing.md",
            id="missing",
        ),
        pytest.param(
            "guidelines: folder",
            {"folder/x.md": "x"},
            f"{G}:7: guidelines: not a file: {{abs}}/folder",
            id="folder",
        ),
        pytest.param(
            "guidelines: scale.md",
            {"scale.md": " \n\n"},
            f"{G}:7: guidelines: {{abs}}/scale.md is empty: write down the relevance definition judges "
            "grade by",
            id="empty",
        ),
        pytest.param(
            "guidelines: scale.md",
            {"scale.md": b"grade 2: caf\xe9\n"},
            "{d}/scale.md:1: not valid UTF-8 (byte 0xe9 at offset 12)",
            id="not-utf8",
        ),
        pytest.param(
            "guidelines: [a.md]",
            {},
            f"{G}:7: guidelines: must be a non-empty string, got a list",
            id="not-a-path",
        ),
    ],
)
def test_bad_guidelines_are_one_line_naming_file_line_and_key(
    tmp_path: Path, line: str, files: dict[str, str | bytes], expected: str
) -> None:
    with pytest.raises(GoldenError) as error:
        load(tmp_path, BASE + line + "\n", files)
    assert str(error.value) == expected.format(d=tmp_path, abs=tmp_path.resolve())
