"""The proven bound of a float32 score's error against the float64 search's, which lets exact search scan in
float32 and still rank as float64 does (`exact`; `torch_scan` on a GPU): Higham's gamma, the bound per query
(`float32_bound`), the vectors a float32 scan may search at all (`float32_safe`), and upper bounds of the
rows' norms computed without a float64 copy (`row_norms`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["float32_bound", "float32_safe", "gamma", "row_norms"]

#: Largest magnitude of a vector value the float32 scan accepts: products stay below 2**100 and a sum of up
#: to 2**20 of them below float32's largest finite value, 2**128.
_FLOAT32_PEAK = 2.0**50
_FLOAT32_MAX_DIMENSION = 2**20
_U32 = 2.0**-24  # unit roundoff of float32 (round to nearest)
_U64 = 2.0**-53
_TINY32 = 2.0**-126  # smallest normal float32
_NORM_RAISE = 1.0 + 2.0**-20
#: Rows whose norms are summed at once (a float32 block's squares, not a float64 copy of the matrix).
_NORM_BLOCK = 8192


def gamma(n: int, unit_roundoff: float) -> float:
    """Higham's gamma_n = n*u / (1 - n*u): the relative error bound of n floating-point operations."""
    return n * unit_roundoff / (1.0 - n * unit_roundoff)


def float32_bound(query_norms: np.ndarray, max_document_norm: float, dimension: int) -> np.ndarray:
    """Per query, a bound B on |float32 score - float64 search's score| of any (query, document) pair.

    With x, y the float64 values of a query and a document (what `exact.float64_search` multiplies; exact for
    float16 and float32 vectors), d the dimension and u = 2**-24:

    - converting x and y to float32 is exact for float16/float32 vectors, and within u|x_i| otherwise, so
      each product x32_i * y32_i is within gamma_2 |x_i y_i| of x_i y_i;
    - the float32 dot product of d terms, in any summation order, with or without FMA (every BLAS kernel,
      any block shape), is within gamma_d * sum |x32_i y32_i| of the exact sum (Higham, Accuracy and
      Stability, 3.1); together with the conversion, within gamma_{d+2} * sum |x_i y_i|;
    - the float64 search's score is its float64 dot product (within gamma_d(2**-53) * sum |x_i y_i| of the
      exact sum) rounded to float32 (relative error u): within (u + (1 + u) gamma_d(2**-53)) sum |x_i y_i|;
    - sum |x_i y_i| <= ||x|| ||y|| (Cauchy-Schwarz);
    - underflow, gradual or flushed to zero (FTZ/DAZ), adds at most 2**-126 per product, per operand and
      per addition, in all at most 2**-125 d (1 + ||x||)(1 + ||y||) for each of the two scores.

    So, with ||y||max the largest document norm,
    B = (gamma_{d+2}(u) + u + (1 + u) gamma_d(2**-53)) ||x|| ||y||max + 2**-124 d (1 + ||x||)(1 + ||y||max),
    computed from `row_norms`' upper bounds of the norms, then raised by 1 %, which covers the rounding of B
    itself and of the threshold built from it.
    Values beyond `_FLOAT32_PEAK` are not searched in float32 at all (overflow); see `float32_safe`.
    """
    relative = gamma(dimension + 2, _U32) + _U32 + (1.0 + _U32) * gamma(dimension, _U64)
    x = np.asarray(query_norms, dtype=np.float64)
    y = float(max_document_norm)
    underflow = 2.0 * _TINY32 * dimension * (1.0 + x) * (1.0 + y)
    bound: np.ndarray = 1.01 * (relative * x * y + underflow)
    return bound


def float32_safe(matrix: np.ndarray) -> bool:
    """Whether the float32 scan may search these vectors: every value at most `_FLOAT32_PEAK` in magnitude
    (no float32 overflow) and a dimension for which gamma_d is small."""
    if matrix.shape[1] > _FLOAT32_MAX_DIMENSION or matrix.size == 0:
        return matrix.size == 0
    if matrix.dtype == np.float16:
        return True
    return bool(matrix.max() <= _FLOAT32_PEAK and matrix.min() >= -_FLOAT32_PEAK)


def row_norms(matrix: np.ndarray) -> np.ndarray:
    """An upper bound of the L2 norm of every row's float64 values, within about 1e-5 of it, in blocks.

    float32 rows are summed in float32 (no float64 copy: at 200,000 x 512 that copy was a tenth of the
    search): a sum of d non-negative rounded squares, in any order, is within gamma_d(2**-24) of the exact
    sum of squares, less at most 2**-126 per square and per addition for underflow, so
    sqrt((s + 2d 2**-126) / (1 - gamma_d)) bounds the norm. Other dtypes are summed in float64 (within
    (d + 1) 2**-53 of it). Every norm is then raised by 2**-20, which covers the float64 sum's error and the
    square root's rounding.
    """
    norms = np.empty(matrix.shape[0], dtype=np.float64)
    dimension = matrix.shape[1]
    for start in range(0, matrix.shape[0], _NORM_BLOCK):
        block = matrix[start : start + _NORM_BLOCK]
        if block.dtype == np.float32:
            squares = np.einsum("ij,ij->i", block, block).astype(np.float64)
            squares = (squares + 2.0 * dimension * _TINY32) / (1.0 - gamma(dimension, _U32))
        else:
            wide = block.astype(np.float64)
            squares = np.einsum("ij,ij->i", wide, wide)
        norms[start : start + _NORM_BLOCK] = np.sqrt(squares)
    norms *= _NORM_RAISE
    return norms
