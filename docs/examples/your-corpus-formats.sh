# ADI (../shared/data/adi) as data often arrives: a TSV corpus and TREC qrels, their formats declared.
need_shared
cp "$REPO/conftest.py" .
mkdir adi
cp "$SHARED/data/adi/queries.jsonl" adi/
"$PYTHON" - "$SHARED/data/adi" <<'PY'
import json, pathlib, sys
source = pathlib.Path(sys.argv[1])
with open("adi/docs.txt", "w", encoding="utf-8") as out:          # id<TAB>text<TAB>title, no header
    for line in open(source / "corpus.jsonl", encoding="utf-8"):
        record = json.loads(line)
        out.write("\t".join([record["_id"], " ".join(record["text"].split()), " ".join(record["title"].split())]) + "\n")
with open("adi/judged.txt", "w", encoding="utf-8") as out:        # qid iter docid rel
    for i, line in enumerate(open(source / "qrels.tsv", encoding="utf-8")):
        if i:
            query, document, grade = line.split()
            out.write(f"{query} 0 {document} {grade}\n")
PY
cat > adi.yaml <<'YAML'
name: adi
corpus: {path: adi/docs.txt, format: tsv}
queries: adi/queries.jsonl
qrels: {path: adi/judged.txt, format: trec}
metric: ndcg@10
report: [recall@20]
YAML
show cat adi.yaml
show head -n 3 adi/judged.txt
status=0
pytest --embeval adi.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm > out.txt || status=$?
echo '$ pytest --embeval adi.yaml' --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm
echo '...'
sed -n '/^=* embeval =*$/,/^=* short test summary/p' out.txt | sed '$d'
tail -n 1 out.txt
echo "(exit $status)"
