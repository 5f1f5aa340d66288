"""Consistency at the top of the guide tree (``--consistency N``).

Where two large clusters merge, or a large cluster takes in a few sequences, the
profile-profile DP decides how every member of one side lines up with every member of the
other, from column counts alone; a mistake there is copied into all the rows below it.
Pairwise alignments of sequences drawn from the two sides say the same thing sequence by
sequence: each merge :func:`guided_merges` picks gets up to ``N`` sequences from each side (by
default its most isolated members, :func:`isolation_rank`; ``--consistency-draw random``: a
random draw), all their pairs aligned pairwise (the progressive stage's own merge of two one-sequence
profiles, unrescaled gap costs, as the refinement's library), and its DP adds to cell (i, j)
``na x nb x`` the votes of those pairs that put a residue of column i against one of column j
(``na``, ``nb``: the two profiles' sequences by weight). A pair's vote is its alignment's
identity (identical residues over the shorter sequence's length: T-Coffee's primary library
weight) x CONSISTENCY_WEIGHT x the mean of the matrix's positive diagonal / the merge's pairs,
so a pair of near relatives weighs most and a twilight-zone pair, whose alignment is often
wrong, little. T-Coffee's consistency, restricted to the merges that decide the most rows.

The draw's generator (random draws, the isolated draw's ties) is seeded with ``--seed``; the library and the bonuses are
integers, the sampled sequences' columns in each merge's children are walked up from the leaves
by the levels' maps (in the CPU's compiled stage msa.backends.cpu.forest.walk_samples, in the
level loop :class:`LevelBonuses`: the same columns), the bonuses added up where the columns are
(integer sums, in any order the same) and each backend's merge adds them to its cell scores (the
GPU's cell_scores kernel), so both give the same bytes. Measured in docs/accuracy.md and
docs/hard-families.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa.jit import njit
from msa.params import (
    CONSISTENCY_ABSORB_PER, CONSISTENCY_MAX_MERGES, CONSISTENCY_MIN_SIDE, CONSISTENCY_WEIGHT, AlignParams, ConsistencyDraw,
)
from msa.refine import pair_library
from msa.seqdb import SeqDB, _ranges, offsets_of
from msa.tree.guide_tree import GuideTree, forest_spans, subtree_spans


@dataclass
class TopLibrary:
    """The sampled pairs' aligned residues of every merge of a tree (or of a forest's merges).

    Merge ``k``'s residue pairs are ``a[off[k]:off[k + 1]]`` (on its first child's side) with
    ``b[...]`` (its second's), residues in ``codes`` layout; ``vote[...]`` each one's bonus per
    unit of ``na x nb`` (its pair's vote); its sampled sequences ``seqs[seq_off[k]:seq_off[k + 1]]``.
    """

    off: np.ndarray
    a: np.ndarray
    b: np.ndarray
    vote: np.ndarray
    seq_off: np.ndarray
    seqs: np.ndarray

    @classmethod
    def empty(cls, n_merges: int) -> "TopLibrary":
        z = np.zeros(0, dtype=np.int64)
        return cls(np.zeros(n_merges + 1, dtype=np.int64), z, z, z, np.zeros(n_merges + 1, dtype=np.int64), z)

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The compiled stage's argument (msa.backends.cpu.forest.align_forest)."""
        return self.off, self.a, self.b, self.vote, self.seq_off, self.seqs

    @property
    def n_pairs(self) -> int:
        return int(self.off[-1])

    @classmethod
    def joined(cls, libs: list["TopLibrary"], code_off: np.ndarray, leaf_off: np.ndarray) -> "TopLibrary":
        """Families' libraries as one forest's (msa.progressive._Forest: residues, sequences and
        merges laid end to end)."""
        def cat(parts: list[np.ndarray], shifts) -> np.ndarray:
            return np.concatenate([p + s for p, s in zip(parts, shifts)]) if parts else np.zeros(0, np.int64)

        return cls(
            _joined_offsets([lib.off for lib in libs]),
            cat([lib.a for lib in libs], code_off), cat([lib.b for lib in libs], code_off),
            np.concatenate([lib.vote for lib in libs]),
            _joined_offsets([lib.seq_off for lib in libs]), cat([lib.seqs for lib in libs], leaf_off),
        )


def _joined_offsets(offs: list[np.ndarray]) -> np.ndarray:
    out, base = [np.zeros(1, dtype=np.int64)], 0
    for o in offs:
        out.append(o[1:] + base)
        base += int(o[-1])
    return np.concatenate(out)


def top_library(
    db: SeqDB, tree: GuideTree, matrix: np.ndarray, pair_gaps: np.ndarray, backend, samples: int, seed: int,
    draw: ConsistencyDraw = AlignParams.consistency_draw,
) -> TopLibrary:
    """The library of the merges of ``tree`` over ``db`` that :func:`guided_merges` picks:
    ``samples`` drawn from each side (a smaller side whole), every pair aligned in one backend
    call (msa.refine.pair_library). ``draw``: each side's most isolated members
    (:func:`isolation_rank`) or a random draw."""

    n, n_merges = tree.n_leaves, len(tree.children)
    order, start, size = subtree_spans(tree.children, n)
    kids = tree.children
    big = guided_merges(size[kids[:, 0]], size[kids[:, 1]], n)
    if len(big) == 0 or samples < 1:
        return TopLibrary.empty(n_merges)
    rng = np.random.default_rng(seed)
    if draw == "random":
        drawn = [order[start[c] + rng.choice(size[c], min(samples, size[c]), replace=False)]
                 for k in big.tolist() for c in kids[k]]  # a loop over the guided merges (~n / 8)
    else:
        rank = isolation_rank(tree, rng)
        by_rank = np.argsort(rank)
        drawn = [by_rank[np.sort(_smallest(rank[order[start[c]:start[c] + size[c]]], samples))]
                 for k in big.tolist() for c in kids[k]]
    seqs = np.concatenate(drawn)  # merge by merge, its first side's then its second's
    n_side = np.array([len(d) for d in drawn], dtype=np.int64).reshape(-1, 2)
    first = offsets_of(n_side.reshape(-1))[:-1:2]
    count = n_side[:, 0] * n_side[:, 1]  # every pair of a merge's two sides, first side's index major
    owner = np.repeat(big, count)
    at = np.arange(int(count.sum())) - np.repeat(offsets_of(count)[:-1], count)
    i, j = at // np.repeat(n_side[:, 1], count), at % np.repeat(n_side[:, 1], count)
    pairs = np.stack((seqs[np.repeat(first, count) + i], seqs[np.repeat(first + n_side[:, 0], count) + j]), axis=1)
    offsets = np.asarray(db.offsets, dtype=np.int64)
    ra, rb, pair = pair_library(db.codes, offsets, pairs, np.ascontiguousarray(matrix, dtype=np.int64), pair_gaps,
                                backend)
    aligned, same = _pair_counts(db.codes, ra, rb, pair, len(pairs))
    identity = same / np.diff(offsets)[pairs].min(axis=1)
    diagonal = np.diag(matrix)
    full = CONSISTENCY_WEIGHT * float(diagonal[diagonal > 0].mean())
    vote = np.rint(full * identity / np.repeat(count, count)).astype(np.int64)  # a pair's share of its merge's
    seq_off = np.zeros(n_merges + 1, dtype=np.int64)
    seq_off[big + 1] = n_side.sum(axis=1)
    per_merge = np.bincount(owner, weights=aligned, minlength=n_merges).astype(np.int64)  # pairs go merge by merge
    return TopLibrary(offsets_of(per_merge), ra, rb, np.repeat(vote, aligned), np.cumsum(seq_off), seqs)


@njit(cache=True, nogil=True)
def _pair_counts(codes: np.ndarray, ra: np.ndarray, rb: np.ndarray, pair: np.ndarray, n_pairs: int):
    """Each pair's aligned residue pairs and how many of them are the same residue, in one pass
    over the library (``pair`` in order). NumPy's fancy indexing and bincounts over its ~5 M
    residue pairs took 0.17 s of PF00009.10000's library on 2 cores."""
    aligned = np.zeros(n_pairs, dtype=np.int64)
    same = np.zeros(n_pairs, dtype=np.int64)
    for i in range(len(pair)):
        aligned[pair[i]] += 1
        same[pair[i]] += codes[ra[i]] == codes[rb[i]]
    return aligned, same


@njit(cache=True, nogil=True)
def _places(residues: np.ndarray, offsets: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Each residue's place among the sampled residues (LevelBonuses: sequence ``s``'s at
    ``start[s]``). A pair's residues come one sequence's after another, so the sequence is
    looked up only where it changes (NumPy's searchsorted over PF00625.10000's 3 M took 0.25 s
    of its stage on an H200 host)."""
    out = np.empty(len(residues), dtype=np.int64)
    s = 0
    for i in range(len(residues)):
        r = residues[i]
        if r < offsets[s] or r >= offsets[s + 1]:
            s = np.searchsorted(offsets, r, side="right") - 1
        out[i] = start[s] + r - offsets[s]
    return out


def isolation_rank(tree: GuideTree, rng: np.random.Generator) -> np.ndarray:
    """Each leaf's place when the leaves are sorted most isolated first: by the height of the
    merge that first takes the leaf in (in a single-linkage tree, half the distance to its
    nearest neighbour), ties in an order drawn by ``rng`` (a tree without branch lengths is a
    random draw). A random draw from a side of a single-linkage tree takes mostly members of its
    dense clusters, near copies of one another whose pairs all say the same thing; its isolated
    members are the ones the side's profile represents least, and their pairs mended the
    families where msa was furthest below Clustal Omega (docs/hard-families.md)."""
    n = tree.n_leaves
    joined = tree.heights[tree.parents()[:n] - n]
    order = np.lexsort((rng.permutation(n), -joined))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return rank


def _smallest(values: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` smallest of ``values`` (all of them when there are no more), in any order."""
    return values if len(values) <= k else np.partition(values, k - 1)[:k]


def guided_merges(size_a: np.ndarray, size_b: np.ndarray, n: int) -> np.ndarray:
    """The merges (in merge order) that take bonuses, of a tree over ``n`` sequences whose
    merges join sides of ``size_a`` and ``size_b`` sequences: those whose sides both hold at
    least CONSISTENCY_MIN_SIDE (at most CONSISTENCY_MAX_MERGES, the largest smaller sides), and
    the n / CONSISTENCY_ABSORB_PER whose larger side is the largest, where a large cluster takes
    in a few sequences (at most CONSISTENCY_MAX_MERGES; ties in merge order)."""
    smaller, larger = np.minimum(size_a, size_b), np.maximum(size_a, size_b)
    both = np.flatnonzero(smaller >= CONSISTENCY_MIN_SIDE)
    if len(both) > CONSISTENCY_MAX_MERGES:
        both = both[np.argsort(-smaller[both], kind="stable")[:CONSISTENCY_MAX_MERGES]]
    large = np.flatnonzero(larger >= CONSISTENCY_MIN_SIDE)
    absorb = min(CONSISTENCY_MAX_MERGES, -(-n // CONSISTENCY_ABSORB_PER))
    large = large[np.argsort(-larger[large], kind="stable")[:absorb]]
    picked = np.zeros(len(smaller), dtype=bool)  # not np.union1d: np.unique imports numpy.ma (7 ms)
    picked[both] = True
    picked[large] = True
    return np.flatnonzero(picked)


class LevelBonuses:
    """The level loop's side of the bonuses (msa.progressive; the CPU's one compiled call keeps
    its own walks). Every sampled sequence's residues go up the tree with the levels where the
    run's backend keeps its data (``walker``: the device on a GPU run): after each batch, its
    maps take its children's sampled residues to their parents' columns (walk_columns, one
    launch), so that before a merge its samples' columns in its two children are there; each
    batch's tables are made there from the library and those columns (add_bonuses) and brought
    over to a level run on the other side (the host's levels of a hybrid run). The host walked
    them instead (path compression, as the compiled call does), each guided level's maps would
    come to the host and the next level wait for its walks, the device idle meanwhile (~1 ms a
    level over ~500 levels in PF00625.10000 on an H100); a walk step here is a few bytes of device
    memory, every sampled residue a step per level above it.

    The sampled residues lie in the forest's leaf order (msa.tree.guide_tree.forest_spans): a
    node's are one span, ``start[v] .. start[v] + size[v]`` of ``cur``, and the library's pairs
    refer to their places there."""

    def __init__(self, library: TopLibrary, offsets: np.ndarray, children: np.ndarray, roots: np.ndarray,
                 walker) -> None:
        n = len(offsets) - 1
        lengths = np.diff(offsets)
        sampled = np.zeros(n, dtype=bool)
        sampled[library.seqs] = True
        self.start, self.size = forest_spans(children, np.where(sampled, lengths, 0), roots)
        leaves = np.flatnonzero(sampled)
        place = _ranges(self.start[leaves], lengths[leaves])
        cur = np.empty(len(place), dtype=np.int64)
        cur[place] = _ranges(np.zeros_like(leaves), lengths[leaves])  # a leaf's columns are its residues
        xp = walker.xp
        self.walker, self.library, self.n = walker, library, n
        self.cur = xp.asarray(cur)
        self.lib_a, self.lib_b = (xp.asarray(_places(r, offsets, self.start)) for r in (library.a, library.b))
        self.vote = xp.asarray(library.vote)

    def tables(self, nodes: np.ndarray, kids: np.ndarray, widths: np.ndarray, sizes: np.ndarray, backend):
        """AlignBatch.bonus of the merges ``nodes`` (children ``kids``, two each), or None, on
        ``backend``'s side (where the level runs): zeros with each library pair's vote added
        where its residues lie (a wide merge's table is mostly zeros: millions of cells, a few
        thousand pairs)."""
        k = nodes - self.n
        lib = self.library
        has = lib.off[k + 1] > lib.off[k]
        if not has.any():
            return None
        a, b = kids[0::2], kids[1::2]
        off = offsets_of(np.where(has, widths[a] * widths[b], 0))
        j = np.flatnonzero(has)
        first = lib.off[k[j]]
        xp = self.walker.xp
        out = xp.zeros(int(off[-1]), dtype=xp.int64)
        self.walker.add_bonuses(out, first, lib.off[k[j] + 1] - first, widths[b[j]], off[j], sizes[a[j]] * sizes[b[j]],
                                self.lib_a, self.lib_b, self.vote, self.cur)
        return (out if backend is self.walker else self.walker.to_host(out)), off

    def walk(self, kids: np.ndarray, col_offsets: np.ndarray, maps) -> None:
        """After a batch: its maps (on the walker's side), its children's columns at
        ``col_offsets``, take the sampled residues below each child to the parent's columns."""
        size = self.size[kids]
        j = np.flatnonzero(size)
        if len(j):
            self.walker.walk_columns(self.cur, self.start[kids[j]], size[j], col_offsets[j], maps)
