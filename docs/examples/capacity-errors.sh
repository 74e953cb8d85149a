# Capacity keys are validated like the rest of the golden file: one-line collection errors.
need_shared
ln -s "$SHARED/data" data
golden() {  # vaswani.yaml with its index and corpus_sample lines replaced
    cat > vaswani.yaml <<EOF
# vaswani.yaml, outside the repository: 11,429 physics abstracts, 93 queries (BEIR layout)
name: vaswani-capacity
beir: data/vaswani
metric: ndcg@10
tie_margin: 0.02
index: $1
corpus_sample: $2
EOF
    pytest --embeval vaswani.yaml -p no:cacheprovider 2>&1 | grep -m1 'vaswani.yaml:[0-9]' | sed 's/^E *//' || true
}
golden '{hnsw: {M: 16, ef_construction: 200, recall_target: 1.5}}' '{sizes: [0.1, 0.25, 0.5, 1.0], seed: 7}'
golden '{hnsw: {M: 16, ef_construction: 200, recall_target: 0.99}}' '
  sizes:
    - 0.5
    - 0.5
    - 1.0
  seed: 7'
golden '{hnsw: {M: 16, ef_construction: 200, ef_search: 128, recall_target: 0.99}}' '{sizes: [0.5, 1.0], seed: 7}'
