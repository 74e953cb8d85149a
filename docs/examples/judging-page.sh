# "The judging page" (docs/judging-page.md), run for real on a copy of the shipped golden set with its qrels
# emptied, as docs/judging.md's walkthrough begins: ana's copy of the calibration sample and the first of six
# sheets, served for her, graded by keys in headless chromium (judging_page_tour.py; the shipped qrels stand
# in for her grades, and for ben's on his copy). The address is shown with its port and token replaced; the
# screenshot is docs/judging-page.png.
# not checked: a real browser's timings, and the run rewrites the screenshot docs/judging-page.png
demo_project --cached
mkdir -p sheets
rm golden/support-hnsw.yaml
printf 'query-id\tcorpus-id\tscore\n' > golden/support/qrels.tsv
pytest --embeval golden/ --embeval-json report.json --embeval-pool sheets/first -p no:cacheprovider >/dev/null || true
embeval pool golden/support.yaml --from-report report.json --depth 5 --sample 100 --out sheets/calibration.csv >/dev/null
cp sheets/calibration.csv sheets/calibration-ana.csv
python "$REPO/docs/stand_in_judge.py" "$REPO/golden/support.yaml" --fill sheets/calibration.csv --as ben --out sheets/calibration-ben.csv >/dev/null
embeval pool golden/support.yaml --from-report report.json --depth 20 --split 6 --out sheets/pool.csv >/dev/null

echo "--8<-- [start:serve]"
echo '$ embeval judge-page sheets/pool.1-of-6.csv --calibration sheets/calibration-ana.csv --golden golden/support.yaml --judge ana'
embeval judge-page sheets/pool.1-of-6.csv --calibration sheets/calibration-ana.csv --golden golden/support.yaml --judge ana >page.log 2>&1 &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q '^open http' page.log && break; sleep 0.1; done
url=$(sed -n 's/^open \(http[^ ]*\) .*/\1/p' page.log)
sed -E 's#127\.0\.0\.1:[0-9]+/[A-Za-z0-9_-]+/#127.0.0.1:PORT/TOKEN/#' page.log
echo "--8<-- [end:serve]"

echo "--8<-- [start:tour]"
python "$REPO/docs/examples/judging_page_tour.py" "$url" "$REPO/golden/support/qrels.tsv" "$REPO/docs/judging-page.png" sheets/calibration-ana.csv sheets/pool.1-of-6.csv
echo "--8<-- [end:tour]"

echo "--8<-- [start:stop]"
kill -TERM "$server"
wait "$server"

tail -n 1 page.log
echo "--8<-- [end:stop]"

# halfway through the calibration sample, ana's copy is already a sheet agreement reads
echo "--8<-- [start:agreement]"
show embeval agreement sheets/calibration-ana.csv sheets/calibration-ben.csv --list 0
echo "--8<-- [end:agreement]"
