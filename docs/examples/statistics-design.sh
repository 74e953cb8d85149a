# "The interval of a drawn sample follows its draw" (docs/statistics.md): a week of traffic made of the shipped
# support set's queries (from-production-log.py), 120 distinct queries drawn by embeval sample, judged with the
# shipped judgments and weighed by `weights: frequency`; then one query removed, which the draw no longer
# matches.
demo_project --cached
rm golden/support-hnsw.yaml golden/support.yaml
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
embeval sample log.jsonl --by language,shape --size 120 --head-boost 2 --out golden/support/drawn.jsonl >/dev/null
# The drawn queries' judgments are the shipped ones (matched by text); each keeps the shipped spelling, so
# that the run embeds nothing new (the file's sha256 then differs from its sidecar's: its cells do not).
python - <<'PY'
import json

from pytest_embeval.core.sampling import normalise_query

shipped = {normalise_query(q["text"]): q for q in map(json.loads, open("golden/support/queries.jsonl"))}
judged = {}
for line in open("golden/support/qrels.tsv").read().splitlines()[1:]:
    query, document, grade = line.split("\t")
    judged.setdefault(query, []).append((document, grade))
drawn = [json.loads(line) for line in open("golden/support/drawn.jsonl")]
qrels = ["query-id\tcorpus-id\tscore"]
for query in drawn:
    original = shipped[normalise_query(query["text"])]
    query["text"] = original["text"]
    qrels += [f"{query['_id']}\t{document}\t{grade}" for document, grade in judged.get(original["_id"], [])]
open("golden/support/drawn.jsonl", "w").writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in drawn)
open("golden/support/drawn-qrels.tsv", "w").write("\n".join(qrels) + "\n")
PY
cat > golden/drawn.yaml <<'YAML'
name: support-drawn
corpus: support/corpus.jsonl
queries: support/drawn.jsonl
qrels: support/drawn-qrels.tsv
strata: [language, band]
metric: recall@5
tie_margin: 0.03
min_queries: 5
weights: frequency
YAML
show cat golden/drawn.yaml
shown_any_status 'pytest --embeval golden/drawn.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider | sed -n "/^support-drawn (golden/,/^3 strata\|^[0-9]* strata/p"'
echo
echo "the JSON report's design, for the golden set and each stratum, beside the same queries without a design:"
python - <<'PY'
import json

golden = json.load(open("report.json", encoding="utf-8"))["golden_sets"][0]
print("golden set:", json.dumps(golden["design"]))
for s in golden["strata"]:
    print(f"{s['stratum']:<14} ci [{s['ci'][0]:+.3f}, {s['ci'][1]:+.3f}] {s['verdict']:<5}  design {json.dumps(s['design'])}")
PY
mv golden/support/drawn.draw.json sidecar.json
pytest --embeval golden/drawn.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json without.json -p no:cacheprovider >/dev/null || true
mv sidecar.json golden/support/drawn.draw.json
python - <<'PY'
import json

golden = json.load(open("without.json", encoding="utf-8"))["golden_sets"][0]
print("without the sidecar:", json.dumps(golden["design"]))
for s in golden["strata"]:
    print(f"{s['stratum']:<14} ci [{s['ci'][0]:+.3f}, {s['ci'][1]:+.3f}] {s['verdict']}")
PY
echo
show embeval plan golden/drawn.yaml --from-report report.json
echo
# A junk query removed by hand, with its judgments: the draw no longer describes the file.
python - <<'PY'
lines = open("golden/support/drawn.jsonl").read().splitlines(keepends=True)
removed = lines[0].split('"')[3]
open("golden/support/drawn.jsonl", "w").writelines(lines[1:])
qrels = open("golden/support/drawn-qrels.tsv").read().splitlines(keepends=True)
open("golden/support/drawn-qrels.tsv", "w").writelines(q for q in qrels if not q.startswith(removed + "\t"))
PY
shown_any_status 'pytest --embeval golden/drawn.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider -q 2>&1 | grep -E "drawn.jsonl|Interrupted"'
