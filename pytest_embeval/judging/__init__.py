"""Making and checking judgments: arms' rankings read back (`rankings`), pooled blind sheets (`pooling`),
grades written into a sheet one pair at a time (`sheet_edits`) on the scale a judge grades by
(`grade_scale`), grades merged into qrels (`merging`) with where and when each came from
(`provenance`), seeds from tickets and clicks (`seeds`), re-judging aged judgments (`refresh`),
agreement between judges (`agreement`, `disagreement`), an LLM judge (`llm_judge`, `grading`) and its
calibration records (`calibration_records`), coverage of the judgments (`coverage`) and how many queries
a golden set needs (`planning`).

May import: ``arms`` (the judge's endpoint), ``golden``, ``files``, ``core``. Never pytest.
"""

from __future__ import annotations
