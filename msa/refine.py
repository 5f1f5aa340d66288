"""Iterative refinement: split the rows in two, realign the two halves, keep what scores better.

Tree-dependent restricted partitioning (MUSCLE's and FAMSA's refinement, anchor C10): a
candidate split cuts one edge of the guide tree (the rows under a node against the rest) or
takes the rows that hold a gap in one column against the others (FAMSA's splits). Each half
keeps its own alignment, its all-gap columns dropped, and the two halves are realigned with the
merge the progressive stage does (``Backend.profile_align``). ``batch`` candidates go to the
backend in one call per round; the best one is kept if it raises the objective, else the round
is spent. Everything is integer and the candidates come from a seeded generator, so both
backends give the same bytes.

The objective is the sum of pairs of the alignment in FAMSA's column-wise form (the scores its
profile DP adds up, anchor C4): per column, every residue pair scored by the matrix, and every
residue against every gap of the column charged that gap's type (internal open or extension,
terminal open or extension), the open charged in the first column of a run. It is a function
of the profile table of the whole alignment (:func:`sp_objective`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from msa.alphabet import N_CODES
from msa.params import GapCosts
from msa.profile import GO, TGE, AlignBatch, block_counts, gap_vector
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree


def sp_objective(counts: np.ndarray, col_offsets: np.ndarray, matrix: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Sum-of-pairs score of each alignment whose profile tables are laid end to end
    (alignment ``k`` is ``counts[col_offsets[k]:col_offsets[k+1]]``), int64.

    Per column: ``sum_{a<b} c_a c_b M[a,b] + sum_a c_a (c_a - 1) / 2 M[a,a]`` over the residue
    counts ``c``, plus the residue count times the gap counts weighted by their costs
    (``gaps``: open, extend, terminal open, terminal extend, negative).
    """
    c = counts[:, :N_CODES].astype(np.int64)
    m = np.asarray(matrix, dtype=np.int64)
    pairs = ((c @ m) * c).sum(axis=1) - c @ np.diagonal(m)  # twice the pair sum, so even
    gap = c.sum(axis=1) * (counts[:, GO : TGE + 1].astype(np.int64) @ np.asarray(gaps, dtype=np.int64))
    per_col = pairs // 2 + gap
    edges = np.asarray(col_offsets, dtype=np.int64)
    return np.add.reduceat(np.append(per_col, 0), edges[:-1]) * (edges[1:] > edges[:-1])


@dataclass
class Splits:
    """Candidate splits of the rows: ``masks[k]`` is side one of split ``k`` (bool rows)."""

    masks: np.ndarray  # bool (n_candidates, n_rows)

    @staticmethod
    def of_tree(tree: GuideTree) -> "Splits":
        """The rows under each node against the rest: one split per tree edge (the root's two
        children give one split; leaves are single rows)."""
        n = tree.n_leaves
        order = tree.leaf_order()
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        lo = np.concatenate((pos, np.zeros(n - 1, dtype=np.int64)))
        hi = np.concatenate((pos + 1, np.zeros(n - 1, dtype=np.int64)))
        for k, (a, b) in enumerate(tree.children):  # children before parents: one pass over nodes
            lo[n + k], hi[n + k] = min(lo[a], lo[b]), max(hi[a], hi[b])
        nodes = np.arange(tree.n_nodes - 1)
        if n > 2:  # the root's second child splits the rows as its first does
            nodes = nodes[nodes != tree.children[-1, 1]]
        ranks = np.arange(n)
        in_node = (ranks[None, :] >= lo[nodes, None]) & (ranks[None, :] < hi[nodes, None])
        return Splits(in_node[:, pos])


