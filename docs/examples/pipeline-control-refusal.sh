# A conftest.py that feeds the candidate an older corpus snapshot (its last document missing): the run refuses
# to compare. BM25 arms, so it takes seconds.
cp -r "$REPO/golden" .
cat > conftest.py <<'EOF'
import dataclasses

from pytest_embeval.run import golden_run

original = golden_run.run_arm


def drifting(golden, arm, role, **kwargs):
    if role == "candidate":
        golden = dataclasses.replace(golden, documents=golden.documents[:-1])
    return original(golden, arm, role, **kwargs)


def pytest_configure(config):
    golden_run.run_arm = drifting
EOF
pytest --embeval golden/support.yaml --embeval-incumbent=bm25 '--embeval-candidate=bm25?k1=0.9' \
    -p no:cacheprovider > run.log 2>&1 || true
grep -m1 'refusing to compare' run.log | sed 's/^E *//'
