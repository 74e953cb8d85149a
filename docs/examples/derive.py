# derive.py: golden files derived from the shipped support set and nfcorpus
import json
import pathlib
import sys

repo, data = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
# 1. Each support query searches only the help centre of its own language.
with (
    open(repo / "golden/support/queries.jsonl", encoding="utf-8") as queries,
    open("support-queries-by-language.jsonl", "w", encoding="utf-8") as out,
):
    for line in queries:
        query = json.loads(line)
        query["filters"] = {"language": query["language"]}
        out.write(json.dumps(query, ensure_ascii=False) + "\n")
# 2. nfcorpus as 100-word chunks, each naming its document.
with (
    open(data / "nfcorpus-preprocessed/corpus.jsonl", encoding="utf-8") as corpus,
    open("nfcorpus-chunks.jsonl", "w", encoding="utf-8") as out,
):
    for line in corpus:
        doc = json.loads(line)
        words = doc["text"].split()
        for n, start in enumerate(range(0, max(len(words), 1), 100)):
            chunk = {
                "_id": f"{doc['_id']}#{n}",
                "text": " ".join(words[start : start + 100]),
                "doc_id": doc["_id"],
            }
            out.write(json.dumps(chunk) + "\n")
