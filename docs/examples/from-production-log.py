"""A week of search traffic, made up from the shipped support set's queries, for docs/from-production.md:
one JSONL row per search ({"query", "language", "shape"}), each query searched with a Zipfian frequency
(a few of them make a third of the traffic), one search in eight typed differently (case, spaces,
full-width letters), as people type.

    python from-production-log.py golden/support/queries.jsonl log.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path


def respelt(text: str, rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return text.lower()
    if roll < 0.08:
        return "  " + text.replace(" ", "  ")
    if roll < 0.125:
        return text.upper()
    return text


def main(queries_path: Path, log_path: Path) -> None:
    rng = random.Random(7)
    queries = [json.loads(line) for line in queries_path.read_text(encoding="utf-8").splitlines() if line]
    rng.shuffle(queries)  # which query is most searched
    rows = []
    for rank, query in enumerate(queries, start=1):
        for _ in range(round(4000 / rank**1.2)):
            text = respelt(query["text"], rng)
            rows.append({"query": text, "language": query["language"], "shape": query["shape"]})
    rng.shuffle(rows)  # searches in the order they came
    with log_path.open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