def _gap_splits(gapped_cols: np.ndarray, columns: np.ndarray, row_of: np.ndarray, n: int) -> np.ndarray:
    """Rows holding a gap in each of ``gapped_cols`` (FAMSA's splits), bool ``(len, n)``."""
    where = np.full(columns.max(initial=-1) + 1, -1, dtype=np.int64)
    where[gapped_cols] = np.arange(len(gapped_cols))
    k = where[columns]
    has = np.zeros((len(gapped_cols), n), dtype=bool)
    hit = k >= 0
    has[k[hit], row_of[hit]] = True
    return ~has


def refine(
    db: SeqDB,
    columns: np.ndarray,
    width: int,
    tree: GuideTree | None,
    matrix: np.ndarray,
    gaps: GapCosts,
    backend,
    rounds: int,
    batch: int = 16,
    seed: int = 0,
    source: str = "tree",
    objective: str = "sp",
    partners: int = 4,
    advance: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, int]:
    """``rounds`` rounds of refinement of the alignment ``columns`` (``db.codes`` layout) of
    ``width`` columns; returns the new ``(columns, width, accepted steps)``.

    Stops early once every candidate of ``source``
    (``tree``: guide-tree edges; ``gaps``: gap-pattern columns) has been tried since the last
    accepted step.
    """
    n = len(db)
    if n < 3 or rounds <= 0:
        return columns, width, 0
    codes, offsets = db.codes, np.asarray(db.offsets, dtype=np.int64)
    row_of = np.repeat(np.arange(n), np.diff(offsets))
    m = np.ascontiguousarray(matrix, dtype=np.int64)
    g = gap_vector(gaps)
    cols, w = _compact(np.asarray(columns, dtype=np.int64))
    rng = np.random.default_rng(seed)
    library = None
    if objective == "consistency":
        library = pair_library(codes, offsets, _partner_pairs(n, partners, rng), m, g, backend)
    best = _score(codes, offsets, [cols], [w], m, g, library)[0]
    tree_masks = None
    if source in ("tree", "both") and tree is not None and tree.n_leaves == len(db):
        tree_masks = Splits.of_tree(tree).masks
    tried: set[bytes] = set()
    accepted = 0
    for _ in range(rounds):
        if advance is not None:
            advance(1)
        masks = _candidates(tree_masks, source, cols, w, row_of, n, rng, batch, tried)
        if len(masks) == 0:
            break
        new_cols, new_w = _realign(codes, offsets, row_of, cols, masks, m, g, backend)
        scores = _score(codes, offsets, new_cols, new_w, m, g, library)
        k = int(np.argmax(scores))
        if scores[k] > best:
            cols, w, best = new_cols[k], new_w[k], scores[k]
            accepted += 1
            tried.clear()
    return cols, w, accepted


def _compact(cols: np.ndarray) -> tuple[np.ndarray, int]:
    """Columns renumbered without the all-gap ones."""
    used = np.zeros(cols.max(initial=-1) + 1, dtype=bool)
    used[cols] = True
    return (np.cumsum(used) - 1)[cols], int(used.sum())


def _candidates(
    tree_masks: np.ndarray | None, source: str, cols: np.ndarray, w: int, row_of: np.ndarray, n: int,
    rng: np.random.Generator, batch: int, tried: set[bytes],
) -> np.ndarray:
    """Up to ``batch`` distinct splits not tried since the last accepted step (each side
    non-empty), drawn by ``rng``; marked tried."""
    pool = np.zeros((0, n), dtype=bool)
    if source in ("gaps", "both"):
        counts = np.bincount(cols, minlength=w)
        mixed = np.flatnonzero((counts > 0) & (counts < n))
        pool = _gap_splits(mixed, cols, row_of, n)
    if tree_masks is not None:
        pool = np.concatenate((tree_masks, pool))
    keys = np.packbits(pool, axis=1)
    fresh = [i for i in range(len(pool)) if keys[i].tobytes() not in tried and 0 < pool[i].sum() < n]
    if not fresh:
        return np.zeros((0, n), dtype=bool)
    pick = rng.permutation(np.asarray(fresh))
    out, seen = [], set()
    for i in pick:
        key = keys[i].tobytes()
        if key in seen:
            continue
        seen.add(key)
        out.append(i)
        if len(out) == batch:
            break
    tried.update(seen)
    return pool[np.asarray(out)]


