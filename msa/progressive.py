"""Progressive alignment: merge profiles up the guide tree in level batches, then place residues.

Bottom-up, every internal node whose children are done goes into one batch
(``GuideTree.levels``), and the backend aligns the whole batch in one call. A
merge returns, for each child, a column map (child column -> parent column) and
the parent's counts. Top-down, the maps compose into the final column of every
residue, and rows are filled in one pass.

Profile tables, maps and the composition live in the backend's array module
(``backend.xp``: NumPy on the CPU, CuPy on the GPU, where the codes are uploaded
once and only the final columns come back). Each level's parents stay in one
store; a level's children are gathered, and its columns placed, with a few
whole-array operations per level, however many nodes it has: at 10^5 sequences
a Python operation per node cost more than the GPU's dynamic programming.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from msa.progress import current
from msa.profile import N_COUNTS, AlignBatch, gap_vector
from msa.params import GapCosts
from msa.seqdb import SeqDB, _ranges
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

    pool = _ProfilePool(xp, db, tree.n_nodes)
    sizes = np.ones(tree.n_nodes, dtype=np.int64)
    batch_maps: list[np.ndarray] = []
    with current().stage("aligning profiles", total=n - 1) as advance:
        for nodes in batches:
            kids = tree.children[nodes - n].reshape(-1)
            sizes[nodes] = sizes[kids[0::2]] + sizes[kids[1::2]]
            gathered, col_offsets = pool.take(kids)
            result = backend.profile_align(AlignBatch(gathered, col_offsets, sizes[kids], matrix, g))
            pool.add_level(nodes, result.counts, result.col_offsets)
            batch_maps.append(result.maps.astype(xp.int32))
            advance(len(nodes))
    columns = _place_columns(xp, db, tree, batches, batch_maps, pool)
    return backend.to_host(columns), int(pool.widths[tree.root])


class _ProfilePool:
    """The profile tables of finished nodes, on the backend, one store per level.

    A node is addressed by (store, row); a level's children are gathered with
    one indexed copy per store they come from (and one scatter for all leaves,
    built from the codes), never an operation per node. A store is dropped when
    its last node is taken and compacted when less than half of it is still
    live, so memory stays within twice the live profiles. ``level``/``start``
    keep each node's place in its level's output, which the top-down pass uses.
    """

    def __init__(self, xp: ModuleType, db: SeqDB, n_nodes: int) -> None:
        self.xp, self.db, self.n = xp, db, len(db)
        self.codes = xp.asarray(db.codes)  # one upload on the GPU, the same array on the CPU
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
        xp, w = self.xp, self.widths[kids]
        off = _offsets(w)
        out = xp.zeros((int(off[-1]), N_COUNTS), dtype=xp.int32)
        leaf = kids < self.n
        if leaf.any():  # one-hot rows of the leaves' codes
            rows, res = _expand(xp, w[leaf], off[:-1][leaf], self.db.offsets[kids[leaf]])
            out[rows, self.codes[res]] = 1
        inner = np.flatnonzero(~leaf)
        stores = self.level[kids[inner]]
        for s in np.unique(stores).tolist():
            pick = inner[stores == s]
            src = self.stores[s]
            if len(pick) == 1:  # a slice, no index arrays (the one-merge levels)
                q, r = int(kids[pick[0]]), int(off[pick[0]])
                out[r : r + w[pick[0]]] = src[self.row[q] : self.row[q] + self.widths[q]]
            else:
                dst, at = _expand(xp, w[pick], off[pick], self.row[kids[pick]])
                out[dst] = src[at]
            self.live[kids[pick]] = False
            self.store_live[s] -= int(w[pick].sum())
            if self.store_live[s] == 0:
                self.stores[s] = None
            elif 2 * self.store_live[s] < len(src):
                self._compact(s)
        return out, off

    def _compact(self, s: int) -> None:
        keep = np.flatnonzero(self.live & (self.level == s))
        w = self.widths[keep]
        (at,) = _expand(self.xp, w, self.row[keep])
        self.stores[s] = self.stores[s][at]
        self.row[keep] = _offsets(w)[:-1]


def _place_columns(
    xp: ModuleType, db: SeqDB, tree: GuideTree, batches: list[np.ndarray], batch_maps: list, pool: _ProfilePool
):
    """Top-down: the final column of every residue (``xp`` int64, ``db.codes`` layout).

    ``final[k]`` holds the final column of every column of level ``k``'s outputs,
    in that level's layout; a level's maps turn it into the final columns of its
    inputs, which go to the leaves' residues and to the levels that made the
    inner children, one indexed copy per destination level.
    """
    n = len(db)
    columns = xp.empty(len(db.codes), dtype=xp.int64)
    final: list = [None] * len(batches)
    final[-1] = xp.arange(pool.level_cols[-1], dtype=xp.int64)
    for k in range(len(batches) - 1, -1, -1):
        nodes, maps = batches[k], batch_maps[k]
        kids = tree.children[nodes - n].reshape(-1)
        w = pool.widths[kids]
        off = _offsets(w)
        here = final[k]
        if len(nodes) > 1:  # maps are relative to each parent: add the parent's place in the level
            parent = xp.asarray(pool.start[nodes])[_segments(xp, w) // 2]
            here = here[parent + maps]
        else:
            here = here[maps]
        final[k] = None
        leaf = kids < n
        if leaf.any():
            dst, at = _expand(xp, w[leaf], db.offsets[kids[leaf]], off[:-1][leaf])
            columns[dst] = here[at]
        inner = np.flatnonzero(~leaf)
        dest = pool.level[kids[inner]]
        for s in np.unique(dest).tolist():
            pick = inner[dest == s]
            if final[s] is None:
                final[s] = xp.empty(pool.level_cols[s], dtype=xp.int64)
            if len(pick) == 1:
                q, r = int(kids[pick[0]]), int(off[pick[0]])
                final[s][pool.start[q] : pool.start[q] + w[pick[0]]] = here[r : r + w[pick[0]]]
            else:
                dst, at = _expand(xp, w[pick], pool.start[kids[pick]], off[pick])
                final[s][dst] = here[at]
    return columns


def _offsets(widths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=out[1:])
    return out


def _segments(xp: ModuleType, lengths: np.ndarray):
    """Segment index of every element of segments of ``lengths`` laid end to end (``xp`` int64)."""
    if xp is np:
        return np.repeat(np.arange(len(lengths)), lengths)
    ends = np.cumsum(lengths)
    return xp.searchsorted(xp.asarray(ends), xp.arange(int(ends[-1]) if len(ends) else 0), side="right")


def _expand(xp: ModuleType, lengths: np.ndarray, *starts: np.ndarray) -> tuple:
    """For each ``starts`` array, the concatenated ranges ``[starts[k], starts[k] + lengths[k])``
    as one ``xp`` int64 index.

    On the device the segment of every element is found once for all of them,
    from one small upload of the per-segment values, not uploaded element by element.
    """
    if xp is np:
        return tuple(_ranges(s, lengths) for s in starts)
    heads = np.cumsum(lengths) - lengths
    base = xp.asarray(np.stack([s - heads for s in starts]))
    seg = _segments(xp, lengths)
    span = xp.arange(int(lengths.sum()))
    return tuple(base[k][seg] + span for k in range(len(starts)))
