"""Everything a run shows and keeps, as pure functions of plain records: the records and the merged JSON
report (`json_report`, a stratum item's records in `stratum_records`, an arm's in `arm_records`), TREC runs
(`trec_runs`), the declared decision and the JUnit properties (`decision_report`), GitHub annotations
(`annotations`), a shortlist's record (`shortlist`), what every readable format shows (`contents`, the notes
under the strata in `stratum_notes`, `capacity_contents`, `pipeline_contents`, `shortlist_contents`, and the
arms' frontier: `frontier_records`, `frontier`), rendered for the terminal (`terminal`), Markdown
(`markdown`), an HTML page (`html_page`, with `charts`) and a PNG (`forest_png`); and progress lines
(`progress_lines`).

May import: ``judging`` (coverage), ``run``, ``arms``, ``search``, ``golden``, ``files``, ``core``.
Never pytest, never ``plugin``.
"""

from __future__ import annotations
