"""Exact top-k retrieval over normalised embeddings, in blocks (numpy).

Exact and approximate search (`hnsw`) return ``(positions, scores)``: int64 row numbers into ``documents`` and
float32 cosine scores, each of shape ``(n_queries, min(k, n_documents))``, ranked the way trec_eval ranks a
run: score descending, equal scores by document id descending (``strcmp(b, a)``), so a TREC run file written
from them evaluates identically under trec_eval.

Scores are computed in float64 and rounded to float32. A float32 matrix product gives different last bits
for the same (query, document) pair depending on how many rows are multiplied at once (BLAS switches kernels),
which would make the ranking depend on the block size; float64 rounded to float32 does not, in practice.

Ranking uses one unsigned 64-bit key per (query, document): the float32 score mapped to an order-preserving
integer in the high 32 bits, the document's rank in sorted-id order in the low 32 bits. Keys are unique within
a query, so "the k largest keys" is exactly trec_eval's top k, even when equal scores straddle position k.

A search may be restricted per query (`Allowed`: boolean masks over the documents and each query's mask row,
as per-query filters give them). Exact search masks inside its blocked scan; hnswlib is given the mask as its
``filter`` callable, one ``knn_query`` per distinct mask. A query allowed fewer than k documents gets fewer:
its rows are padded with position -1 and a NaN score, after the real results.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np

from pytest_embeval.golden.filters import Allowed
from pytest_embeval.search.float32_bounds import float32_bound, float32_safe, row_norms

__all__ = [
    "LOWEST32",
    "SCRATCH_BYTES",
    "as_matrix",
    "check_block",
    "decode_keys",
    "empty_result",
    "equal_scores",
    "exact_search",
    "merged_keys",
    "padded",
    "query_masks",
    "raise_first_floors",
    "ranking_keys",
    "tie_ranks",
    "top",
    "top_k",
    "validate_documents",
    "validate_queries",
]

DEFAULT_BLOCK_SIZE = 8192
# Scratch memory per (query block x document block) step. 48 MB: about 600 queries a block against 8,192
# documents (`_BYTES_PER_PAIR`), the peak memory of a run at 200,000 x 1,500 within 1.5 x the two arms'
# vectors; query blocks of 256 to 1,500 searched 200,000 x 1,500 x 512 within 7 % of each other.
SCRATCH_BYTES = 48 * 2**20
# Live per (query, document) pair of a block: its float32 score, its comparison with the query's floor, its
# mask and the copy a first block's partition makes (float64 products: 12 more).
_BYTES_PER_PAIR = 10
_SIGN = np.uint32(0x80000000)
LOWEST32 = np.finfo(np.float32).min
_LOW32 = np.uint64(0xFFFFFFFF)


def tie_ranks(doc_ids: Sequence[str]) -> np.ndarray:
    """int64 rank of each id in ascending Python string order (a larger id has a larger rank).

    Python compares strings by code point, the byte order of their UTF-8 encoding: trec_eval's strcmp.
    """
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)
    ranks = np.empty(len(doc_ids), dtype=np.int64)
    ranks[order] = np.arange(len(doc_ids), dtype=np.int64)
    return ranks


def exact_search(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int,
    *,
    doc_ids: Sequence[str],
    block_size: int = DEFAULT_BLOCK_SIZE,
    query_block_size: int | None = None,
    allowed: Allowed | None = None,
    device: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k of every query (dot products of L2-normalised rows), among the documents
    ``allowed`` lets each query return (all of them when None; padded rows when fewer than k).

    The result is :func:`float64_search`'s, bit for bit, at float32 speed: a float32 scan keeps each
    query's `shortlist_width` best documents, and when the proven float32 error bound (`float32_bound`)
    shows that every document left out scores too low to enter the top k, the shortlist is rescored in
    float64 and ranked as the float64 search ranks. A query whose shortlist cannot show that (more near-ties
    around its k-th score than the shortlist holds), and a matrix whose values float32 cannot hold safely,
    are searched by :func:`float64_search` itself. The result depends on neither block size. ``device``
    (a torch device, e.g. ``cuda:0``) runs the float32 scan there (`torch_scan`); the bound, the rescoring
    and so the result are the same.
    """
    d = validate_documents(documents, doc_ids)
    q, k_eff = validate_queries(queries, d, k)
    if allowed is not None:
        allowed.check(q.shape[0], d.shape[0])
    check_block("block_size", block_size)
    if query_block_size is not None:
        check_block("query_block_size", query_block_size)
    if q.shape[0] == 0 or k_eff == 0:
        return empty_result(q.shape[0], k_eff)
    if not (float32_safe(q) and float32_safe(d)):
        return float64_search(
            q,
            d,
            k_eff,
            doc_ids=doc_ids,
            block_size=block_size,
            query_block_size=query_block_size,
            allowed=allowed,
        )
    return _float32_rounds(
        q,
        d,
        k_eff,
        doc_ids=doc_ids,
        block_size=block_size,
        query_block_size=query_block_size,
        allowed=allowed,
        device=device,
    )


