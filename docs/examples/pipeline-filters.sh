# Per-query filters: the support set with every query filtered to its own language, searched with HNSW.
derived_golden_files
cat > support-by-language.yaml <<'EOF'
name: support-by-language
corpus: golden/support/corpus.jsonl
queries: support-queries-by-language.jsonl
qrels: golden/support/qrels.tsv
strata: [language]
metric: ndcg@10
report: [recall@20]
tie_margin: 0.05
index: {hnsw: {M: 16, ef_construction: 200, ef_search: 64}}
EOF
shown_any_status "pytest --embeval support-by-language.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm | sed -n '/= embeval =/,\$p'"
