"""Progressive alignment: merge profiles up the guide tree in level batches, then place residues.

Bottom-up, every internal node whose children are done goes into one batch
(``GuideTree.levels``), and the backend aligns the whole batch in one call. A
merge returns, for each child, a column map (child column -> parent column) and
the parent's counts; child profiles are dropped once merged. Top-down, the maps
compose into the final column of every residue, and rows are filled in one pass.

Profile tables, maps and the composition live in the backend's array module
(``backend.xp``: NumPy on the CPU, CuPy on the GPU, where the codes are uploaded
once and only the final columns come back). Per level the host keeps only widths
and sizes; a level with one merge (the thousands of levels of a caterpillar
subtree) costs no concatenation or copy of its parent.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from msa.progress import current
from msa.profile import AlignBatch, gap_vector, sequence_counts
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
    codes = xp.asarray(db.codes)  # one upload on the GPU, the same array on the CPU
    levels = tree.levels()
    order = np.argsort(levels, kind="stable")
    bounds = np.flatnonzero(np.diff(levels[order])) + 1
    batches = np.split(order + n, bounds)

    profiles: dict[int, np.ndarray] = {}  # backend arrays
    sizes = np.ones(tree.n_nodes, dtype=np.int64)
    widths = np.zeros(tree.n_nodes, dtype=np.int64)
    widths[:n] = lengths
    batch_maps: list[np.ndarray] = []
    with current().stage("aligning profiles", total=n - 1) as advance:
        for nodes in batches:
            kids = tree.children[nodes - n].reshape(-1)
            sizes[nodes] = sizes[kids[0::2]] + sizes[kids[1::2]]
            gathered = _gather(xp, db, codes, kids, profiles)
            batch = AlignBatch(gathered, _offsets(widths[kids]), sizes[kids], matrix, g)
            result = backend.profile_align(batch)
            widths[nodes] = np.diff(result.col_offsets)
            if len(nodes) == 1:
                profiles[int(nodes[0])] = result.counts
            else:
                off = result.col_offsets.tolist()
                for k, node in enumerate(nodes.tolist()):
                    profiles[node] = result.counts[off[k] : off[k + 1]].copy()  # a view would pin the batch
            batch_maps.append(result.maps.astype(xp.int32))
            advance(len(nodes))
    root = tree.root
    width = int(widths[root])
    profiles.clear()

    # Top-down: the final column of every column of every node, level by level.
    final: dict[int, np.ndarray] = {root: xp.arange(width, dtype=xp.int64)}
    for nodes, maps in zip(reversed(batches), reversed(batch_maps)):
        kids = tree.children[nodes - n].reshape(-1)
        if len(nodes) == 1:
            composed = final.pop(int(nodes[0]))[maps]
        else:
            parent_final = xp.concatenate([final.pop(p) for p in nodes.tolist()])
            kid_base = np.repeat(_offsets(widths[nodes])[:-1], 2)
            composed = parent_final[maps + xp.asarray(np.repeat(kid_base, widths[kids]))]
        kid_off = _offsets(widths[kids]).tolist()
        for k, kid in enumerate(kids.tolist()):
            final[kid] = composed[kid_off[k] : kid_off[k + 1]]
    columns = backend.to_host(xp.concatenate([final[i] for i in range(n)]))
    return columns, width


def gapped_rows(db: SeqDB, columns: np.ndarray, width: int) -> np.ndarray:
    """``(n, width)`` uint8 rows: each residue's letter at its column, ``b'-'`` elsewhere."""
    rows = np.full((len(db), width), ord("-"), dtype=np.uint8)
    seq_of = np.repeat(np.arange(len(db)), db.lengths)
    rows[seq_of, columns] = db.residues
    return rows


def _offsets(widths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(widths) + 1, dtype=np.int64)
    np.cumsum(widths, out=out[1:])
    return out


def _gather(
    xp: ModuleType, db: SeqDB, codes: np.ndarray, nodes: np.ndarray, profiles: dict[int, np.ndarray]
) -> np.ndarray:
    """The tables of ``nodes`` laid end to end (``xp`` arrays); leaves are built from ``codes``
    (``db.codes`` in the backend's array module), profiles popped."""
    n = len(db)
    leaf = nodes < n
    if leaf.all():
        starts = db.offsets[nodes]
        return sequence_counts(codes[xp.asarray(_ranges(starts, db.offsets[nodes + 1] - starts))], xp)
    parts = []
    for node in nodes.tolist():
        if node < n:
            parts.append(sequence_counts(codes[db.offsets[node] : db.offsets[node + 1]], xp))
        else:
            parts.append(profiles.pop(node))
    return xp.concatenate(parts)