def float64_search(
    queries: np.ndarray,
    documents: np.ndarray,
    k: int,
    *,
    doc_ids: Sequence[str],
    block_size: int = DEFAULT_BLOCK_SIZE,
    query_block_size: int | None = None,
    allowed: Allowed | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_search`'s result by the float64 scan alone: every pair scored in float64 and rounded to
    float32, keeping a running top k per query. Documents are scanned in blocks of ``block_size`` rows and
    queries in blocks of ``query_block_size`` (by default as many as fit in ~48 MB of scratch), so memory
    stays bounded for large corpora. A masked-out pair keeps only its tie rank (`query_masks`), below every
    allowed document's key, and is recognised after the scan."""
    d = validate_documents(documents, doc_ids)
    q, k_eff = validate_queries(queries, d, k)
    if allowed is not None:
        allowed.check(q.shape[0], d.shape[0])
    check_block("block_size", block_size)
    if query_block_size is not None:
        check_block("query_block_size", query_block_size)
    n_queries = q.shape[0]
    if n_queries == 0 or k_eff == 0:
        return empty_result(n_queries, k_eff)
    ranks = tie_ranks(doc_ids)
    best = _scan(q, d, k_eff, ranks, block_size, query_block_size, allowed, np.float64)
    keys = np.sort(best, axis=1)[:, ::-1]
    return padded(keys, *decode_keys(keys, np.argsort(ranks)))


def top_k(
    scores: np.ndarray, k: int, *, ranks: np.ndarray, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` columns of each row of a score matrix, ranked as :func:`exact_search` ranks (float32
    score descending, equal scores by ``ranks`` descending: `tie_ranks` of the column ids), among the
    columns ``keep`` allows (a bool matrix of the same shape; all when None); padded with -1 and NaN."""
    matrix = np.asarray(scores, dtype=np.float32)
    if matrix.ndim != 2 or ranks.shape != (matrix.shape[1],):
        raise ValueError(f"scores must be (n, {ranks.shape[0]}), got {matrix.shape}")
    k_eff = min(int(k), matrix.shape[1])
    if matrix.shape[0] == 0 or k_eff == 0:
        return empty_result(matrix.shape[0], k_eff)
    keys = ranking_keys(matrix, ranks)
    if keep is not None:
        query_masks(keys, keep)
    best = np.sort(top(keys, k_eff), axis=1)[:, ::-1]
    return padded(best, *decode_keys(best, np.argsort(ranks)))


def equal_scores(
    queries: np.ndarray, documents: np.ndarray, targets: np.ndarray, *, block_size: int = DEFAULT_BLOCK_SIZE
) -> list[np.ndarray]:
    """For each query row, the positions (ascending) of every document whose score equals ``targets[row]``,
    scored exactly as :func:`exact_search` scores (float64 products rounded to float32), so a tie group
    that a ranked list cuts off can be completed: only a full scan knows every member of it."""
    d = as_matrix("documents", documents)
    q = as_matrix("queries", queries)
    wanted = np.asarray(targets, dtype=np.float32)
    if wanted.shape != (q.shape[0],):
        raise ValueError(f"targets must hold one score per query ({q.shape[0]}), got shape {wanted.shape}")
    check_block("block_size", block_size)
    rows: list[np.ndarray] = []
    columns: list[np.ndarray] = []
    q64 = q.astype(np.float64)
    for start in range(0, d.shape[0], block_size):
        scores = (q64 @ d[start : start + block_size].astype(np.float64).T).astype(np.float32)
        row, column = np.nonzero(scores == wanted[:, None])
        rows.append(row)
        columns.append(column.astype(np.int64) + start)
    # Blocks come in document order and nonzero() is row-major within one: a stable sort by row keeps
    # each query's positions ascending.
    row_of = np.concatenate([np.empty(0, dtype=np.intp), *rows])
    positions = np.concatenate([np.empty(0, dtype=np.int64), *columns])
    order = np.argsort(row_of, kind="stable")
    counts = np.bincount(row_of, minlength=q.shape[0])
    return np.split(positions[order], np.cumsum(counts)[:-1])


# ------------------------------------------------------------------------------------------------- internals


#: Shortlist widths of the float32 rounds, as multiples of k past k: a query left open by the first (more
#: documents within the error bound of its k-th score than the shortlist holds: ties) is scanned again with
#: the wider one, and one still open after it by the float64 search.
_SHORTLIST_ROUNDS = (0.25, 4.0)
_SHORTLIST_EXTRA = 16


def shortlist_width(k: int, n_documents: int, round_number: int = 0) -> int:
    """Documents a float32 round keeps per query: k and a margin for the documents within the error bound
    of the k-th score (`_SHORTLIST_ROUNDS`), at most every document."""
    margin = max(_SHORTLIST_EXTRA, int(k * _SHORTLIST_ROUNDS[round_number]))
    return min(n_documents, k + margin)


def _scan(
    q: np.ndarray,
    d: np.ndarray,
    width: int,
    ranks: np.ndarray,
    block_size: int,
    query_block_size: int | None,
    allowed: Allowed | None,
    dtype: type[np.floating],
) -> np.ndarray:
    """The ``width`` largest ranking keys of every query, in no order, its scores the products computed in
    ``dtype`` and rounded to float32; a query allowed fewer documents has zero keys (no document) for the
    rest.

    Each query keeps a *floor*: the float32 score of its width-th best key so far (until it has width,
    the lowest finite float32). A pair scoring below its query's floor has at least width better keys
    already and cannot enter the shortlist, so of each block only the pairs at or above the floor are made
    into keys: one comparison per pair instead of a key and a partition (after the first blocks, a few
    pairs per query in a block pass). A query's first block that holds width allowed documents sets its
    floor to the block's own width-th best score (one partition of that block).
    """
    n_queries, n_docs = q.shape[0], d.shape[0]
    doc_block = min(block_size, n_docs)
    per_pair = _BYTES_PER_PAIR if np.dtype(dtype) == np.float32 else _BYTES_PER_PAIR + 12
    query_block = query_block_size or max(1, SCRATCH_BYTES // (per_pair * doc_block))
    best = np.zeros((n_queries, width), dtype=np.uint64)
    floor = np.full(n_queries, LOWEST32, dtype=np.float32)
    # Documents outermost: each document block is converted once (not at all when it has the dtype).
    for d_start in range(0, n_docs, doc_block):
        d_block = d[d_start : d_start + doc_block].astype(dtype, copy=False)
        block_ranks = ranks[d_start : d_start + doc_block]
        for q_start in range(0, n_queries, query_block):
            rows = slice(q_start, q_start + query_block)
            scores = (q[rows].astype(dtype, copy=False) @ d_block.T).astype(np.float32, copy=False)
            if allowed is not None:
                # Masked pairs score -inf: below every floor, so never a key.
                masks = allowed.masks[allowed.rows[rows], d_start : d_start + doc_block]
                np.copyto(scores, -np.inf, where=~masks)
            raise_first_floors(floor[rows], scores, width)
            best[rows] = _merged(best[rows], scores, floor[rows], block_ranks)
            _raise_floors(floor[rows], best[rows])
    return best


def raise_first_floors(floor: np.ndarray, scores: np.ndarray, width: int) -> None:
    """Raise the floor of every query still without one (`LOWEST32`) to this block's width-th best score,
    where the block holds width allowed (finite) scores for it."""
    if scores.shape[1] < width:
        return
    unset = np.flatnonzero(floor == LOWEST32)
    if unset.size == 0:
        return
    column = scores.shape[1] - width
    nth = np.partition(scores[unset], column, axis=1)[:, column]
    finite = np.isfinite(nth)
    floor[unset[finite]] = nth[finite]


def _merged(kept: np.ndarray, scores: np.ndarray, floor: np.ndarray, block_ranks: np.ndarray) -> np.ndarray:
    """The width (``kept.shape[1]``) largest keys of each query among ``kept`` and the block's pairs at or
    above its floor."""
    return merged_keys(kept, scores, floor, block_ranks, ranking_keys)


def merged_keys(
    kept: np.ndarray,
    scores: np.ndarray,
    floor: np.ndarray,
    block_ranks: np.ndarray,
    keys_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """The ``kept.shape[1]`` largest keys of each query among ``kept`` and the block's pairs at or above its
    floor, each pair keyed by ``keys_of(scores, ranks)`` (`ranking_keys`, or integer scores' keys)."""
    n_rows, n_columns = scores.shape
    passing = np.flatnonzero(scores >= floor[:, None])
    if passing.size == 0:
        return kept
    rows, columns = np.divmod(passing, n_columns)
    keys = keys_of(scores.reshape(-1)[passing], block_ranks[columns])
    counts = np.bincount(rows, minlength=n_rows)
    # np.flatnonzero is row-major: each row's pairs are contiguous, so a pair's place in its row's list is its
    # index less the row's first index.
    starts = np.cumsum(counts) - counts
    placed = np.zeros((n_rows, int(counts.max())), dtype=np.uint64)
    placed[rows, np.arange(passing.size) - starts[rows]] = keys
    return top(np.concatenate([kept, placed], axis=1), kept.shape[1])


def _raise_floors(floor: np.ndarray, kept: np.ndarray) -> None:
    """Raise each query's floor to the score of its smallest kept key, once it keeps width documents."""
    smallest = kept.min(axis=1)
    full = smallest >= _SCORED
    floor[full] = np.maximum(floor[full], key_scores(smallest[full]))


def _float32_rounds(
    q: np.ndarray,
    d: np.ndarray,
    k: int,
    *,
    doc_ids: Sequence[str],
    block_size: int,
    query_block_size: int | None,
    allowed: Allowed | None,
    device: str | None,
) -> tuple[np.ndarray, np.ndarray]:
    """`exact_search` once its inputs are checked: the float32 rounds (numpy, or torch on ``device``), then
    `float64_search` for the queries they leave open."""
    n_queries, n_docs = q.shape[0], d.shape[0]
    ranks = tie_ranks(doc_ids)
    position_of_rank = np.argsort(ranks)
    bound = float32_bound(row_norms(q), float(row_norms(d).max()), q.shape[1])
    positions, scores = empty_result(n_queries, k)
    open_rows = np.arange(n_queries)
    for round_number in range(len(_SHORTLIST_ROUNDS)):
        width = shortlist_width(k, n_docs, round_number)
        subset = allowed.select(open_rows) if allowed is not None else None
        if device is None:
            scanned = _scan(q[open_rows], d, width, ranks, block_size, query_block_size, subset, np.float32)
        else:
            from pytest_embeval.search.torch_scan import torch_scan

            positions_found, values = torch_scan(q[open_rows], d, width, subset, device)
            masked = np.isneginf(values)
            scanned = ranking_keys(np.where(masked, np.float32(0), values), ranks[positions_found])
            query_masks(scanned, ~masked)
        keys = np.sort(scanned)
        keys = keys[:, ::-1]
        _, approximate = padded(keys, *decode_keys(keys, position_of_rank))
        # Shown in float32_bound: a document of the float64 top k scores at least (k-th float32 score - 2B)
        # in float32; every document outside the shortlist scores at most its last float32 score. A NaN
        # last score is a masked key: the shortlist holds every allowed document.
        kth, last = approximate[:, k - 1].astype(np.float64), approximate[:, -1].astype(np.float64)
        closed = (width == n_docs) | np.isnan(last) | (last < kth - 2.0 * bound[open_rows])
        rows = open_rows[closed]
        positions[rows], scores[rows] = _rescored(q[rows], d, k, keys[closed], ranks, position_of_rank)
        open_rows = open_rows[~closed]
        if open_rows.size == 0:
            return positions, scores
    positions[open_rows], scores[open_rows] = float64_search(
        q[open_rows],
        d,
        k,
        doc_ids=doc_ids,
        block_size=block_size,
        query_block_size=query_block_size,
        allowed=allowed.select(open_rows) if allowed is not None else None,
    )
    return positions, scores


def _rescored(
    q: np.ndarray,
    d: np.ndarray,
    k: int,
    shortlist: np.ndarray,
    ranks: np.ndarray,
    position_of_rank: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The top k of each query's shortlist (its keys, a masked key for no document) by the float64 search's
    scores: each pair's float64 dot product rounded to float32 (as `search.hnsw` rescores its candidates),
    ranked by the same keys."""
    n_queries, width = shortlist.shape
    positions, scores = empty_result(n_queries, k)
    if n_queries == 0:
        return positions, scores
    found = shortlist >= _SCORED
    candidates = np.where(found, position_of_rank[(shortlist & _LOW32).astype(np.int64)], 0)
    step = max(1, SCRATCH_BYTES // (8 * width * q.shape[1]))
    for start in range(0, n_queries, step):
        block = candidates[start : start + step]
        # einsum converts the gathered rows to float64 in its own buffer: the same products and sums as a
        # float64 copy of them, at half the memory traffic.
        q64 = q[start : start + step].astype(np.float64)
        exact = np.einsum("id,ikd->ik", q64, d[block], dtype=np.float64).astype(np.float32)
        keys = ranking_keys(exact, ranks[block])
        query_masks(keys, found[start : start + step])
        keys = np.sort(top(keys, k), axis=1)[:, ::-1]
        positions[start : start + step], scores[start : start + step] = padded(
            keys, *decode_keys(keys, position_of_rank)
        )
    return positions, scores


def ranking_keys(scores: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys: float32 score in the high 32 bits, tie rank in the low 32 bits."""
    # Adding +0.0 turns -0.0 into +0.0: trec_eval sees them as equal scores, so they must get equal keys.
    bits = (np.asarray(scores, dtype=np.float32) + np.float32(0.0)).view(np.uint32)
    # Negative scores: flip every bit (larger magnitude sorts lower); others: set the sign bit. The arithmetic
    # shift builds that mask without branching (this runs on every (query, document) pair).
    flip = (bits.view(np.int32) >> 31).view(np.uint32)
    flip |= _SIGN
    keys = np.empty(bits.shape, dtype=np.uint64)
    # The two halves written in place through a uint32 view: no shift and no second uint64 pass.
    halves = keys.view(np.uint32).reshape(*bits.shape, 2)
    low, high = (0, 1) if sys.byteorder == "little" else (1, 0)
    np.bitwise_xor(bits, flip, out=halves[..., high])
    halves[..., low] = ranks
    return keys


def decode_keys(keys: np.ndarray, position_of_rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    positions = position_of_rank[(keys & _LOW32).astype(np.int64)]
    return positions.astype(np.int64), key_scores(keys)


def key_scores(keys: np.ndarray) -> np.ndarray:
    """The float32 scores of ranking keys (a masked key's is meaningless: see `padded`)."""
    high = (keys >> np.uint64(32)).astype(np.uint32)
    scores: np.ndarray = np.where(high & _SIGN, high ^ _SIGN, ~high).astype(np.uint32).view(np.float32)
    return scores


#: `query_masks`'s keys by the mask's bool: masked out keeps the tie rank alone, allowed keeps the whole key.
_KEPT_BITS = np.array([0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)
#: Keys below this have no score bits: masked out. A finite float32 score maps to 0x00800000 or more.
_SCORED = np.uint64(1 << 32)


def query_masks(keys: np.ndarray, keep: np.ndarray) -> None:
    """Clear the score bits of the keys ``keep`` rejects, in place, so they sort below every kept key.

    Their tie ranks stay, so masked keys remain distinct: np.partition slows down tenfold on a row of
    many equal values (a selective filter would otherwise leave mostly zeros).
    """
    np.bitwise_and(keys, _KEPT_BITS[keep.view(np.uint8)], out=keys)


def padded(keys: np.ndarray, positions: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decoded results with a masked key (a masked-out or missing document) as position -1 and score NaN."""
    empty = keys < _SCORED
    if empty.any():
        positions[empty] = -1
        scores[empty] = np.nan
    return positions, scores


def empty_result(n_queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty((n_queries, k), dtype=np.int64), np.empty((n_queries, k), dtype=np.float32)


def top(keys: np.ndarray, k: int) -> np.ndarray:
    """The k largest keys of each row, in no particular order, in an array of their own: a slice of the
    partitioned row block would keep all of it alive (exact search holds one per query block until a
    document block ends: 100 MB at 1,500 queries x 8,192 documents, instead of 1 MB)."""
    n = keys.shape[1]
    if n <= k:
        return keys
    top: np.ndarray = np.partition(keys, n - k, axis=1)[:, n - k :].copy()
    return top


def check_block(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def validate_documents(documents: np.ndarray, doc_ids: Sequence[str]) -> np.ndarray:
    d = as_matrix("documents", documents)
    if len(doc_ids) != d.shape[0]:
        raise ValueError(f"doc_ids has {len(doc_ids)} ids but documents has {d.shape[0]} rows")
    if d.shape[0] > 2**32:
        raise ValueError(f"at most 2**32 documents are supported, got {d.shape[0]}")
    if all(type(doc_id) is str for doc_id in doc_ids) and len(set(doc_ids)) == len(doc_ids):
        return d  # the common case, checked at C speed
    seen: set[str] = set()
    for position, doc_id in enumerate(doc_ids):
        if not isinstance(doc_id, str):
            raise ValueError(f"doc_ids[{position}] is {type(doc_id).__name__}, not str: {doc_id!r}")
        if doc_id in seen:
            raise ValueError(f"doc_ids must be unique: {doc_id!r} appears more than once")
        seen.add(doc_id)
    return d


def validate_queries(queries: np.ndarray, documents: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """The query matrix and the effective k, min(k, number of documents)."""
    q = as_matrix("queries", queries)
    if q.shape[1] != documents.shape[1]:
        raise ValueError(
            f"queries have dimension {q.shape[1]} but documents have dimension {documents.shape[1]}"
        )
    check_block("k", k)
    return q, min(int(k), documents.shape[0])


def as_matrix(name: str, array: np.ndarray) -> np.ndarray:
    matrix = np.asarray(array)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows x dimension), got shape {matrix.shape}")
    if matrix.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {matrix.dtype}")
    # Row blocks keep the temporary boolean array small for large corpora.
    for start in range(0, matrix.shape[0], 65536):
        bad = ~np.isfinite(matrix[start : start + 65536]).all(axis=1)
        if bad.any():
            raise ValueError(f"{name} contain NaN or inf (first in row {start + int(np.argmax(bad))})")
    return matrix
