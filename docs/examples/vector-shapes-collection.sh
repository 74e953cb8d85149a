# nfcorpus (../shared/data) through seven shapes of all-MiniLM-L6-v2, each compared with its float32 exact
# search, and the frontier of them all; the chart as the HTML report draws it.
need_shared
demo_project --cached
ln -s "$SHARED/data" data
cat > nfcorpus.yaml <<'YAML'
# nfcorpus.yaml: 3,395 medical documents, 323 queries
name: nfcorpus
beir: data/nfcorpus-preprocessed
metric: ndcg@10
tie_margin: 0.02
seed: 0
production: {documents: 10_000_000, memory_price_per_gb_month: 4.0}
YAML
echo '--8<-- [start:frontier]'
show python "$REPO/docs/examples/vector_shapes_collection.py"
echo '--8<-- [end:chart]'
