# The shipped golden set with a decision that may route the English queries to the incumbent.
demo_project --cached
cat >> golden/support.yaml <<'YAML'
# --8<-- [start:decision]
decision:
  owner: search-platform            # who acts on the outcome
  proceed: {overall: [BETTER, TIE]} # what must hold to proceed (and no stratum WORSE)
  route:                            # strata that may be served by another system instead of blocking
    strata: [language=en]
    max_traffic: 0.6                # at most this share of the traffic routed
  otherwise: change-target
# --8<-- [end:decision]
YAML
show pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider
