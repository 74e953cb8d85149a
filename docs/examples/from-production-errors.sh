# docs/from-production.md: bad inputs are one line each, exit 2, and nothing is written.
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
show embeval sample log.jsonl --by language,shap --size 120 --out queries.jsonl
show embeval sample log.jsonl --by language,shape --size 30 --out queries.jsonl
show embeval sample log.jsonl --by language,shape --size 10 --floor 20 --out queries.jsonl
show embeval sample log.jsonl --by language --size 120 --bands head=0.5,torso=0.5 --out queries.jsonl
show embeval corpus-sample golden/support/corpus.jsonl --size 400 --keep-judged golden/support/qrels.tsv \
    --out sample.jsonl
show ls
