import numpy as np

from pytest_embeval import compare_paired, decide, evaluate, paired_n

qrels = {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d4": 1}}
incumbent_run = {"q1": ["d3", "d1", "d9"], "q2": ["d4", "d8"]}  # ranked ids
candidate_run = {"q1": {"d1": 0.91, "d2": 0.88, "d3": 0.40}, "q2": {"d8": 0.7, "d4": 0.7}}  # or scores
print("incumbent ndcg@3:", evaluate(incumbent_run, qrels, ["ndcg@3"], ["q1", "q2"])["ndcg@3"].round(4))
print("candidate ndcg@3:", evaluate(candidate_run, qrels, ["ndcg@3"], ["q1", "q2"])["ndcg@3"].round(4))

rng = np.random.default_rng(7)
incumbent = rng.uniform(0.3, 1.0, 120)  # 120 queries' scores
candidate = np.clip(incumbent + rng.normal(0.05, 0.17, 120), 0, 1)
c = compare_paired(incumbent, candidate, confidence=0.95, n_resamples=10_000, rng=np.random.default_rng(0))
print(f"n={c.n} delta={c.delta:.4f} ci=[{c.ci_low:.4f}, {c.ci_high:.4f}] sd={c.sd:.3f}")
print(f"wins/losses={c.wins}/{c.losses} sign p={c.sign_p:.3f} mde={c.mde:.4f} interval={c.interval}")
ruling = decide(c, tie_margin=0.02, min_queries=20)
print(ruling.verdict, "-", ruling.reason)
print("queries needed for a 0.02 and a 0.05 margin at sd 0.15:", paired_n(0.02, 0.15), paired_n(0.05, 0.15))
