# The shipped golden set's JUnit XML file, read with junitparser as a CI server reads it.
demo_project --cached
printf 'decision: {owner: search-platform}\n' >> golden/support.yaml
pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider -q --junitxml junit.xml -o junit_logging=system-out > /dev/null || true
cat > junit.py <<'PY'
# --8<-- [start:junit]
from junitparser import JUnitXml, Properties

for suite in JUnitXml.fromfile("junit.xml"):
    for case in suite:
        found = case.child(Properties)
        p = {prop.name: prop.value for prop in found or []}
        if "embeval_decision" in p:
            print(f"{case.name}: {p['embeval_decision']}, owner {p['embeval_owner']}")
            print(f"    {p['embeval_reason']}")
        elif "embeval_verdict" in p:
            print(
                f"{case.name}: {p['embeval_verdict']} on {p['embeval_metric']}, delta {float(p['embeval_delta']):+.3f}"
                f" [{float(p['embeval_ci_low']):+.3f}, {float(p['embeval_ci_high']):+.3f}], n={p['embeval_n']}"
            )
        for line in (case.system_out or "").splitlines():
            if line and not line.startswith("---"):  # pytest's "Captured Out" rule
                print(f"    system-out: {line}")
# --8<-- [end:junit]
PY
show python junit.py
