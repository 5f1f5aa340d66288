"""Small exact trees: linkage over condensed distance matrices, grafted into one node table.

Trees are first built with local ids (scipy's convention: leaves ``0..s-1``,
merge k makes node ``s+k``), then :func:`graft` gives them global ids in the
growing ``left``/``right``/``height`` node table that :mod:`msa.tree.parttree`
fills; :func:`finalize` turns that table into a :class:`GuideTree`.
Heights are half the join distance (MAFFT's convention), so branch lengths are
comparable between PartTree joins and exact subtrees.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from msa.distances.condensed import condensed_index
from msa.jit import njit
from msa.tree.guide_tree import GuideTree

#: MAFFT's PartTree mixes single and average linkage with this weight (sueff, ``-X 0.1``).
MAFFT_SUEFF = 0.1


@njit(cache=True, nogil=True, parallel=True)
def batch_linkage(
    dist: np.ndarray, dist_off: np.ndarray, group_off: np.ndarray, single: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Exact UPGMA (or single-linkage) trees of many groups, in one call.

    Group g has ``s = group_off[g+1] - group_off[g]`` leaves and its condensed
    matrix at ``dist[dist_off[g]:dist_off[g+1]]``; its s-1 local merges are
    rows ``group_off[g] - g ...`` of the result.
    """
    n_groups = len(group_off) - 1
    n_rows = group_off[-1] - n_groups
    merges = np.zeros((n_rows, 2), dtype=np.int64)
    heights = np.zeros(n_rows)
    for g in prange(n_groups):
        s = group_off[g + 1] - group_off[g]
        if s < 2:
            continue
        d = dist[dist_off[g] : dist_off[g + 1]]
        row = group_off[g] - g
        if single:
            m, h = _single_linkage(d, s)
        else:
            m, h = _upgma(d.copy(), s)
        merges[row : row + s - 1] = m
        heights[row : row + s - 1] = h
    return merges, heights


@njit(cache=True, nogil=True, inline="always")
def _cidx(s: int, i: int, j: int) -> int:
    """condensed_index of the pair {i, j} in either order."""
    if i > j:
        i, j = j, i
    return condensed_index(s, i, j)


