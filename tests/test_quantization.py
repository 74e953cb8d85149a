"""A variant's vectors: truncation, and quantised values held to sentence-transformers' own
``quantize_embeddings`` (and what its ``semantic_search_*`` rescore with) for the same calibration."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers.util.quantization import _dequantize_embeddings, quantize_embeddings

from pytest_embeval.search.quantization import (
    PRECISIONS,
    VectorShape,
    calibration_ranges,
    dequantized,
    packed_bits,
    quantize,
    signs,
    truncated,
)


def unit_rows(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((n, d)).astype(np.float32)
    # A constant dimension: its range is zero, and the step falls back to 1 in both implementations.
    matrix[:, 3] = 0.25
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("d", [8, 13, 384])
def test_values_equal_quantize_embeddings_for_the_same_calibration(precision: str, d: int) -> None:
    corpus, queries = unit_rows(300, d, 0), unit_rows(40, d, 1)
    ranges = calibration_ranges(corpus)
    np.testing.assert_array_equal(ranges, np.vstack((corpus.min(axis=0), corpus.max(axis=0))))
    for vectors in (corpus, queries):
        ours = quantize(vectors, precision, ranges)
        if precision == "float16":
            reference = vectors.astype(np.float16)  # sentence-transformers has no float16 precision
        else:
            reference = quantize_embeddings(vectors, precision, calibration_embeddings=corpus)
        assert ours.dtype == reference.dtype
        np.testing.assert_array_equal(ours, reference)


@pytest.mark.parametrize("precision", ["int8", "uint8"])
def test_queries_outside_the_corpus_range_clip_as_sentence_transformers_clips(precision: str) -> None:
    corpus = unit_rows(50, 16, 2)
    outside = 3 * unit_rows(10, 16, 3)
    ranges = calibration_ranges(corpus)
    codes = quantize(outside, precision, ranges)
    np.testing.assert_array_equal(codes, quantize_embeddings(outside, precision, ranges=ranges))
    assert {int(codes.min()), int(codes.max())} == ({-128, 127} if precision == "int8" else {0, 255})


@pytest.mark.parametrize("precision", ["int8", "uint8"])
def test_rescoring_dequantises_as_semantic_search_does(precision: str) -> None:
    corpus = unit_rows(120, 24, 4)
    ranges = calibration_ranges(corpus)
    codes = quantize(corpus, precision, ranges)
    shape = VectorShape(24, precision, 2, ranges)
    np.testing.assert_array_equal(dequantized(codes, shape), _dequantize_embeddings(codes, precision, ranges))


@pytest.mark.parametrize("precision", ["binary", "ubinary"])
def test_bits_rescore_as_the_unpacked_sign_bits(precision: str) -> None:
    vectors = unit_rows(30, 13, 5)
    codes = quantize(vectors, precision)
    bits = dequantized(codes, VectorShape(13, precision, 4))
    np.testing.assert_array_equal(bits, (vectors > 0).astype(np.float64))
    np.testing.assert_array_equal(packed_bits(codes), np.packbits(vectors > 0, axis=-1))


def test_signs_are_plus_minus_one_and_their_dot_product_counts_agreeing_bits() -> None:
    vectors = unit_rows(20, 13, 6)
    for precision in ("binary", "ubinary"):
        codes = quantize(vectors, precision)
        plus_minus = signs(codes, 13)
        np.testing.assert_array_equal(plus_minus, np.where(vectors > 0, 1, -1))
        hamming = np.unpackbits(packed_bits(codes[:1]) ^ packed_bits(codes), axis=1).sum(axis=1).astype(int)
        assert (plus_minus[0].astype(int) @ plus_minus.T.astype(int) == 13 - 2 * hamming).all()


def test_truncation_keeps_the_first_dimensions_renormalised() -> None:
    vectors = unit_rows(10, 32, 7)
    head = truncated(vectors, 8)
    expected = vectors[:, :8] / np.linalg.norm(vectors[:, :8].astype(np.float64), axis=1, keepdims=True)
    np.testing.assert_allclose(head, expected, rtol=1e-6)
    assert head.dtype == np.float32
    assert truncated(vectors, 32) is vectors
    with pytest.raises(ValueError, match="dims must be between 1 and 32, got 33"):
        truncated(vectors, 33)


@pytest.mark.parametrize(
    ("precision", "dims", "expected"),
    [
        ("float32", 384, 1536),
        ("float16", 384, 768),
        ("int8", 384, 384),
        ("uint8", 256, 256),
        ("binary", 384, 48),
        ("ubinary", 13, 2),
    ],
)
def test_bytes_per_vector(precision: str, dims: int, expected: int) -> None:
    assert VectorShape(dims, precision).bytes_per_vector == expected


def test_shape_record_holds_the_calibration_ranges() -> None:
    ranges = np.array([[-0.5, -0.25], [0.5, 0.75]], dtype=np.float32)
    assert VectorShape(2, "int8", 4, ranges).as_dict() == {
        "dims": 2,
        "precision": "int8",
        "bytes_per_vector": 2,
        "rescore": 4,
        "calibration": {"min": [-0.5, -0.25], "max": [0.5, 0.75]},
    }


def test_bad_precision_and_missing_ranges_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown precision 'int4'"):
        quantize(unit_rows(3, 4, 8), "int4")
    with pytest.raises(ValueError, match="int8 needs calibration ranges"):
        quantize(unit_rows(3, 4, 8), "int8")
