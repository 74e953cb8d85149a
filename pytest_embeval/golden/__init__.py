"""Golden sets: the schema as frozen dataclasses (`schema`), the YAML file's loader and validation (`loader`,
reading nodes with their lines in `yaml_nodes`, the corpus, queries and judgments sections in
`data_sections`), the data files it names (`data_files`: JSONL and TSV documents and what every reader shares;
`query_files`: queries, with their strata and traffic; `qrels_files`: BEIR and TREC judgments), the files a
golden file names read from its YAML alone (`inputs`), per-query filters (`filters`), chunks folded to
documents (`folding`) and how long a judgment stays usable (`shelf_life`); the declared ``decision:`` block
(`decision_spec`); the ``index:`` setting (`index_spec`) and a vector database declared as the index
(`engine_spec`); and drawing from production: a query log's distinct queries (`query_log` in Python;
`columnar_log` with the columnar engine, which keeps them there, `columnar_queries`; where a Parquet row is,
`parquet_rows`), the stratified draw from them (`query_draw`), a corpus sampled (`corpus_draw`,
`columnar_corpus`), the draw sidecars that say how
(`draws`), and the design a drawn set's queries came from, read from its draw sidecar (`drawn_design`).

Every problem is a `data_files.GoldenError` naming the file, the line and the key.

May import: ``core``, ``files``. Never pytest.
"""

from __future__ import annotations
