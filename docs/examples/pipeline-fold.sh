# Chunks folded to documents: nfcorpus as 100-word chunks, the static demo model against BM25.
need_shared
# A scratch folder with the repository's golden/ and conftest.py (the demo models) and the BEIR collections in data/.
cp -r "$REPO/golden" "$REPO/conftest.py" .
ln -s "$SHARED/data" data
run() { printf '$ %s\n' "$1"; bash -c "$1" || true; }
cp "$REPO/docs/examples/derive.py" .
python derive.py . data
cat > nfcorpus-chunks.yaml <<'EOF'
corpus: nfcorpus-chunks.jsonl
queries: data/nfcorpus-preprocessed/queries.jsonl
qrels: data/nfcorpus-preprocessed/qrels.tsv
metric: ndcg@10
tie_margin: 0.01
fold: {field: doc_id, score: max}
EOF
run "pytest --embeval nfcorpus-chunks.yaml --embeval-incumbent=pytest_embeval.arms.demo:static_minilm_arm --embeval-candidate=bm25 | sed -n '/= embeval =/,\$p'"
