"""Guide-tree construction: pick exact linkage or PartTree from the parameters."""
from __future__ import annotations

import numpy as np

from msa.params import AlignParams, Linkage
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree
from msa.tree.linkage import batch_linkage, finalize, graft, prim_single_linkages
from msa.tree.parttree import exact_limit, group_distances, parttree, prim_for_every_group, uses_sample_split


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
    n = len(db)
    if n == 0:
        raise ValueError("no sequences to build a guide tree from")
    method = params.guide_tree
    if method == "auto":
        method = params.linkage if n <= exact_limit(params, params.linkage, backend) else "parttree"
    needs_kmers = (method == "parttree" and not uses_sample_split(params)) or params.distance == "kmer"
    tables = backend.kmer_tables(db.codes, db.offsets) if needs_kmers else None
    if method == "parttree":
        return parttree(db, tables, params, backend, params.linkage)
    if n > exact_limit(params, method, backend):
        raise ValueError(
            f"guide_tree={method!r} needs the full distance matrix of {n} sequences, more than "
            f"exact_tree_max={params.exact_tree_max}; use 'parttree' or raise exact_tree_max"
        )
    return exact_tree(db, tables, params, backend, method)


def exact_tree(db: SeqDB, tables, params: AlignParams, backend, method: Linkage) -> GuideTree:
    """UPGMA or single-linkage tree over all of ``db``, from its full distance matrix up to exact_tree_max."""
    n = len(db)
    ids = np.arange(n, dtype=np.int64)
    off = np.array([0, n], dtype=np.int64)
    if n == 1:
        return GuideTree(1, np.zeros((0, 2), dtype=np.int64), np.zeros(0))
    if prim_for_every_group(params, method, backend) or n > params.exact_tree_max:  # single linkage over LCS (within mst_tree_max past the matrix)
        merges, heights = prim_single_linkages(db.codes, db.offsets, ids, off, backend)
    else:
        dist, dist_off = group_distances(db, tables, ids, off, params, backend)
        merges, heights = batch_linkage(dist, dist_off, off, method == "single")
    left = np.full(2 * n - 1, -1, dtype=np.int64)
    right = np.full(2 * n - 1, -1, dtype=np.int64)
    height = np.zeros(2 * n - 1)
    graft(merges, heights, ids, off, np.array([n]), n + 1, left, right, height)
    return finalize(left, right, height, n, n)
