"""The float32 scan of exact search on a torch device (a CUDA GPU): the same shortlist rule as the numpy
scan (`exact._scan`), so the same float64 rescoring gives the same bits.

The documents are copied to the device once, as float32; each block of queries is multiplied with all of
them in full float32 (TF32 off: its 10-bit mantissa would break the float32 error bound of
`float32_bounds.float32_bound`), masked documents set to -inf, and ``torch.topk`` keeps each query's ``width``
best.
Only the shortlist crosses back: positions and float32 scores (-inf for a masked document), which `exact`
turns into the ranking keys its CPU rescoring reads. The documents left out score at most the shortlist's
last float32 score, which is all the bound's argument needs (the order of equal float32 scores inside the
shortlist does not matter: the rescoring ranks it afresh).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from pytest_embeval.golden.filters import Allowed

__all__ = ["fits_on_device", "torch_scan"]

#: Scratch per step on the device: a (query block x documents) float32 score matrix.
_DEVICE_SCRATCH = 512 * 2**20
#: The share of the device's free memory the documents and the scratch may take.
_FREE_SHARE = 0.8


def fits_on_device(documents: np.ndarray, device: str) -> bool:
    """Whether ``documents`` (as float32) and the scan's scratch fit in ``device``'s free memory now."""
    import torch

    if not device.startswith("cuda"):
        return True
    if not torch.cuda.is_available():  # an arm's record names a device this process cannot reach
        return False
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return bool(documents.shape[0] * documents.shape[1] * 4 + _DEVICE_SCRATCH <= _FREE_SHARE * free)


def torch_scan(
    queries: np.ndarray, documents: np.ndarray, width: int, allowed: Allowed | None, device: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the positions and float32 scores of the ``width`` documents with the largest float32
    scores, computed on ``device``, in no order; a masked document's score is -inf."""
    import torch

    n_queries, n_docs = queries.shape[0], documents.shape[0]
    on = torch.device(device)
    positions = np.empty((n_queries, width), dtype=np.int64)
    scores = np.empty((n_queries, width), dtype=np.float32)
    step = max(1, _DEVICE_SCRATCH // (4 * max(1, n_docs)))
    with _full_float32(torch), torch.no_grad():
        d = torch.from_numpy(np.ascontiguousarray(documents, dtype=np.float32)).to(on)
        masks = None if allowed is None else (torch.from_numpy(allowed.masks).to(on), allowed.rows)
        for start in range(0, n_queries, step):
            q = torch.from_numpy(np.ascontiguousarray(queries[start : start + step], dtype=np.float32)).to(on)
            products = q @ d.T
            if masks is not None:
                pool, mask_rows = masks
                rows = torch.from_numpy(np.asarray(mask_rows[start : start + step], dtype=np.int64)).to(on)
                products.masked_fill_(~pool[rows], float("-inf"))
            values, found = torch.topk(products, width, dim=1, sorted=False)
            positions[start : start + step] = found.cpu().numpy()
            scores[start : start + step] = values.cpu().numpy()
    return positions, scores


@contextlib.contextmanager
def _full_float32(torch: Any) -> Iterator[None]:
    """float32 matrix products in float32 (no TF32, no reduced-precision reductions) while inside."""
    matmul = torch.backends.cuda.matmul
    saved = matmul.allow_tf32, torch.get_float32_matmul_precision()
    matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        matmul.allow_tf32 = saved[0]
        torch.set_float32_matmul_precision(saved[1])
