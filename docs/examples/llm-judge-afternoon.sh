# not checked: the judging run is killed part-way, so how many pairs each run grades varies
# "Judging with an LLM" (docs/llm-judge.md): the whole afternoon, on a copy of the shipped golden set with its
# qrels emptied (header only). The people are the shipped qrels (shipped/, written into a sheet by
# docs/stand_in_judge.py --fill); the model is docs/stand_in_judge.py serving chat completions on 127.0.0.1.
# Each block of the page is one section of this output (pymdownx.snippets sections).
cp -r "$REPO/golden" "$REPO/conftest.py" .
cp -r "$REPO/golden" shipped
mkdir -p .embeval_cache sheets docs tests
cp -r "$REPO/.embeval_cache/embeddings" "$REPO/.embeval_cache/digests" .embeval_cache/
cp "$REPO/docs/stand_in_judge.py" docs/
cp "$REPO/tests/openai_server.py" tests/
rm golden/support-hnsw.yaml
printf 'query-id\tcorpus-id\tscore\n' > golden/support/qrels.tsv
export JUDGE_KEY=sk-local-demo

# shown 'COMMAND': print "$ COMMAND" as typed (quotes and variables as they are), run it, print a non-zero exit

servers=""
trap 'for pid in $servers; do kill "$pid" 2>/dev/null || true; done' EXIT
start_judge() {  # PORT ARGS...: a stand-in judge on 127.0.0.1:PORT, bounded in time and in requests
    local port=$1
    shift
    python docs/stand_in_judge.py shipped/support.yaml --port "$port" --lifetime 240 --max-requests 9000 "$@" \
        >"judge-$port.log" 2>&1 &
    servers="$servers $!"
    for _ in $(seq 200); do
        if grep -q "^stand-in judge" "judge-$port.log"; then return 0; fi
        sleep 0.1
    done
    cat "judge-$port.log"
    return 1
}

echo "--8<-- [start:server]"
start_judge 8765 --noise 0.15 --refuse 0.01 --throttle 2
cat judge-8765.log
echo "--8<-- [end:server]"

pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json --embeval-pool sheets/first -p no:cacheprovider >/dev/null || true
echo "--8<-- [start:pool]"
show embeval pool golden/support.yaml --from-report report.json --depth 20 --out sheets/pool.csv
show embeval pool golden/support.yaml --from-report report.json --depth 5 --sample 100 --out sheets/calibration.csv
echo "--8<-- [end:pool]"

echo "--8<-- [start:people]"
show python docs/stand_in_judge.py shipped/support.yaml --fill sheets/calibration.csv --as ana --out sheets/calibration-ana.csv
echo "--8<-- [end:people]"

echo "--8<-- [start:judge]"
shown 'export JUDGE_KEY=sk-local-demo'
shown "SPEC='openai:stand-in-judge?base_url=http://127.0.0.1:8765/v1&api_key_env=JUDGE_KEY&concurrency=8&price_per_million_tokens=0.15,0.6'"
shown 'timeout --foreground -s KILL 12 embeval judge golden/support.yaml sheets/pool.csv --model "$SPEC" --out sheets/model.csv'
shown 'embeval judge golden/support.yaml sheets/pool.csv --model "$SPEC" --out sheets/model.csv'
echo "--8<-- [end:judge]"

echo "--8<-- [start:audit]"
python - <<'PY'
import json

with open("sheets/model.audit.jsonl", encoding="utf-8") as handle:
    lines = [json.loads(line) for line in handle]
asked = [line for line in lines if "attempt" in line]
refused = next(line for line in asked if (line["problem"] or "").startswith("refused"))
for line in asked:
    if line["pair_id"] == refused["pair_id"]:
        line["request"]["messages"] = "…"
        print(json.dumps(line, ensure_ascii=False))
PY
echo "--8<-- [end:audit]"

echo "--8<-- [start:calibrate]"
show embeval calibrate sheets/calibration-ana.csv sheets/model.csv --record sheets/calibration.json
echo "--8<-- [end:calibrate]"

start_judge 8766 --model stand-in-lenient --shift 1:2
echo "--8<-- [start:lenient]"
shown "LENIENT='openai:stand-in-lenient?base_url=http://127.0.0.1:8766/v1&api_key_env=JUDGE_KEY'"
shown 'embeval judge golden/support.yaml sheets/calibration.csv --model "$LENIENT" --out sheets/calibration-lenient.csv'
show embeval calibrate sheets/calibration-ana.csv sheets/calibration-lenient.csv --record sheets/calibration-lenient.json
echo "--8<-- [end:lenient]"

echo "--8<-- [start:merge]"
show embeval merge golden/support.yaml sheets/calibration-lenient.csv --calibration sheets/calibration-lenient.json
show embeval merge golden/support.yaml sheets/calibration-ana.csv sheets/model.csv --calibration sheets/calibration.json --judged-on 2026-11-30
echo "--8<-- [end:merge]"

echo "--8<-- [start:provenance]"
show head -n 1 golden/support/qrels.provenance.jsonl
shown "grep -m 1 '\"kind\": \"person\"' golden/support/qrels.provenance.jsonl"
echo "--8<-- [end:provenance]"

echo "--8<-- [start:run]"
printf '$ pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json\n'
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider | sed -n '/^support-search (golden/,/^$/p' || true
shown "python -c \"import json; print(json.load(open('report.json'))['golden_sets'][0]['judgments'])\""
echo "--8<-- [end:run]"
