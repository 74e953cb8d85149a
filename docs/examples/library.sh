# The library surface, without pytest: docs/examples/library.py as the page shows it.
python "$REPO/docs/examples/library.py"
