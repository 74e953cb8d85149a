# The tests' small golden set (48 queries, English and Spanish) and their deterministic fake models.
small_golden_set
pytest -p no:cacheprovider --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:broken \
    --embeval-json=r.json --junitxml=junit.xml > /dev/null || true
echo '$ # the broken candidate, as above (--embeval-json=r.json --junitxml=junit.xml)'
shown 'jq .errors r.json'
shown "grep -o 'errors=\"[0-9]*\" failures=\"[0-9]*\"' junit.xml"
shown 'pytest -q --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:bad --embeval-json=worse.json --junitxml=worse.xml > /dev/null'
shown 'jq .errors worse.json'
shown "grep -o 'errors=\"[0-9]*\" failures=\"[0-9]*\"' worse.xml"
