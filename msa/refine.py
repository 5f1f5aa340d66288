"""Iterative refinement: split the rows in two, realign the two halves, keep what scores better.

Restricted partitioning, as FAMSA (src/msa_refinement.cpp) and MUSCLE refine: a candidate split takes the
rows that hold a gap in one column against the others (FAMSA's splits), or cuts one edge of the
guide tree (MUSCLE's). Each half keeps its own alignment, its all-gap columns dropped, and the
two halves are realigned with the merge of the progressive stage (``Backend.profile_align``).
A round sends ``batch`` candidates to the backend in one call and keeps the best one if it
raises the objective. Everything is integer and the candidates come from a seeded generator,
so both backends give the same bytes.

Two objectives (docs/accuracy.md has the numbers that chose the default):

* ``consistency``: how many residue pairs of a library the alignment puts in one column. The
  library is the pairwise alignments of each row with its ``partners`` nearest rows in the guide
  tree's leaf order (or random ones), with unrescaled gap costs, each pair a merge of two
  one-sequence profiles, so the backend aligns them all in a few calls: the evidence that
  T-Coffee's and MAFFT's consistency objectives weigh.
* ``sp``: the sum of pairs in FAMSA's column-wise form (:func:`sp_objective`, the score its
  profile DP adds up), FAMSA's own acceptance test.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numba import prange

from msa.jit import njit
from msa.alphabet import N_CODES
from msa.params import GapCosts
from msa.profile import GE, GO, N_COUNTS, TGE, TGO, AlignBatch, block_counts, gap_vector
from msa.seqdb import SeqDB

if TYPE_CHECKING:
    from msa.tree.guide_tree import GuideTree

#: Residues of the pairwise alignments sent to the backend in one call (their one-hot tables,
#: 112 bytes a residue, bound the memory).
LIBRARY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Method:
    """How to refine: where splits come from (``gaps`` or ``tree``), what decides (``consistency``
    or ``sp``), candidates per backend call, how many library partners each row has and which
    (``neighbours`` in the guide tree's leaf order, or ``random``)."""

    source: str = "gaps"
    objective: str = "consistency"
    batch: int = 8
    partners: int = 8
    library: str = "neighbours"


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
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, int, int]:
    """Up to ``rounds`` rounds of refinement of the alignment ``columns`` (``db.codes`` layout,
    no all-gap column) of ``width`` columns, realigning with ``gaps`` (the family's) and the
    sequences' ``weights`` (those of the progressive stage, or None) and building the library
    with ``pair_gaps`` (two sequences'); returns ``(columns, width, accepted steps)``.
    Stops early once every split has been tried since the last accepted step.
    """
    return refine_many([db], [columns], [width], [tree], matrix, [gaps], pair_gaps, backend, rounds, seed, method,
                       advance, [weights])[0]


