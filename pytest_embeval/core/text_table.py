"""Plain-text tables: the one layout every text output of the tool uses."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table"]


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, names: int = 1, text_last: bool = False
) -> list[str]:
    """Columns padded to width: the first ``names`` left-aligned (ids), the others right-aligned (numbers),
    and with ``text_last`` a free-text last column left-aligned too. Trailing spaces are dropped."""
    widths = [max([len(header[i]), *(len(row[i]) for row in rows)]) for i in range(len(header))]
    left = set(range(names)) | ({len(header) - 1} if text_last else set())

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    return [line(header), line(["-" * width for width in widths]), *(line(row) for row in rows)]
