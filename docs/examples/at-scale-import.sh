# Vectors computed by a job of your own, brought into the cache with embeval import.
# compared without digests: the demo's static model is distilled on each machine, and its weights follow that machine's CPU kernels in their last bits
cp -r "$REPO/golden" .
mkdir -p .embeval_cache/models && ln -s "$EMBEVAL_DEMO_CACHE" .embeval_cache/models/static-minilm-pca256
cat > job.py <<'EOF'
# job.py: a batch job of your own, here with the static demo model; it knows nothing of pytest-embeval
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(".embeval_cache/models/static-minilm-pca256", device="cpu")

docs = [json.loads(line) for line in open("golden/support/corpus.jsonl", encoding="utf-8")]
texts = [f"{d['title']}\n{d['text']}" if d.get("title") else d["text"] for d in docs]
np.save("docs.npy", model.encode(texts))
with open("docs.ids.txt", "w", encoding="utf-8") as f:
    f.writelines(d["_id"] + "\n" for d in docs)

queries = [json.loads(line) for line in open("golden/support/queries.jsonl", encoding="utf-8")]
vectors = model.encode([q["text"] for q in queries])
table = pa.table({"_id": [q["_id"] for q in queries], "embedding": [v.tolist() for v in vectors]})
pq.write_table(table, "queries.parquet")
EOF
python job.py > /dev/null 2>&1
show embeval import golden/support.yaml docs.npy --ids docs.ids.txt \
    --model .embeval_cache/models/static-minilm-pca256 --cache-dir imported
show embeval import golden/support.yaml queries.parquet --kind query \
    --model .embeval_cache/models/static-minilm-pca256 --cache-dir imported
