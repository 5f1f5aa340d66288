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

Many small families go through the same calls (:func:`progressive_align_many`):
their trees form one forest whose combined level ``k`` is every family's level
``k``, each merge with its own family's gap costs, so a run of many families pays
the per-level launches of its deepest tree once, not once per family.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from msa.progress import current
from msa.profile import N_COUNTS, AlignBatch, gap_vector, sequence_counts
from msa.params import GapCosts
from msa.consistency import LevelBonuses, TopLibrary
from msa.seqdb import SeqDB, _ranges, offsets_of
from msa.tree.guide_tree import GuideTree


def progressive_align(
    db: SeqDB, tree: GuideTree, matrix: np.ndarray, gaps: GapCosts, backend, weights: np.ndarray | None = None,
    library: TopLibrary | None = None,
) -> tuple[np.ndarray, int]:
    """Align ``db`` along ``tree``, sequence ``i`` counting ``weights[i]`` times in every profile
    (integers, msa.tree.weights; None: once, as in FAMSA), the top merges biased by ``library``
    (msa.consistency; None: no bias).

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
    return progressive_align_many([db], [tree], matrix, [gaps], backend, [weights], [library])[0]


def progressive_align_many(
    dbs: Sequence[SeqDB], trees: Sequence[GuideTree], matrix: np.ndarray, gaps: Sequence[GapCosts], backend,
    weights: Sequence[np.ndarray | None] | None = None, libraries: Sequence[TopLibrary | None] | None = None,
) -> list[tuple[np.ndarray, int]]:
    """Align many families, each along its own tree with its own gap costs (and sequence
    ``weights`` and consistency ``libraries``, one or None per family), in shared launches.

    The trees form one forest: combined level ``k`` holds every family's level-``k``
    merges, so the backend gets as many ``profile_align`` calls (and gathers and
    placements) as the deepest tree has levels, not the sum over the families. A
    merge's result depends only on its two children, the matrix and its own gap
    row (``AlignBatch`` gaps per merge), so every family's columns are exactly
    what :func:`progressive_align` gives it alone.

    Returns ``(columns, width)`` per family, as :func:`progressive_align`.

    Example:
        >>> from msa.alphabet import load_matrix
        >>> from msa.backends.cpu import CpuBackend
        >>> from msa.params import AlignParams, gap_costs
        >>> dbs = [SeqDB.from_pairs([("a", "MKV"), ("b", "MV")]), SeqDB.from_pairs([("c", "WW")])]
        >>> trees = [GuideTree(2, [[0, 1]], [1.0]), GuideTree(1, [], [])]
        >>> out = progressive_align_many(dbs, trees, load_matrix("PFASUM43"),
        ...                              [gap_costs(AlignParams(), 2), gap_costs(AlignParams(), 1)], CpuBackend())
        >>> [(cols.tolist(), width) for cols, width in out]
        [([0, 1, 2, 0, 1], 3), ([0, 1], 2)]
    """
    return [(columns, width) for columns, width, _ in
            _progressive(dbs, trees, matrix, gaps, backend, weights, False, libraries)]


def progressive_profiles(
    dbs: Sequence[SeqDB], trees: Sequence[GuideTree], matrix: np.ndarray, gaps: Sequence[GapCosts], backend,
    weights: Sequence[np.ndarray | None] | None = None,
) -> list[tuple[np.ndarray, int, np.ndarray]]:
    """:func:`progressive_align_many` with each root's profile table (host int32 ``(width,
    N_COUNTS)``): ``(columns, width, profile)`` per family. The subtrees of one family split
    across workers (msa.run.split) come here; their roots are then merged by
    :func:`align_profiles` as the whole tree's top merges would merge them."""
    return _progressive(dbs, trees, matrix, gaps, backend, weights, True)


