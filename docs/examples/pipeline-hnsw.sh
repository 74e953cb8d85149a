# The shipped HNSW golden set: each arm's index line under the table, and its record in the JSON report.
cp -r "$REPO/golden" "$REPO/conftest.py" .
shown_any_status "pytest --embeval golden/support-hnsw.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json | grep ' index: '"
shown_any_status "python -c 'import json; print(json.dumps(json.load(open(\"report.json\"))[\"golden_sets\"][0][\"incumbent\"][\"index\"], indent=2))'"
