"""Progressive alignment: merge profiles up the guide tree in level batches, then place residues.

Bottom-up, every internal node whose children are done goes into one batch
(``GuideTree.levels``), and the backend aligns the whole batch in one call. A
merge returns, for each child, a column map (child column -> parent column) and
the parent's counts. Top-down, the maps compose into the final column of every
residue, and rows are filled in one pass.

Profile tables, maps and the composition live in the backend's array module
(``backend.xp``: NumPy on the CPU, CuPy on the GPU, where the codes are uploaded
once and only the final columns come back). Each level's parents stay in one
store; a level's children are gathered, and its columns placed, with one
backend call each per level, however many nodes it has: at 10^5 sequences a
Python operation per node cost more than the GPU's dynamic programming.
"""
from __future__ import annotations

import numpy as np

from msa.progress import current
from msa.profile import AlignBatch, gap_vector
from msa.params import GapCosts
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree


def progressive_align(
    db: SeqDB, tree: GuideTree, matrix: np.ndarray, gaps: GapCosts, backend
) -> tuple[np.ndarray, int]:
    """Align ``db`` along ``tree``.

    Returns ``(columns, width)``: ``columns`` is int64 in ``db.codes`` layout,
    the final alignment column of every residue.

    Example:
        >>> from msa.alphabet import load_matrix
        >>> from msa.backends.cpu import CpuBackend
        >>> from msa.params import AlignParams, gap_costs
        >>> db = SeqDB.from_pairs([("a", "MKV"), ("b", "MV")])
        >>> tree = GuideTree(2, [[0, 1]], [1.0])
        >>> cols, width = progressive_align(db, tree, load_matrix("PFASUM43"),
        ...                                 gap_costs(AlignParams(), 2), CpuBackend())
        >>> from msa.rows import gapped_rows
        >>> gapped_rows(db, cols, width).view("S3").ravel().tolist()
        [b'MKV', b'MV-']
    """
    n = len(db)
    if tree.n_leaves != n:
        raise ValueError(f"the tree has {tree.n_leaves} leaves for {n} sequences")
    lengths = db.lengths
    if n == 1:
        return np.arange(lengths[0], dtype=np.int64), int(lengths[0])
    if np.any(lengths == 0):
        raise ValueError("cannot align an empty sequence")
    matrix = np.ascontiguousarray(matrix, dtype=np.int64)
    g = gap_vector(gaps)
    xp = backend.xp
    levels = tree.levels()
    order = np.argsort(levels, kind="stable")
    bounds = np.flatnonzero(np.diff(levels[order])) + 1
    batches = np.split(order + n, bounds)

    pool = _ProfilePool(backend, db, tree.n_nodes)
    sizes = np.ones(tree.n_nodes, dtype=np.int64)
    done: list[np.ndarray] = []  # the batches as run: levels, cut where they do not fit the device
    batch_maps: list[np.ndarray] = []
    with current().stage("aligning profiles", total=n - 1) as advance:
        for level in batches:
            cuts = backend.level_cuts(pool.widths[tree.children[level - n].reshape(-1)])
            for nodes in np.split(level, cuts[1:-1]):
                kids = tree.children[nodes - n].reshape(-1)
                sizes[nodes] = sizes[kids[0::2]] + sizes[kids[1::2]]
                gathered, col_offsets = pool.take(kids)
                result = backend.profile_align(AlignBatch(gathered, col_offsets, sizes[kids], matrix, g))
                del gathered
                pool.add_level(nodes, result.counts, result.col_offsets)
                batch_maps.append(result.maps.astype(xp.int32))
                done.append(nodes)
                advance(len(nodes))
    columns = _place_columns(backend, db, tree, done, batch_maps, pool)
    return backend.to_host(columns), int(pool.widths[tree.root])


