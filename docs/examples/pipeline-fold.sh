# Chunks folded to documents: nfcorpus as 100-word chunks, the static demo model against BM25.
derived_golden_files
cat > nfcorpus-chunks.yaml <<'EOF'
corpus: nfcorpus-chunks.jsonl
queries: data/nfcorpus-preprocessed/queries.jsonl
qrels: data/nfcorpus-preprocessed/qrels.tsv
metric: ndcg@10
tie_margin: 0.01
fold: {field: doc_id, score: max}
EOF
shown_any_status "pytest --embeval nfcorpus-chunks.yaml --embeval-incumbent=pytest_embeval.arms.demo:static_minilm_arm --embeval-candidate=bm25 | sed -n '/= embeval =/,\$p'"
