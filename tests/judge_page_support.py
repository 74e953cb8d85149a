"""What the judging page's tests share: a small golden set with a hostile and a long document, its blind
sheets as ``embeval pool`` writes them, the page's server as a real ``embeval judge-page`` process, and
plain HTTP requests to it."""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pytest_embeval.golden.loader import load_golden
from pytest_embeval.judging.pooling import Pool, pool_from_rankings, sample_pool, split_pool, write_sheet

ROOT = Path(__file__).resolve().parents[1]
#: A document that would run script if the page parsed texts as HTML.
HOSTILE = '<script>window.pwned = 1</script><img src="x" onerror="window.pwned = 2"><b>bold?</b>'
HOSTILE_DOC = "d03"
#: A document longer than any screen.
LONG_DOC = "d05"
LONG_TEXT = " ".join(f"Sentence {i} of a long help page about parcels and their labels." for i in range(400))
GUIDELINES = """# Relevance of the test set

Grade each pair on its own.

- **2** answers it: the document on its own answers the query.
- **1** partly relevant: answers part of the query.
- **0** not relevant: does not help.
"""
LABELS = ("not relevant", "partly relevant", "answers it")
QUERIES = 4
DOCUMENTS = 8
#: ``embeval`` from this checkout (the console script may be another checkout's editable install).
_PROGRAM = "import sys; from pytest_embeval.cli.embeval import main; sys.exit(main())"


def write_judging_set(root: Path, *, guidelines: bool = True, name: str = "page") -> Path:
    """A golden set of ``QUERIES`` queries over ``DOCUMENTS`` documents, each query with one judged pair
    (so a pool of every document holds 7 pairs a query); its guidelines name the labels of 0..2."""
    data = root / name
    data.mkdir(parents=True, exist_ok=True)
    texts = {HOSTILE_DOC: HOSTILE, LONG_DOC: LONG_TEXT}
    documents = [
        {
            "_id": f"d{i:02d}",
            "title": f"Help page {i}",
            "text": texts.get(f"d{i:02d}", f"How to do thing {i}."),
        }
        for i in range(DOCUMENTS)
    ]
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    queries = [{"_id": f"q{i}", "text": f"how do I do thing {i}?"} for i in range(QUERIES)]
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    qrels = ["query-id\tcorpus-id\tscore", *(f"q{i}\td{i + 4:02d}\t1" for i in range(QUERIES))]
    (data / "qrels.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    plan: dict[str, Any] = {
        "name": name,
        "corpus": f"{name}/corpus.jsonl",
        "queries": f"{name}/queries.jsonl",
        "qrels": f"{name}/qrels.tsv",
        "metric": "recall@5",
        "min_queries": 2,
        "seed": 3,
    }
    if guidelines:
        (data / "judging.md").write_text(GUIDELINES, encoding="utf-8")
        plan["guidelines"] = f"{name}/judging.md"
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return path


def judging_pool(golden_path: Path) -> Pool:
    """Two arms ranking every document in opposite orders: every unjudged pair is pooled."""
    golden = load_golden(golden_path)
    ids = [f"d{i:02d}" for i in range(DOCUMENTS)]
    rankings = {
        "incumbent": {f"q{i}": ids for i in range(QUERIES)},
        "candidate": {f"q{i}": ids[::-1] for i in range(QUERIES)},
    }
    return pool_from_rankings(golden, rankings, depth=DOCUMENTS)


def write_pool_sheet(golden_path: Path, out: Path) -> Path:
    write_sheet(out, judging_pool(golden_path))
    return out


def write_calibration_sheets(golden_path: Path, folder: Path, shared: int) -> tuple[Path, Path, Path]:
    """A calibration sample of ``shared`` pairs copied for two judges, and the first of two split sheets
    (which holds some of the sample's pairs too, as `embeval pool --split` writes them)."""
    pool = judging_pool(golden_path)
    sample = sample_pool(pool, shared)
    first = folder / "calibration-ana.csv"
    second = folder / "calibration-ben.csv"
    write_sheet(first, sample)
    write_sheet(second, sample)
    own = folder / "pool.1-of-2.csv"
    write_sheet(own, split_pool(pool, 2)[0])
    return first, second, own


