# The shipped golden set walked through dims x precision x rescore: the incumbent's model (the demo's
# all-MiniLM-L6-v2) in six shapes, each run against the incumbent, and the frontier of all of them.
demo_project --cached
cat > golden/support-bill.yaml <<'YAML'
# golden/support-bill.yaml: golden/support.yaml, priced at the production size
name: support-bill
corpus: support/corpus.jsonl
queries: support/queries.jsonl
qrels: support/qrels.tsv
strata: [shape, language, source]
separate: {source: [wish]}
metric: recall@5
report: [ndcg@10, mrr@10]
tie_margin: 0.03
seed: 0
production: {documents: 10_000_000, memory_price_per_gb_month: 4.0}
YAML
echo '--8<-- [start:runs]'
for shape in 'dims=256' 'dims=128' 'precision=int8' 'precision=binary' 'precision=binary&rescore=4' \
    'dims=256&precision=binary&rescore=4'; do
    name=$(echo "$shape" | tr '=&' '-_')
    shown_any_status "pytest --embeval golden/support-bill.yaml -q -p no:cacheprovider --embeval-candidate 'pytest_embeval.arms.demo:minilm_arm?$shape' --embeval-json $name.json | tail -1"
done
echo '--8<-- [end:runs]'
echo '--8<-- [start:one]'
shown_any_status "pytest --embeval golden/support-bill.yaml -p no:cacheprovider --embeval-candidate 'pytest_embeval.arms.demo:minilm_arm?precision=binary&rescore=4' | sed -n '/^frontier:/,/^cheapest/p'"
echo '--8<-- [end:one]'
echo '--8<-- [start:frontier]'
show python "$REPO/docs/examples/frontier_of_reports.py" dims-256.json dims-128.json precision-int8.json \
    precision-binary.json precision-binary_rescore-4.json dims-256_precision-binary_rescore-4.json
echo '--8<-- [end:frontier]'
echo '--8<-- [start:chart]'
python "$REPO/docs/examples/frontier_of_reports.py" --svg dims-256.json dims-128.json precision-int8.json \
    precision-binary.json precision-binary_rescore-4.json dims-256_precision-binary_rescore-4.json
echo '--8<-- [end:chart]'
