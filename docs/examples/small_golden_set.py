"""The tests' small golden set as support.yaml in the working folder (for `small_golden_set` in
docs/generate.py): 60 documents, 48 queries in English and Spanish, each with one relevant document."""

import json
import pathlib

data = pathlib.Path("support")
data.mkdir()
documents = (json.dumps({"_id": f"d{i:02d}", "text": f"doc {i}"}) for i in range(60))
(data / "corpus.jsonl").write_text("".join(line + "\n" for line in documents))
queries = [
    {"_id": f"q{i:02d}", "text": f"{language} {i}", "language": language, "shape": "even" if i % 2 else "odd"}
    for language, numbers in {"en": range(0, 24), "es": range(24, 48)}.items()
    for i in numbers
]
(data / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in queries))
judgments = "".join(f"q{i:02d}\td{i:02d}\t1\n" for i in range(48))
(data / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + judgments)
pathlib.Path("support.yaml").write_text(
    "corpus: support/corpus.jsonl\nqueries: support/queries.jsonl\nqrels: support/qrels.tsv\n"
    "strata: [language]\nmetric: hit@1\nreport: [mrr@10]\ntie_margin: 0.05\nconfidence: 0.95\n"
    "min_queries: 20\nbootstrap: 2000\nseed: 0\n"
)
