# "Ties in score" (docs/statistics.md): the tests' 48-query golden set (query i's one relevant document is
# doc i) and their fake encoders (tests/fake_models.py): the candidate ties every Spanish query's answer with
# the next document, which trec_eval's order (the larger id first) ranks first.
cp "$REPO/tests/fake_models.py" .
touch conftest.py  # a rootdir conftest.py puts this folder, and fake_models, on sys.path
mkdir support
python - <<'PY'
import json

with open("support/corpus.jsonl", "w", encoding="utf-8") as out:
    out.writelines(json.dumps({"_id": f"d{i:02d}", "text": f"doc {i}"}) + "\n" for i in range(60))
with open("support/queries.jsonl", "w", encoding="utf-8") as out:
    for language, numbers in {"en": range(0, 24), "es": range(24, 48)}.items():
        out.writelines(json.dumps({"_id": f"q{i:02d}", "text": f"{language} {i}", "language": language}) + "\n" for i in numbers)
with open("support/qrels.tsv", "w", encoding="utf-8") as out:
    out.write("query-id\tcorpus-id\tscore\n" + "".join(f"q{i:02d}\td{i:02d}\t1\n" for i in range(48)))
PY
cat > support.yaml <<'YAML'
# --8<-- [start:ties-golden]
corpus: support/corpus.jsonl
queries: support/queries.jsonl
qrels: support/qrels.tsv
strata: [language]
metric: hit@1
report: [mrr@10]
tie_margin: 0.05
confidence: 0.95
min_queries: 20
bootstrap: 2000
seed: 0
# --8<-- [end:ties-golden]
YAML
printf '$ pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:tied_spanish\n'
pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:tied_spanish \
    -p no:cacheprovider | sed -n '/^support (support.yaml)/,/language=es: tied scores/p' || true
