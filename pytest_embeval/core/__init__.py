"""The numeric core: pure functions and frozen dataclasses, no I/O, no pytest.

Per-query metrics as trec_eval defines them (`metrics`), tied scores (`ties`), paired statistics, the two
bootstrap intervals and the bootstrap's resampling engine (`stats`, `bootstrap_intervals`, `resampling`),
the traffic-weighted mean's statistics (`weighted_stats`) and, for a sample drawn by a stratified design,
its design and variance (`sample_design`, `design_variance`), drawing a sample from production
(`sampling`, with numpy's scalar draws computed ahead: `draws_ahead`),
the verdict rule (`verdict`), capacity projections (`capacity`), the frontier of quality against the bill
(`frontier`), the interval simulations that check an
interval's coverage (`interval_simulation`), canonical JSON lines and text keys (`canonical`), plain-text
tables (`text_table`), and the protocol through which long steps tell their progress to whoever prints it
(`step_progress`).

May import: nothing of the package outside ``core`` (numpy and scipy only).
"""

from __future__ import annotations
