"""Guide-tree construction: pick exact linkage or PartTree from the parameters."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from msa.distances.kmers import KmerTables, kmer_alphabet
from msa.params import AlignParams, Linkage
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree
from msa.tree.linkage import batch_linkage, finalize, graft, prim_single_linkages
from msa.tree.parttree import (
    _pair_batches, exact_limit, group_distances, parttree, prim_for_every_group, uses_sample_split,
)


def build_guide_tree(db: SeqDB, params: AlignParams, backend) -> GuideTree:
    """The guide tree of ``db`` by ``params.guide_tree``; deterministic for a given seed.

    ``upgma``/``single`` build an exact tree from the full distance matrix
    (refused past ``exact_tree_max`` sequences, where the matrix would not fit);
    ``parttree`` always splits the root; ``auto`` is an exact tree (linkage
    ``params.linkage``) up to ``exact_tree_max`` sequences (``mst_tree_max``, by
    default the backend's MST_TREE_MAX, for single linkage over LCS, built by
    Prim without the matrix) and PartTree above, whose exact subtrees use the
    same linkage.

    Example:
        >>> from msa.backends.cpu import CpuBackend
        >>> db = SeqDB.from_pairs([("a", "MKVLAAGIVG"), ("b", "MKVLAAGIVA"), ("c", "WWWWCCCCHH")])
        >>> build_guide_tree(db, AlignParams(), CpuBackend()).children.tolist()
        [[0, 1], [2, 3]]
    """
    method = tree_method(len(db), params, backend)
    if method == "parttree":
        tables = _kmer_tables(db, params, backend) if _needs_kmers(params, method) else None
        return parttree(db, tables, params, backend, params.linkage)
    return exact_trees([db], params, backend, method)[0]


def build_guide_trees(dbs: Sequence[SeqDB], params: AlignParams, backend) -> list[GuideTree]:
    """:func:`build_guide_tree` of each family, the exact trees of many families in shared
    backend calls: one ``lcs_prim_msts`` for every family that takes Prim's MST (single
    linkage over LCS on the GPU, or past exact_tree_max), batches of condensed matrices
    for the others; PartTree families one by one. Each tree is the one built alone.

    Raises ValueError as build_guide_tree does, for the first family that has it.
    """
    methods = [tree_method(len(db), params, backend) for db in dbs]
    trees: list[GuideTree | None] = [None] * len(dbs)
    for method in sorted(set(methods)):
        fams = [f for f, m in enumerate(methods) if m == method]
        if method == "parttree":
            for f in fams:
                trees[f] = build_guide_tree(dbs[f], params, backend)
        else:
            for f, tree in zip(fams, exact_trees([dbs[f] for f in fams], params, backend, method)):
                trees[f] = tree
    return trees  # type: ignore[return-value]


def tree_method(n: int, params: AlignParams, backend) -> str:
    """How the tree of ``n`` sequences is built: ``parttree``, or the linkage of an exact tree.

    Raises ValueError for no sequences, or an exact method asked for past its limit."""
    if n == 0:
        raise ValueError("no sequences to build a guide tree from")
    method = params.guide_tree
    if method == "auto":
        method = params.linkage if n <= exact_limit(params, params.linkage, backend) else "parttree"
    if method != "parttree" and n > exact_limit(params, method, backend):
        raise ValueError(
            f"guide_tree={method!r} needs the full distance matrix of {n} sequences, more than "
            f"exact_tree_max={params.exact_tree_max}; use 'parttree' or raise exact_tree_max"
        )
    return method


def _needs_kmers(params: AlignParams, method: str) -> bool:
    return (method == "parttree" and not uses_sample_split(params)) or params.distance == "kmer"


def _kmer_tables(db: SeqDB, params: AlignParams, backend) -> KmerTables:
    """6-mer tables of ``db`` in the alphabet of its sequence type (``db.codes`` are in it)."""
    return backend.kmer_tables(db.codes, db.offsets, kmer_alphabet(params.seq_type))


def exact_trees(dbs: Sequence[SeqDB], params: AlignParams, backend, method: Linkage) -> list[GuideTree]:
    """UPGMA or single-linkage tree over all of each of ``dbs``: from their full distance
    matrices up to exact_tree_max (batches of at most EXACT_BATCH_PAIRS pairs), or Prim's MST
    (single linkage over LCS) in one backend call for all of them. The families' sequences are
    laid end to end, each family one group, so every tree is the one its family gets alone."""
    sizes = np.array([len(db) for db in dbs], dtype=np.int64)
    db = SeqDB.joined(list(dbs))
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    merges = np.zeros((int(off[-1]) - len(dbs), 2), dtype=np.int64)  # group g's at rows off[g] - g
    heights = np.zeros(len(merges))
    every = prim_for_every_group(params, method, backend)
    prim = np.flatnonzero((sizes > 1) & (every | (sizes > params.exact_tree_max)))
    matrix = np.flatnonzero((sizes > 1) & ~(every | (sizes > params.exact_tree_max)))
    tables = _kmer_tables(db, params, backend) if len(matrix) and _needs_kmers(params, method) else None

    def place(groups: np.ndarray, got_m: np.ndarray, got_h: np.ndarray) -> None:
        rows = np.concatenate([np.arange(off[g] - g, off[g + 1] - g - 1) for g in groups])
        merges[rows], heights[rows] = got_m, got_h

    if len(prim):
        ids, sub_off = _groups(off, prim)
        place(prim, *prim_single_linkages(db.codes, db.offsets, ids, sub_off, backend))
    if len(matrix):
        ids, sub_off = _groups(off, matrix)
        bounds, _ = _pair_batches(sub_off)
        for a, b in zip(bounds[:-1], bounds[1:]):
            part_off = sub_off[a : b + 1]
            part_ids = ids[part_off[0] : part_off[-1]]
            dist, dist_off = group_distances(db, tables, part_ids, part_off - part_off[0], params, backend)
            place(matrix[a:b], *batch_linkage(dist, dist_off, part_off - part_off[0], method == "single"))
    trees = []
    for g, n in enumerate(sizes.tolist()):
        if n == 1:
            trees.append(GuideTree(1, np.zeros((0, 2), dtype=np.int64), np.zeros(0)))
            continue
        left = np.full(2 * n - 1, -1, dtype=np.int64)
        right = np.full(2 * n - 1, -1, dtype=np.int64)
        height = np.zeros(2 * n - 1)
        rows = slice(off[g] - g, off[g + 1] - g - 1)
        local = np.arange(n, dtype=np.int64)
        graft(merges[rows], heights[rows], local, np.array([0, n]), np.array([n]), n + 1, left, right, height)
        trees.append(finalize(left, right, height, n, n))
    return trees


def _groups(off: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The members (sequence ids) of these groups of ``off``, and their offsets."""
    sizes = off[groups + 1] - off[groups]
    ids = np.concatenate([np.arange(off[g], off[g + 1], dtype=np.int64) for g in groups])
    return ids, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