def _progressive(
    dbs: Sequence[SeqDB], trees: Sequence[GuideTree], matrix: np.ndarray, gaps: Sequence[GapCosts], backend,
    weights: Sequence[np.ndarray | None] | None, profiles: bool, libraries: Sequence[TopLibrary | None] | None = None,
) -> list[tuple[np.ndarray, int, np.ndarray | None]]:
    weights = [None] * len(dbs) if weights is None else list(weights)
    libraries = [None] * len(dbs) if libraries is None else list(libraries)
    if profiles and any(lib is not None and lib.n_pairs for lib in libraries):
        raise ValueError("consistency libraries are for whole families, not for profiles of subtrees")
    if not len(dbs) == len(trees) == len(gaps) == len(weights):
        raise ValueError(f"{len(dbs)} families, {len(trees)} trees, {len(gaps)} gap costs and {len(weights)} weights")
    for db, tree, w in zip(dbs, trees, weights):
        check_family(db, tree, w)
    merged = [f for f, db in enumerate(dbs) if len(db) > 1]  # one sequence is its own alignment
    done: dict[int, tuple[np.ndarray, int, np.ndarray | None]] = {}
    if merged:
        forest = _Forest.of([dbs[f] for f in merged], [trees[f] for f in merged], [gaps[f] for f in merged],
                            [weights[f] for f in merged], [libraries[f] for f in merged])
        columns, widths, tables = _align_forest(forest, matrix, backend, profiles)
        for i, f in enumerate(merged):
            table = None if tables is None else tables[i]
            done[f] = (columns[forest.code_off[i] : forest.code_off[i + 1]], int(widths[i]), table)
    return [
        done[f] if f in done else (
            np.arange(db.lengths[0], dtype=np.int64), int(db.lengths[0]),
            sequence_counts(db.codes) * (1 if weights[f] is None else np.int32(weights[f][0])) if profiles else None,
        )
        for f, db in enumerate(dbs)
    ]


def align_profiles(
    profiles: Sequence[np.ndarray], sizes: np.ndarray, tree: GuideTree, matrix: np.ndarray, gaps: GapCosts, backend
) -> tuple[list[np.ndarray], int]:
    """Merge finished profiles along ``tree`` (a tree over them: leaf ``k`` is ``profiles[k]``,
    a table of ``sizes[k]`` sequences) as the progressive stage merges nodes, level by level
    with one backend call per level; the same merges give the same tables and maps, so this
    is the top of a tree whose subtrees were aligned elsewhere (msa.run.split). Returns each
    profile's final column of every one of its columns (int64, host) and the final width."""
    k = len(profiles)
    tables: list[np.ndarray | None] = [np.asarray(p, dtype=np.int32) for p in profiles] + [None] * (k - 1)
    widths = np.zeros(2 * k - 1, dtype=np.int64)
    widths[:k] = [len(p) for p in profiles]
    n_seqs = np.zeros(2 * k - 1, dtype=np.int64)
    n_seqs[:k] = sizes
    maps: list[np.ndarray | None] = [None] * (2 * k - 1)  # a node's columns -> its parent's
    row = gap_vector(gaps)
    levels = tree.levels()
    for level in np.unique(levels).tolist():
        nodes = np.flatnonzero(levels == level) + k
        cuts = backend.level_cuts(widths[tree.children[nodes - k].reshape(-1)])
        for part in np.split(nodes, cuts[1:-1]):
            kids = tree.children[part - k].reshape(-1)
            offs = offsets_of(widths[kids])
            batch = AlignBatch(np.concatenate([tables[c] for c in kids]), offs, n_seqs[kids], matrix, row)
            result = backend.profile_align(batch)
            out, parent_maps = backend.to_host(result.counts), backend.to_host(result.maps).astype(np.int64)
            for j, node in enumerate(part.tolist()):
                lo, hi = int(result.col_offsets[j]), int(result.col_offsets[j + 1])
                tables[node], widths[node] = out[lo:hi], hi - lo
                n_seqs[node] = n_seqs[kids[2 * j]] + n_seqs[kids[2 * j + 1]]
            for i, c in enumerate(kids.tolist()):
                maps[c], tables[c] = parent_maps[offs[i] : offs[i + 1]], None
    final: list[np.ndarray | None] = [None] * (2 * k - 1)
    final[-1] = np.arange(widths[-1], dtype=np.int64)
    for node in range(2 * k - 2, k - 1, -1):  # parents before children (children are smaller ids)
        for c in tree.children[node - k].tolist():
            final[c] = final[node][maps[c]]
    return final[:k], int(widths[-1])  # type: ignore[return-value]


