# The tests' small golden set (48 queries, English and Spanish) and their deterministic fake models.
small_golden_set
show pytest --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:god
show pytest --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:good --embeval-json=support.yaml/r.json
show pytest --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:good --embeval-md=support/../support.yaml
show pytest --embeval --embeval-incumbent=fake_models:good --embeval-candidate=fake_models:good --embeval-json=out/
