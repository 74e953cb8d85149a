"""A stand-in LLM judge for the README's "Judging with an LLM": the tests' chat-completions server
(``tests/openai_server.py``) on 127.0.0.1, answering each pair with the grade a reference golden set's qrels
hold (0 for a pair they do not judge).

It disagrees the way a model does: ``--noise P`` answers a seeded share P of the pairs with a grade drawn
from the reference's own distribution of grades (disagreement at random: the answers' marginals stay the
reference's), ``--shift 1:2`` answers 2 wherever the reference says 1 (systematically), ``--refuse P``
refuses a share of the first answers (the judge asks again), and ``--throttle N`` answers the first N
requests 429 (the client waits and retries). It stops after ``--lifetime`` seconds or ``--max-requests``
requests.

    JUDGE_KEY=sk-local-demo python docs/stand_in_judge.py golden/support.yaml --port 8765 --noise 0.15

The key is the one the server expects in ``Authorization``; give the judge the same one in ``$JUDGE_KEY``.

With ``--fill SHEET.csv --as NAME --out GRADED.csv`` it serves nothing: it writes the reference grades into
a copy of the sheet as the person NAME would, which is how the walkthrough's people grade.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import contextlib

from openai_server import ChatReply, EmbeddingServer, Reply, word_vectors

from pytest_embeval.core.stats import stable_seed
from pytest_embeval.golden.loader import load_golden

_PAIR = re.compile(r"<query>\n(.*)\n</query>\n\n<document>\n(.*)\n</document>\Z", re.S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", help="the golden set whose qrels the stand-in grades by")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--model", default="stand-in-judge")
    parser.add_argument("--noise", type=float, default=0.0, help="share of grades drawn at random")
    parser.add_argument("--shift", default=None, metavar="FROM:TO", help="answer TO wherever FROM is right")
    parser.add_argument("--refuse", type=float, default=0.0, help="share of pairs refused on the first ask")
    parser.add_argument("--throttle", type=int, default=0, help="answer the first N requests 429")
    parser.add_argument("--lifetime", type=float, default=1800.0)
    parser.add_argument("--max-requests", type=int, default=50_000)
    parser.add_argument("--fill", default=None, metavar="SHEET.csv", help="grade this sheet as a person")
    parser.add_argument("--as", dest="person", default="person", metavar="NAME")
    parser.add_argument("--out", default=None, metavar="GRADED.csv")
    args = parser.parse_args()

    golden = load_golden(args.reference)
    if args.fill is not None:
        fill(golden.qrels, Path(args.fill), args.person, Path(args.out or args.fill))
        return
    queries = {query.text: query.id for query in golden.queries}
    documents = {(f"{d.title}\n{d.text}" if d.title else d.text): d.id for d in golden.documents}
    grades = [grade for judged in golden.qrels.values() for grade in judged.values()]
    frequencies = np.bincount(grades) / len(grades)
    shift = tuple(int(part) for part in args.shift.split(":")) if args.shift else None
    asked: set[tuple[str, str]] = set()

    def grade(model: str, messages: list[dict[str, Any]]) -> str | ChatReply:
        pair = _PAIR.match(messages[1]["content"])
        if pair is None:
            return "I cannot tell which pair this is."
        query, doc = queries[pair.group(1)], documents[pair.group(2)]
        rng = np.random.default_rng(stable_seed("stand-in judge", query, doc))
        first = (query, doc) not in asked
        asked.add((query, doc))
        if first and rng.random() < args.refuse:
            return ChatReply(refusal="I can't help with that.")
        right = golden.qrels.get(query, {}).get(doc, 0)
        if shift is not None and right == shift[0]:
            return str(shift[1])
        if rng.random() < args.noise:
            return str(rng.choice(len(frequencies), p=frequencies))
        return str(right)

    key = os.environ.get("JUDGE_KEY", "sk-local-demo")
    server = EmbeddingServer(
        word_vectors(),
        models=(args.model,),
        key=key,
        port=args.port,
        max_requests=args.max_requests,
        lifetime=args.lifetime,
        chat=grade,
    )
    server.script.extend(Reply(status=429, message="slow down") for _ in range(args.throttle))
    with server:
        print(f"stand-in judge {args.model!r} at {server.base_url} for {args.lifetime:.0f} s", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(args.lifetime)


def fill(qrels: Mapping[str, Mapping[str, int]], sheet: Path, person: str, out: Path) -> None:
    with sheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["grade"] = str(qrels.get(row["query_id"], {}).get(row["doc_id"], 0))
        row["judge"] = person
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["pair_id"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{person} graded {len(rows)} pairs of {sheet} into {out}")


if __name__ == "__main__":
    main()
