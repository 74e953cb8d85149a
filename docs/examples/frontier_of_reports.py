# frontier_of_reports.py: one frontier of several two-arm runs of one golden set, each the incumbent against
# a candidate, from their JSON reports (until one run compares a shortlist).
import json
import sys
from pathlib import Path

from pytest_embeval.reports.charts import frontier_svg
from pytest_embeval.reports.frontier_records import ArmRow
from pytest_embeval.reports.json_report import control_diff
from pytest_embeval.reports.terminal import frontier_lines

chart = sys.argv[1] == "--svg"
reports = [json.loads(Path(path).read_text(encoding="utf-8")) for path in sys.argv[1 + chart :]]
# The runs must have held everything but the candidate constant: the same golden set, corpus and index.
different = [line for report in reports[1:] for line in control_diff(reports[0], report)]
assert not different, different
golden = reports[0]["golden_sets"][0]
rows = [ArmRow("incumbent", golden["incumbent"], None)]
for report in reports:
    candidate = report["golden_sets"][0]
    rows.append(ArmRow(candidate["candidate"]["spec"], candidate["candidate"], candidate["strata"]))
if chart:
    print(frontier_svg(golden, rows))
else:
    print(
        f"{len(reports)} runs of {golden['path']}, every one holding {golden['control']['fingerprint'][:19]}…"
    )
    print("\n".join(frontier_lines(golden, rows)[1:]))
