# One failing stratum's own report, from the first command's output.
demo_project --cached
pytest --embeval golden/ > out.txt || true
awk '/^_+ support-search-hnsw::overall\[static-256\] _+$/ {on = 1; print; next} on && /^_+ .* _+$/ {exit} on' out.txt
