# A filter naming a field no document has: a collection error naming the file, line and key.
mkdir tiny
cat > tiny/corpus.jsonl <<'EOF'
{"_id": "d1", "text": "refund for a damaged parcel", "language": "en", "topic": "refunds"}
{"_id": "d2", "text": "reembolso de un paquete dañado", "language": "es", "topic": "refunds"}
EOF
cat > tiny/queries.jsonl <<'EOF'
{"_id": "q00", "text": "refund", "filters": {"language": "en"}}
{"_id": "q01", "text": "reembolso", "filters": {"language": "es"}}
{"_id": "q02", "text": "damaged parcel", "filters": {"tenant": "acme"}}
EOF
printf 'query-id\tcorpus-id\tscore\nq00\td1\t1\nq01\td2\t1\nq02\td1\t1\n' > tiny/qrels.tsv
cat > tiny.yaml <<'EOF'
corpus: tiny/corpus.jsonl
queries: tiny/queries.jsonl
qrels: tiny/qrels.tsv
metric: ndcg@10
EOF
pytest --embeval tiny.yaml --embeval-incumbent=bm25 '--embeval-candidate=bm25?k1=0.9' -p no:cacheprovider > run.log 2>&1 || true
grep -m1 'filters.tenant' run.log | sed 's/^E *//'
