import numpy as np

from pytest_embeval import SampleDesign, compare_paired

# 45 queries drawn from a log: the 5 head queries, drawn whole (inclusion 1), and 40 of the 2,000 tail ones
# (inclusion 40 / 2000); each weighs its frequency over its inclusion, the traffic it stands for.
rng = np.random.default_rng(3)
frequency = np.concatenate([[9000, 5000, 3000, 2500, 2000], rng.integers(1, 20, 40)])
inclusion = np.concatenate([np.ones(5), np.full(40, 40 / 2000)])
cells = ("head",) * 5 + ("tail",) * 40
incumbent = rng.uniform(0.3, 1.0, 45)
candidate = np.clip(incumbent + rng.normal(0.03, 0.2, 45), 0, 1)
weights = frequency / inclusion
design = SampleDesign(cells, population={"head": 5, "tail": 2000})
for name, kwargs in (("weights alone", {}), ("with the design", {"design": design})):
    c = compare_paired(incumbent, candidate, weights=weights, rng=np.random.default_rng(0), **kwargs)
    print(f"{name:>15}: delta={c.delta:+.4f} ci=[{c.ci_low:+.4f}, {c.ci_high:+.4f}] mde={c.mde:.4f}", end="")
    print("" if c.design is None else f"  {c.design.record()}")