def check_family(db: SeqDB, tree: GuideTree, weights: np.ndarray | None = None) -> None:
    """What :func:`progressive_align` refuses, as a ValueError: no sequences, a tree over another
    number of leaves, an empty sequence among several, weights not one positive integer per
    sequence."""
    n = len(db)
    if n == 0:
        raise ValueError("no sequences to align")
    if tree.n_leaves != n:
        raise ValueError(f"the tree has {tree.n_leaves} leaves for {n} sequences")
    if n > 1 and np.any(db.lengths == 0):
        raise ValueError("cannot align an empty sequence")
    if weights is not None and (np.shape(weights) != (n,) or np.any(np.asarray(weights) < 1)):
        raise ValueError(f"weights must be {n} integers >= 1")


@dataclass
class _Forest:
    """Families of two or more sequences as one forest over their sequences laid end to end.

    Leaves are ``0..n-1`` (family ``f``'s at ``leaf_off[f]``..), internal node ``n + k``
    joins ``children[k]`` (family ``f``'s merges in its tree's order, after those of the
    families before it), at scheduling level ``levels[k]`` with gap vector ``gaps[k]``.
    ``roots[f]`` is family ``f``'s root; its residues are ``codes[code_off[f]:code_off[f + 1]]``.
    Leaf ``i`` counts ``weights[i]`` times in its profiles; ``library`` biases the top merges
    (msa.consistency, the families' libraries joined).
    """

    codes: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray
    children: np.ndarray
    levels: np.ndarray
    gaps: np.ndarray
    roots: np.ndarray
    code_off: np.ndarray
    library: TopLibrary

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_nodes(self) -> int:
        return self.n + len(self.children)

    @classmethod
    def of(
        cls, dbs: Sequence[SeqDB], trees: Sequence[GuideTree], gaps: Sequence[GapCosts],
        weights: Sequence[np.ndarray | None], libraries: Sequence[TopLibrary | None] | None = None,
    ) -> "_Forest":
        sizes = np.array([len(db) for db in dbs], dtype=np.int64)
        n = int(sizes.sum())
        leaf_off = offsets_of(sizes)
        node_off = offsets_of(sizes - 1)  # each family's first merge
        code_off = offsets_of(np.array([len(db.codes) for db in dbs], dtype=np.int64))
        joined = SeqDB.joined(list(dbs))
        if len(dbs) == 1:  # one family: its tree as it is
            children = trees[0].children
        else:
            children = np.concatenate([
                np.where(t.children < s, t.children + leaf_off[f], t.children - s + n + node_off[f])
                for f, (t, s) in enumerate(zip(trees, sizes.tolist()))
            ])
        rows = np.array([gap_vector(g) for g in gaps], dtype=np.int64)
        merge_gaps = np.broadcast_to(rows[0], (n - 1, 4)) if len(dbs) == 1 else np.repeat(rows, sizes - 1, axis=0)
        leaf_weights = np.concatenate([
            np.ones(s, dtype=np.int64) if w is None else np.asarray(w, dtype=np.int64)
            for w, s in zip(weights, sizes.tolist())
        ])
        libs = [TopLibrary.empty(s - 1) if lib is None else lib
                for lib, s in zip(libraries or [None] * len(dbs), sizes.tolist())]
        return cls(
            joined.codes, joined.offsets, leaf_weights, children, np.concatenate([t.levels() for t in trees]),
            merge_gaps, n + node_off[1:] - 1, code_off,
            libs[0] if len(libs) == 1 else TopLibrary.joined(libs, code_off[:-1], leaf_off[:-1]),
        )


