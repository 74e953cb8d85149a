# compared without numbers: most of them are measured latencies, throughputs and what they project
# Capacity projection and corpus slices on vaswani (../shared/data), with the demo models: the first run,
# the failing stratum's slice line, and a cached rerun's capacity table. Sections for the page's blocks.
need_shared
ln -s "$SHARED/data" data
cat > vaswani.yaml <<'EOF'
# vaswani.yaml, outside the repository: 11,429 physics abstracts, 93 queries (BEIR layout)
name: vaswani-capacity
beir: data/vaswani
metric: ndcg@10
tie_margin: 0.02
index: {hnsw: {M: 16, ef_construction: 200, recall_target: 0.99}}
corpus_sample: {sizes: [0.1, 0.25, 0.5, 1.0], seed: 7}
production:
  documents: 10_000_000          # chunks the production index holds
  queries_per_month: 30_000_000  # optional
  memory_price_per_gb_month: 4.0 # optional, currency of your choice
EOF
cat > conftest.py <<'EOF'
# conftest.py
import dataclasses

import pytest


@pytest.fixture(scope="session")
def embeval_incumbent():
    from pytest_embeval.arms.demo import minilm_arm

    return dataclasses.replace(minilm_arm(), price_per_million_tokens=0.02)


@pytest.fixture(scope="session")
def embeval_candidate():
    from pytest_embeval.arms.demo import static_minilm_arm

    return dataclasses.replace(static_minilm_arm(), price_per_million_tokens=0.002)
EOF
echo '--8<-- [start:first]'
shown_any_status "pytest --embeval vaswani.yaml --embeval-json report.json | tee run.log | sed -n '/= embeval =/,\$p'"
echo '--8<-- [end:first]'
echo '--8<-- [start:slices]'
grep -m1 'Δ by corpus size' run.log | sed 's/^ *//'
echo '--8<-- [end:slices]'
echo '--8<-- [start:rerun]'
shown_any_status "pytest --embeval vaswani.yaml --embeval-json rerun.json | sed -n '/^capacity at/,/^encoding not measured/p'"
echo '--8<-- [end:rerun]'