@njit(cache=True, nogil=True)
def _upgma(d: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """UPGMA by the nearest-neighbour chain, O(s^2); ``d`` (condensed) is overwritten.

    The chain starts at the lowest live slot and a tie keeps the chain's previous
    element, so the result is deterministic. Merged distance:
    ``(n_a * d_ak + n_b * d_bk) / (n_a + n_b)``, in that order.
    """
    merges = np.zeros((s - 1, 2), dtype=np.int64)
    heights = np.zeros(s - 1)
    size = np.ones(s)
    active = np.ones(s, dtype=np.bool_)
    label = np.arange(s)
    chain = np.empty(s, dtype=np.int64)
    clen = 0
    for step in range(s - 1):
        if clen == 0:
            first = 0
            while not active[first]:
                first += 1
            chain[0] = first
            clen = 1
        while True:
            x = chain[clen - 1]
            y = -1
            best = np.inf
            if clen > 1:
                y = chain[clen - 2]
                best = d[_cidx(s, x, y)]
            for i in range(s):
                if active[i] and i != x:
                    v = d[_cidx(s, x, i)]
                    if v < best:
                        best = v
                        y = i
            if clen > 1 and y == chain[clen - 2]:
                break
            chain[clen] = y
            clen += 1
        clen -= 2
        a, b = min(x, y), max(x, y)
        merges[step, 0] = label[a]
        merges[step, 1] = label[b]
        heights[step] = best / 2
        for k in range(s):
            if active[k] and k != a and k != b:
                ia, ib = _cidx(s, a, k), _cidx(s, b, k)
                d[ia] = (size[a] * d[ia] + size[b] * d[ib]) / (size[a] + size[b])
        size[a] += size[b]
        active[b] = False
        label[a] = s + step
    return merges, heights


@njit(cache=True, nogil=True)
def _single_linkage(d: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Single linkage from Prim's minimum spanning tree (from leaf 0), O(s^2)."""
    in_tree = np.zeros(s, dtype=np.bool_)
    best = np.full(s, np.inf)
    via = np.zeros(s, dtype=np.int64)
    edge_a = np.empty(s - 1, dtype=np.int64)
    edge_b = np.empty(s - 1, dtype=np.int64)
    edge_w = np.empty(s - 1)
    cur = 0
    in_tree[0] = True
    for step in range(s - 1):
        nxt, nxt_d = -1, np.inf
        for k in range(s):
            if in_tree[k]:
                continue
            v = d[_cidx(s, cur, k)]
            if v < best[k]:
                best[k] = v
                via[k] = cur
            if best[k] < nxt_d or nxt == -1:
                nxt_d = best[k]
                nxt = k
        edge_a[step], edge_b[step], edge_w[step] = via[nxt], nxt, nxt_d
        in_tree[nxt] = True
        cur = nxt
    return mst_linkage(edge_a, edge_b, edge_w, s)


def prim_single_linkages(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, backend
) -> tuple[np.ndarray, np.ndarray]:
    """Single-linkage LCS trees (local merges, laid out as :func:`batch_linkage`'s) of many
    groups without their distance matrices.

    The backend's Prim computes each distance row when its vertex joins, so memory
    is O(n); each tree is the one the full-matrix path builds from the same distances.
    """
    edge_a, edge_b, edge_w = backend.lcs_prim_msts(codes, offsets, ids, group_off)
    return mst_linkages(edge_a, edge_b, edge_w, np.asarray(group_off, dtype=np.int64))


@njit(cache=True, nogil=True)
def mst_linkages(
    edge_a: np.ndarray, edge_b: np.ndarray, edge_w: np.ndarray, group_off: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mst_linkage` of every group; group g's edges and merges at rows group_off[g] - g."""
    n_rows = len(edge_a)
    merges = np.zeros((n_rows, 2), dtype=np.int64)
    heights = np.zeros(n_rows)
    for g in range(len(group_off) - 1):
        s = group_off[g + 1] - group_off[g]
        lo = group_off[g] - g
        m, h = mst_linkage(edge_a[lo : lo + s - 1], edge_b[lo : lo + s - 1], edge_w[lo : lo + s - 1], s)
        merges[lo : lo + s - 1] = m
        heights[lo : lo + s - 1] = h
    return merges, heights


@njit(cache=True, nogil=True)
def mst_linkage(
    edge_a: np.ndarray, edge_b: np.ndarray, edge_w: np.ndarray, s: int
) -> tuple[np.ndarray, np.ndarray]:
    """Single-linkage merges (local ids) from the s-1 edges of a minimum spanning tree.

    Edges are joined in order of weight, ties in the given (Prim) order, with union-find.
    """
    order = np.argsort(edge_w, kind="mergesort")
    parent = np.arange(s)
    label = np.arange(s)
    merges = np.zeros((s - 1, 2), dtype=np.int64)
    heights = np.zeros(s - 1)
    for step in range(s - 1):
        e = order[step]
        ra = _find(parent, edge_a[e])
        rb = _find(parent, edge_b[e])
        la, lb = label[ra], label[rb]
        merges[step, 0] = min(la, lb)
        merges[step, 1] = max(la, lb)
        heights[step] = edge_w[e] / 2
        parent[rb] = ra
        label[ra] = s + step
    return merges, heights


@njit(cache=True, nogil=True)
def _find(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True, nogil=True)
def mixed_linkage(condensed: np.ndarray, s: int, sueff: float) -> tuple[np.ndarray, np.ndarray]:
    """MAFFT's pick tree: join the closest pair, then d(new,k) = (1-sueff) min + sueff/2 (sum).

    Ties go to the first pair in row-major order; the new cluster takes the
    smaller slot. O(s^3), meant for at most a few hundred picks.
    """
    d = np.zeros((s, s))
    for i in range(s):
        for j in range(i + 1, s):
            v = condensed[condensed_index(s, i, j)]
            d[i, j] = v
            d[j, i] = v
    active = np.ones(s, dtype=np.bool_)
    node = np.arange(s)
    merges = np.zeros((max(s - 1, 0), 2), dtype=np.int64)
    heights = np.zeros(max(s - 1, 0))
    w_min = 1.0 - sueff
    w_sum = sueff * 0.5
    for step in range(s - 1):
        bi, bj, best = -1, -1, np.inf
        for i in range(s):
            if not active[i]:
                continue
            for j in range(i + 1, s):
                if active[j] and d[i, j] < best:
                    best = d[i, j]
                    bi, bj = i, j
        merges[step, 0] = node[bi]
        merges[step, 1] = node[bj]
        heights[step] = best / 2
        for k in range(s):
            if active[k] and k != bi and k != bj:
                v = w_min * min(d[bi, k], d[bj, k]) + w_sum * (d[bi, k] + d[bj, k])
                d[bi, k] = v
                d[k, bi] = v
        active[bj] = False
        node[bi] = s + step
    return merges, heights


@njit(cache=True, nogil=True)
def graft(
    merges: np.ndarray,
    heights: np.ndarray,
    leaf_ids: np.ndarray,
    leaf_off: np.ndarray,
    root_ids: np.ndarray,
    next_id: int,
    left: np.ndarray,
    right: np.ndarray,
    height: np.ndarray,
) -> int:
    """Write many local trees into the global node table; returns the next free id.

    Tree g has leaves ``leaf_ids[leaf_off[g]:leaf_off[g+1]]`` and its s-1 merges
    start at row ``leaf_off[g] - g``; its last merge gets ``root_ids[g]``, the
    others fresh ids from ``next_id``.
    """
    for g in range(len(root_ids)):
        lo = leaf_off[g]
        s = leaf_off[g + 1] - lo
        row0 = lo - g
        local = np.empty(2 * s - 1, dtype=np.int64)
        local[:s] = leaf_ids[lo : lo + s]
        for k in range(s - 1):
            if k == s - 2:
                gid = root_ids[g]
            else:
                gid = next_id
                next_id += 1
            local[s + k] = gid
            left[gid] = local[merges[row0 + k, 0]]
            right[gid] = local[merges[row0 + k, 1]]
            height[gid] = heights[row0 + k]
    return next_id


@njit(cache=True, nogil=True)
def balanced_trees(
    members: np.ndarray, off: np.ndarray, root_ids: np.ndarray, next_id: int,
    left: np.ndarray, right: np.ndarray, height: np.ndarray,
) -> int:
    """Height-0 balanced trees over groups whose members are all at distance 0."""
    for g in range(len(root_ids)):
        queue = members[off[g] : off[g + 1]].copy()
        n = len(queue)
        while n > 1:
            m = 0
            for k in range(0, n - 1, 2):
                gid = root_ids[g] if n == 2 else next_id
                if n != 2:
                    next_id += 1
                left[gid] = queue[k]
                right[gid] = queue[k + 1]
                height[gid] = 0.0
                queue[m] = gid
                m += 1
            if n % 2 == 1:
                queue[m] = queue[n - 1]
                m += 1
            n = m
    return next_id


@njit(cache=True, nogil=True)
def _postorder(left: np.ndarray, right: np.ndarray, n: int, root: int) -> np.ndarray:
    order = np.empty(n - 1, dtype=np.int64)
    stack = np.empty(2 * n, dtype=np.int64)
    expanded = np.zeros(len(left), dtype=np.bool_)
    top = 0
    stack[0] = root
    k = 0
    while top >= 0:
        node = stack[top]
        if node < n:
            top -= 1
        elif expanded[node]:
            order[k] = node
            k += 1
            top -= 1
        else:
            expanded[node] = True
            stack[top + 1] = right[node]
            stack[top + 2] = left[node]
            top += 2
    return order


@njit(cache=True, nogil=True)
def _renumber(left, right, height, n, order):
    new_id = np.arange(len(left))
    children = np.empty((n - 1, 2), dtype=np.int64)
    h_node = np.zeros(len(left))
    heights = np.empty(n - 1)
    for k in range(n - 1):
        old = order[k]
        new_id[old] = n + k
        a, b = left[old], right[old]
        children[k, 0] = new_id[a]
        children[k, 1] = new_id[b]
        h = max(height[old], h_node[a], h_node[b])  # keep branch lengths >= 0
        h_node[old] = h
        heights[k] = h
    return children, heights


def finalize(left: np.ndarray, right: np.ndarray, height: np.ndarray, n: int, root: int) -> GuideTree:
    """The node table as a GuideTree in post-order (children before parents)."""
    if n <= 1:
        return GuideTree(n, np.zeros((0, 2), dtype=np.int64), np.zeros(0))
    order = _postorder(left, right, n, root)
    children, heights = _renumber(left, right, height, n, order)
    return GuideTree(n, children, heights)
