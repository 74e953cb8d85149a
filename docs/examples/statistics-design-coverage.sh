# "The interval of a drawn sample follows its draw" (docs/statistics.md): the coverage table of
# benchmarks/design_intervals.py (the demo's two models on the public collections, populations drawn from as
# embeval sample draws), 2,000 draws per row. A row is simulated once and kept under the benchmark's cache
# (~/.cache/pytest-embeval-validity, or $XDG_CACHE_HOME's), keyed by the code it ran: a first run on an idle
# machine takes about ten minutes.
# not checked: a simulation of minutes; benchmarks/README.md has the command and the figures
need_shared
"$PYTHON" "$REPO/benchmarks/design_intervals.py" --data "$SHARED/data" --intervals "design studentized" lin-t --table
