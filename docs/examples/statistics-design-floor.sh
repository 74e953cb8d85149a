# "The interval of a drawn sample follows its draw" (docs/statistics.md): why the design's interval is never
# narrower than Student's t: golden sets of 20 queries in 12 cells (benchmarks/design_intervals.py, --floor
# 5), 400 draws per row; a row is kept under the benchmark's cache, keyed by the code it ran.
# not checked: a simulation of minutes; benchmarks/README.md has the command and the figures
need_shared
"$PYTHON" "$REPO/benchmarks/design_intervals.py" --data "$SHARED/data" --floor 5 --sizes 20 --simulations 400 \
    --intervals "design studentized" "rwy-t sym" lin-t --table
