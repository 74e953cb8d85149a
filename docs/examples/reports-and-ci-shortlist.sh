# The demo's shortlist in the JSON report and in the Markdown report (docs/reports-and-ci.md).
demo_project --cached
pytest --embeval golden/support.yaml --embeval-json embeval.json --embeval-md embeval.md > /dev/null || true
shown "jq -c '.golden_sets[] | {path, candidate_name, candidate: .candidate.spec, strata: (.strata | length)}' embeval.json"
shown "jq '.shortlist[0] | {path, family, strata, cheapest_passing, line}' embeval.json"
shown "jq -c '.shortlist[0].candidates[] | {name, passes, decision, bill: (.bill | {dimension, bytes_per_vector, index_bytes}), overall: .strata.overall}' embeval.json"
shown "sed -n '/^### Shortlist/,\$p' embeval.md"
