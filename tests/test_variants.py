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


# ------------------------------------------------------------------------------------- an index of its own

IVF_PQ = IndexSpec("faiss", factory="IVF4,PQ8x4", faiss_parameter=("nprobe", 2))


@pytest.mark.parametrize(
    ("spec", "model", "asked"),
    [
        (
            "m?faiss=IVF64,PQ16x4&nprobe=4",
            "m",
            Variant(index=IndexSpec("faiss", factory="IVF64,PQ16x4", faiss_parameter=("nprobe", 4))),
        ),
        (
            "m?device=cpu&faiss=HNSW32&efSearch=64&dims=16",
            "m?device=cpu",
            Variant(dims=16, index=IndexSpec("faiss", factory="HNSW32", faiss_parameter=("efSearch", 64))),
        ),
        (
            "m?precision=binary&rescore=2&faiss=BIVF4&recall_target=0.9",
            "m",
            Variant(None, "binary", 2, IndexSpec("faiss", factory="BIVF4", recall_target=0.9)),
        ),
        ("m?faiss=Flat", "m", Variant(index=IndexSpec("faiss", factory="Flat"))),
    ],
)
def test_an_index_of_its_own_is_the_golden_file_s_keys(spec: str, model: str, asked: Variant) -> None:
    assert split_variant(spec) == (model, asked)
    assert asked.suffix() == "?" + spec.partition("?")[2].replace("device=cpu&", "").replace(
        "faiss=HNSW32&efSearch=64&dims=16", "dims=16&faiss=HNSW32&efSearch=64"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "m?nprobe=4",
            "model spec 'm?nprobe=4': nprobe=4 needs faiss=FACTORY: it sets the arm's own FAISS index's "
            "search",
        ),
        (
            "m?recall_target=0.9&dims=8",
            "model spec 'm?recall_target=0.9&dims=8': recall_target=0.9 needs faiss=FACTORY: it sets the "
            "arm's own FAISS index's search",
        ),
        (
            "m?faiss=IVF4,Flat&nprobe=2&recall_target=0.9",
            "model spec 'm?faiss=IVF4,Flat&nprobe=2&recall_target=0.9': give one of nprobe, recall_target: "
            "the recall target chooses the parameter per arm",
        ),
        (
            "m?faiss=IVF4,Flat&nprobe=0",
            "model spec 'm?faiss=IVF4,Flat&nprobe=0': nprobe must be an integer >= 1, got '0'",
        ),
        (
            "m?faiss=IVF4,Flat&recall_target=1.5",
            "model spec 'm?faiss=IVF4,Flat&recall_target=1.5': recall_target must be a number in (0, 1], got "
            "'1.5'",
        ),
        (
            "m?faiss=BIVF4",
            "model spec 'm?faiss=BIVF4': faiss=BIVF4 is a binary index: it holds packed bits, which only "
            "precision=binary or precision=ubinary stores",
        ),
        (
            "m?precision=binary&faiss=IVF4,PQ8x4",
            "model spec 'm?precision=binary&faiss=IVF4,PQ8x4': precision=binary vectors cannot be searched "
            "with its own index (faiss 'IVF4,PQ8x4'): use exact, or a FAISS binary index (index: {faiss: "
            "'BIVF1024'}, 'BHNSW32', 'BFlat')",
        ),
        (
            "m?precision=int8&faiss=IVF4,Flat",
            "model spec 'm?precision=int8&faiss=IVF4,Flat': precision=int8 vectors cannot be searched with "
            "its own index (faiss 'IVF4,Flat'): use exact (a FAISS factory string stores its own precision: "
            "'IVF1024,SQ8', 'HNSW32,SQfp16')",
        ),
        (
            "m?faiss=",
            "model spec 'm?faiss=': parameter 'faiss' needs a value (the arm's own FAISS index, a factory "
            "string such as IVF64,PQ16x4)",
        ),
    ],
)
def test_a_bad_index_of_its_own_is_one_line_naming_the_spec(spec: str, message: str) -> None:
    with pytest.raises(EncoderError) as caught:
        split_variant(spec)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("shape", "spec", "message"),
    [
        (
            {"index": IndexSpec("faiss", factory="IVF4,PQ5")},
            "hash?faiss=IVF4,PQ5",
            "FAISS cannot build 'IVF4,PQ5' over 32-dimensional vectors: The dimension of the vector (d) "
            "should be a multiple of the number of subquantizers (M)",
        ),
        (
            {"dims": 16, "index": IndexSpec("faiss", factory="PQ32")},
            "hash?dims=16&faiss=PQ32",
            "FAISS cannot build 'PQ32' over 16-dimensional vectors: The dimension of the vector (d) should "
            "be a multiple of the number of subquantizers (M)",
        ),
        (
            {"index": IndexSpec("faiss", factory="IVF4,Fancy")},
            "hash?faiss=IVF4,Fancy",
            "FAISS cannot build 'IVF4,Fancy' over 32-dimensional vectors: could not parse code description "
            "Fancy in IVF4,Fancy",
        ),
        (
            {"precision": "binary", "index": IndexSpec("faiss", factory="BFancy")},
            "hash?precision=binary&faiss=BFancy",
            "FAISS cannot build 'BFancy' over 32-bit codes: description BFancy did not generate an index",
        ),
    ],
)
def test_a_factory_faiss_cannot_build_is_refused_before_anything_is_encoded(
    shape: dict[str, Any], spec: str, message: str
) -> None:
    arm, model = counted_arm()
    with pytest.raises(EncoderError) as caught:
        variant(arm, **shape)
    assert str(caught.value) == f"model spec {spec!r}: {message}"
    assert model.calls == {"query": [], "document": []}


