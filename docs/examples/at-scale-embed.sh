# Filling one cache folder from several processes at once with embeval embed, then a run that reads it all.
# compared without digests: the demo's static model is distilled on each machine, and its weights follow that machine's CPU kernels in their last bits
cp -r "$REPO/golden" "$REPO/conftest.py" .
mkdir -p .embeval_cache/models && ln -s "$EMBEVAL_DEMO_CACHE" .embeval_cache/models/static-minilm-pca256
shown_any_status 'for i in 1 2 3; do embeval embed golden/support.yaml --model .embeval_cache/models/static-minilm-pca256 --shard $i/3 --block-rows 128 --cache-dir cache > shard-$i.log & done; wait; cat shard-*.log'
shown_any_status 'for i in 1 2; do embeval embed golden/support.yaml --model pytest_embeval.arms.demo:minilm_arm --shard $i/2 --cache-dir cache > minilm-$i.log & done; wait; cat minilm-*.log'
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-cache-dir=cache | grep '^embeval: embedding cache'"
