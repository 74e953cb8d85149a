# A later run of the first command: every embedding is read from the cache (a copy of the repository's).
demo_project --cached
pytest --embeval golden/ >/dev/null || true    # embeds whatever the copy lacked
status=0
pytest --embeval golden/ > out.txt || status=$?
echo '$ pytest --embeval golden/'
sed -n '/test session starts/,/^golden\/support\.yaml /p' out.txt
echo '...'
sed -n '/^=* embeval =*$/,$p' out.txt
echo "(exit $status)"
