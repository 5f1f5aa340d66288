"""Sequence weights from the guide tree: ClustalW's (Thompson, Higgins & Gibson 1994).

A family's sequences are not independent samples: a Pfam family holds dense clusters of close
relatives beside a few distant members, and an unweighted profile (FAMSA's) lets a cluster of
hundreds outvote the rest at every merge above it. ClustalW weighs sequence i by the sum, over
the branches from i up to the root, of each branch's length shared by the leaves below it:
members of a dense cluster share their long branches and weigh little, a lone divergent
sequence keeps its branch whole. MAFFT and MUSCLE weigh their profiles likewise.

The weights are quantized to small integers (msa.params.WEIGHT_SCALE), so a profile stays a
table of integer counts (a sequence of weight w counts w times) and the GPU and the CPU add
the same numbers; they are computed once per family on the host, the same for every backend.
"""
from __future__ import annotations

import numpy as np

from msa.jit import njit
from msa.params import WEIGHT_SCALE, WEIGHTS_MAX_SEQUENCES, AlignParams
from msa.tree.guide_tree import GuideTree, leaf_counts


def family_weights(tree: GuideTree, params: AlignParams) -> np.ndarray | None:
    """The weights a family is aligned with (int64, one per leaf), or None for equal weights:
    ``params.weights`` is ``none``, the family is past WEIGHTS_MAX_SEQUENCES, or its tree has
    no branch lengths."""
    if params.weights == "none" or not 2 < tree.n_leaves <= WEIGHTS_MAX_SEQUENCES:
        return None
    return tree_weights(tree)


def tree_weights(tree: GuideTree, scale: int = WEIGHT_SCALE) -> np.ndarray | None:
    """ClustalW's weight of every leaf of ``tree``, as integers: max(1, rint(scale x w / mean w)).
    None where the tree gives every leaf the same weight (no branch lengths).

    >>> t = GuideTree(3, [[0, 1], [2, 3]], [0.1, 0.5])  # a and b close, c far
    >>> tree_weights(t).tolist()
    [3, 3, 5]
    """
    raw = _clustalw(tree.children, np.asarray(tree.heights, dtype=np.float64), tree.n_leaves)
    mean = float(raw.mean())
    if not mean > 0 or not np.isfinite(mean) or raw.min() == raw.max():
        return None
    return np.maximum(np.rint(raw * (scale / mean)), 1).astype(np.int64)


@njit(cache=True, nogil=True)
def _clustalw(children: np.ndarray, heights: np.ndarray, n: int) -> np.ndarray:
    """Per leaf, the sum over the branches above it of length / leaves below the branch. A
    node's branch is its parent's height less its own (leaves at 0; never negative)."""
    size = leaf_counts(children, n)
    n_nodes = n + len(children)
    height = np.zeros(n_nodes)
    height[n:] = heights
    path = np.zeros(n_nodes)  # the sum from the node's branch up to the root's
    for k in range(len(children) - 1, -1, -1):  # parents before children (children are smaller ids)
        v = n + k
        for side in range(2):
            c = children[k, side]
            path[c] = path[v] + max(height[v] - height[c], 0.0) / size[c]
    return path[:n]
