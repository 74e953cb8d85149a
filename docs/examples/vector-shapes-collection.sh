# nfcorpus (../shared/data) through six shapes of all-MiniLM-L6-v2 and an IVF-PQ index of its own, the
# candidates of one shortlist run, the frontier of all the arms, and the chart as the HTML report draws it.
# compared without numbers: nfcorpus is embedded afresh on each machine (MiniLM's float32 output follows its CPU kernels in the last bits), and the IVF-PQ index k-means trains on those vectors moves with them: its interval by 0.001 from one machine to another
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
    --embeval-candidate 'ivfpq=$M?faiss=IVF64,PQ48x4&nprobe=4' \\
    --embeval-json shapes.json | sed -n '/^embeval: embedding cache/p;/^shortlist of /,/^cheapest arm/p'"
echo '--8<-- [end:run]'
echo '--8<-- [start:chart]'
python "$REPO/docs/examples/frontier_chart.py" shapes.json
echo '--8<-- [end:chart]'
