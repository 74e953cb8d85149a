# An endpoint arm whose server is not there: an error of the golden set's items, in one line, never a verdict.
cp -r "$REPO/golden" "$REPO/conftest.py" .
export TEI_KEY=none
spec='openai:e5-small-v2?base_url=http://127.0.0.1:9/v1&api_key_env=TEI_KEY&max_retries=0&concurrency=1'
status=0
pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-incumbent "$spec" > out.txt || status=$?
printf '$ pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-incumbent '\''%s'\''\n' "$spec"
sed -n '/^golden\/support\.yaml ./p' out.txt  # its results (a slow start prints progress, and the name again, first)
echo '...'
sed -n '/^=* embeval =*$/,$p' out.txt
echo "(exit $status)"