class _ProfilePool:
    """The profile tables of finished nodes, on the backend, one store per level.

    A node is addressed by (store, row); a level's children are gathered by one
    backend call (``gather_profiles``: leaves one-hot from the codes, inner nodes
    copied from their stores), never an operation per node or per store. A store
    is dropped when its last node is taken and compacted when less than half of
    it is still live, so memory stays within twice the live profiles.
    ``level``/``start`` keep each node's place in its level's output, which the
    top-down pass uses.
    """

    def __init__(self, backend, db: SeqDB, n_nodes: int) -> None:
        self.backend, self.db, self.n = backend, db, len(db)
        self.codes = backend.xp.asarray(db.codes)  # one upload on the GPU, the same array on the CPU
        self.widths = np.zeros(n_nodes, dtype=np.int64)
        self.widths[: self.n] = db.lengths
        self.level = np.full(n_nodes, -1, dtype=np.int64)
        self.start = np.zeros(n_nodes, dtype=np.int64)  # row in its level's output
        self.row = np.zeros(n_nodes, dtype=np.int64)  # row in its store now (after compactions)
        self.live = np.zeros(n_nodes, dtype=bool)
        self.stores: list = []
        self.store_live: list[int] = []
        self.level_cols: list[int] = []

    def add_level(self, nodes: np.ndarray, counts, col_offsets: np.ndarray) -> None:
        """Keep a level's parent tables (merge ``k`` is ``nodes[k]``)."""
        k = len(self.stores)
        self.widths[nodes] = np.diff(col_offsets)
        self.level[nodes] = k
        self.start[nodes] = self.row[nodes] = col_offsets[:-1]
        self.live[nodes] = True
        self.stores.append(counts)
        self.store_live.append(int(col_offsets[-1]))
        self.level_cols.append(int(col_offsets[-1]))

    def take(self, kids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tables of ``kids`` laid end to end, and their column offsets; inner nodes leave the pool."""
        w = self.widths[kids]
        leaf = kids < self.n
        store = np.where(leaf, -1, self.level[kids])
        first = np.where(leaf, self.db.offsets[np.minimum(kids, self.n)], self.row[kids])
        out = self.backend.gather_profiles(self.stores, store, first, w, self.codes)
        inner = kids[~leaf]
        self.live[inner] = False
        taken = np.bincount(store[~leaf], weights=w[~leaf], minlength=len(self.stores))
        for s in np.flatnonzero(taken).tolist():
            self.store_live[s] -= int(taken[s])
            if self.store_live[s] == 0:
                self.stores[s] = None
            elif 2 * self.store_live[s] < len(self.stores[s]):
                self._compact(s)
        return out, _offsets(w)

    def _compact(self, s: int) -> None:
        keep = np.flatnonzero(self.live & (self.level == s))
        w = self.widths[keep]
        self.stores[s] = self.backend.gather_profiles(
            self.stores, np.full(len(keep), s), self.row[keep], w, self.codes
        )
        self.row[keep] = _offsets(w)[:-1]


def _place_columns(
    backend, db: SeqDB, tree: GuideTree, batches: list[np.ndarray], batch_maps: list, pool: _ProfilePool
):
    """Top-down: the final column of every residue (``xp`` int64, ``db.codes`` layout).

    ``final[k]`` holds the final column of every column of level ``k``'s outputs,
    in that level's layout; a level's maps (relative to each parent) turn it into
    the final columns of its inputs, which go to the leaves' residues and to the
    levels that made the inner children: one ``place_segments`` call per level.
    """
    xp, n = backend.xp, len(db)
    columns = xp.empty(len(db.codes), dtype=xp.int64)
    final: list = [None] * len(batches)
    final[-1] = xp.arange(pool.level_cols[-1], dtype=xp.int64)
    for k in range(len(batches) - 1, -1, -1):
        nodes = batches[k]
        kids = tree.children[nodes - n].reshape(-1)
        leaf = kids < n
        dest = np.where(leaf, -1, pool.level[kids])  # -1: the residues' columns
        levels = np.unique(dest)
        for s in levels[levels >= 0].tolist():
            if final[s] is None:
                final[s] = xp.empty(pool.level_cols[s], dtype=xp.int64)
        targets = [columns if s < 0 else final[s] for s in levels.tolist()]
        first = np.where(leaf, db.offsets[np.minimum(kids, n)], pool.start[kids])
        parent = np.repeat(pool.start[nodes], 2)
        backend.place_segments(
            targets, np.searchsorted(levels, dest), first, final[k], batch_maps[k], parent, pool.widths[kids]
        )
        final[k] = None
    return columns


def _offsets(widths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=out[1:])
    return out
