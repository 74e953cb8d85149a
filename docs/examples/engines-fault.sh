# A Chroma server that is not there: an error of the golden set's items, in one line, never a verdict.
small_golden_set
echo "index: {chroma: {url: 'http://127.0.0.1:9'}}" >> support.yaml
shown "pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:bad --embeval-no-progress | sed -n '/ ERRORS =/,/short test summary/p'"
