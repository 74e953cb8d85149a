# docs/from-production.md, at production scale: the week of traffic counted where it lives (one row per
# query spelling and stratum, with its searches: a warehouse's GROUP BY, here DuckDB's), written as two
# Parquet files, and sampled here with --count: the same queries file as from the log itself.
# compared without digests: the Parquet files DuckDB writes carry its version
cp -r "$REPO/golden" .
"$PYTHON" "$REPO/docs/examples/from-production-log.py" golden/support/queries.jsonl log.jsonl
mkdir counted
"$PYTHON" - <<'PY'
import duckdb

# Each spelling once, in the order of its first search (a warehouse would add ORDER BY MIN(ts)).
duckdb.sql("""
    CREATE TABLE counted AS
    SELECT query, language, shape, count(*) AS searches, min(position) AS first
    FROM (SELECT *, row_number() OVER () AS position FROM read_json('log.jsonl')) GROUP BY ALL
""")
for part, rows in enumerate(["first <= 7500", "first > 7500"]):
    duckdb.sql(f"COPY (SELECT * EXCLUDE (first) FROM counted WHERE {rows} ORDER BY first) "
               f"TO 'counted/part-{part}.parquet' (FORMAT parquet)")
PY
shown "python -c \"import duckdb; print(duckdb.sql('SELECT * FROM \\'counted/*.parquet\\' LIMIT 3'))\""
shown "embeval sample 'counted/*.parquet' --count searches --by language,shape --size 120 --floor 20 --out counted-queries.jsonl"
embeval sample log.jsonl --by language,shape --size 120 --floor 20 --out log-queries.jsonl > /dev/null
shown 'cmp counted-queries.jsonl log-queries.jsonl && echo "the same queries file as from the log"'
shown "python -c \"import json; draw = json.load(open('counted-queries.draw.json')); print(json.dumps({k: draw[k] for k in ('source', 'count_field', 'table_rows')}, indent=2))\""
