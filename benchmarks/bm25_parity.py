"""The BM25 arm against bm25s itself: mean nDCG@10 on public collections, both evaluated by trec_eval's code.

    python benchmarks/bm25_parity.py [--data DIR] [--collections vaswani nfcorpus-preprocessed]

For each collection (a BEIR folder under ``--data``; default: ``shared/data`` next to the repository, else
``data``) and each spec (``bm25``: bm25s's defaults; ``bm25?stemmer=english``):

* ours: the spec as an arm through `pipeline.run_arm` (exact per-query scores, filters none, the ranking
  cut at the ranked depth), its nDCG@10 per query from the pipeline, averaged over judged queries;
* bm25s: the same tokenisation and parameters straight through ``bm25s.tokenize`` / ``BM25.index`` /
  ``BM25.retrieve(k=10)``, the top 10 scored by pytrec_eval (trec_eval's ``ndcg_cut_10``).

Target: |ours - bm25s| <= 0.01. The two differ only where bm25s breaks ties among equal scores by its own
order and we by document id, and where we leave out documents with no matching term (bm25s fills its top
10 with them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_embeval.golden.loader import load_golden  # noqa: E402
from pytest_embeval.golden.schema import GoldenSet  # noqa: E402
from pytest_embeval.run.pipeline import run_arm  # noqa: E402

SPECS = ("bm25", "bm25?stemmer=english")


def bm25s_ndcg10(golden: GoldenSet, spec: str) -> float:
    import bm25s
    import pytrec_eval
    import Stemmer

    stemmer = Stemmer.Stemmer("english") if "stemmer=english" in spec else None
    options = {"stopwords": "en", "stemmer": stemmer, "show_progress": False}
    index = bm25s.BM25()
    index.index(bm25s.tokenize([doc.embed_text for doc in golden.documents], **options), show_progress=False)
    found, scores = index.retrieve(
        bm25s.tokenize([query.text for query in golden.queries], **options), k=10, show_progress=False
    )
    run = {
        query.id: {golden.documents[i].id: float(s) for i, s in zip(rows, values, strict=True)}
        for query, rows, values in zip(golden.queries, found.tolist(), scores.tolist(), strict=True)
    }
    judged = {qid: dict(docs) for qid, docs in golden.qrels.items() if any(g > 0 for g in docs.values())}
    result = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate({q: run[q] for q in judged})
    return float(np.mean([result[q]["ndcg_cut_10"] for q in judged]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = next((p for p in (REPO.parent / "shared" / "data",) if p.is_dir()), Path("data"))
    parser.add_argument("--data", type=Path, default=default)
    parser.add_argument("--collections", nargs="+", default=["vaswani", "nfcorpus-preprocessed"])
    args = parser.parse_args()
    print(f"{'collection':<24}{'spec':<24}{'queries':>8}{'ours':>10}{'bm25s':>10}{'|diff|':>10}{'ours s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.collections:
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(f"beir: {args.data / name}\nmetric: ndcg@10\n", encoding="utf-8")
            golden = load_golden(path)
            for spec in SPECS:
                start = time.perf_counter()
                result = run_arm(golden, spec, "candidate")
                seconds = time.perf_counter() - start
                ours = float(np.nanmean(result.per_query["ndcg@10"]))
                theirs = bm25s_ndcg10(golden, spec)
                n = int(np.isfinite(result.per_query["ndcg@10"]).sum())
                print(
                    f"{name:<24}{spec:<24}{n:>8}{ours:>10.4f}{theirs:>10.4f}{abs(ours - theirs):>10.4f}"
                    f"{seconds:>9.1f}"
                )


if __name__ == "__main__":
    main()