#: A GPU run puts each level on the GPU or on the host's CPU, whichever the model below predicts
#: to finish it first (the bytes are the same either way). False keeps every level on the run's
#: backend (tests compare the two).
HYBRID = True
#: The level model, seconds, fitted to 9,494 levels of 6 families timed on each side (H200 host,
#: 16 cores; `benchmarks/level_model.py`): a GPU level pays a fixed cost (a dozen
#: launches and allocations, metadata uploads, a wait for the parents' widths), its longest
#: merge's chain of DP steps, and a little per column and merge; a host level a smaller fixed
#: cost (NumPy and calls), its cells shared by the threads, its largest merge's cells (on one
#: thread), and a little per column and merge.
GPU_LEVEL_S = 8.7e-4
GPU_ROW_S = 3.3e-6  # x the longest merge's narrower side
GPU_STEP_S = 2.7e-7  # x the longest merge's two sides
GPU_COLUMN_S = 3.9e-9
GPU_MERGE_S = 6.9e-7
CPU_LEVEL_S = 2.4e-4
CPU_CELL_S = 1.2e-8  # x (cells / threads + the largest merge's cells)
CPU_COLUMN_S = 1.3e-7
CPU_MERGE_S = 2.2e-6
#: Moving children's tables to the other side: per level (a gather there, a copy, a wait, and
#: the top-down pass's crossing back), and per byte.
LINK_CALL_S = 2.0e-4
LINK_BYTE_S = 1 / 1.0e10
#: A GPU run may hand its whole progressive stage to the host's one compiled call
#: (msa.backends.cpu.forest), which pays microseconds a level where the level loop pays a
#: fraction of a millisecond: ``model`` where :func:`_host_stage_first` predicts it finishes
#: first, ``host`` or ``device`` always (benchmarks/host_stage.py compares them). The same bytes
#: either way.
HOST_STAGE = "model"
#: That prediction, seconds, fitted (non-negative least squares on relative errors) to both
#: ways timed on 24 families of 200-10^4 sequences of mean length 23-489, H200 host, 16 threads
#: (`benchmarks/host_stage.py`): the one call pays per
#: squared sequence length (its merges' cells), per level and per residue; the level loop per
#: level and per residue; 23 of the 24 picks were the faster way (26.3 s against the level
#: loop's 29.1 s, 26.0 s at best). A short family's deep tree is the host's (PF00037.10000, 3,113
#: levels: 0.12 s against 1.32 s), a long one's wide levels the GPU's (PF00155.10000: 7.6 s
#: against 2.1 s).
HOST_CELL_S = 2.65e-9  # x the sum of the squared sequence lengths
HOST_LEVEL_S = 1.7e-5
HOST_RESIDUE_S = 4.9e-7
LOOP_LEVEL_S = 4.7e-4
LOOP_RESIDUE_S = 4.2e-7
#: Past this many sequences the model is not asked (it was fitted up to 10^4; at 10^7 its level
#: loop would be thrice the measured one) and the level loop runs.
HOST_STAGE_MAX = 1 << 15


