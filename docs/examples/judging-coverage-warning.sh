# "Judging a golden set", step 6 (docs/judging.md): what `embeval coverage` says when only one arm was pooled.
# The shipped golden set with its qrels emptied; only the incumbent's top 20 is pooled (from a run that gave
# the incumbent as both arms), graded (by the shipped qrels, docs/stand_in_judge.py --fill) and merged.
demo_project --cached
mkdir -p sheets
rm golden/support-hnsw.yaml
printf 'query-id\tcorpus-id\tscore\n' > golden/support/qrels.tsv
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:minilm_arm --embeval-json incumbent.json \
    --embeval-pool sheets/first -p no:cacheprovider >/dev/null || true
embeval pool golden/support.yaml --from-report incumbent.json --depth 20 --out sheets/incumbent.csv >/dev/null
python "$REPO/docs/stand_in_judge.py" "$REPO/golden/support.yaml" --fill sheets/incumbent.csv --as ana \
    --out sheets/incumbent-graded.csv >/dev/null
embeval merge golden/support.yaml sheets/incumbent-graded.csv >/dev/null
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider >/dev/null || true
show embeval coverage golden/support.yaml --from-report report.json
