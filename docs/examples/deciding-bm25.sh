# The shipped golden set, routing the English queries to BM25 instead of the incumbent: the hybrid is
# measured like the rest (extra [bm25]).
demo_project --cached
cat >> golden/support.yaml <<'YAML'
decision:
  owner: search-platform
  route: {strata: [language=en], max_traffic: 0.6, to: bm25}
YAML
shown_any_status "pytest --embeval golden/support.yaml --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm -p no:cacheprovider -q | sed -n '/=== embeval ===/,\$p' | sed -n '/^routed system/,/^decision/p'"
