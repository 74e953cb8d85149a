# A reranker in the loop on the shipped support set: a first run scores the pairs, the rerun shown takes them from the cache.
# A scratch folder with the repository's golden/ and conftest.py (the demo models).
cp -r "$REPO/golden" "$REPO/conftest.py" .
cat > support-rerank.yaml <<'EOF'
name: support-rerank
corpus: golden/support/corpus.jsonl
queries: golden/support/queries.jsonl
qrels: golden/support/qrels.tsv
strata: [language]
metric: ndcg@10
report: [recall@20]
tie_margin: 0.05
rerank: {model: "pytest_embeval.arms.demo:minilm_reranker", depth: 20}
EOF
pytest --embeval support-rerank.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider >/dev/null || true
shown_any_status "pytest --embeval support-rerank.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-md=support-rerank.md | sed -n '/= embeval =/,\$p'"
shown_any_status "sed -n '/^reranked by/,/^reranker:/p' support-rerank.md"
