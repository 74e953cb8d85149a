# "Your own corpus": judgments with another header, compressed data files, a golden set with nothing judged
# and margins no difference can reach, on the tests' small golden set and their deterministic fake models.
small_golden_set
run() { pytest -q -p no:cacheprovider --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:good "$@"; }
# qrels with a header of other names: the error suggests the mapping, written with the file's own names
sed -i '1s/.*/topic\tpassage\tjudgement/' support/qrels.tsv
echo "--8<-- [start:columns]"
shown 'run support.yaml 2>&1 | grep qrels.tsv | head -n 1'
sed -i 's|^qrels: .*|qrels: {path: support/qrels.tsv, columns: {query: topic, document: passage, grade: judgement}}|' support.yaml
show grep qrels support.yaml
shown 'run support.yaml | tail -n 1'
echo "--8<-- [end:columns]"
# compressed data files: read by their suffix
echo "--8<-- [start:compressed]"
show gzip support/corpus.jsonl
show xz support/queries.jsonl
sed -i 's|support/corpus.jsonl|support/corpus.jsonl.gz|; s|support/queries.jsonl|support/queries.jsonl.xz|' support.yaml
shown 'run support.yaml | tail -n 1'
show cp support/corpus.jsonl.gz support/corpus-copy.jsonl
sed -i 's|support/corpus.jsonl.gz|support/corpus-copy.jsonl|' support.yaml
shown 'run support.yaml | grep corpus-copy | head -n 1'
sed -i 's|support/corpus-copy.jsonl|support/corpus.jsonl.gz|' support.yaml
echo "--8<-- [end:compressed]"
# nothing judged relevant: refused before anything is embedded, unless the run pools
echo "--8<-- [start:unjudged]"
show cp support/qrels.tsv judged.tsv
sed -i '2,$s/\t1$/\t0/' support/qrels.tsv
shown 'run support.yaml | grep qrels.tsv | head -n 1'
printf 'query-id\tcorpus-id\tscore\n' > support/qrels.tsv
sed -i 's|^qrels: .*|qrels: support/qrels.tsv|' support.yaml
shown 'run support.yaml | grep qrels.tsv | head -n 1'
shown 'run support.yaml --embeval-pool sheets | tail -n 1'
cp judged.tsv support/qrels.tsv
sed -i 's|^qrels: .*|qrels: {path: support/qrels.tsv, columns: {query: topic, document: passage, grade: judgement}}|' support.yaml
echo "--8<-- [end:unjudged]"
# margins: one no Δ of a metric in [0, 1] can reach, and a bootstrap past the bound
echo "--8<-- [start:margins]"
sed -i 's/^tie_margin: .*/tie_margin: 5/' support.yaml
shown 'run support.yaml | grep support.yaml: | head -n 1'
sed -i 's/^tie_margin: .*/tie_margin: 0.05/; s/^bootstrap: .*/bootstrap: 100000000/' support.yaml
shown 'run support.yaml | grep support.yaml: | head -n 1'
echo "--8<-- [end:margins]"
