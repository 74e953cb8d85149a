"""A golden set's arms run on one set of inputs and paired: what every arm of a golden set runs with, made
once however many arms run (`ArmInputs`, `arm_inputs`), the vector database it declares opened for its arms
(`engine_opened`), each arm run on them (`run_arm_on`, `pipeline.run_arm`), and two arms' results paired into
the `pipeline.GoldenRun` the strata are decided on (`pair_arms`); `run_golden` does all of it for an incumbent
and one candidate.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from pytest_embeval.arms.embedding import Arm, embed
from pytest_embeval.arms.rerank import RerankScorer, resolve_reranker
from pytest_embeval.arms.resolve import resolve_arm
from pytest_embeval.arms.retriever import Embedder, Retriever
from pytest_embeval.arms.variants import shared_embedder
from pytest_embeval.golden.schema import GoldenSet
from pytest_embeval.run.control import check_control
from pytest_embeval.run.corpus_slices import CorpusSlice, corpus_slices, restrict
from pytest_embeval.run.pipeline import (
    ArmResult,
    GoldenRun,
    HeldConstant,
    Role,
    SliceRun,
    golden_control,
    own_controls,
    prepare,
    run_arm,
    searched_corpus,
)
from pytest_embeval.search.graphs import GraphStore
from pytest_embeval.search.vector_index import OpenedEngine, opened_engine

__all__ = ["ArmInputs", "arm_inputs", "engine_opened", "pair_arms", "run_arm_on", "run_golden"]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class ArmInputs:
    """What every arm of one golden set runs with, made once however many arms run: the corpus slices drawn
    (``corpus_sample``), the golden set searched (the largest slice's, or the golden set), what is held
    constant, the reranker's scorer, where HNSW graphs are kept, the function that embeds, and the vector
    database the golden set declares while it is open for its arms (`engine_opened`)."""

    golden: GoldenSet
    drawn: tuple[CorpusSlice, ...]
    searched: GoldenSet
    held: HeldConstant
    scorer: RerankScorer | None
    graphs: GraphStore | None
    embedder: Embedder
    #: set only inside `engine_opened`: each arm run with these inputs builds its collection in it
    engine: OpenedEngine | None = None


def arm_inputs(golden: GoldenSet, *, embedder: Embedder = embed, cache: Any = None) -> ArmInputs:
    """The `ArmInputs` of ``golden``. ``cache`` (an `store.EmbeddingCache`) keeps the reranker's scores and,
    in its folder, the HNSW graphs (`graphs`)."""
    drawn = tuple(corpus_slices(golden))
    searched = searched_corpus(golden, drawn)
    scorer = None
    if golden.rerank is not None:
        scorer = RerankScorer(resolve_reranker(golden.rerank), cache)
    return ArmInputs(
        golden=golden,
        drawn=drawn,
        searched=searched,
        held=prepare(searched),
        scorer=scorer,
        graphs=None if cache is None else GraphStore(cache.root),
        embedder=embedder,
    )


@contextlib.contextmanager
def engine_opened(inputs: ArmInputs, *, keep: bool = False) -> Iterator[ArmInputs]:
    """``inputs`` with the vector database their golden set declares opened for the arms run and paired
    inside (`vector_index.opened_engine`: the leftovers of an interrupted run removed first, closed after;
    ``keep`` leaves each arm's collection, else each is dropped when its arm is done), or as they are
    without one. The arms run inside build one collection each, under its own name, so an incumbent run once
    is built once whatever number of candidates it is paired with."""
    spec = inputs.golden.index.engine
    if spec is None:
        yield inputs
        return
    with opened_engine(spec, inputs.golden.path, keep=keep) as engine:
        yield dataclasses.replace(inputs, engine=engine)


def run_arm_on(
    inputs: ArmInputs,
    arm: Arm | Retriever | object,
    role: Role,
    label: str | None = None,
    *,
    embedder: Embedder | None = None,
) -> ArmResult:
    """`run_arm` with the golden set's shared `ArmInputs`: each arm of a run is run once this way, and
    every comparison pairs the results (`pair_arms`). ``embedder`` replaces the inputs' for this arm: the
    one a run's arms share when some are variants of one model (`variants.shared_embedder`)."""
    return run_arm(
        inputs.golden,
        arm,
        role,
        embedder=inputs.embedder if embedder is None else embedder,
        held=inputs.held,
        scorer=inputs.scorer,
        graphs=inputs.graphs,
        label=label,
        engine=inputs.engine,
    )


def pair_arms(inputs: ArmInputs, incumbent: ArmResult, candidate: ArmResult) -> GoldenRun:
    """The comparison of two arms run on the same `ArmInputs`; raise `ControlMismatch` if either consumed
    other held-constant inputs than the golden set (each corpus slice of it) declares, an arm with an index
    of its own that index (`pipeline.own_controls`)."""
    golden, drawn, held, scorer = inputs.golden, inputs.drawn, inputs.held, inputs.scorer
    reranker = None
    if scorer is not None:
        reranker = {
            "spec": scorer.reranker.spec,
            "fingerprint": scorer.reranker.fingerprint,
            "scored": scorer.scored,
            "cached": scorer.cached,
        }
    if not drawn:
        control = golden_control(golden, held, inputs.engine)
        own = own_controls(golden, held, incumbent=incumbent, candidate=candidate)
        check_control(control, incumbent.control, candidate.control, own=own)
        return GoldenRun(
            golden=golden,
            incumbent=incumbent,
            candidate=candidate,
            control=control,
            held=held,
            reranker=reranker,
        )
    pairs = zip((*incumbent.slices, incumbent), (*candidate.slices, candidate), strict=True)
    slices = []
    for one, (incumbent_slice, candidate_slice) in zip(drawn, pairs, strict=True):
        piece = inputs.searched if one is drawn[-1] else restrict(golden, one.rows)
        piece_held = held if one is drawn[-1] else prepare(piece, warn=False)
        control = golden_control(piece, piece_held, inputs.engine)
        own = own_controls(piece, piece_held, incumbent=incumbent_slice, candidate=candidate_slice)
        check_control(control, incumbent_slice.control, candidate_slice.control, own=own)
        run = GoldenRun(
            golden=piece,
            incumbent=incumbent_slice,
            candidate=candidate_slice,
            control=control,
            held=piece_held,
        )
        slices.append(SliceRun(fraction=one.fraction, run=run))
    largest = slices[-1].run
    return dataclasses.replace(largest, golden=golden, slices=tuple(slices), reranker=reranker)


def run_golden(
    golden: GoldenSet,
    incumbent: Arm | Retriever | object,
    candidate: Arm | Retriever | object,
    *,
    embedder: Embedder = embed,
    cache: Any = None,
    keep_collections: bool = False,
) -> GoldenRun:
    """Run both arms through `run_arm` on the golden set's `ArmInputs` and pair them (`pair_arms`): a model
    both arms embed (a model and its variant) is embedded once for both (`variants.shared_embedder`); a
    vector database the golden set declares is opened once for both (`engine_opened`), and each arm's
    collection is dropped when the arm is done, unless ``keep_collections``."""
    incumbent, candidate = resolve_arm(incumbent), resolve_arm(candidate)
    shared = shared_embedder(embedder, (incumbent, candidate))
    with engine_opened(arm_inputs(golden, embedder=shared, cache=cache), keep=keep_collections) as inputs:
        return pair_arms(
            inputs, run_arm_on(inputs, incumbent, "incumbent"), run_arm_on(inputs, candidate, "candidate")
        )
