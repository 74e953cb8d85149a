"""Variant arms (``SPEC?dims=N&precision=P&rescore=K``) in the pipeline: derived from their model's vectors,
which are encoded once for every arm of a run that uses them; searched in their own domain; rescored over K x
the deepest cutoff; their bytes and calibration in the records; and the spec errors, one line each."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from test_pipeline import DIMENSIONS, HashModel, make_golden

from pytest_embeval.arms.embedding import Arm, EncoderError
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.variants import Variant, VariantRetriever, split_variant, variant
from pytest_embeval.core.capacity import Production, project
from pytest_embeval.golden.schema import IndexSpec
from pytest_embeval.run.golden_run import run_golden
from pytest_embeval.run.pipeline import ArmFault
from pytest_embeval.search.exact import tie_ranks
from pytest_embeval.search.quantization import calibration_ranges, dequantized, quantize, signs, truncated


class CountedModel(HashModel):
    """The hash model, counting the texts each of its methods was given."""

    def __init__(self) -> None:
        self.calls: dict[str, list[int]] = {"query": [], "document": []}

    def encode_document(self, texts: list[str]) -> np.ndarray:
        self.calls["document"].append(len(texts))
        return super().encode_document(texts)

    def encode_query(self, texts: list[str]) -> np.ndarray:
        self.calls["query"].append(len(texts))
        return HashModel().encode_query(texts)  # which encodes the texts as documents too: not counted


def counted_arm(dimension: int | None = DIMENSIONS) -> tuple[Arm, CountedModel]:
    model = CountedModel()
    return Arm(
        spec="hash", encoder=model, fingerprint='{"name":"hash"}', prompts={}, dimension=dimension
    ), model


# ------------------------------------------------------------------------------------------------- specs


@pytest.mark.parametrize(
    ("spec", "model", "asked"),
    [
        ("m?dims=256", "m", Variant(dims=256)),
        ("org/m?device=cpu&precision=binary&rescore=4", "org/m?device=cpu", Variant(None, "binary", 4)),
        ("m?dims=64&batch_size=8&precision=int8", "m?batch_size=8", Variant(64, "int8")),
        (
            "openai:text-embedding-3-small?dimensions=512&dims=256",
            "openai:text-embedding-3-small?dimensions=512",
            Variant(dims=256),
        ),
        ("m?device=cpu", "m?device=cpu", None),
        ("m", "m", None),
    ],
)
def test_variant_parameters_are_split_from_the_model_s_own(
    spec: str, model: str, asked: Variant | None
) -> None:
    assert split_variant(spec) == (model, asked)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "m?precision=int4",
            "model spec 'm?precision=int4': precision must be one of float16, int8, uint8, "
            "binary, ubinary, got 'int4'",
        ),
        ("m?dims=0", "model spec 'm?dims=0': dims must be an integer >= 1, got '0'"),
        ("m?dims=ten", "model spec 'm?dims=ten': dims must be an integer >= 1, got 'ten'"),
        (
            "m?rescore=4",
            "model spec 'm?rescore=4': rescore=4 needs a quantised precision (int8, uint8, binary, "
            "ubinary): it rescores what the codes retrieved with the float query, and float32 vectors are "
            "searched at full precision",
        ),
        (
            "m?precision=float16&rescore=2",
            "model spec 'm?precision=float16&rescore=2': rescore=2 needs a quantised precision (int8, "
            "uint8, binary, ubinary): it rescores what the codes retrieved with the float query, and float16 "
            "vectors are searched at full precision",
        ),
        ("m?dims=8&dims=16", "model spec 'm?dims=8&dims=16': parameter 'dims' given twice"),
        (
            "m?precision=",
            "model spec 'm?precision=': parameter 'precision' needs a value (float16 | int8 | uint8 "
            "| binary | ubinary)",
        ),
    ],
)
def test_a_bad_variant_is_one_line_naming_the_spec(spec: str, message: str) -> None:
    with pytest.raises(EncoderError) as caught:
        split_variant(spec)
    assert str(caught.value) == message


def test_dims_beyond_a_declared_dimension_is_refused_before_anything_is_encoded() -> None:
    arm, model = counted_arm()
    with pytest.raises(
        EncoderError, match=r"^model spec 'hash\?dims=64': dims=64 but the model's vectors have 32"
    ):
        variant(arm, dims=64)
    assert model.calls == {"query": [], "document": []}


def test_dims_beyond_an_undeclared_dimension_is_the_arm_s_fault_on_its_first_vectors() -> None:
    arm, _ = counted_arm(dimension=None)
    with pytest.raises(ArmFault) as caught:
        run_golden(make_golden(), arm, variant(arm, dims=64))
    assert (
        str(caught.value)
        == "candidate model spec 'hash?dims=64': dims=64 but the model's vectors have 32 dimensions"
    )


def test_a_spec_resolves_to_its_model_s_variant() -> None:
    resolved = resolve_arm("test_pipeline:hash_arm?dims=16&precision=ubinary")
    assert isinstance(resolved, VariantRetriever)
    assert resolved.spec == "test_pipeline:hash_arm?dims=16&precision=ubinary"
    assert resolved.arm.fingerprint == '{"name":"hash"}'  # the model's: its vectors are cached under it
    assert resolved.fingerprint == (
        '{"model":"{\\"name\\":\\"hash\\"}","variant":{"dims":16,"precision":"ubinary","rescore":null}}'
    )


# ------------------------------------------------------------------------------------------------ a run


def test_a_model_and_its_variants_are_encoded_once() -> None:
    arm, model = counted_arm()
    golden = make_golden()
    run = run_golden(
        golden, variant(arm, dims=16, precision="int8"), variant(arm, precision="binary", rescore=2)
    )
    assert sum(model.calls["document"]) == len(golden.documents)
    assert sum(model.calls["query"]) == len(golden.queries)
    assert run.incumbent.arm.spec == "hash?dims=16&precision=int8"


@pytest.mark.parametrize("precision", ["int8", "uint8", "binary", "ubinary"])
def test_rescoring_ranks_k_times_the_deepest_cutoff_by_the_float_query(precision: str) -> None:
    arm, _ = counted_arm()
    golden = make_golden(report_metrics=())  # recall@10 alone: the deepest cutoff is 10
    run = run_golden(golden, arm, variant(arm, dims=24, precision=precision, rescore=3))
    result = run.candidate
    assert {len(ranked) for ranked in result.ranked} == {30}
    # The reference: the codes' top 30, rescored as sentence-transformers rescores them.
    model = HashModel()
    documents = truncated(model.encode_document([doc.text for doc in golden.documents]), 24)
    documents = documents / np.linalg.norm(documents, axis=1, keepdims=True)
    queries = truncated(model.encode_query([query.text for query in golden.queries]), 24)
    shape = result.index.shape
    assert shape is not None
    ranges = calibration_ranges(documents) if precision.endswith("int8") else None
    codes = quantize(documents, precision, ranges)
    doc_ids = [doc.id for doc in golden.documents]
    ranks = tie_ranks(doc_ids)
    query_codes = quantize(queries, precision, ranges)
    if precision.endswith("binary"):
        by_codes = signs(query_codes, 24).astype(np.int64) @ signs(codes, 24).astype(np.int64).T
    else:
        by_codes = query_codes.astype(np.int64) @ codes.astype(np.int64).T
    for row, ranked in enumerate(result.ranked):
        candidates = [doc_ids.index(doc_id) for doc_id in ranked]
        # The candidates: the codes' top 30, equal scores by id.
        top = sorted(range(len(doc_ids)), key=lambda j: (by_codes[row, j], ranks[j]), reverse=True)[:30]
        assert sorted(candidates) == sorted(top)
        scores = dequantized(codes[candidates], shape) @ queries[row].astype(np.float64)
        order = sorted(range(30), key=lambda j: (np.float32(scores[j]), ranks[candidates[j]]), reverse=True)
        assert list(ranked) == [doc_ids[candidates[j]] for j in order]


def test_int8_calibration_is_the_golden_corpus_s_ranges_and_is_recorded() -> None:
    arm, _ = counted_arm()
    golden = make_golden()
    run = run_golden(golden, arm, variant(arm, precision="int8"))
    shape = run.candidate.index.shape
    documents = HashModel().encode_document([doc.text for doc in golden.documents])
    documents /= np.linalg.norm(documents.astype(np.float64), axis=1, keepdims=True).astype(np.float32)
    assert shape is not None and shape.ranges is not None
    np.testing.assert_allclose(shape.ranges, calibration_ranges(documents), atol=1e-7)
    assert shape.as_dict()["calibration"] == {
        "min": shape.ranges[0].tolist(),
        "max": shape.ranges[1].tolist(),
    }


@pytest.mark.parametrize(
    ("changes", "precision", "bytes_per_vector"),
    [
        ({"dims": 16}, "float32", 64),
        ({"precision": "float16"}, "float16", 64),
        ({"precision": "int8"}, "int8", 32),
        ({"precision": "binary", "rescore": 2}, "binary", 4),
        ({"dims": 20, "precision": "ubinary"}, "ubinary", 3),
    ],
)
def test_a_variant_s_bill_is_its_stored_bytes(
    changes: dict[str, Any], precision: str, bytes_per_vector: int
) -> None:
    arm, _ = counted_arm()
    golden = make_golden(production=Production(documents=10_000_000, memory_price_per_gb_month=4.0))
    capacity = run_golden(golden, arm, variant(arm, **changes)).candidate.capacity
    assert capacity is not None
    assert (capacity.dtype, capacity.bytes_per_vector) == (precision, bytes_per_vector)
    assert capacity.index_bytes == len(golden.documents) * bytes_per_vector
    projected = project(capacity, golden.production)
    assert projected.index_bytes.value == 10_000_000 * bytes_per_vector
    assert projected.memory_cost_per_month.value == pytest.approx(10_000_000 * bytes_per_vector / 1e9 * 4.0)


def test_quantised_vectors_refuse_an_index_that_holds_floats() -> None:
    arm, _ = counted_arm()
    with pytest.raises(ArmFault) as caught:
        run_golden(make_golden(index=IndexSpec("hnsw")), arm, variant(arm, precision="int8"))
    assert str(caught.value) == (
        "candidate model spec 'hash?precision=int8': precision=int8 vectors cannot be searched with the "
        "golden set's index (hnsw): use exact (a FAISS factory string stores its own precision: "
        "'IVF1024,SQ8', 'HNSW32,SQfp16')"
    )


def test_a_truncated_float_variant_searches_the_declared_hnsw_graph() -> None:
    arm, _ = counted_arm()
    run = run_golden(make_golden(index=IndexSpec("hnsw", ef_search=16)), arm, variant(arm, dims=16))
    assert run.candidate.index is not None and run.candidate.index.kind == "hnsw"
    assert run.candidate.index.dimension == 16


def test_a_faiss_index_is_built_alike_for_both_arms_and_its_parameter_chosen_per_arm() -> None:
    arm, _ = counted_arm()
    golden = make_golden(index=IndexSpec("faiss", factory="IVF4,Flat", recall_target=0.95))
    run = run_golden(golden, arm, variant(arm, dims=8))
    for result in (run.incumbent, run.candidate):
        assert result.index is not None and result.index.faiss is not None
        assert result.index.faiss.ann_recall >= 0.95
        assert result.index.faiss.parameters["factory"] == "IVF4,Flat"
    assert run.incumbent.control.index == run.candidate.control.index == run.control.index


def test_bits_may_use_a_binary_faiss_index_and_floats_may_not() -> None:
    arm, _ = counted_arm()
    golden = make_golden(index=IndexSpec("faiss", factory="BIVF4", faiss_parameter=("nprobe", 4)))
    run = run_golden(golden, variant(arm, precision="ubinary"), variant(arm, precision="binary", rescore=2))
    assert run.candidate.index is not None and run.candidate.index.faiss is not None
    with pytest.raises(ArmFault) as caught:
        run_golden(golden, arm, variant(arm, precision="binary"))
    assert str(caught.value) == (
        "incumbent: index.faiss 'BIVF4' is a binary index: it holds packed bits, which only a "
        "precision=binary or precision=ubinary variant stores"
    )


def test_a_variant_is_picklable_and_its_record_is_plain() -> None:
    import pickle

    from pytest_embeval.arms.variants import variant_record

    arm, _ = counted_arm()
    made = variant(dataclasses.replace(arm, encoder=HashModel()), dims=8, precision="binary")
    assert pickle.loads(pickle.dumps(made.variant)) == made.variant
    assert variant_record(made) == {
        "model": "hash",
        "model_fingerprint": '{"name":"hash"}',
        "dims": 8,
        "precision": "binary",
        "rescore": None,
    }
