# docs/from-production.md, step 3: golden files pointing at the sample, and the draw in the report's control.
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
"$PYTHON" "$REPO/docs/examples/from-production-corpus.py" golden/support/corpus.jsonl production-corpus.jsonl
embeval sample log.jsonl --by language,shape --size 120 --out golden/support/sampled-queries.jsonl >/dev/null
embeval corpus-sample production-corpus.jsonl --size 1000 --keep-judged golden/support/qrels.tsv \
    --out golden/support/corpus-sample.jsonl >/dev/null
printf 'query-id\tcorpus-id\tscore\n' > golden/support/sampled-qrels.tsv
cat > golden/from-production.yaml <<'YAML'
# The sampled queries, not judged yet, over the corpus sample: embeval pool starts here.
name: support-from-production
corpus: support/corpus-sample.jsonl
queries: support/sampled-queries.jsonl
qrels: support/sampled-qrels.tsv
strata: [language, shape, band]
metric: recall@5
YAML
show cat golden/from-production.yaml
show embeval plan golden/from-production.yaml
cat > golden/support-sample.yaml <<'YAML'
# The shipped queries and judgments over the corpus sample: every judged document is in it.
name: support-sample
corpus: support/corpus-sample.jsonl
queries: support/queries.jsonl
qrels: support/qrels.tsv
strata: [language]
metric: recall@5
YAML
pytest --embeval golden/support-sample.yaml --embeval-incumbent=bm25 '--embeval-candidate=bm25?k1=0.9' \
    --embeval-json report.json -p no:cacheprovider >/dev/null || true
shown 'python - <<EOF
import json
control = json.load(open("report.json", encoding="utf-8"))["golden_sets"][0]["control"]
print(json.dumps({"draws": control["draws"]}, indent=2))
EOF'
