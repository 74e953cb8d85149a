"""Size and time of the reports people read, on a large report: 500 strata x 5,000 queries.

    python benchmarks/bench_reports.py [--strata 500] [--queries 5000] [--repeat 5] [--no-chromium]

One synthetic golden set of the JSON report's shape: ``--queries`` queries of ~60 characters, each ranked 100
documents deep under both arms (as real reports are), spread over ``--strata`` strata (``topic=t000``, ...)
plus ``overall``, every stratum with a guard, five movers and five drivers, verdicts mixed. Each output is
timed from the merged report to its text, best of ``--repeat``, against the floor: writing the JSON report
itself (`report.report_json`), which every run with --embeval-json pays already. Then headless Chromium
(Debian's ``chromium``) opens the HTML page and takes a screenshot, against the floor of the same on an empty
page, best of 3: what a reader waits for beyond starting the browser.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from chromium import CHROMIUM, screenshot  # noqa: E402

from pytest_embeval.reports.html_page import report_html  # noqa: E402
from pytest_embeval.reports.json_report import report_json  # noqa: E402
from pytest_embeval.reports.markdown import report_markdown  # noqa: E402

WORDS = [
    "parcel",
    "refund",
    "customs",
    "label",
    "courier",
    "invoice",
    "tracking",
    "return",
    "damaged",
    "address",
    "delivery",
    "locker",
]


def comparison(i: int) -> dict[str, Any]:
    delta = ((i * 37) % 21 - 10) / 100
    return {
        "n": 40 + i % 30,
        "excluded": 0,
        "incumbent": 0.6,
        "candidate": 0.6 + delta,
        "delta": delta,
        "ci": [delta - 0.04, delta + 0.04],
        "sd": 0.2,
        "wins": 10 + i % 7,
        "losses": 9 + i % 5,
        "sign_p": 0.5,
        "mde": 0.08,
        "note": None,
    }


def verdict(delta: float) -> tuple[str, str]:
    if delta <= -0.05:
        return (
            "WORSE",
            f"worse: Δ {delta:+.3f} ≤ -0.030 and CI [{delta - 0.04:+.3f}, {delta + 0.04:+.3f}] excludes 0",
        )
    if delta >= 0.05:
        return (
            "BETTER",
            f"better: Δ {delta:+.3f} ≥ 0.030 and CI [{delta - 0.04:+.3f}, {delta + 0.04:+.3f}] excludes 0",
        )
    return "TIE", "unresolved: CI covers 0; MDE 0.080 at n=60; ~300 queries needed to resolve a 0.030 margin"


def synthetic_report(strata: int, queries: int) -> dict[str, Any]:
    texts = [" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 9)) + f" #{i}" for i in range(queries)]
    movers = [{"id": f"q{i:05d}", "text": texts[i], "incumbent": 1.0, "candidate": 0.0} for i in range(5)]
    records = []
    for i, name in enumerate(["overall", *(f"topic=t{j:03d}" for j in range(strata))]):
        numbers = comparison(i)
        said, reason = verdict(numbers["delta"])
        guard = {"metric": "recall@50", "margin": 0.02, **numbers, "verdict": said, "reason": reason}
        records.append(
            {
                "stratum": name,
                "metric": "recall@5",
                **numbers,
                "verdict": said,
                "primary_verdict": said,
                "reason": reason,
                "queries_needed": None,
                "sign_disagrees": False,
                "tie_margin": 0.03,
                "confidence": 0.95,
                "guards": [{**guard, "failed": said == "WORSE"}],
                "metrics": {"recall@5": numbers, "recall@50": numbers},
                "movers": movers,
                "drivers": movers,
            }
        )
    rows = [
        {
            "id": f"q{i:05d}",
            "text": texts[i],
            "strata": {"topic": f"t{i % strata:03d}"},
            "scores": {
                "incumbent": {"recall@5": (i % 5) / 4, "recall@50": 1.0},
                "candidate": {"recall@5": ((i * 3) % 5) / 4, "recall@50": 1.0},
            },
            "ranked": {
                role: [f"doc-{(i + r) % 20000:05d}" for r in range(100)]
                for role in ("incumbent", "candidate")
            },
            "similarities": {
                role: [1.0 - r / 200 for r in range(100)] for role in ("incumbent", "candidate")
            },
        }
        for i in range(queries)
    ]
    arm = {"spec": "model", "fingerprint": "sha256:" + "0" * 64, "prompts": {"query": "", "document": ""}}
    golden = {
        "name": "large",
        "path": "golden/large.yaml",
        "fingerprint": "sha256:" + "1" * 64,
        "plan_fingerprint": "sha256:" + "2" * 64,
        "control": {"fingerprint": "sha256:" + "3" * 64, "components": {"corpus": "sha256:" + "4" * 64}},
        "metric": "recall@5",
        "guards": {"recall@50": 0.02},
        "report": [],
        "tie_margin": 0.03,
        "confidence": 0.95,
        "min_queries": 20,
        "bootstrap": 10000,
        "seed": 0,
        "relevance_level": 1,
        "index": "exact",
        "depth": 100,
        "documents": 20000,
        "incumbent": {**arm, "index": {"kind": "exact", "dimension": 384, "memory_bytes": 30_720_000}},
        "candidate": {**arm, "index": {"kind": "exact", "dimension": 256, "memory_bytes": 20_480_000}},
        "queries": rows,
        "strata": records,
        "coverage": [],
    }
    return {"schema_version": 1, "golden_sets": [golden]}


def best(work: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def chromium_seconds(page: Path, folder: Path) -> float:
    start = time.perf_counter()
    screenshot(page, folder / "shot.png", 1200, 1600)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--strata", type=int, default=500)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-chromium", action="store_true")
    args = parser.parse_args()
    report = synthetic_report(args.strata, args.queries)
    print(f"{args.strata} strata (+ overall) x {args.queries:,} queries, best of {args.repeat}")
    print(f"{'output':<28}{'size':>12}{'seconds':>10}{'x JSON':>8}")
    floor, text = best(lambda: report_json(report), args.repeat)
    outputs: dict[str, tuple[float, object]] = {"JSON report (floor)": (floor, text)}
    outputs["Markdown"] = best(lambda: report_markdown(report), args.repeat)
    outputs["HTML page"] = best(lambda: report_html(report), args.repeat)
    try:
        from pytest_embeval.reports.forest_png import forest_png

        outputs["PNG forest plot"] = best(lambda: forest_png(report), max(1, args.repeat // 2))
    except RuntimeError as error:
        print(f"(no PNG: {error})")
    for name, (seconds, value) in outputs.items():
        size = len(value.encode("utf-8")) if isinstance(value, str) else len(value)  # type: ignore[arg-type]
        print(f"{name:<28}{size / 1e6:>9.2f} MB{seconds:>10.3f}{seconds / floor:>8.2f}")
    if args.no_chromium or CHROMIUM is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        empty, page = root / "empty.html", root / "page.html"
        empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
        page.write_text(str(outputs["HTML page"][1]), encoding="utf-8")
        bare = min(chromium_seconds(empty, root) for _ in range(3))
        full = min(chromium_seconds(page, root) for _ in range(3))
    print(f"chromium screenshot: empty page {bare:.2f} s, HTML page {full:.2f} s ({full / bare:.2f}x)")


if __name__ == "__main__":
    main()