def test_an_arm_with_its_own_index_encodes_nothing_more_and_is_searched_through_it() -> None:
    arm, model = counted_arm()
    golden = make_golden()
    own = variant(arm, index=IVF_PQ)
    assert own.spec == "hash?faiss=IVF4,PQ8x4&nprobe=2"
    run = run_golden(golden, arm, own)
    assert sum(model.calls["document"]) == len(golden.documents)
    assert sum(model.calls["query"]) == len(golden.queries)
    incumbent, candidate = run.incumbent.index, run.candidate.index
    assert incumbent is not None and incumbent.kind == "exact"
    assert candidate is not None and candidate.faiss is not None
    assert candidate.faiss.parameters == {"factory": "IVF4,PQ8x4", "seed": 0, "nprobe": 2}
    # 4-bit codes of 8 sub-vectors and an 8-byte id per vector, beside the trained quantizer and codebooks.
    assert candidate.memory_bytes - candidate.faiss.fixed_bytes >= len(golden.documents) * (4 + 8)
    # The control: the golden set's index held for the incumbent, the candidate's own for itself.
    assert run.incumbent.control == run.control
    assert run.candidate.control.index != run.control.index
    assert dataclasses.replace(run.candidate.control, index=run.control.index) == run.control
    assert own.fingerprint == (
        '{"model":"{\\"name\\":\\"hash\\"}","variant":{"dims":null,"precision":"float32","rescore":null,'
        '"index":{"faiss":"IVF4,PQ8x4","nprobe":2}}}'
    )


def test_an_own_index_reaches_its_recall_target_against_its_own_exact_search() -> None:
    arm, _ = counted_arm()
    target = IndexSpec("faiss", factory="IVF8,Flat", recall_target=0.95)
    run = run_golden(
        make_golden(index=IndexSpec("hnsw", ef_search=16)), arm, variant(arm, dims=16, index=target)
    )
    assert run.incumbent.index is not None and run.incumbent.index.kind == "hnsw"
    faiss = run.candidate.index.faiss if run.candidate.index is not None else None
    assert faiss is not None and faiss.recall_target == 0.95 and faiss.ann_recall >= 0.95
    assert run.candidate.index is not None and run.candidate.index.dimension == 16


def test_bits_search_their_own_binary_index_and_rescore() -> None:
    arm, _ = counted_arm()
    own = variant(
        arm,
        precision="binary",
        rescore=2,
        index=IndexSpec("faiss", factory="BIVF4", faiss_parameter=("nprobe", 4)),
    )
    run = run_golden(make_golden(), arm, own)
    assert run.candidate.index is not None and run.candidate.index.faiss is not None
    assert run.candidate.index.shape is not None and run.candidate.index.shape.rescore == 2


def test_an_own_index_is_refused_with_filters_before_anything_is_encoded() -> None:
    from test_filters import language_golden

    arm, model = counted_arm()
    with pytest.raises(ArmFault) as caught:
        run_golden(language_golden(), variant(arm, index=IVF_PQ), arm)
    assert str(caught.value) == (
        "incumbent model spec 'hash?faiss=IVF4,PQ8x4&nprobe=2': faiss=IVF4,PQ8x4: a FAISS index is not "
        "offered with filters (it searches every document, whatever a query's filters allow): search "
        "exactly, with hnsw or with a vector database"
    )
    assert model.calls == {"query": [], "document": []}


def test_each_corpus_slice_is_searched_with_the_arm_s_own_index() -> None:
    from pytest_embeval.golden.schema import CorpusSample

    arm, _ = counted_arm()
    golden = make_golden(corpus_sample=CorpusSample(sizes=(0.5, 1.0), seed=0))
    run = run_golden(golden, arm, variant(arm, index=IVF_PQ))
    assert len(run.slices) == 2
    for piece in run.slices:
        assert piece.run.incumbent.index is not None and piece.run.incumbent.index.kind == "exact"
        own = piece.run.candidate.index
        assert own is not None and own.faiss is not None and own.faiss.parameters["factory"] == "IVF4,PQ8x4"


def test_an_arm_that_consumed_another_index_than_its_own_is_refused() -> None:
    from pytest_embeval.run.control import ControlMismatch, check_control, short_digest

    arm, _ = counted_arm()
    run = run_golden(make_golden(), arm, variant(arm, index=IVF_PQ))
    own = {"candidate": dataclasses.replace(run.control, index=run.candidate.control.index)}
    check_control(run.control, run.incumbent.control, run.candidate.control, own=own)
    with pytest.raises(ControlMismatch) as caught:
        check_control(run.control, run.incumbent.control, run.candidate.control)
    shown = short_digest(run.candidate.control.index)
    golden = short_digest(run.control.index)
    assert caught.value.differences == (
        f"index (incumbent {golden}, candidate {shown}; golden set {golden})",
    )
    with pytest.raises(ControlMismatch) as caught:
        check_control(run.control, run.candidate.control, run.incumbent.control, own=own)
    assert caught.value.differences == (
        f"index (incumbent {shown}, candidate {golden}; golden set {golden}, candidate's own {shown})",
    )


def test_a_fused_arm_s_part_cannot_have_an_index_of_its_own() -> None:
    spec = "rrf:[test_pipeline:hash_arm?faiss=Flat],test_pipeline:hash_arm"
    with pytest.raises(EncoderError) as caught:
        resolve_arm(spec)
    assert str(caught.value) == (
        f"model spec {spec!r}: part 'test_pipeline:hash_arm?faiss=Flat' has an index of its own: a fused "
        "arm's parts search the golden set's index (run that variant as an arm of its own)"
    )
