# The tests' small golden set (48 queries, English and Spanish) and their deterministic fake models.
small_golden_set
status=0
pytest -p no:cacheprovider --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:broken \
    --embeval-json=r.json --junitxml=junit.xml > out.txt || status=$?
echo '$ pytest --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:broken --embeval-json=r.json --junitxml=junit.xml'
echo '...'
sed -n '/^support\.yaml /,$p' out.txt
echo "(exit $status)"
