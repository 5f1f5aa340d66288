"""PartTree's sampled single-linkage split: Numba kernels for the sample and the cut.

Picking ~50 references and sending every member to its nearest one draws the
cluster boundaries where single linkage does not (docs/guide-tree.md). This
split instead takes a larger random sample of each node (``split_sample``
members), builds its exact single-linkage tree, weighs every sample leaf by
the members whose nearest sample member it is, and cuts the tree top-down
until every piece weighs at most the exact-tree limit. The pieces are the
clusters (they recurse or get exact subtrees), the tree above the cut joins
them, so the partition and the joins both follow single linkage.
"""
from __future__ import annotations

import numpy as np

from msa.jit import njit


@njit(cache=True, nogil=True, inline="always")
def splitmix64(x: np.uint64) -> np.uint64:
    """SplitMix64 finaliser: the deterministic, platform-independent hash of PartTree's random draws."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def sample_positions(
    members: np.ndarray, node_off: np.ndarray, sample_max: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (ascending) of each node's sample: its ``sample_max`` members of smallest hash key.

    The key is a hash of (seed, sequence id), so the sample does not depend on
    the order of the members; a node no larger than ``sample_max`` is its own sample.
    """
    n_nodes = len(node_off) - 1
    sample_off = np.zeros(n_nodes + 1, dtype=np.int64)
    for k in range(n_nodes):
        sample_off[k + 1] = sample_off[k] + min(node_off[k + 1] - node_off[k], sample_max)
    out = np.empty(sample_off[-1], dtype=np.int64)
    mixed = splitmix64(np.uint64(seed))
    for k in range(n_nodes):
        lo, hi = node_off[k], node_off[k + 1]
        s0 = sample_off[k]
        if hi - lo <= sample_max:
            for i in range(hi - lo):
                out[s0 + i] = lo + i
            continue
        keys = np.empty(hi - lo, dtype=np.uint64)
        for i in range(hi - lo):
            keys[i] = splitmix64(mixed ^ np.uint64(members[lo + i]))
        chosen = np.sort(np.argsort(keys, kind="mergesort")[:sample_max])
        for i in range(sample_max):
            out[s0 + i] = lo + chosen[i]
    return out, sample_off


@njit(cache=True, nogil=True)
def cut_sample_trees(
    merges: np.ndarray, heights: np.ndarray, weights: np.ndarray, sample_off: np.ndarray, limit: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cut each node's sample tree into clades of weight at most ``limit``; the root is always cut.

    ``merges``/``heights`` are the stacked local single-linkage trees (node k's
    rows start at ``sample_off[k] - k``), ``weights`` the members per sample leaf.
    A clade heavier than ``limit`` is split at its root unless it is one leaf.
    Returns each sample leaf's cluster (index within its node), the clusters'
    per-node offsets, and the tree over each node's clusters (local ids, stacked
    the same way) with the heights of the sample tree.
    """
    n_nodes = len(sample_off) - 1
    leaf_cluster = np.empty(sample_off[-1], dtype=np.int64)
    top_m = np.empty((max(sample_off[-1] - n_nodes, 0), 2), dtype=np.int64)
    top_h = np.empty(max(sample_off[-1] - n_nodes, 0))
    cluster_off = np.zeros(n_nodes + 1, dtype=np.int64)
    for k in range(n_nodes):
        s = sample_off[k + 1] - sample_off[k]
        row0 = sample_off[k] - k
        w = np.zeros(2 * s - 1, dtype=np.int64)
        w[:s] = weights[sample_off[k] : sample_off[k + 1]]
        for j in range(s - 1):
            w[s + j] = w[merges[row0 + j, 0]] + w[merges[row0 + j, 1]]
        above = np.zeros(2 * s - 1, dtype=np.bool_)
        cl = np.full(2 * s - 1, -1, dtype=np.int64)
        n_cl = 0
        if s == 1:
            cl[0] = 0
            n_cl = 1
        else:
            above[2 * s - 2] = True
        for x in range(2 * s - 2, s - 1, -1):  # parents before children
            for side in range(2):
                c = merges[row0 + x - s, side]
                if above[x]:
                    if c < s or w[c] <= limit:
                        cl[c] = n_cl
                        n_cl += 1
                    else:
                        above[c] = True
                else:
                    cl[c] = cl[x]
        for i in range(s):
            leaf_cluster[sample_off[k] + i] = cl[i]
        cluster_off[k + 1] = cluster_off[k] + n_cl
        # the tree over clusters: above-nodes bottom-up, clusters are leaves 0..n_cl-1
        top_id = np.empty(2 * s - 1, dtype=np.int64)
        t = 0
        out0 = cluster_off[k] - k
        for x in range(s, 2 * s - 1):
            if not above[x]:
                continue
            for side in range(2):
                c = merges[row0 + x - s, side]
                top_m[out0 + t, side] = top_id[c] if above[c] else cl[c]
            a, b = top_m[out0 + t, 0], top_m[out0 + t, 1]
            top_m[out0 + t, 0], top_m[out0 + t, 1] = min(a, b), max(a, b)
            top_h[out0 + t] = heights[row0 + x - s]
            top_id[x] = n_cl + t
            t += 1
    rows = cluster_off[-1] - n_nodes
    return leaf_cluster, cluster_off, top_m[:rows].copy(), top_h[:rows].copy()
