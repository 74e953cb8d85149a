# docs/from-production.md, step 1: a made-up week of traffic from the shipped support set's queries, and
# the stratified sample of its distinct queries.
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
shown 'wc -l < log.jsonl'
shown 'head -n 3 log.jsonl'
show embeval sample log.jsonl --by language,shape --size 120 --floor 20 --out golden/support/sampled-queries.jsonl
shown 'head -n 3 golden/support/sampled-queries.jsonl'
# What each stratum's sampled queries stand for: their frequencies alone, and frequency / inclusion (the
# traffic weight a run gives them), beside the stratum's searches in the log.
shown 'python - <<EOF
import json
from collections import defaultdict
log, alone, weighed = defaultdict(int), defaultdict(float), defaultdict(float)
for line in open("log.jsonl", encoding="utf-8"):
    row = json.loads(line)
    log[row["language"], row["shape"]] += 1
for line in open("golden/support/sampled-queries.jsonl", encoding="utf-8"):
    query = json.loads(line)
    stratum = query["language"], query["shape"]
    alone[stratum] += query["frequency"]
    weighed[stratum] += query["frequency"] / query["inclusion"]
print("stratum        searches  frequency  frequency/inclusion")
for stratum in sorted(log, key=log.get, reverse=True):
    name = ", ".join(stratum)
    print(f"{name:13}  {log[stratum]:8,}  {alone[stratum]:9,.0f}  {weighed[stratum]:19,.0f}")
EOF'
