"""A production corpus, made up for docs/from-production.md: the shipped support corpus's 424 documents
among 9,576 chunks of other product areas nobody judged, 10,000 JSONL lines in all.

    python from-production-corpus.py golden/support/corpus.jsonl production-corpus.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

AREAS = ["freight", "lockers", "business-accounts", "careers", "press", "api"]


def main(corpus_path: Path, out: Path) -> None:
    rng = random.Random(11)
    shipped = corpus_path.read_text(encoding="utf-8").splitlines()
    others = [
        json.dumps({"_id": f"{area}-{i:05d}", "text": f"Chunk {i} of the {area} pages.", "topic": area})
        for i in range(10_000 - len(shipped))
        for area in [AREAS[i % len(AREAS)]]
    ]
    lines = shipped + others
    rng.shuffle(lines)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