class _Sides:
    """Where a level may run: side 0 is the run's backend; where that is not the host (a GPU),
    side 1 is the host's CPU backend, made on first use, for the levels too small to pay a GPU
    level's fixed cost (deep trees are thousands of levels of one or two small merges)."""

    def __init__(self, backend) -> None:
        self.main = backend
        self.hybrid = HYBRID and backend.xp is not np
        self._host = None if self.hybrid else backend
        self._threads = 1

    def backend(self, side: int):
        if side == 0:
            return self.main
        if self._host is None:
            import numba

            from msa.backends.cpu import CpuBackend  # local: (b) the CPU backend: 27 ms more in a GPU run (docs/start-up.md, "Function-local imports")

            self._host, self._threads = CpuBackend(), numba.get_num_threads()
        return self._host

    def xp(self, side: int):
        return self.backend(side).xp

    def move(self, a, side: int):
        """``a`` (on the other side) on ``side``."""
        return self.main.xp.asarray(a) if side == 0 else self.main.to_host(a)

    def choose(self, wa: np.ndarray, wb: np.ndarray, away: np.ndarray) -> int:
        """The side of a level of merges ``wa[k]`` x ``wb[k]`` columns: the one the model
        predicts to finish first, counting the move of the children's tables held on the
        other side (``away[s]``: their columns on side ``s``'s other side)."""
        if not self.hybrid:
            return 0
        if self._host is None:
            self.backend(1)
        cells = wa * wb
        cols, m = float((wa + wb).sum()), len(wa)
        gpu = (GPU_LEVEL_S + GPU_ROW_S * float(np.minimum(wa, wb).max()) + GPU_STEP_S * float((wa + wb).max())
               + GPU_COLUMN_S * cols + GPU_MERGE_S * m)
        cpu = (CPU_LEVEL_S + CPU_CELL_S * (float(cells.sum()) / self._threads + float(cells.max()))
               + CPU_COLUMN_S * cols + CPU_MERGE_S * m)
        link = [LINK_CALL_S + LINK_BYTE_S * 4 * N_COUNTS * float(c) if c else 0.0 for c in away]
        return 0 if gpu + link[0] <= cpu + link[1] else 1


def _host_stage_first(forest: _Forest) -> bool:
    """Whether the host's one call is predicted to finish a GPU run's stage before the level
    loop (HOST_STAGE's model; the widths are known only as the levels run, so the sequences'
    lengths stand for them)."""
    if HOST_STAGE != "model":
        return HOST_STAGE == "host"
    if forest.n > HOST_STAGE_MAX:
        return False
    lengths = np.diff(forest.offsets).astype(np.float64)
    residues, levels = float(lengths.sum()), float(forest.levels.max())
    host = HOST_CELL_S * float(lengths @ lengths) + HOST_LEVEL_S * levels + HOST_RESIDUE_S * residues
    return host < LOOP_LEVEL_S * levels + LOOP_RESIDUE_S * residues


