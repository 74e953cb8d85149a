# A shortlist on the tests' small golden set: three candidates against one incumbent, each with its items,
# one selected with -k, and the run's tables (the failures' own reports left out with --tb=no).
small_golden_set
show pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:bad --embeval-candidate english=fake_models:bad_english --embeval-candidate fake_models:good --collect-only -q
show pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:bad --embeval-candidate english=fake_models:bad_english --embeval-candidate fake_models:good -k english -q --tb=no
shown_any_status "pytest --embeval support.yaml --embeval-incumbent fake_models:good --embeval-candidate fake_models:bad --embeval-candidate english=fake_models:bad_english --embeval-candidate fake_models:good -q --tb=no | sed -n '/= embeval =/,\$p'"
