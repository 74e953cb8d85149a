# docs/from-production.md: the draw sidecar `embeval sample` writes beside the queries (its strata shown one
# per line here; the file itself is indented JSON).
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
embeval sample log.jsonl --by language,shape --size 120 --out golden/support/sampled-queries.jsonl >/dev/null
shown 'python - <<EOF
import json
draw = json.load(open("golden/support/sampled-queries.draw.json", encoding="utf-8"))
for key, value in draw.items():
    if key != "strata":
        print(f"{key}: {json.dumps(value)}")
print("strata:")
for stratum in draw["strata"]:
    print("  " + json.dumps(stratum))
EOF'