def _align_forest(
    forest: _Forest, matrix: np.ndarray, backend, profiles: bool = False
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray] | None]:
    """The progressive stage over a forest: ``(columns, widths, tables)``, the final column of
    every residue (``forest.codes`` layout, host), each family's width and, with ``profiles``,
    each root's profile table (host; else None). A backend with ``align_forest`` (the CPU)
    runs the stage in one call where no tables are wanted; otherwise the levels run here."""
    n = forest.n
    matrix = np.ascontiguousarray(matrix, dtype=np.int64)
    sides = _Sides(backend)
    if not profiles and backend.align_forest is None and sides.hybrid and _host_stage_first(forest):
        backend = sides.backend(1)  # the host's one call
    if not profiles and backend.align_forest is not None:
        with current().stage("aligning profiles", total=len(forest.children)) as advance:
            columns, widths = backend.align_forest(
                forest.codes, forest.offsets, forest.weights, forest.children, forest.levels, forest.gaps, matrix,
                advance, library=forest.library.arrays)
        return columns, widths[forest.roots], None
    order = np.argsort(forest.levels, kind="stable")
    bounds = np.flatnonzero(np.diff(forest.levels[order])) + 1
    batches = np.split(order + n, bounds)

    pool = _ProfilePool(sides, forest.codes, forest.offsets, forest.weights, forest.n_nodes)
    sizes = np.ones(forest.n_nodes, dtype=np.int64)  # a profile's sequences, by weight
    sizes[:n] = forest.weights
    bonuses = (LevelBonuses(forest.library, forest.offsets, forest.children, forest.roots, sides.main)
               if forest.library.n_pairs else None)
    done: list[np.ndarray] = []  # the batches as run: levels, cut where they do not fit the device
    batch_maps: list = []
    batch_side: list[int] = []
    with current().stage("aligning profiles", total=len(forest.children)) as advance:
        for level in batches:
            kid_widths = pool.widths[forest.children[level - n]]
            side = sides.choose(kid_widths[:, 0], kid_widths[:, 1], pool.away(forest.children[level - n]))
            run = sides.backend(side)
            cuts = run.level_cuts(kid_widths.reshape(-1))
            for nodes in np.split(level, cuts[1:-1]):
                kids = forest.children[nodes - n].reshape(-1)
                sizes[nodes] = sizes[kids[0::2]] + sizes[kids[1::2]]
                gathered, col_offsets = pool.take(kids, side)
                bonus = None if bonuses is None else bonuses.tables(nodes, kids, pool.widths, sizes, run)
                batch = AlignBatch(gathered, col_offsets, sizes[kids], matrix, forest.gaps[nodes - n], bonus=bonus)
                del gathered
                result = run.profile_align(batch)
                maps = result.maps.astype(run.xp.int32, copy=False)  # the GPU's are int32 already
                if bonuses is not None:
                    bonuses.walk(kids, col_offsets, sides.move(maps, 0) if side else maps)
                del batch  # the gathered tables go before the parents are kept
                pool.add_level(nodes, result.counts, result.col_offsets, side)
                batch_maps.append(maps)
                batch_side.append(side)
                done.append(nodes)
                advance(len(nodes))
    tables = None
    if profiles:
        gathered, offs = pool.take(forest.roots, 1 if sides.hybrid else 0)
        host = sides.backend(1 if sides.hybrid else 0).to_host(gathered)
        tables = [host[offs[i] : offs[i + 1]] for i in range(len(forest.roots))]
    columns = _place_columns(sides, forest, done, batch_maps, batch_side, pool)
    return columns, pool.widths[forest.roots], tables


