# The tests' small golden set (48 queries, English and Spanish) and their deterministic fake models.
small_golden_set
cat > ci.sh <<'SH'
# --8<-- [start:ci]
rm -f embeval.json
pytest -p no:cacheprovider -q --embeval --embeval-incumbent=fake_models:good --embeval-candidate="$1" \
    --embeval-json embeval.json --junitxml junit.xml > /dev/null
status=$?
if [ $status -eq 1 ] && [ "$(jq '.errors | length' embeval.json)" -gt 0 ]; then
    echo "the candidate is broken: $(jq -r '.errors[0].message' embeval.json)"
elif [ $status -eq 1 ]; then
    echo "the candidate is worse: $(jq -r '[.golden_sets[].strata[] | select(.verdict == "WORSE") | .stratum] | join(", ")' embeval.json)"
elif [ $status -ne 0 ]; then
    echo "the setup is broken (exit $status)"
fi
# --8<-- [end:ci]
SH
show sh ci.sh fake_models:bad
show sh ci.sh fake_models:broken
show sh ci.sh fake_models:nope