def refine_many(
    dbs: list[SeqDB],
    columns: list[np.ndarray],
    widths: list[int],
    trees: list[GuideTree | None],
    matrix: np.ndarray,
    gaps: list[GapCosts],
    pair_gaps: GapCosts,
    backend,
    rounds: int,
    seed: int = 0,
    method: Method = Method(),
    advance: Callable[[int], None] | None = None,
    weights: list[np.ndarray | None] | None = None,
) -> list[tuple[np.ndarray, int, int]]:
    """:func:`refine` of many families in shared backend calls: one library for all, and each
    round every family's candidates in one ``profile_align`` (each merge with its family's gap
    costs and weights), so each family gets what :func:`refine` gives it alone."""
    m = np.ascontiguousarray(matrix, dtype=np.int64)
    out = [(np.asarray(c, dtype=np.int64), int(w), 0) for c, w in zip(columns, widths)]
    weights = [None] * len(dbs) if weights is None else weights
    states = [_Family(db, out[f][0], out[f][1], tree, gap_vector(g), seed, method, w)
              for f, (db, tree, g, w) in enumerate(zip(dbs, trees, gaps, weights)) if len(db) >= 3 and rounds > 0]
    index = [f for f, db in enumerate(dbs) if len(db) >= 3 and rounds > 0]
    if method.objective == "consistency" and states:
        _libraries(states, m, gap_vector(pair_gaps), backend)
    for state in states:
        state.best = state.score([state.cols], [state.width], m)[0]
    for _ in range(rounds):
        proposals = [(state, state.candidates()) for state in states if not state.done]
        proposals = [(state, masks) for state, masks in proposals if len(masks)]
        if not proposals:
            break
        if advance is not None:
            advance(1)
        parts = [state.sides(masks) for state, masks in proposals]
        n_merges = [len(masks) for _, masks in proposals]
        widths_all = np.concatenate([p[1] for p in parts])
        col_off = np.concatenate(([0], np.cumsum(widths_all))).astype(np.int64)
        result = backend.profile_align(AlignBatch(
            np.concatenate([p[0] for p in parts]), col_off, np.concatenate([p[2] for p in parts]), m,
            np.repeat(np.stack([state.gaps for state, _ in proposals]), n_merges, axis=0), parents=False,
        ))
        maps = backend.to_host(result.maps).astype(np.int64)
        parent_widths = np.diff(np.asarray(backend.to_host(result.col_offsets), dtype=np.int64))
        merge = 0
        for (state, masks), (_, _, _, ranks), k in zip(proposals, parts, n_merges):
            new_cols = _joined_columns(state.cols, state.row_of, masks, ranks, maps,
                                       col_off[2 * merge : 2 * (merge + k) + 1])
            state.take(new_cols, parent_widths[merge : merge + k].tolist(), m)
            merge += k
    for f, state in zip(index, states):
        out[f] = (state.cols, state.width, state.accepted)
    return out


