# "A shortlist is one family" (docs/statistics.md): the demo's two candidates on golden/support.yaml, every
# comparison's bootstrap p-value and the level Holm gives it in the one family of 12; then the simulation
# of tests/test_shortlist_family.py, where every candidate equals the incumbent.
demo_project --cached
rm golden/support-hnsw.yaml
printf '$ pytest --embeval golden/ --embeval-json report.json\n'
pytest --embeval golden/ --embeval-json report.json -p no:cacheprovider > /dev/null || true
echo "each comparison's bootstrap p-value and the level Holm gives it, smallest p first:"
python - <<'PY'
import json

report = json.load(open("report.json", encoding="utf-8"))
rows = [(s["p_value"], g["candidate_name"], s) for g in report["golden_sets"] for s in g["strata"]]
for p, name, s in sorted(rows, key=lambda row: row[0]):
    print(f"{name:<11} {s['stratum']:<15} p_value {p:.2g}  level {s['family']['level']:.3g}  {s['verdict']}")
PY
echo
echo "a true null on every stratum of 4 candidates (3 strata each), 400 simulated runs:"
mkdir simulation && cd simulation  # out of reach of the demo's conftest.py: the tests' is imported
PYTHONPATH="$REPO/tests${PYTHONPATH:+:$PYTHONPATH}" python - <<'PY'
from pathlib import Path

from test_shortlist_family import REPLICATES, any_worse_rate

joint = any_worse_rate(Path("joint"), REPLICATES, multiple_comparisons="none")
alone = any_worse_rate(Path("alone"), REPLICATES, multiple_comparisons="none", family="candidate")
print(f"one family of 12 (the default, holm):          any WORSE in {joint:.1%} of the runs")
print(f"each candidate on its own, unadjusted (none):  any WORSE in {alone:.1%} of the runs")
PY
