"""Audit a `pytest --embeval` run with trec_eval: re-evaluate the exported TREC run files with pytrec_eval and
compare every query's score with the one in the JSON report.

    python benchmarks/check_trec_parity.py REPORT.json RUNS_DIR [--metric ndcg@10]

Needs pytrec-eval-terrier (a test-only dependency). Exits 1 if any query differs by more than 1e-9.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytrec_eval

from pytest_embeval.core.metrics import parse_metric
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.reports.json_report import ROLES
from pytest_embeval.reports.trec_runs import run_file_name

TREC_MEASURE = {"ndcg": "ndcg_cut", "recall": "recall", "precision": "P", "map": "map_cut"}


def read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("runs", type=Path)
    parser.add_argument("--metric", default="ndcg@10")
    args = parser.parse_args(argv)
    metric = parse_metric(args.metric)
    measure = f"{TREC_MEASURE[metric.name]}_{metric.k}"
    report = json.loads(args.report.read_text(encoding="utf-8"))
    worst = 0.0
    header = ("golden set", "arm", "queries", "mean (report)", "mean (trec_eval)", "max |diff|")
    print("{:<28} {:<10} {:>7} {:>14} {:>17} {:>11}".format(*header))
    for golden_set in report["golden_sets"]:
        golden = load_golden(Path(golden_set["path"]))
        qrels = {qid: dict(grades) for qid, grades in golden.qrels.items() if grades}
        for role in ROLES:
            run = read_run(args.runs / run_file_name(golden_set, role))
            trec = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
            ours, theirs = [], []
            for query in golden_set["queries"]:
                score = query["scores"][role][str(metric)]
                if score is None:  # no relevant document: excluded from both arms
                    continue
                ours.append(score)
                theirs.append(trec[query["id"]][measure])
            diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
            worst = max(worst, diff)
            print(
                f"{golden_set['name']:<28} {role:<10} {len(ours):>7} {math.fsum(ours) / len(ours):>14.6f}"
                f" {math.fsum(theirs) / len(theirs):>17.6f} {diff:>11.2e}"
            )
    return 0 if worst <= 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