class PageServer:
    """``embeval judge-page ARGS`` in its own process, until `stop` or `kill`."""

    def __init__(self, *args: str | Path, timeout: float = 60, env: Mapping[str, str] | None = None) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            **(env or {}),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", _PROGRAM, "judge-page", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.printed: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"embeval judge-page printed no address in {timeout} s") from None
            if line is None:
                raise RuntimeError(f"embeval judge-page exited: {self.process.wait()}: {self.stderr()}")
            self.printed.append(line)
            if line.startswith("open http://"):
                self.url = line.split()[1]
                break
        parts = urlsplit(self.url)
        self.port = parts.port or 0
        self.token = parts.path.strip("/")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def kill(self) -> None:
        """SIGKILL: no handler, no flush, nothing the server can finish."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self, how: signal.Signals = signal.SIGINT) -> list[str]:
        """Ctrl-C (or another signal), and every line it printed."""
        if self.process.poll() is None:
            self.process.send_signal(how)
        self.process.wait(timeout=30)
        rest = []
        while (line := self.lines.get(timeout=10)) is not None:
            rest.append(line)
        return [*self.printed, *rest]


def request(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: Mapping[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, Mapping[str, str], bytes]:
    """One request to 127.0.0.1:port (``Host`` as a browser sends it unless given): status, headers, body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sent = {"Host": f"127.0.0.1:{port}"}
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    sent.update(headers or {})
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        if data is not None and "Content-Length" not in sent:
            connection.putheader("Content-Length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def api(port: int, token: str, method: str, route: str, body: Any = None) -> Any:
    """A JSON API call that must succeed: its decoded answer."""
    status, _, answer = request(port, method, f"/{token}/{route}", body)
    assert status == 200, (status, answer)
    return json.loads(answer)


def sheet_cells(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def grades_of(path: Path) -> dict[tuple[str, str], str]:
    return {(row["query_id"], row["doc_id"]): row["grade"] for row in sheet_cells(path)}


def in_order(path: Path) -> Sequence[tuple[str, str]]:
    return [(row["query_id"], row["doc_id"]) for row in sheet_cells(path)]


#: Records, in the page, each key press and how long until the pair on screen changed: to the DOM (a
#: MutationObserver), and to the next frame after it (what the judge sees).
LATENCY_PROBE = """
if (!window.__probe) {
  window.__probe = {dom: [], frame: [], key: null};
  document.addEventListener('keydown', (event) => { window.__probe.key = event.timeStamp; }, true);
  new MutationObserver(() => {
    const key = window.__probe.key;
    if (key === null) { return; }
    window.__probe.key = null;
    window.__probe.dom.push(performance.now() - key);
    requestAnimationFrame(() => window.__probe.frame.push(performance.now() - key));
  }).observe(document.getElementById('pair'), {subtree: true, childList: true, characterData: true});
}
"""


@dataclass(frozen=True, slots=True)
class Latency:
    """Milliseconds from a key press to the next pair: in the DOM, and on screen (the next frame)."""

    presses: int
    dom_median: float
    dom_p95: float
    frame_median: float
    frame_p95: float

    def __str__(self) -> str:
        return (
            f"median {self.frame_median:.1f} ms, 95th percentile {self.frame_p95:.1f} ms "
            f"(in the DOM: median {self.dom_median:.1f} ms, 95th percentile {self.dom_p95:.1f} ms)"
        )


def probe_results(driver: Any) -> Any:
    """What `LATENCY_PROBE` recorded, once the frame after the last change has come."""
    from selenium.webdriver.support.wait import WebDriverWait

    script = "const p = window.__probe; return p.frame.length === p.dom.length ? p : null;"
    return WebDriverWait(driver, 30, poll_frequency=0.01).until(lambda d: d.execute_script(script))


def latency(probes: Sequence[Mapping[str, Sequence[float]]]) -> Latency:
    """The figures of what `LATENCY_PROBE` recorded on one or more page loads."""
    dom = [value for probe in probes for value in probe["dom"]]
    frame = [value for probe in probes for value in probe["frame"]]

    def p95(values: list[float]) -> float:
        return statistics.quantiles(values, n=20, method="inclusive")[-1]

    return Latency(len(frame), statistics.median(dom), p95(dom), statistics.median(frame), p95(frame))
