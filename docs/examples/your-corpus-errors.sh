# Three mistakes in a golden file, each a one-line collection error (exit 2).
cp -r "$REPO/golden" .
cat > golden/typo.yaml <<'YAML'
name: support-typo
corpus: support/corpus.jsonl
queries: support/queries.jsonl
qrels: support/qrels.tsv
metric: recall@5
tie_margn: 0.03
YAML
cat > golden/badmetric.yaml <<'YAML'
name: support-badmetric
corpus: support/corpus.jsonl
queries: support/queries.jsonl
qrels: support/qrels.tsv
metric: recall@five
YAML
cat > golden/unweighable.yaml <<'YAML'
name: support-unweighable
corpus: support/corpus.jsonl
queries: support/queries.jsonl
qrels: support/qrels.tsv
metric: recall@5
weights: frequency
YAML
show cat golden/typo.yaml
show pytest -q --embeval golden/typo.yaml
show pytest -q --embeval golden/badmetric.yaml
show pytest -q --embeval golden/unweighable.yaml
