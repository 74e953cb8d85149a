# compared without numbers: latencies, and the version of the SQLite library Python was built with
# A team's own adapter: the SQLite one of docs/examples/sqlite_index.py, declared as a service.
small_golden_set
cp "$REPO/docs/examples/sqlite_index.py" .
echo 'index: {service: "sqlite_index:SqliteIndex", path: vectors.sqlite}' >> support.yaml
shown 'tail -n 1 support.yaml'
shown_any_status "pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:bad_english --embeval-no-progress | sed -n '/ index: /p;/Δ split/,/^\$/p' | grep -v WARNING"
shown 'python -c "import sqlite3; print(sqlite3.connect(\"vectors.sqlite\").execute(\"SELECT count(*) FROM collections\").fetchone())"'
