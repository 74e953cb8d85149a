# embeval cache on the shipped demo: what the cache holds after a run, a prune of the packs last used more
# compared without digests: the demo's static model is distilled on each machine, and its weights follow that machine's CPU kernels in their last bits
# than 30 days ago (the candidate's, made to look 40 days old here), and the next run embedding exactly what
# was pruned; then a check of every pack. A cache of its own, filled by the first run: a copy of the
# repository's would show whatever else has been run there (other golden sets, other models).
demo_project
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm | grep '^embeval: embedding cache'"
# (the candidate's folder: the static model's fingerprint has no max_seq_length)
candidate=$(dirname "$(grep -l '"max_seq_length":null' .embeval_cache/embeddings/*/fingerprint.json)")
touch -d '40 days ago' "$candidate"/*/*.pack
echo '--8<-- [start:stats]'
show embeval cache stats
echo '--8<-- [end:stats]'
echo '--8<-- [start:prune]'
show embeval cache prune --older-than 30d
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm | grep '^embeval: embedding cache'"
echo '--8<-- [end:prune]'
echo '--8<-- [start:verify]'
show embeval cache verify
echo '--8<-- [end:verify]'
