# The Markdown report of the demo run, as a pull-request comment receives it.
demo_project --cached
pytest --embeval golden/ --embeval-md embeval.md > /dev/null || true
cat embeval.md
