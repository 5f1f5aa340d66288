"""Iterative refinement: split the rows in two, realign the two halves, keep what scores better.

Restricted partitioning, as FAMSA (anchor C10) and MUSCLE refine: a candidate split takes the
rows that hold a gap in one column against the others (FAMSA's splits), or cuts one edge of the
guide tree (MUSCLE's). Each half keeps its own alignment, its all-gap columns dropped, and the
two halves are realigned with the merge of the progressive stage (``Backend.profile_align``).
A round sends ``batch`` candidates to the backend in one call and keeps the best one if it
raises the objective. Everything is integer and the candidates come from a seeded generator,
so both backends give the same bytes.

Two objectives (docs/accuracy.md has the numbers that chose the default):

* ``consistency``: how many residue pairs of a library the alignment puts in one column. The
  library is the pairwise alignments of each row with ``partners`` random others (unrescaled
  gap costs, each pair a merge of two one-sequence profiles, so the backend aligns them all in a
  few calls), the evidence that T-Coffee's and MAFFT's consistency objectives weigh.
* ``sp``: the sum of pairs in FAMSA's column-wise form (:func:`sp_objective`, the score its
  profile DP adds up), FAMSA's own acceptance test.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from msa.alphabet import N_CODES
from msa.params import GapCosts
from msa.profile import GO, TGE, AlignBatch, block_counts, gap_vector, sequence_counts
from msa.seqdb import SeqDB, _ranges

if TYPE_CHECKING:
    from msa.tree.guide_tree import GuideTree

#: Residues of the pairwise alignments sent to the backend in one call (their one-hot tables,
#: 112 bytes a residue, bound the memory).
LIBRARY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Method:
    """How to refine: where splits come from (``gaps`` or ``tree``), what decides (``consistency``
    or ``sp``), candidates per backend call, library partners of each row."""

    source: str = "gaps"
    objective: str = "consistency"
    batch: int = 16
    partners: int = 8


def refine(
    db: SeqDB,
    columns: np.ndarray,
    width: int,
    tree: GuideTree | None,
    matrix: np.ndarray,
    gaps: GapCosts,
    pair_gaps: GapCosts,
    backend,
    rounds: int,
    seed: int = 0,
    method: Method = Method(),
    advance: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, int]:
    """Up to ``rounds`` rounds of refinement of the alignment ``columns`` (``db.codes`` layout,
    no all-gap column) of ``width`` columns, realigning with ``gaps`` (the family's) and building
    the library with ``pair_gaps`` (two sequences'); returns ``(columns, width, accepted steps)``.
    Stops early once every split has been tried since the last accepted step.
    """
    n = len(db)
    if n < 3 or rounds <= 0:
        return columns, width, 0
    codes, offsets = db.codes, np.asarray(db.offsets, dtype=np.int64)
    row_of = np.repeat(np.arange(n), np.diff(offsets))
    m = np.ascontiguousarray(matrix, dtype=np.int64)
    g = gap_vector(gaps)
    cols = np.asarray(columns, dtype=np.int64)
    rng = np.random.default_rng(seed)
    library = None
    if method.objective == "consistency":
        library = pair_library(codes, offsets, partner_pairs(n, method.partners, rng), m, gap_vector(pair_gaps),
                               backend)
    best = _score(codes, offsets, [cols], [width], m, g, library)[0]
    tree_masks = tree_splits(tree) if method.source == "tree" and tree is not None else None
    tried: set[bytes] = set()
    accepted = 0
    for _ in range(rounds):
        if advance is not None:
            advance(1)
        masks = _candidates(tree_masks, cols, width, row_of, n, rng, method.batch, tried)
        if len(masks) == 0:
            break
        new_cols, new_widths = _realign(codes, offsets, row_of, cols, masks, m, g, backend)
        scores = _score(codes, offsets, new_cols, new_widths, m, g, library)
        k = int(np.argmax(scores))
        if scores[k] > best:
            cols, width, best = new_cols[k], new_widths[k], scores[k]
            accepted += 1
            tried.clear()
    return cols, width, accepted


def sp_objective(counts: np.ndarray, col_offsets: np.ndarray, matrix: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Sum-of-pairs score of each alignment whose profile tables are laid end to end
    (alignment ``k`` is ``counts[col_offsets[k]:col_offsets[k+1]]``), int64.

    Per column: ``sum_{a<b} c_a c_b M[a,b] + sum_a c_a (c_a - 1) / 2 M[a,a]`` over the residue
    counts ``c``, plus the residue count times the gap counts weighted by their costs
    (``gaps``: open, extend, terminal open, terminal extend, negative): every residue against
    every gap of its column, the open charged in the first column of a run.
    """
    c = counts[:, :N_CODES].astype(np.int64)
    m = np.asarray(matrix, dtype=np.int64)
    pairs = ((c @ m) * c).sum(axis=1) - c @ np.diagonal(m)  # twice the pair sum, so even
    gap = c.sum(axis=1) * (counts[:, GO : TGE + 1].astype(np.int64) @ np.asarray(gaps, dtype=np.int64))
    per_col = pairs // 2 + gap
    edges = np.asarray(col_offsets, dtype=np.int64)
    return np.add.reduceat(np.append(per_col, 0), edges[:-1]) * (edges[1:] > edges[:-1])


def consistency(columns: np.ndarray, library: tuple[np.ndarray, np.ndarray]) -> int:
    """How many of the ``library``'s residue pairs (indices into the residues) share a column."""
    return int(np.count_nonzero(columns[library[0]] == columns[library[1]]))


def tree_splits(tree: GuideTree) -> np.ndarray:
    """The rows under each node against the rest, one split per tree edge (the root's second
    child splits as its first, so it is left out): bool ``(splits, rows)``."""
    n = tree.n_leaves
    order = tree.leaf_order()
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    lo = np.concatenate((pos, np.zeros(n - 1, dtype=np.int64)))
    hi = np.concatenate((pos + 1, np.zeros(n - 1, dtype=np.int64)))
    for k, (a, b) in enumerate(tree.children):  # children before parents: one pass over the nodes
        lo[n + k], hi[n + k] = min(lo[a], lo[b]), max(hi[a], hi[b])
    nodes = np.arange(tree.n_nodes - 1)
    if n > 2:
        nodes = nodes[nodes != tree.children[-1, 1]]
    ranks = np.arange(n)
    in_node = (ranks[None, :] >= lo[nodes, None]) & (ranks[None, :] < hi[nodes, None])
    return in_node[:, pos]


def partner_pairs(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` random partners of each row, as distinct pairs ``(a, b)``, ``a < b``."""
    a = np.repeat(np.arange(n), k)
    b = (a + rng.integers(1, n, len(a))) % n
    return np.unique(np.sort(np.stack((a, b), axis=1), axis=1), axis=0)


def pair_library(codes, offsets, pairs, matrix, gaps, backend) -> tuple[np.ndarray, np.ndarray]:
    """Residue pairs (indices into ``codes``) that the pairwise alignment of each pair of rows
    aligns, each pair a merge of two one-sequence profiles, in calls of ~LIBRARY_CHUNK residues."""
    pair_len = np.diff(offsets)[pairs].sum(axis=1)
    chunk = np.cumsum(pair_len) // LIBRARY_CHUNK
    cuts = np.concatenate(([0], np.flatnonzero(chunk[1:] != chunk[:-1]) + 1, [len(pairs)]))
    parts = [_aligned_pairs(codes, offsets, pairs[a:b], matrix, gaps, backend) for a, b in zip(cuts[:-1], cuts[1:])]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _aligned_pairs(codes, offsets, pairs, matrix, gaps, backend) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pair_library` of ``pairs`` in one ``profile_align`` call."""
    lengths = np.diff(offsets)
    seqs = pairs.reshape(-1)
    idx = _ranges(offsets[seqs], lengths[seqs])
    col_off = np.concatenate(([0], np.cumsum(lengths[seqs]))).astype(np.int64)
    xp = backend.xp
    result = backend.profile_align(AlignBatch(
        sequence_counts(xp.asarray(codes[idx]), xp), col_off, np.ones(len(seqs), dtype=np.int64), matrix, gaps,
        parents=False,
    ))
    maps = backend.to_host(result.maps).astype(np.int64)
    merge = np.repeat(np.arange(len(seqs)) // 2, lengths[seqs])
    key = merge * (int(maps.max(initial=0)) + 1) + maps  # (pair, parent column): one per residue of a side
    second = np.repeat(np.arange(len(seqs)) % 2, lengths[seqs]).astype(bool)
    _, ia, ib = np.intersect1d(key[~second], key[second], assume_unique=True, return_indices=True)
    return idx[~second][ia], idx[second][ib]


def _score(codes, offsets, cols_list, widths, matrix, gaps, library) -> np.ndarray:
    """The objective of each alignment: consistency with a ``library``, else the sum of pairs."""
    if library is not None:
        return np.array([consistency(c, library) for c in cols_list], dtype=np.int64)
    tables = [block_counts(codes, offsets, c, w) for c, w in zip(cols_list, widths)]
    return sp_objective(np.concatenate(tables), np.concatenate(([0], np.cumsum(widths))), matrix, gaps)


def _candidates(
    tree_masks: np.ndarray | None, cols: np.ndarray, width: int, row_of: np.ndarray, n: int,
    rng: np.random.Generator, batch: int, tried: set[bytes],
) -> np.ndarray:
    """Up to ``batch`` distinct splits (each side non-empty) not tried since the last accepted
    step, drawn by ``rng`` and marked tried: the tree's, else the gap patterns of the columns
    that mix residues and gaps."""
    if tree_masks is not None:
        pool = tree_masks
    else:
        counts = np.bincount(cols, minlength=width)
        mixed = np.flatnonzero(counts < n)
        where = np.full(width, -1, dtype=np.int64)
        where[mixed] = np.arange(len(mixed))
        k = where[cols]
        has = np.zeros((len(mixed), n), dtype=bool)
        has[k[k >= 0], row_of[k >= 0]] = True
        pool = ~has  # the rows with a gap there
    keys = np.packbits(pool, axis=1)
    sizes = pool.sum(axis=1)
    fresh = [i for i in np.flatnonzero((sizes > 0) & (sizes < n)) if keys[i].tobytes() not in tried]
    out: list[int] = []
    seen: set[bytes] = set()
    for i in rng.permutation(np.asarray(fresh, dtype=np.int64)):
        key = keys[i].tobytes()
        if key not in seen:
            seen.add(key)
            out.append(int(i))
            if len(out) == batch:
                break
    tried.update(seen)
    return pool[np.asarray(out, dtype=np.int64)]


def _realign(
    codes: np.ndarray, offsets: np.ndarray, row_of: np.ndarray, cols: np.ndarray, masks: np.ndarray,
    matrix: np.ndarray, gaps: np.ndarray, backend,
) -> tuple[list[np.ndarray], list[int]]:
    """Every split of ``masks`` realigned, in one ``profile_align`` call: each one's new columns
    and width. A side's profile is its rows' table without its all-gap columns."""
    lengths = np.diff(offsets)
    tables, widths, n_seqs, sides = [], [], [], []
    for mask in masks:
        for side in (mask, ~mask):
            res = side[row_of]
            used = np.zeros(int(cols.max()) + 1, dtype=bool)
            used[cols[res]] = True
            rank = (np.cumsum(used) - 1)[cols[res]]
            tables.append(block_counts(codes[res], np.concatenate(([0], np.cumsum(lengths[side]))), rank,
                                       int(used.sum())))
            widths.append(int(used.sum()))
            n_seqs.append(int(side.sum()))
            sides.append((res, rank))
    col_off = np.concatenate(([0], np.cumsum(widths))).astype(np.int64)
    result = backend.profile_align(AlignBatch(
        np.concatenate(tables), col_off, np.asarray(n_seqs, dtype=np.int64), matrix, gaps, parents=False,
    ))
    maps = backend.to_host(result.maps).astype(np.int64)
    new_widths = np.diff(np.asarray(backend.to_host(result.col_offsets), dtype=np.int64)).tolist()
    out = []
    for k in range(len(masks)):
        new = np.empty_like(cols)
        for s in (2 * k, 2 * k + 1):
            res, rank = sides[s]
            new[res] = maps[col_off[s] : col_off[s + 1]][rank]
        out.append(new)
    return out, new_widths
