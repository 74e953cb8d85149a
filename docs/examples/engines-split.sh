# not checked: LanceDB trains its IVF-PQ index without a seed, so its recall and the engine's part vary a little
# from run to run.
# The shipped HNSW golden set served from LanceDB instead: IVF-PQ without refinement, then with it. The demo
# compares a shortlist of two candidates: each one's heading, its indexes and its own split.
demo_project --cached
sed -e 's/^name: .*/name: support-search-lancedb/' -e 's/^index: .*/index: {lancedb: {num_partitions: 16, nprobes: 2}}/' \
    golden/support-hnsw.yaml > golden/support-lancedb.yaml
shown 'grep -E "^(name|metric|index):" golden/support-lancedb.yaml'
shown_any_status "pytest --embeval golden/support-lancedb.yaml --embeval-no-progress | sed -n '/^support-search-lancedb \[/p;/ index: lancedb/p;/Δ split/,/^\$/p'"
sed -i 's/nprobes: 2}/nprobes: 2, refine_factor: 4}/' golden/support-lancedb.yaml
shown_any_status "pytest --embeval golden/support-lancedb.yaml --embeval-no-progress | sed -n '/^support-search-lancedb \[/p;/Δ split/,/^\$/p'"