class _ProfilePool:
    """The profile tables of finished nodes, one store per level, each on the side its level ran.

    A node is addressed by (store, row); a level's children are gathered by one
    backend call on the level's side (``gather_profiles``: leaves one-hot from the
    codes, inner nodes copied from their stores), never an operation per node or
    per store; children held on the other side are gathered there first and moved
    over in one copy. A store is dropped when its last node is taken and compacted
    when less than half of it is still live, so memory stays within twice the live
    profiles. ``level``/``start`` keep each node's place in its level's output,
    which the top-down pass uses.
    """

    def __init__(
        self, sides: _Sides, codes: np.ndarray, offsets: np.ndarray, weights: np.ndarray, n_nodes: int
    ) -> None:
        self.sides, self.offsets, self.weights, self.n = sides, offsets, weights, len(offsets) - 1
        self.codes = [sides.main.xp.asarray(codes), codes]  # one upload on the GPU, the same array on the CPU
        self.widths = np.zeros(n_nodes, dtype=np.int64)
        self.widths[: self.n] = np.diff(offsets)
        self.level = np.full(n_nodes, -1, dtype=np.int64)
        self.start = np.zeros(n_nodes, dtype=np.int64)  # row in its level's output
        self.row = np.zeros(n_nodes, dtype=np.int64)  # row in its store now (after compactions)
        self.live = np.zeros(n_nodes, dtype=bool)
        self.node_side = np.zeros(n_nodes, dtype=np.int8)  # the side of each inner node's store
        self.stores: list = []
        self.side: list[int] = []  # each store's side
        self.members: list[np.ndarray | None] = []  # each store's nodes still in it, in node order
        self.store_live: list[int] = []
        self.level_cols: list[int] = []

    def add_level(self, nodes: np.ndarray, counts, col_offsets: np.ndarray, side: int) -> None:
        """Keep a level's parent tables (merge ``k`` is ``nodes[k]``), held on ``side``."""
        k = len(self.stores)
        self.widths[nodes] = np.diff(col_offsets)
        self.level[nodes] = k
        self.start[nodes] = self.row[nodes] = col_offsets[:-1]
        self.live[nodes] = True
        self.node_side[nodes] = side
        self.stores.append(counts)
        self.side.append(side)
        self.members.append(np.asarray(nodes))
        self.store_live.append(int(col_offsets[-1]))
        self.level_cols.append(int(col_offsets[-1]))

    def away(self, kids: np.ndarray) -> np.ndarray:
        """Columns of ``kids``' tables a level would move in, run on side 0 and on side 1."""
        inner = kids[kids >= self.n]
        if not self.sides.hybrid or len(inner) == 0:
            return np.zeros(2, dtype=np.int64)
        on = self.node_side[inner]
        w = self.widths[inner]
        return np.array([w[on == 1].sum(), w[on == 0].sum()], dtype=np.int64)

    def take(self, kids: np.ndarray, side: int) -> tuple[object, np.ndarray]:
        """The tables of ``kids`` laid end to end on ``side``, and their column offsets; inner
        nodes leave the pool. Only the stores read are passed on (a deep tree has a store per
        level, and a list of them all per level was quadratic in the depth)."""
        w = self.widths[kids]
        leaf = kids < self.n
        inner = kids[~leaf]
        first = np.where(leaf, self.offsets[np.minimum(kids, self.n)], self.row[kids])
        used, index = np.unique(self.level[inner], return_inverse=True)
        part = np.full(len(kids), -1, dtype=np.int64)
        part[~leaf] = index
        held = [self.stores[s] for s in used.tolist()]
        on = [self.side[s] for s in used.tolist()]
        parts = [st if o == side else None for st, o in zip(held, on)]
        away = np.flatnonzero(~leaf)[self.node_side[inner] != side] if self.sides.hybrid else []
        if len(away):  # gathered on their side, moved here in one copy, read as one more part
            there = [st if o != side else None for st, o in zip(held, on)]
            moved = self.sides.backend(1 - side).gather_profiles(
                there, part[away], first[away], w[away], self.codes[1 - side])
            parts.append(self.sides.move(moved, side))
            first = first.copy()
            part[away], first[away] = len(parts) - 1, offsets_of(w[away])[:-1]
        values = self.weights[np.minimum(kids, self.n - 1)]  # read for the leaves only
        out = self.sides.backend(side).gather_profiles(parts, part, first, w, self.codes[side], values)
        self.live[inner] = False
        taken = np.bincount(index, weights=w[~leaf], minlength=len(used))
        for s, t in zip(used.tolist(), taken.tolist()):
            self.store_live[s] -= int(t)
            if self.store_live[s] == 0:
                self.stores[s] = self.members[s] = None
            elif 2 * self.store_live[s] < len(self.stores[s]):
                self._compact(s)
        return out, offsets_of(w)

    def _compact(self, s: int) -> None:
        keep = self.members[s][self.live[self.members[s]]]
        self.members[s] = keep
        w = self.widths[keep]
        self.stores[s] = self.sides.backend(self.side[s]).gather_profiles(
            [self.stores[s]], np.zeros(len(keep), dtype=np.int64), self.row[keep], w, self.codes[self.side[s]]
        )
        self.row[keep] = offsets_of(w)[:-1]


