"""pytest-embeval: an embedding-model change as a regression test on your own golden set."""

from __future__ import annotations

__version__ = "0.1.0"
