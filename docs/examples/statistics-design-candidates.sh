# "The interval of a drawn sample follows its draw" (docs/statistics.md): the intervals measured before
# choosing (benchmarks/design_intervals.py), 400 draws per row at 60 and 150 queries; a row is kept under the
# benchmark's cache, keyed by the code it ran.
# not checked: a simulation of minutes; benchmarks/README.md has the command and the figures
need_shared
"$PYTHON" "$REPO/benchmarks/design_intervals.py" --data "$SHARED/data" --simulations 400 --sizes 60 150 \
    --intervals "design studentized" "rwy-t sym" "rwy-t equal" "rw-n t sym" lin-t jk-t --table
