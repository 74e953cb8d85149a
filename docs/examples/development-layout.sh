# The package's folders, top layer first, and their modules (lines, first sentence of the docstring).
python "$REPO/docs/examples/development-layout.py" "$REPO"
