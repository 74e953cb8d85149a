# The Markdown report of the demo run, as a pull-request comment receives it.
# compared without digests: the demo's static model is distilled on each machine, and its weights follow that machine's CPU kernels in their last bits
demo_project --cached
pytest --embeval golden/ --embeval-candidate pytest_embeval.arms.demo:static_minilm_arm --embeval-md embeval.md > /dev/null || true
cat embeval.md
