# "Traffic weights" (docs/statistics.md): the shipped support set with a seeded Zipfian frequency per query
# and `weights: frequency`, so that the verdicts rest on the traffic-weighted means.
demo_project --cached
rm golden/support-hnsw.yaml
python - <<'PY'
import json

import numpy as np

# The traffic queries' popularity ranks, a seeded shuffle; frequency ~ 10,000 / rank^0.8 (Zipf's law, as
# query logs follow it). The hand-written wish queries were never searched: frequency 1.
queries = [json.loads(line) for line in open("golden/support/queries.jsonl", encoding="utf-8")]
traffic = [q for q in queries if q["source"] == "traffic"]
ranks = np.random.default_rng(23).permutation(len(traffic)) + 1
for query, rank in zip(traffic, ranks.tolist()):
    query["frequency"] = round(10_000 / rank**0.8)
for query in queries:
    query.setdefault("frequency", 1)
with open("golden/support/queries-with-frequency.jsonl", "w", encoding="utf-8") as out:
    out.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
head = sorted(queries, key=lambda q: -q["frequency"])[:3]
total = sum(q["frequency"] for q in traffic)
print("the three most frequent queries carry", f"{sum(q['frequency'] for q in head) / total:.0%}", "of the traffic:")
for q in head:
    print(f"  {q['_id']}  {q['frequency']:>6}  {q['text']}")
PY
sed -i 's|queries: support/queries.jsonl|queries: support/queries-with-frequency.jsonl|' golden/support.yaml
echo "weights: frequency" >> golden/support.yaml
printf '$ grep -E "^(queries|weights):" golden/support.yaml\n'
grep -E "^(queries|weights):" golden/support.yaml
printf '$ pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json\n'
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider | sed -n '/^support-search (golden/,/^the traffic weights/p' || true
echo
echo "the JSON report's strata: the weighted numbers, Kish's n and the unweighted ones beside (weights, kish_n, unweighted):"
python - <<'PY'
import json

for s in json.load(open("report.json", encoding="utf-8"))["golden_sets"][0]["strata"]:
    plain = s["unweighted"]
    print(
        f"{s['stratum']:<15} n {s['n']:>3}  kish_n {s['kish_n']:5.1f}  delta {s['delta']:+.3f} {s['verdict']:<6}"
        f"  unweighted delta {plain['delta']:+.3f} {plain['verdict']}"
    )
PY
