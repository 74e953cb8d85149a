# vector_shapes_collection.py: the frontier of eight arms on nfcorpus, each run against the incumbent, with
# the library. The IVF-PQ arm is the incumbent's model searched through FAISS instead of exactly: it is
# compared query by query with the same model's exact search, so its Δ is the index's part alone. A golden
# file declares one index for all its arms (the control holds it constant), so a shortlist run cannot hold
# this arm beside the exact ones: the library runs each arm on its own golden set here.
import dataclasses

from pytest_embeval.arms.demo import minilm_arm
from pytest_embeval.arms.variants import variant
from pytest_embeval.cache.store import EmbeddingCache
from pytest_embeval.golden.loader import load_golden
from pytest_embeval.golden.schema import IndexSpec
from pytest_embeval.reports.arm_records import arm_record
from pytest_embeval.reports.charts import frontier_svg
from pytest_embeval.reports.frontier_records import ArmRow, frontier_record
from pytest_embeval.reports.json_report import stratum_record
from pytest_embeval.reports.terminal import frontier_lines
from pytest_embeval.run.pipeline import GoldenRun, golden_control, run_arm
from pytest_embeval.run.stratum_evaluation import evaluate_golden

golden = load_golden("nfcorpus.yaml")
embedder = EmbeddingCache(".embeval_cache").embed
model = minilm_arm()
ivf_pq = dataclasses.replace(
    golden, index=IndexSpec("faiss", factory="IVF64,PQ48x4", faiss_parameter=("nprobe", 4))
)
arms = {
    "float32": (golden, model),
    "dims=256": (golden, variant(model, dims=256)),
    "int8": (golden, variant(model, precision="int8")),
    "int8 rescore=4": (golden, variant(model, precision="int8", rescore=4)),
    "dims=256 int8": (golden, variant(model, dims=256, precision="int8")),
    "binary": (golden, variant(model, precision="binary")),
    "binary rescore=4": (golden, variant(model, precision="binary", rescore=4)),
    "IVF64,PQ48x4": (ivf_pq, model),
}
results = {
    name: run_arm(searched, arm, "candidate", embedder=embedder) for name, (searched, arm) in arms.items()
}
incumbent = dataclasses.replace(results["float32"], role="incumbent")
control = golden_control(golden)
record = {
    "name": golden.name,
    "metric": str(golden.metric),
    "documents": len(golden.documents),
    "production": golden.production.as_dict(),
}
rows = [ArmRow("float32", arm_record(incumbent, golden.production), None)]
for name, result in list(results.items())[1:]:
    outcomes = evaluate_golden(
        GoldenRun(golden=golden, incumbent=incumbent, candidate=result, control=control)
    )
    strata = [
        stratum_record(golden, "nfcorpus.yaml", order, outcome) for order, outcome in enumerate(outcomes)
    ]
    rows.append(ArmRow(name, arm_record(result, golden.production), strata))
frontier = frontier_record(record, rows)
print("\n".join(frontier_lines(frontier)[1:]))
print("--8<-- [end:frontier]")  # the page's sections: the table above, the chart below
print("--8<-- [start:chart]")
print(frontier_svg(frontier))
