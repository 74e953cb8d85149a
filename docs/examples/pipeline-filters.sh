# Per-query filters: the support set with every query filtered to its own language, searched with HNSW.
need_shared
# A scratch folder with the repository's golden/ and conftest.py (the demo models) and the BEIR collections in data/.
cp -r "$REPO/golden" "$REPO/conftest.py" .
ln -s "$SHARED/data" data
run() { printf '$ %s\n' "$1"; bash -c "$1" || true; }
cp "$REPO/docs/examples/derive.py" .
python derive.py . data
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
run "pytest --embeval support-by-language.yaml | sed -n '/= embeval =/,\$p'"
