# The workflow commands the plugin prints under GitHub Actions (GITHUB_ACTIONS=true), on the shipped golden
# set with a decision that forbids any WORSE stratum.
demo_project --cached
printf 'decision: {owner: search-platform}\n' >> golden/support.yaml
shown_any_status "GITHUB_ACTIONS=true pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider -q | grep '^::'"
