# The README's first command on the shipped golden sets, on a fresh embedding cache.
cp -r "$REPO/golden" "$REPO/conftest.py" .
show pytest --embeval golden/ -p no:cacheprovider
