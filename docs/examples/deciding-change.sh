# The shipped golden set with a decision that forbids any WORSE stratum and routes nothing: only its
# decision item is run (-k decision), which is what --lf reruns after it failed.
demo_project --cached
printf 'decision: {owner: search-platform}\n' >> golden/support.yaml
show pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider -k decision
