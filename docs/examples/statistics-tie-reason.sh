# "What a TIE says" (docs/statistics.md): the reason decide() gives a large stratum with a small, real
# difference inside the margin.
cat > tie_reason.py <<'PY'
# --8<-- [start:tie-reason-code]
from pytest_embeval import PairedComparison, decide, minimum_detectable_effect

n, sd = 1500, 0.07
c = PairedComparison(
    n=n, excluded=0, incumbent_mean=0.700, candidate_mean=0.691, delta=-0.009,
    ci_low=-0.012, ci_high=-0.006, confidence=0.95, interval="studentized", p_value=0.0001,
    sd=sd, wins=310, losses=420, sign_p=0.00005, mde=minimum_detectable_effect(sd, n), note=None,
)
decision = decide(c, tie_margin=0.01, min_queries=20)
print(decision.verdict.value, decision.tie_reason.value)
print(decision.reason)
# --8<-- [end:tie-reason-code]
PY
show python tie_reason.py
