"""The shape of an arm's vectors: truncated to their first dimensions, stored at a lower precision, and what a
quantised vector is worth when it is rescored.

The values are sentence-transformers' (``sentence_transformers.util.quantization.quantize_embeddings``, the
reference the tests hold them to): ``int8`` and ``uint8`` cut each dimension's range, its minimum and maximum
over calibration vectors (`calibration_ranges`: here the golden set's corpus), into 255 equal steps
(``floor((x - min) / step)``, clipped to 0..255, less 128 for int8); ``binary`` keeps the sign bit of each
component packed eight to a byte (``ubinary`` as unsigned bytes, ``binary`` the same bytes less 128, as
signed ones); ``float16`` rounds to half precision. Query and document vectors are quantised alike, with the
documents' ranges, so the search compares codes with codes (`quantized`).

`dequantized` is what sentence-transformers' ``semantic_search_faiss`` / ``semantic_search_usearch`` rescore a
candidate with: the stored codes mapped back onto the float axis (``code * step + min``), and for bits the
unpacked 0/1 values. Rescoring therefore needs no vectors beyond the ones the index stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BITS",
    "PRECISIONS",
    "VectorShape",
    "calibration_ranges",
    "component_bytes",
    "dequantized",
    "packed_bits",
    "quantize",
    "signs",
    "truncated",
]

#: The precisions a variant may store its vectors in (float32 is the model's own).
PRECISIONS = ("float16", "int8", "uint8", "binary", "ubinary")
#: The precisions stored as packed bits.
BITS = ("binary", "ubinary")
#: The precisions with calibrated ranges.
CALIBRATED = ("int8", "uint8")
_STEPS = 255


@dataclass(frozen=True, slots=True, eq=False)
class VectorShape:
    """How an arm stores and searches its vectors: the first ``dims`` dimensions (re-normalised) of its
    model's, in ``precision``, and with ``rescore`` the top k x rescore by the codes rescored with the float
    query (`dequantized`). ``ranges`` are the int8/uint8 calibration ranges, (2, dims) float32: per
    dimension the minimum and maximum over the golden set's corpus vectors."""

    dims: int
    precision: str = "float32"
    rescore: int | None = None
    ranges: np.ndarray | None = None

    @property
    def bytes_per_vector(self) -> int:
        """What one stored vector takes: dims x the precision's bytes, or dims bits rounded up to bytes."""
        if self.precision in BITS:
            return (self.dims + 7) // 8
        return self.dims * component_bytes(self.precision)

    def as_dict(self) -> dict[str, object]:
        """Plain types: dims, precision, bytes per vector, rescore; for int8/uint8 the calibration's
        per-dimension ranges (``min``, ``max``: over the golden set's document vectors)."""
        record: dict[str, object] = {
            "dims": self.dims,
            "precision": self.precision,
            "bytes_per_vector": self.bytes_per_vector,
            "rescore": self.rescore,
        }
        if self.ranges is not None:
            record["calibration"] = {"min": self.ranges[0].tolist(), "max": self.ranges[1].tolist()}
        return record


def component_bytes(precision: str) -> int:
    """Bytes of one component in ``precision`` (float32, float16, int8, uint8); bits have no whole byte."""
    sizes: Mapping[str, int] = {"float32": 4, "float16": 2, "int8": 1, "uint8": 1}
    if precision not in sizes:
        raise ValueError(f"precision {precision!r} has no whole-byte component (one of {', '.join(sizes)})")
    return sizes[precision]


def truncated(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` components of each row, re-normalised to unit length (float64 norms, float32
    result, as every arm's vectors are: `embedding.unit_rows`); the rows as they are when ``dims`` is all."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if not 1 <= dims <= matrix.shape[1]:
        raise ValueError(f"dims must be between 1 and {matrix.shape[1]}, got {dims}")
    if dims == matrix.shape[1]:
        return matrix
    head = matrix[:, :dims].astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", head, head))
    # A row whose first dims components are all zero stays zero: nothing to normalise, and nothing invented.
    unit: np.ndarray = (head / np.where(norms > 0.0, norms, 1.0)[:, None]).astype(np.float32)
    return unit


def calibration_ranges(vectors: np.ndarray) -> np.ndarray:
    """Per dimension, the minimum and maximum over ``vectors``: (2, d) float32, as sentence-transformers
    calibrates int8/uint8 from ``calibration_embeddings``."""
    matrix = np.asarray(vectors)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise ValueError(f"calibration needs a non-empty (n, d) matrix, got shape {matrix.shape}")
    ranges: np.ndarray = np.vstack((matrix.min(axis=0), matrix.max(axis=0))).astype(np.float32)
    return ranges


def _steps(ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = ranges[0, :]
    steps = (ranges[1, :] - starts) / _STEPS
    return starts, np.where(steps == 0, 1, steps)


def quantize(vectors: np.ndarray, precision: str, ranges: np.ndarray | None = None) -> np.ndarray:
    """``vectors`` in ``precision`` (`PRECISIONS`, or float32), value for value what
    ``quantize_embeddings(vectors, precision, ranges=ranges)`` returns; int8 and uint8 need ``ranges``
    (`calibration_ranges`)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if precision == "float32":
        return matrix
    if precision == "float16":
        return matrix.astype(np.float16)
    if precision in CALIBRATED:
        if ranges is None:
            raise ValueError(f"{precision} needs calibration ranges")
        starts, steps = _steps(np.asarray(ranges, dtype=np.float32))
        codes: np.ndarray = np.clip(np.floor((matrix - starts) / steps), 0, _STEPS)
        return codes.astype(np.uint8) if precision == "uint8" else (codes - 128).astype(np.int8)
    if precision in BITS:
        packed = np.packbits(matrix > 0, axis=-1)
        signed: np.ndarray = (packed ^ np.uint8(0x80)).view(np.int8)
        return packed if precision == "ubinary" else signed
    raise ValueError(f"unknown precision {precision!r} (one of float32, {', '.join(PRECISIONS)})")


def dequantized(codes: np.ndarray, shape: VectorShape) -> np.ndarray:
    """Stored codes as sentence-transformers rescores them, float64: int8/uint8 codes back on the float axis
    (``(code [+ 128]) * step + min``), bits unpacked to 0/1 (the first ``dims`` of them), float16 widened."""
    if shape.precision in BITS:
        return np.unpackbits(packed_bits(codes), axis=-1)[..., : shape.dims].astype(np.float64)
    if shape.precision in CALIBRATED:
        if shape.ranges is None:
            raise ValueError(f"{shape.precision} codes need their calibration ranges")
        starts, steps = _steps(shape.ranges.astype(np.float32))
        values = codes.astype(np.float64)
        if shape.precision == "int8":
            values += 128
        result: np.ndarray = values * steps + starts
        return result
    return codes.astype(np.float64)


def packed_bits(codes: np.ndarray) -> np.ndarray:
    """The sign bits of ``binary`` (int8) or ``ubinary`` (uint8) codes, packed as unsigned bytes: a binary
    code is its byte less 128, so its top bit is flipped back."""
    if codes.dtype == np.int8:
        bits: np.ndarray = codes.view(np.uint8) ^ np.uint8(0x80)
        return bits
    return codes


def signs(codes: np.ndarray, dims: int) -> np.ndarray:
    """Packed bits (`packed_bits`' forms) as ±1 int8 components (the first ``dims``): their dot product is
    dims - 2 x Hamming distance, the score a binary arm ranks by (`quantized.hamming_search`)."""
    bits = np.unpackbits(packed_bits(codes), axis=-1)[..., :dims].astype(np.int8)
    result: np.ndarray = 2 * bits - 1
    return result
