# frontier_chart.py: the frontier chart of a JSON report's first shortlist, as the HTML report draws it.
import json
import sys
from pathlib import Path

from pytest_embeval.reports.charts import frontier_svg

report = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
print(frontier_svg(report["shortlist"][0]["frontier"]))
