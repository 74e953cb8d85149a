# What the embedding cache does on the shipped support set with the demo models: a fresh run, a rerun after
# one document changed, a rerun after a pack was damaged, and a run whose cache folder cannot be written.
# Sections for the page's blocks.
cp -r "$REPO/golden" "$REPO/conftest.py" .
echo '--8<-- [start:runs]'
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm | grep '^embeval: embedding cache'"
shown_any_status "sed -i '1s/\"text\": \"/\"text\": \"Updated: /' golden/support/corpus.jsonl"
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm | grep '^embeval: embedding cache'"
echo '--8<-- [end:runs]'
# Damage: cut the last two vectors (256 float32 each) off the candidate's query pack.
# (the candidate's folder: the static model's fingerprint has no max_seq_length)
candidate=$(dirname "$(grep -l '"max_seq_length":null' .embeval_cache/embeddings/*/fingerprint.json)")
pack=$(ls "$candidate"/query/*.pack | head -1)
truncate -s -2048 "$pack"
echo '--8<-- [start:damage]'
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm | grep 'corrupt cache'"
echo '--8<-- [end:damage]'
echo '--8<-- [start:unwritable]'
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-cache-dir=conftest.py/cache | grep -E '^embeval: (embedding cache|new embeddings)'"
echo '--8<-- [end:unwritable]'
