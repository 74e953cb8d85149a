# Two reports of the shipped support set, one document's text changed in between, compared by control_diff.
cp -r "$REPO/golden" .
arms=(--embeval-incumbent=bm25 '--embeval-candidate=bm25?k1=0.9' -p no:cacheprovider)
pytest --embeval golden/support.yaml "${arms[@]}" --embeval-json before.json >/dev/null || true
sed -i '1s/"text": "/"text": "Updated: /' golden/support/corpus.jsonl
pytest --embeval golden/support.yaml "${arms[@]}" --embeval-json after.json >/dev/null || true
cat > diff.py <<'EOF'
import json

from pytest_embeval import control_diff

before, after = (json.load(open(name, encoding="utf-8")) for name in ("before.json", "after.json"))
for line in control_diff(before, after):
    print(line)
EOF
show python diff.py