def _place_columns(
    sides: _Sides, forest: _Forest, batches: list[np.ndarray], batch_maps: list, batch_side: list[int],
    pool: _ProfilePool,
) -> np.ndarray:
    """Top-down: the final column of every residue (host int64, ``forest.codes`` layout).

    ``final[k]`` holds the final column of every column of level ``k``'s outputs,
    in that level's layout; a level's maps (relative to each parent) turn it into
    the final columns of its inputs, which go to the leaves' residues and to the
    levels that made the inner children: one ``place_segments`` call per level, on
    the side the level ran (where its maps are). What a level writes for a level
    or for residues on the other side stays on its own side until read: a level's
    final columns are brought together before it places its own, the residues'
    at the end. A family's root is its own final alignment (column c is final column c).
    """
    n = forest.n
    columns: list = [None, None]  # the residues' final columns, on each side that wrote some
    final: list[list] = [[None, None] for _ in batches]
    owner = np.full(forest.n_nodes, -1, dtype=np.int64)  # the batch that merges each node into its parent
    for k, nodes in enumerate(batches):
        owner[forest.children[nodes - n].reshape(-1)] = k
    owner_side = np.append(np.asarray(batch_side, dtype=np.int64), -1)[owner]
    root_level = pool.level[forest.roots]
    for k in range(len(batches) - 1, -1, -1):
        side, nodes = batch_side[k], batches[k]
        xp = sides.xp(side)
        values = _joined(sides, final[k], side, nodes[owner_side[nodes] == 1 - side], pool)
        roots = forest.roots[root_level == k]
        if len(roots):
            values = _root_columns(xp, pool, roots, values, pool.level_cols[k])
        kids = forest.children[nodes - n].reshape(-1)
        leaf = kids < n
        dest = np.where(leaf, -1, pool.level[kids])  # -1: the residues' columns
        levels = np.unique(dest)
        for s in levels[levels >= 0].tolist():
            if final[s][side] is None:
                final[s][side] = xp.empty(pool.level_cols[s], dtype=xp.int64)
        if levels[0] < 0 and columns[side] is None:
            columns[side] = xp.empty(len(forest.codes), dtype=xp.int64)
        targets = [columns[side] if s < 0 else final[s][side] for s in levels.tolist()]
        first = np.where(leaf, forest.offsets[np.minimum(kids, n)], pool.start[kids])
        parent = np.repeat(pool.start[nodes], 2)
        sides.backend(side).place_segments(
            targets, np.searchsorted(levels, dest), first, values, batch_maps[k], parent, pool.widths[kids]
        )
        final[k] = [None, None]
    if columns[1] is None or columns[0] is None:
        side = 0 if columns[1] is None else 1
        return sides.backend(side).to_host(columns[side])
    out = sides.main.to_host(columns[0])
    leaves = np.flatnonzero(owner_side[:n] == 1)  # residues the host's levels placed
    at = _ranges(forest.offsets[leaves], pool.widths[leaves])
    out[at] = columns[1][at]
    return out


def _joined(sides: _Sides, parts: list, side: int, away: np.ndarray, pool: _ProfilePool):
    """A level's final columns on ``side``: ``parts[side]``, with the segments of the nodes
    ``away`` (those merged on the other side, which wrote them into ``parts[1 - side]``)
    copied in after one move of the whole level (by ``place_segments``, which compiles
    nothing on the GPU). None where nothing was written (a level of roots only)."""
    here, there = parts[side], parts[1 - side]
    if there is None or len(away) == 0:
        return here
    moved = sides.move(there, side)
    if here is None:
        return moved
    w, start = pool.widths[away], pool.start[away]
    within = sides.xp(side).asarray(_ranges(np.zeros_like(w), w).astype(np.int32))  # each segment's 0..w-1
    sides.backend(side).place_segments([here], np.zeros(len(away), dtype=np.int64), start, moved, within, start, w)
    return here


def _root_columns(xp, pool: _ProfilePool, roots: np.ndarray, final, n_cols: int):
    """``final`` (a level's final columns, allocated here if None) with the columns of the
    ``roots`` in that level set to 0..width-1 each."""
    start, widths = pool.start[roots], pool.widths[roots]
    if final is None and len(roots) == 1 and widths[0] == n_cols:  # a level of one root: one family's last
        return xp.asarray(np.arange(n_cols, dtype=np.int64))  # uploaded: no kernel compiled for it
    if final is None:
        final = xp.empty(n_cols, dtype=xp.int64)
    at = np.repeat(start - offsets_of(widths)[:-1], widths) + np.arange(int(widths.sum()))
    final[xp.asarray(at)] = xp.asarray(at - np.repeat(start, widths))
    return final