class _Family:
    """One family's refinement: its rows, current alignment and objective, the splits tried."""

    def __init__(self, db: SeqDB, cols: np.ndarray, width: int, tree, gaps: np.ndarray, seed: int,
                 method: Method, weights: np.ndarray | None = None) -> None:
        self.codes, self.offsets = db.codes, np.asarray(db.offsets, dtype=np.int64)
        self.n = len(db)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.int64)
        self.counted = np.ones(self.n, dtype=np.int64) if weights is None else self.weights  # what a row counts
        self.row_of = np.repeat(np.arange(self.n), np.diff(self.offsets))
        self.cols, self.width, self.tree, self.gaps, self.method = cols, width, tree, gaps, method
        self.rng = np.random.default_rng(seed)
        self.library: tuple[np.ndarray, np.ndarray] | None = None
        self.tree_masks = tree_splits(tree) if method.source == "tree" and tree is not None else None
        self.tried: set[bytes] = set()
        self.best, self.accepted, self.done = 0, 0, False

    def partners(self) -> np.ndarray:
        """The pairs of rows whose pairwise alignments make the library."""
        if self.method.library == "neighbours" and self.tree is not None:
            return neighbour_pairs(self.tree.leaf_order(), self.method.partners)
        return partner_pairs(self.n, self.method.partners, self.rng)

    def score(self, cols_list: list[np.ndarray], widths: list[int], matrix: np.ndarray) -> np.ndarray:
        return _score(self.codes, self.offsets, cols_list, widths, matrix, self.gaps, self.library)

    def candidates(self) -> np.ndarray:
        masks = _candidates(self.tree_masks, self.cols, self.width, self.row_of, self.n, self.rng, self.method.batch,
                            self.tried)
        self.done = len(masks) == 0
        return masks

    def sides(self, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Both sides' tables of every split (their all-gap columns dropped) laid end to end,
        their widths and sequence counts (by weight), and each side's column of every column
        of the alignment (-1 where it has no residue): :func:`_split_sides`."""
        return _split_sides(self.codes, self.offsets, self.cols, self.width, masks, self.counted)

    def take(self, new_cols: np.ndarray, new_widths: list[int], matrix: np.ndarray) -> None:
        """Keep the best realignment (``new_cols``, one row each) if it raises the objective."""
        scores = self.score(new_cols, new_widths, matrix)
        k = int(np.argmax(scores))
        if scores[k] > self.best:
            self.cols, self.width, self.best = np.ascontiguousarray(new_cols[k]), new_widths[k], scores[k]
            self.accepted += 1
            self.tried.clear()


def _libraries(states: list[_Family], matrix: np.ndarray, gaps: np.ndarray, backend) -> None:
    """Every family's library from one set of pairwise alignments (rows laid end to end)."""
    rows = np.concatenate(([0], np.cumsum([s.n for s in states])))
    res = np.concatenate(([0], np.cumsum([len(s.codes) for s in states])))
    pairs = np.concatenate([s.partners() + r for s, r in zip(states, rows[:-1])])
    offsets = np.concatenate([s.offsets[:-1] + r for s, r in zip(states, res[:-1])] + [res[-1:]])
    li, lj, _ = pair_library(np.concatenate([s.codes for s in states]), offsets, pairs, matrix, gaps, backend)
    family = np.searchsorted(res, li, side="right") - 1
    for f, state in enumerate(states):
        sel = family == f
        state.library = (li[sel] - res[f], lj[sel] - res[f])


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
    return int(_consistencies(np.asarray(columns, dtype=np.int64)[None], *library)[0])


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


def neighbour_pairs(order: np.ndarray, k: int) -> np.ndarray:
    """Each row with the ``k`` rows nearest it in ``order`` (the guide tree's leaf order, where
    neighbours are close relatives), ``k // 2`` on each side, as distinct pairs ``(a, b)``, ``a < b``."""
    pairs = [np.stack((order[:-d], order[d:]), axis=1) for d in range(1, min(k // 2, len(order) - 1) + 1)]
    return _distinct_pairs(np.concatenate(pairs))


def partner_pairs(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` random partners of each row, as distinct pairs ``(a, b)``, ``a < b``."""
    a = np.repeat(np.arange(n), k)
    b = (a + rng.integers(1, n, len(a))) % n
    return _distinct_pairs(np.stack((a, b), axis=1))


def _distinct_pairs(pairs: np.ndarray) -> np.ndarray:
    """Rows ``(a, b)`` of non-negative int pairs as ``(min, max)``, distinct, in lexicographic
    order: ``np.unique(..., axis=0)`` by one int64 key (np.unique would import numpy.ma: 7 ms
    of a CLI run)."""
    pairs = np.sort(np.asarray(pairs, dtype=np.int64), axis=1)
    base = int(pairs.max(initial=0)) + 1
    key = np.sort(pairs[:, 0] * base + pairs[:, 1])
    key = key[np.diff(key, prepend=-1) > 0]
    return np.stack((key // base, key % base), axis=1)


def pair_library(codes, offsets, pairs, matrix, gaps, backend) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Residue pairs (indices into ``codes``) that the pairwise alignment of each pair of rows
    aligns, and the pair (its row of ``pairs``) that aligned each, in pair order; each pair
    aligned as the progressive stage merges two one-sequence profiles (the backend's
    ``pair_residues``), in calls of ~LIBRARY_CHUNK residues cut where the backend's memory asks
    (level_cuts: a GPU gathers its tables there)."""
    widths = np.diff(offsets)[pairs]
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    chunk = np.cumsum(widths.sum(axis=1)) // LIBRARY_CHUNK
    cuts = np.sort(np.concatenate((np.flatnonzero(chunk[1:] != chunk[:-1]) + 1, backend.level_cuts(widths.reshape(-1)),
                                   [0, len(pairs)])))
    cuts = cuts[np.diff(cuts, prepend=-1) > 0]  # not np.union1d: np.unique imports numpy.ma (7 ms of a run)
    on_backend = backend.xp.asarray(codes)  # one upload
    offsets = np.asarray(offsets, dtype=np.int64)
    parts = [backend.pair_residues(on_backend, offsets, pairs[a:b], matrix, gaps) for a, b in zip(cuts[:-1], cuts[1:])]
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] + a for p, a in zip(parts, cuts[:-1])]))


def _score(codes, offsets, cols_list, widths, matrix, gaps, library) -> np.ndarray:
    """The objective of each alignment: consistency with a ``library``, else the sum of pairs."""
    if library is not None:
        return _consistencies(np.asarray(cols_list, dtype=np.int64).reshape(len(cols_list), -1), *library)
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


@njit(cache=True, nogil=True, parallel=True)
def _split_sides(codes, offsets, cols, width, masks, counted):
    """The two sides of every split of ``masks`` (bool ``(k, rows)``; side ``2j`` the rows of
    split ``j``, side ``2j + 1`` the others), in one call: each side's profile table of its own
    alignment, its all-gap columns dropped, laid end to end (int32 ``(total, N_COUNTS)``), as
    :func:`msa.profile.block_counts` builds it with ``counted`` (int64, what each row counts:
    its weight, or 1); the sides' widths and counted rows; and ``ranks`` (``(2k, width)``),
    each side's column of every column of the alignment (-1 where it has no residue).
    One thread a side; a refinement round's host work was this in NumPy, side by side (msa.refine)."""
    k, n = masks.shape
    sides = 2 * k
    ranks = np.full((sides, width), -1, dtype=np.int64)
    widths = np.zeros(sides, dtype=np.int64)
    n_seqs = np.zeros(sides, dtype=np.int64)
    for s in prange(sides):
        inside = s % 2 == 0
        used = np.zeros(width, dtype=np.bool_)
        for i in range(n):
            if masks[s // 2, i] == inside:
                n_seqs[s] += counted[i]
                for r in range(offsets[i], offsets[i + 1]):
                    used[cols[r]] = True
        w = 0
        for c in range(width):
            if used[c]:
                ranks[s, c] = w
                w += 1
        widths[s] = w
    col_off = np.zeros(sides + 1, dtype=np.int64)
    for s in range(sides):
        col_off[s + 1] = col_off[s] + widths[s]
    out = np.zeros((col_off[sides], N_COUNTS), dtype=np.int64)
    for s in prange(sides):
        inside = s % 2 == 0
        base, w = col_off[s], widths[s]
        extend = np.zeros(w + 1, dtype=np.int64)  # inner extensions: + where a run's extension starts, - past it
        terminal = np.zeros(w + 1, dtype=np.int64)  # terminal extensions, likewise
        for i in range(n):
            if masks[s // 2, i] != inside:
                continue
            c_w = counted[i]
            first, last = ranks[s, cols[offsets[i]]], ranks[s, cols[offsets[i + 1] - 1]]
            prev = -1
            for r in range(offsets[i], offsets[i + 1]):
                c = ranks[s, cols[r]]
                out[base + c, codes[r]] += c_w
                if prev >= 0 and c - prev > 1:  # an inner run: opened after the residue before
                    out[base + prev + 1, GO] += c_w
                    if c > prev + 2:
                        extend[prev + 2] += c_w
                        extend[c] -= c_w
                prev = c
            if first > 0:  # a leading run opens at column 0
                out[base, TGO] += c_w
                if first > 1:
                    terminal[1] += c_w
                    terminal[first] -= c_w
            if last < w - 1:  # a trailing run opens after the last residue
                out[base + last + 1, TGO] += c_w
                if w > last + 2:
                    terminal[last + 2] += c_w
                    terminal[w] -= c_w
        inner, term = 0, 0
        for c in range(w):
            inner += extend[c]
            term += terminal[c]
            out[base + c, GE] = inner
            out[base + c, TGE] = term
    return out.astype(np.int32), widths, n_seqs, ranks


@njit(cache=True, nogil=True, parallel=True)
def _joined_columns(cols, row_of, masks, ranks, maps, col_off):
    """Each split's realigned alignment (``(k, residues)``): every residue's column in the
    merge of its split's two sides, from the merges' column ``maps`` (``col_off``: where each
    side's columns start in them, side ``2j`` the rows of split ``j``) and the sides' ``ranks``
    (:func:`_split_sides`). One thread a split."""
    k = masks.shape[0]
    out = np.empty((k, cols.shape[0]), dtype=np.int64)
    for j in prange(k):
        for r in range(cols.shape[0]):
            s = 2 * j + (0 if masks[j, row_of[r]] else 1)
            out[j, r] = maps[col_off[s] + ranks[s, cols[r]]]
    return out


@njit(cache=True, nogil=True, parallel=True)
def _consistencies(cols, first, second):
    """:func:`consistency` of each alignment (a row of ``cols``) with the library (``first``,
    ``second``). One thread an alignment."""
    out = np.zeros(cols.shape[0], dtype=np.int64)
    for j in prange(cols.shape[0]):
        for p in range(first.shape[0]):
            if cols[j, first[p]] == cols[j, second[p]]:
                out[j] += 1
    return out
