# The shipped golden set walked through dims x precision x rescore and an index: the incumbent's model (the
# demo's all-MiniLM-L6-v2) in seven shapes and searched through an IVF-PQ index of its own, the candidates of
# one shortlist run, and the frontier of all the arms.
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
M=pytest_embeval.arms.demo:minilm_arm
echo '--8<-- [start:run]'
shown_any_status "pytest --embeval golden/support-bill.yaml -p no:cacheprovider \\
    --embeval-candidate 'd256=$M?dims=256' --embeval-candidate 'd128=$M?dims=128' \\
    --embeval-candidate 'int8=$M?precision=int8' --embeval-candidate 'int8r=$M?precision=int8&rescore=4' \\
    --embeval-candidate 'bin=$M?precision=binary' --embeval-candidate 'binr=$M?precision=binary&rescore=4' \\
    --embeval-candidate 'd256binr=$M?dims=256&precision=binary&rescore=4' \\
    --embeval-candidate 'ivfpq=$M?faiss=IVF8,PQ48x3&nprobe=2' \\
    --embeval-json shapes.json | sed -n '/^embeval: embedding cache/p;/^shortlist of /,/^cheapest arm/p'"
echo '--8<-- [end:run]'
echo '--8<-- [start:chart]'
python "$REPO/docs/examples/frontier_chart.py" shapes.json
echo '--8<-- [end:chart]'
