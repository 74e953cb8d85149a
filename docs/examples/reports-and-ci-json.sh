# The JSON report of the demo run: its golden sets and one stratum entry.
demo_project --cached
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-json embeval.json > /dev/null || true
shown "jq -c '.golden_sets[] | {name, path, metric, tie_margin}' embeval.json"
shown "jq '.golden_sets[1].strata[0] | {stratum, n, effective_n, excluded, incumbent, candidate, delta, ci, interval, sd, wins, losses, sign_p, mde, verdict, reason}' embeval.json"
shown "jq -c '.golden_sets[1].queries[0] | {id, strata, scores}' embeval.json"
