# "Check the labels" (docs/statistics.md): a blind sheet of the queries neither arm answers, on the shipped set.
demo_project --cached
pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider >/dev/null || true
show embeval pool golden/support.yaml --from-report report.json --consensus-failures --out rejudge.csv
