# The control record of the shipped support set, from its JSON report. Two BM25 arms embed nothing, so this
# takes seconds; what is held constant does not depend on the models.
cp -r "$REPO/golden" .
pytest --embeval golden/support.yaml --embeval-incumbent=bm25 '--embeval-candidate=bm25?k1=0.9' \
    --embeval-json report.json -p no:cacheprovider >/dev/null || true
python - <<'EOF'
import json

control = json.load(open("report.json", encoding="utf-8"))["golden_sets"][0]["control"]
print('"control": ' + json.dumps(control, indent=2))
EOF
