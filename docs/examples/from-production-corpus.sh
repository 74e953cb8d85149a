# docs/from-production.md, step 2: the corpus sample, every judged document kept, the rest a uniform draw.
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-corpus.py" golden/support/corpus.jsonl production-corpus.jsonl
shown 'wc -l < production-corpus.jsonl'
show embeval corpus-sample production-corpus.jsonl --size 1000 --keep-judged golden/support/qrels.tsv \
    --out golden/support/corpus-sample.jsonl
show cat golden/support/corpus-sample.draw.json
