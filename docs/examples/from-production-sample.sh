# docs/from-production.md, step 1: a made-up week of traffic from the shipped support set's queries, and
# the stratified sample of its distinct queries.
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
shown 'wc -l < log.jsonl'
shown 'head -n 3 log.jsonl'
show embeval sample log.jsonl --by language,shape --size 120 --floor 20 --out golden/support/sampled-queries.jsonl
shown 'head -n 3 golden/support/sampled-queries.jsonl'
