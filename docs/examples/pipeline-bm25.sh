# A lexical arm and a hybrid arm: the static demo model against BM25 on nfcorpus, then against itself fused with a stemmed BM25.
need_shared
# A scratch folder with the repository's golden/ and conftest.py (the demo models) and the BEIR collections in data/.
cp -r "$REPO/golden" "$REPO/conftest.py" .
ln -s "$SHARED/data" data
cat > nfcorpus.yaml <<'EOF'
beir: data/nfcorpus-preprocessed
metric: ndcg@10
report: [recall@100]
tie_margin: 0.01
EOF
shown_any_status "pytest --embeval nfcorpus.yaml --embeval-incumbent=pytest_embeval.arms.demo:static_minilm_arm --embeval-candidate=bm25 | sed -n '/= embeval =/,\$p'"
shown_any_status "pytest --embeval nfcorpus.yaml --embeval-incumbent=pytest_embeval.arms.demo:static_minilm_arm '--embeval-candidate=rrf:pytest_embeval.arms.demo:static_minilm_arm,[bm25?stemmer=english]' | sed -n '/= embeval =/,\$p'"