def _realign(
    codes: np.ndarray, offsets: np.ndarray, row_of: np.ndarray, cols: np.ndarray, masks: np.ndarray,
    matrix: np.ndarray, gaps: np.ndarray, backend,
) -> list[tuple[np.ndarray, int, int]]:
    """Every split of ``masks`` realigned in one ``profile_align`` call: per split, the new
    columns, width and objective."""
    lengths = np.diff(offsets)
    tables, widths, n_seqs, sides = [], [], [], []
    for mask in masks:
        for side in (mask, ~mask):
            res = side[row_of]
            rank, w = _compact(cols[res])
            side_off = np.concatenate(([0], np.cumsum(lengths[side])))
            tables.append(block_counts(codes[res], side_off, rank, w))
            widths.append(w)
            n_seqs.append(int(side.sum()))
            sides.append((res, rank))
    col_off = np.concatenate(([0], np.cumsum(widths))).astype(np.int64)
    result = backend.profile_align(AlignBatch(
        np.concatenate(tables), col_off, np.asarray(n_seqs, dtype=np.int64), matrix, gaps, parents=False,
    ))
    maps = backend.to_host(result.maps).astype(np.int64)
    parent_off = np.asarray(backend.to_host(result.col_offsets), dtype=np.int64)
    out = []
    for k in range(len(masks)):
        new = np.empty_like(cols)
        for s in (2 * k, 2 * k + 1):
            res, rank = sides[s]
            new[res] = maps[col_off[s] : col_off[s + 1]][rank]
        out.append(new)
    return out, np.diff(parent_off).tolist()


def _score(codes, offsets, cols_list, widths, matrix, gaps, library) -> np.ndarray:
    """The objective of each alignment: the sum of pairs, or with a ``library`` the number of
    its residue pairs that the alignment puts in one column."""
    if library is not None:
        li, lj = library
        return np.array([np.count_nonzero(c[li] == c[lj]) for c in cols_list], dtype=np.int64)
    tables = [block_counts(codes, offsets, c, w) for c, w in zip(cols_list, widths)]
    return sp_objective(np.concatenate(tables), np.concatenate(([0], np.cumsum(widths))), matrix, gaps)


def _partner_pairs(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``k`` random partners of each row, as distinct pairs ``(a < b)``."""
    a = np.repeat(np.arange(n), k)
    b = (a + rng.integers(1, n, len(a))) % n
    pairs = np.unique(np.sort(np.stack((a, b), axis=1), axis=1), axis=0)
    return pairs


def pair_library(codes, offsets, pairs, matrix, gaps, backend) -> tuple[np.ndarray, np.ndarray]:
    """Residue pairs (indices into ``codes``) that the pairwise alignment of each pair of rows
    aligns, every pair aligned as a merge of two one-sequence profiles, in one call."""
    from msa.profile import sequence_counts
    from msa.seqdb import _ranges

    lengths = np.diff(offsets)
    seqs = pairs.reshape(-1)
    idx = _ranges(offsets[seqs], lengths[seqs])
    col_off = np.concatenate(([0], np.cumsum(lengths[seqs]))).astype(np.int64)
    result = backend.profile_align(AlignBatch(
        sequence_counts(codes[idx]), col_off, np.ones(len(seqs), dtype=np.int64), matrix, gaps, parents=False,
    ))
    maps = backend.to_host(result.maps).astype(np.int64)
    merge = np.repeat(np.arange(len(seqs)) // 2, lengths[seqs])
    key = merge * (int(maps.max(initial=0)) + 1) + maps
    side = np.repeat(np.arange(len(seqs)) % 2, lengths[seqs]).astype(bool)
    _, ia, ib = np.intersect1d(key[~side], key[side], assume_unique=True, return_indices=True)
    return idx[~side][ia], idx[side][ib]
