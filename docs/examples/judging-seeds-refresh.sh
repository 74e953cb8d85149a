# "Judging a golden set": seeds from tickets and clicks, and judgments that age (docs/judging.md), run for
# real on the shipped golden set. First the shipped set as it is (judged before dates were recorded); then
# a copy with its qrels emptied, seeded from "tickets" (a grade-2 answer of every fifth query of the
# shipped qrels) and "clicks" (the incumbent's top 3 documents the shipped qrels grade relevant: what a
# click log of the current system records), pooled, graded by the stand-in judge (the shipped qrels,
# docs/stand_in_judge.py --fill), merged with a date, aged past its shelf life, and refreshed.
demo_project --cached
mkdir -p sheets
rm golden/support-hnsw.yaml
people() { python "$REPO/docs/stand_in_judge.py" "$REPO/golden/support.yaml" --fill "$1" --as "$2" --out "$3"; }
age() {
    # the report's judgments.age, without the two fields that depend on the day this runs
    python -c 'import json, sys
age = json.load(open(sys.argv[1]))["golden_sets"][0]["judgments"]["age"]
print({k: v for k, v in age.items() if k not in ("today", "median_age_days")})' "$1"
}

pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json shipped.json -p no:cacheprovider >/dev/null || true
echo "--8<-- [start:undated]"
shown 'age shipped.json'
echo "--8<-- [end:undated]"

cp golden/support/qrels.tsv shipped-qrels.tsv
printf 'query-id\tcorpus-id\tscore\n' > golden/support/qrels.tsv
python - <<'PY'
import csv
import json

qrels = {}
with open("shipped-qrels.tsv", encoding="utf-8", newline="") as handle:
    for row in csv.DictReader(handle, delimiter="\t"):
        qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
with open("seeds.tsv", "w", encoding="utf-8") as out:
    out.write("query_id\tdoc_id\tsource\tgrade\tjudged_on\n")
    for i, (query, docs) in enumerate(qrels.items()):
        answers = sorted(doc for doc, grade in docs.items() if grade == 2)
        if i % 5 == 0 and answers:
            out.write(f"{query}\t{answers[0]}\tticket\t2\t2025-05-{1 + i % 28:02d}\n")
    report = json.load(open("shipped.json", encoding="utf-8"))["golden_sets"][0]
    for query in report["queries"]:
        for doc in query["ranked"]["incumbent"][:3]:
            if qrels.get(query["id"], {}).get(doc, 0) >= 1:
                out.write(f"{query['id']}\t{doc}\tclick\t\t\n")
PY
printf 'query_id\tdoc_id\tsource\nq-en-q-001\ten-no-such-doc\tticket\n' > typo.tsv
# the clicks alone, on a copy of the new golden set
mkdir clicks
cp -r golden clicks/
{ head -n 1 seeds.tsv; grep -P '\tclick\t' seeds.tsv; } > clicks/clicks.tsv

echo "--8<-- [start:seeds]"
show head -n 3 seeds.tsv
show embeval pool golden/support.yaml --from-report shipped.json --seeds typo.tsv --out sheets/pool.csv
show embeval pool golden/support.yaml --from-report shipped.json --seeds seeds.tsv --trust-seeds --judged-on 2025-06-02 --out sheets/pool.csv
shown 'head -n 1 sheets/pool.csv; grep -c ",click" sheets/pool.csv'
echo "--8<-- [end:seeds]"

people sheets/pool.csv ana sheets/pool-graded.csv >/dev/null
echo "--8<-- [start:merge]"
show embeval merge golden/support.yaml sheets/pool-graded.csv --judged-on 2025-06-16
shown 'grep -m 2 "\"seed\"" golden/support/qrels.provenance.jsonl'
echo "--8<-- [end:merge]"

pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider >/dev/null || true
echo "--8<-- [start:clicks]"
cd clicks
embeval pool golden/support.yaml --from-report ../shipped.json --seeds clicks.tsv --trust-seeds --out pool.csv >/dev/null
people pool.csv ana graded.csv >/dev/null
embeval merge golden/support.yaml graded.csv --judged-on 2025-06-16 >/dev/null
show embeval coverage golden/support.yaml --from-report ../shipped.json
cd ..
echo "--8<-- [end:clicks]"
echo "--8<-- [start:coverage]"
show embeval coverage golden/support.yaml --from-report report.json
echo "--8<-- [end:coverage]"

echo "--8<-- [start:shelf-life]"
shown_any_status 'pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider | grep "past its shelf_life"'
shown 'age report.json'
echo "--8<-- [end:shelf-life]"

echo "--8<-- [start:refresh]"
show embeval refresh golden/support.yaml --fraction 0.1 --out sheets/refresh.csv
echo "--8<-- [end:refresh]"
people sheets/refresh.csv ben sheets/refresh-graded.csv >/dev/null
echo "--8<-- [start:merge-refresh]"
show embeval merge golden/support.yaml sheets/refresh-graded.csv --refresh --judged-on 2026-11-30
shown 'grep -m 1 "\"previous\"" golden/support/qrels.provenance.jsonl'
echo "--8<-- [end:merge-refresh]"
