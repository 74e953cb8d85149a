# TREC run files of the demo run, one per arm per golden set.
demo_project --cached
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-runs runs > /dev/null || true
show ls runs
show head -n 3 runs/golden__support.incumbent.run
