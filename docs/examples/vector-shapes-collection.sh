# nfcorpus (../shared/data) through six shapes of all-MiniLM-L6-v2, the candidates of one shortlist run, and
# the frontier of all the arms; then, with the library, the same shapes and an IVF-PQ index (an index is the
# golden file's, the same for every arm of a run), and the chart as the HTML report draws it.
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
M=pytest_embeval.arms.demo:minilm_arm
echo '--8<-- [start:run]'
shown_any_status "pytest --embeval nfcorpus.yaml -p no:cacheprovider \\
    --embeval-candidate 'd256=$M?dims=256' --embeval-candidate 'int8=$M?precision=int8' \\
    --embeval-candidate 'int8r=$M?precision=int8&rescore=4' --embeval-candidate 'd256int8=$M?dims=256&precision=int8' \\
    --embeval-candidate 'bin=$M?precision=binary' --embeval-candidate 'binr=$M?precision=binary&rescore=4' \\
    | sed -n '/^embeval: embedding cache/p;/^shortlist of /,/^cheapest arm/p'"
echo '--8<-- [end:run]'
echo '--8<-- [start:frontier]'
show python "$REPO/docs/examples/vector_shapes_collection.py"
echo '--8<-- [end:chart]'
