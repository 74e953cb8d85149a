# "Judging a golden set" (docs/judging.md), run for real on a copy of the shipped golden set with its qrels
# emptied (header only): a new golden set, nothing judged yet. The answers its authors know of are the
# shipped qrels' relevant pairs (hints.run), and the people who grade the sheets are stood in for by the
# shipped qrels (docs/stand_in_judge.py --fill). Each block of the page is one section of this output
# (pymdownx.snippets sections).
demo_project --cached
mkdir -p sheets/graded
rm golden/support-hnsw.yaml
printf 'query-id\tcorpus-id\tscore\n' > golden/support/qrels.tsv
# the authors' known answers, as a TREC run file: qid Q0 docid rank score tag
python - "$REPO/golden/support/qrels.tsv" <<'PY'
import csv
import sys

answers = {}
with open(sys.argv[1], encoding="utf-8", newline="") as handle:
    for row in csv.DictReader(handle, delimiter="\t"):
        if int(row["score"]) >= 1:
            answers.setdefault(row["query-id"], []).append((-int(row["score"]), row["corpus-id"]))
with open("hints.run", "w", encoding="utf-8") as out:
    for query, docs in answers.items():
        for rank, (grade, doc) in enumerate(sorted(docs), start=1):
            out.write(f"{query} Q0 {doc} {rank} {-grade} hints\n")
PY
people() { python "$REPO/docs/stand_in_judge.py" "$REPO/golden/support.yaml" --fill "$1" --as "$2" --out "$3"; }

# 1. run once to get both arms' rankings
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json --embeval-pool sheets/first -p no:cacheprovider >/dev/null || true

echo "--8<-- [start:pool]"
show embeval pool golden/support.yaml --from-report report.json --from-run hints.run --depth 20 --split 6 --out sheets/pool.csv
echo "--8<-- [end:pool]"

echo "--8<-- [start:header]"
show head -n 1 sheets/pool.1-of-6.csv
echo "--8<-- [end:header]"

# 3. two people grade the same calibration sample
echo "--8<-- [start:sample]"
show embeval pool golden/support.yaml --from-report report.json --depth 5 --sample 100 --out sheets/calibration.csv
echo "--8<-- [end:sample]"
people sheets/calibration.csv ana sheets/calibration-ana.csv >/dev/null
people sheets/calibration.csv ben sheets/calibration-ben.csv >/dev/null
# ben reads the scale a little differently from ana: the first two pairs ana graded 1 he grades 0, and the
# first pair ana graded 0 after row 50 he grades 1
python - <<'PY'
import csv
path = "sheets/calibration-ben.csv"
with open(path, encoding="utf-8", newline="") as handle:
    rows = list(csv.DictReader(handle))
ones = [row for row in rows if row["grade"] == "1"][:2]
zero = next(row for row in rows[50:] if row["grade"] == "0")
for row in ones:
    row["grade"] = "0"
zero["grade"] = "1"
with open(path, "w", encoding="utf-8", newline="") as handle:
    writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
PY

echo "--8<-- [start:agreement]"
show embeval agreement sheets/calibration-ana.csv sheets/calibration-ben.csv --min-kappa 0.6
echo "--8<-- [end:agreement]"

# 5. merge: first a sheet with mistakes in it, then the six graded sheets
python - <<'PY'
import csv
with open("sheets/calibration-ana.csv", encoding="utf-8", newline="") as handle:
    rows = list(csv.DictReader(handle))
rows[0]["grade"] = ""
rows[1]["grade"] = "3"
rows[2]["doc_id"] = "en-no-such-doc"
with open("sheets/careless.csv", "w", encoding="utf-8", newline="") as handle:
    writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
PY
echo "--8<-- [start:merge-errors]"
show embeval merge golden/support.yaml sheets/careless.csv
echo "--8<-- [end:merge-errors]"

for part in 1 2 3 4 5 6; do
    people "sheets/pool.$part-of-6.csv" "judge-$part" "sheets/graded/pool.$part-of-6.csv" >/dev/null
done
echo "--8<-- [start:merge]"
show embeval merge golden/support.yaml sheets/graded/pool.1-of-6.csv sheets/graded/pool.2-of-6.csv \
    sheets/graded/pool.3-of-6.csv sheets/graded/pool.4-of-6.csv sheets/graded/pool.5-of-6.csv \
    sheets/graded/pool.6-of-6.csv --judged-on 2026-11-30
echo "--8<-- [end:merge]"

# 6. run again, check coverage; 7. plan
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json report.json -p no:cacheprovider >/dev/null || true
echo "--8<-- [start:coverage]"
show embeval coverage golden/support.yaml --from-report report.json
echo "--8<-- [end:coverage]"
echo "--8<-- [start:plan]"
show embeval plan golden/support.yaml --from-report report.json
echo "--8<-- [end:plan]"
