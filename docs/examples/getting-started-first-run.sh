# not checked: which progress lines a first run prints, and when, follows the machine's speed
# The README's first command on a fresh clone: an empty embedding cache, and the demo candidate distilled
# afresh (no EMBEVAL_DEMO_CACHE: conftest.py distils it into the clone's .embeval_cache/models/). Its output is
# piped, as in a CI log; each line is shown after the seconds since the command started (elapsed.py).
git clone -q "$REPO" clone
cd clone
unset EMBEVAL_DEMO_CACHE
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this clone's package, whichever environment runs it
echo '$ python -m pytest --embeval golden/'
"$PYTHON" "$REPO/docs/examples/elapsed.py" python -m pytest --embeval golden/ > ../run.txt
# pytest's plugins: line lists the plugins of the environment that runs this (the test extras' pytest-html,
# hypothesis, …), not those of the demo's `.[demo]` install: left out.
sed -i '/^ *[0-9.]*s  plugins: /d' ../run.txt
sed -n '1,/^ *[0-9.]*s  golden\/support\.yaml /p' ../run.txt
echo '...'
tail -n 4 ../run.txt
show du -sh .embeval_cache
show du -sh .embeval_cache/models
