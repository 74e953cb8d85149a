# "Many strata, one family" (docs/statistics.md): the shipped support.yaml with `multiple_comparisons: holm`.
demo_project --cached
rm golden/support-hnsw.yaml
echo "multiple_comparisons: holm" >> golden/support.yaml
printf '$ pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json\n'
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider | sed -n '/^support-search (golden/,/^multiple comparisons:/p' || true
echo
echo "each stratum's bootstrap p-value (p_value) and the level Holm gives it (family):"
python - <<'PY'
import json

for s in json.load(open("report.json", encoding="utf-8"))["golden_sets"][0]["strata"]:
    print(f"{s['stratum']:<15} p_value {s['p_value']:.2g}  level {s['family']['level']:.3g}  {s['verdict']}")
PY
