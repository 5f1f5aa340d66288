"""PartTree (MAFFT's ``splitseq_mq``, core/splittbfast.c), one batched pass per recursion depth.

Every node of a depth is handled together: one backend call for the distances
to each node's reference, one for the pick x pick matrices, one for the
assignment of members to the surviving picks. Per-node bookkeeping (picks,
thinning, the pick tree) runs in small Numba loops over nodes. Groups of at
most ``exact_tree_max`` members get an exact tree (:mod:`msa.tree.linkage`).

With picks, the split decisions use FAMSA's LCS distance instead of MAFFT's
6-mer distance (``params.parttree_distance``): the reference sort, the pick x
pick matrix and thinning, and the assignment of members to surviving picks; and
the clusters are joined by single linkage over cluster-to-cluster links
(``params.pick_tree="link"``: the nearest member of one cluster to the other's
pick) instead of MAFFT's mixed linkage over the picks. On a simulated 10,000
family this lifts SP from 0.870 to 0.906 and TC from 0.340 to 0.657 (see
docs/guide-tree.md); ``parttree_distance="kmer", pick_tree="mafft"`` is MAFFT's
PartTree. Groups past ``exact_tree_max`` but within ``mst_tree_max`` get an exact
single-linkage subtree from Prim's MST without a distance matrix.

By default (``params.parttree_split="sample"``) a node is not split by picks
at all: a random sample of ``split_sample`` members gets an exact single-linkage
tree, which is cut into clusters (:mod:`msa.tree.sample_split`); on the 10,000
family this reaches the exact tree's accuracy (SP 0.933, TC 0.860; see
docs/guide-tree.md) at members x sample LCS pairs per level. The picks path
above is ``parttree_split="picks"``.

Deviations from MAFFT, all deliberate:

* Random picks come from a hash of (seed, the node's reference id, draw
  number), so a run is reproducible for a seed on every platform.
* Picks are not checked for identical strings (input is deduplicated first);
  instead a node whose members are all at distance 0 from its reference, or
  whose reference has no 6-mer at all, gets a flat balanced tree (what MAFFT's
  "uniform" flag amounts to).
* Sequences with fewer than 6 usable residues have self-score 0 and distance
  EMPTY_DISTANCE (1.0) to everything, instead of stopping the run.
* Sort ties after (distance, -self, -length) go to the current position.
"""
from __future__ import annotations

import numpy as np

from msa.distances.condensed import condensed_index, condensed_offsets
from msa.distances.kmers import MAX_KMER_DIST, KmerTables
from msa.interrupts import check
from msa.alphabet import load_matrix
from msa.jit import njit
from msa.params import MST_TREE_MAX, AlignParams, Linkage, gap_costs
from msa.seqdb import SeqDB
from msa.seqops import cost_bounds
from msa.tree.guide_tree import GuideTree
from msa.tree.sample_split import cut_sample_trees, sample_positions, splitmix64
from msa.tree.linkage import (
    MAFFT_SUEFF,
    balanced_trees,
    batch_linkage,
    finalize,
    graft,
    mixed_linkage,
    prim_single_linkages,
)

#: Exact groups are batched so that one batch's condensed matrices stay below this many pairs.
EXACT_BATCH_PAIRS = 1 << 24


def parttree(
    db: SeqDB,
    tables: KmerTables,
    params: AlignParams,
    backend,
    exact_method: Linkage = "upgma",
) -> GuideTree:
    """PartTree over all of ``db``; groups up to ``params.exact_tree_max`` get exact subtrees."""
    n = len(db)
    if n <= 1:
        return finalize(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), n, 0)
    nodes = _NodeTable(n)
    exact = _ExactQueue(db, tables, params, backend, exact_method, nodes)
    thin = 0.0 if params.partsize > n else params.thin_factor
    members = np.arange(n, dtype=np.int64)
    node_off = np.array([0, n], dtype=np.int64)
    node_root = np.array([nodes.alloc(1)[0]], dtype=np.int64)
    root = int(node_root[0])
    sampled = uses_sample_split(params)
    while len(node_root):
        check()  # a checkpoint of msa.interrupts: one depth at a time
        if sampled:
            members, node_off, node_root = _split_level_sample(
                db, members, node_off, node_root, params, backend, nodes, exact
            )
        else:
            members, node_off, node_root = _split_level(
                db, members, node_off, node_root, tables, params, backend, thin, nodes, exact
            )
    exact.flush()
    return finalize(nodes.left, nodes.right, nodes.height, n, root)


class _NodeTable:
    """Global node arrays; internal ids are handed out in creation order (renumbered at the end)."""

    def __init__(self, n: int) -> None:
        self.left = np.full(2 * n - 1, -1, dtype=np.int64)
        self.right = np.full(2 * n - 1, -1, dtype=np.int64)
        self.height = np.zeros(2 * n - 1)
        self.next_id = n

    def alloc(self, count: int) -> np.ndarray:
        ids = np.arange(self.next_id, self.next_id + count, dtype=np.int64)
        self.next_id += count
        return ids


class _ExactQueue:
    """Groups waiting for an exact tree: condensed matrices in batches of bounded size, or Prim's
    MSTs (single linkage over LCS past exact_tree_max, or for every group where the backend
    prefers it), all of one flush in one backend call."""

    def __init__(self, db, tables, params, backend, method: Linkage, nodes: _NodeTable) -> None:
        self.db, self.tables, self.params, self.backend = db, tables, params, backend
        self.method, self.nodes = method, nodes
        self.groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.prim: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.pairs = 0
        self.all_prim = prim_for_every_group(params, method, backend)

    def add(self, members: np.ndarray, off: np.ndarray, roots: np.ndarray) -> None:
        if len(roots) == 0:
            return
        if self.all_prim:
            self.prim.append((members[: off[-1]], off, roots))
            return
        bounds, pair_off = _pair_batches(off)
        for a, b in zip(bounds[:-1], bounds[1:]):
            sub_off = off[a : b + 1] - off[a]
            self.groups.append((members[off[a] : off[b]], sub_off, roots[a:b]))
            self.pairs += int(pair_off[b] - pair_off[a])
            if self.pairs >= EXACT_BATCH_PAIRS:
                self.flush()

    def add_mst(self, members: np.ndarray, root: int) -> None:
        """One group past exact_tree_max: Prim's single linkage, no distance matrix."""
        self.prim.append((members, np.array([0, len(members)], dtype=np.int64), np.array([root])))

    def flush(self) -> None:
        """The queued groups' trees, a backend call of about ``lcs_pairs_per_call`` pairs at a time (a
        checkpoint between calls), grafted in queue order."""
        check()
        if self.groups:
            members, off, roots = _joined(self.groups)
            self.groups, self.pairs = [], 0
            for ids, sub, sub_roots in _sub_batches(members, off, roots, _pair_batches(off, self.backend.lcs_pairs_per_call)[0]):
                check()
                dist, dist_off = group_distances(self.db, self.tables, ids, sub, self.params, self.backend)
                self._graft(*batch_linkage(dist, dist_off, sub, self.method == "single"), ids, sub, sub_roots)
        if self.prim:
            members, off, roots = _joined(self.prim)
            self.prim = []
            sizes = np.diff(off)
            for ids, sub, sub_roots in _sub_batches(members, off, roots, cost_bounds(np.cumsum(sizes * sizes), self.backend.lcs_pairs_per_call)):
                check()
                merges, heights = prim_single_linkages(self.db.codes, self.db.offsets, ids, sub, self.backend)
                self._graft(merges, heights, ids, sub, sub_roots)

    def _graft(self, merges, heights, members, off, roots) -> None:
        nodes = self.nodes
        nodes.next_id = graft(
            merges, heights, members, off, roots, nodes.next_id, nodes.left, nodes.right, nodes.height
        )


def _sub_batches(members: np.ndarray, off: np.ndarray, roots: np.ndarray, bounds: np.ndarray):
    """(members, offsets, roots) of groups ``bounds[k]:bounds[k+1]``, for each k."""
    for a, b in zip(bounds[:-1], bounds[1:]):
        sub = off[a : b + 1]
        yield members[sub[0] : sub[-1]], sub - sub[0], roots[a:b]


def _joined(groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(members, offsets, roots) batches laid end to end."""
    members = np.concatenate([g[0] for g in groups])
    roots = np.concatenate([g[2] for g in groups])
    offs, base = [np.zeros(1, np.int64)], 0
    for g in groups:
        offs.append(g[1][1:] + base)
        base += len(g[0])
    return members, np.concatenate(offs), roots


def uses_sample_split(params: AlignParams) -> bool:
    """Whether PartTree splits by a sample's single-linkage tree (LCS only; no 6-mer tables needed)."""
    return params.parttree_split == "sample" and params.parttree_distance == "lcs"


def prim_for_every_group(params: AlignParams, method: str, backend) -> bool:
    """Whether every exact group (not only those past exact_tree_max) takes Prim's MST: single
    linkage over LCS on a backend that prefers it (``Backend.prim_every_group``: the GPU)."""
    return method == "single" and params.distance == "lcs" and getattr(backend, "prim_every_group", False)


def exact_limit(params: AlignParams, method: str, backend) -> int:
    """Largest group that gets an exact tree: mst_tree_max (by default the backend's
    MST_TREE_MAX) applies to single linkage over LCS only (Prim's MST computes LCS rows;
    kmer and sw groups need the whole matrix)."""
    if method == "single" and params.distance == "lcs":
        mst = params.mst_tree_max if params.mst_tree_max is not None else MST_TREE_MAX[backend.name]
        return max(params.exact_tree_max, mst)
    return params.exact_tree_max


def group_distances(
    db: SeqDB, tables: KmerTables, ids: np.ndarray, off: np.ndarray, params: AlignParams, backend
) -> tuple[np.ndarray, np.ndarray]:
    """Condensed exact-tree distance matrices of many groups (``params.distance`` picks the kind)."""
    if params.distance == "lcs":
        return backend.lcs_distance_matrix(db.codes, db.offsets, ids, off)
    if params.distance == "sw":
        params = params if params.matrix is not None else params.resolved()  # callers outside the pipeline
        # the run's substitution scores and gap costs (both cached), gaps not rescaled by the input size
        return backend.sw_distance_matrix(db.codes, db.offsets, ids, off, load_matrix(params.matrix), gap_costs(params, 1))
    return backend.kmer_distance_matrix(tables, ids, off, MAX_KMER_DIST)


def _split_level(db, members, node_off, node_root, tables, params, backend, thin, nodes, exact):
    """One recursion depth: split every node into clusters; return the nodes of the next depth."""
    k_nodes = len(node_root)
    sizes = np.diff(node_off)
    member_node = np.repeat(np.arange(k_nodes, dtype=np.int64), sizes)
    self_m = tables.self_scores[members]
    ref_pos = _segment_argmax(self_m, node_off)
    refs = members[ref_pos]
    lcs = params.parttree_distance == "lcs"
    if lcs:
        _, dref, _, _ = backend.lcs_nearest_reference(
            db.codes, db.offsets, refs, np.arange(k_nodes + 1), members, member_node
        )
    else:
        _, dref = backend.nearest_reference(
            tables, refs, np.arange(k_nodes + 1), members, member_node, MAX_KMER_DIST
        )
    not_ref = np.ones(len(members), dtype=np.int8)
    not_ref[ref_pos] = 0
    perm = np.lexsort(
        (np.arange(len(members)), -tables.lengths[members], -self_m, not_ref, dref, member_node)
    )
    members, dref = members[perm], dref[perm]
    maxdist = dref[node_off[1:] - 1]

    # all at distance 0, or not one 6-mer in the node: nothing to split on
    uniform = (maxdist == 0.0) | (tables.self_scores[refs] == 0)
    if uniform.any():
        u_members, u_off = _select_nodes(members, node_off, uniform)
        nodes.next_id = balanced_trees(
            u_members, u_off, node_root[uniform], nodes.next_id, nodes.left, nodes.right, nodes.height
        )
        keep = ~uniform
        keep_m = np.repeat(keep, sizes)
        members, dref, member_node = members[keep_m], dref[keep_m], None
        node_off = np.concatenate(([0], np.cumsum(sizes[keep])))
        node_root, maxdist, refs = node_root[keep], maxdist[keep], refs[keep]
        k_nodes = len(node_root)
        if k_nodes == 0:
            return members, node_off, node_root
        sizes = np.diff(node_off)
        member_node = np.repeat(np.arange(k_nodes, dtype=np.int64), sizes)

    pick_off = np.concatenate(([0], np.cumsum(np.minimum(sizes, params.partsize))))
    pick_pos = _choose_picks(node_off, pick_off, params.partsize, params.seed, refs)
    if lcs:
        pick_d, pick_d_off = backend.lcs_distance_matrix(db.codes, db.offsets, members[pick_pos], pick_off)
    else:
        pick_d, pick_d_off = backend.kmer_distance_matrix(tables, members[pick_pos], pick_off, MAX_KMER_DIST)
    survive = _thin_picks(pick_d, pick_d_off, pick_off, maxdist, thin)
    surv_pos = pick_pos[survive]
    surv_off = np.concatenate(([0], np.cumsum(np.add.reduceat(survive, pick_off[:-1]))))
    if lcs:
        nearest, _, link, link_off = backend.lcs_nearest_reference(
            db.codes, db.offsets, members[surv_pos], surv_off, members, member_node
        )
    else:
        nearest, _ = backend.nearest_reference(
            tables, members[surv_pos], surv_off, members, member_node, MAX_KMER_DIST
        )
    nearest = nearest.astype(np.int64)
    nearest[surv_pos] = np.arange(len(surv_pos)) - np.repeat(surv_off[:-1], np.diff(surv_off))

    if params.pick_tree == "link" and lcs:
        sd, sd_off = _link_condensed(link, link_off, surv_off)
    else:
        sd, sd_off = _survivor_condensed(pick_d, pick_d_off, pick_off, survive, surv_off)
    if params.pick_tree == "mafft":
        merges, heights = _mixed_trees(sd, sd_off, surv_off)
    else:
        merges, heights = batch_linkage(sd, sd_off, surv_off, True)
    cluster = surv_off[member_node] + nearest
    return _emit_clusters(members, cluster, surv_off, merges, heights, node_root, params, nodes, exact)


def _split_level_sample(db, members, node_off, node_root, params, backend, nodes, exact):
    """One recursion depth by sampled single linkage (:mod:`msa.tree.sample_split`)."""
    sizes = np.diff(node_off)
    member_node = np.repeat(np.arange(len(node_root), dtype=np.int64), sizes)
    sample_pos, sample_off = sample_positions(members, node_off, params.split_sample, params.seed)
    sample = members[sample_pos]
    s_merges, s_heights = _sample_trees(db, sample, sample_off, backend)
    nearest = _nearest_sample(db, sample, sample_off, members, member_node, backend)
    leaf = sample_off[member_node] + nearest.astype(np.int64)
    leaf[sample_pos] = np.arange(len(sample_pos))  # a sample member is its own leaf, whatever the ties
    weights = np.bincount(leaf, minlength=len(sample_pos))
    limit = min(params.split_cluster_max, exact_limit(params, exact.method, backend))
    leaf_cluster, c_node_off, merges, heights = cut_sample_trees(
        s_merges, s_heights, weights, sample_off, limit
    )
    cluster = c_node_off[member_node] + leaf_cluster[leaf]
    return _emit_clusters(members, cluster, c_node_off, merges, heights, node_root, params, nodes, exact)


def _pair_batches(group_off: np.ndarray, limit: int = EXACT_BATCH_PAIRS) -> tuple[np.ndarray, np.ndarray]:
    """Group bounds of batches of about ``limit`` condensed pairs (cut at groups), and
    each group's offset in the condensed matrices (its pairs so far)."""
    pair_off = condensed_offsets(np.ascontiguousarray(group_off, dtype=np.int64))
    return cost_bounds(pair_off[1:], limit), pair_off


def _nearest_sample(db, sample, sample_off, members, member_node, backend) -> np.ndarray:
    """Each member's nearest sample member of its node (Backend.lcs_nearest_sample), for about
    ``backend.lcs_pairs_per_call`` pairs at a time, a checkpoint between."""
    per_member = np.diff(sample_off)[member_node]
    bounds = cost_bounds(np.cumsum(per_member), backend.lcs_pairs_per_call)
    nearest = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        check()
        found, _ = backend.lcs_nearest_sample(db.codes, db.offsets, sample, sample_off, members[a:b], member_node[a:b])
        nearest.append(found)
    return np.concatenate(nearest)


def _sample_trees(db, sample, sample_off, backend) -> tuple[np.ndarray, np.ndarray]:
    """Exact single-linkage trees of every node's sample, in batches of at most EXACT_BATCH_PAIRS pairs."""
    sizes = np.diff(sample_off)
    bounds, _ = _pair_batches(sample_off)
    merges = np.empty((sample_off[-1] - len(sizes), 2), dtype=np.int64)
    heights = np.empty(sample_off[-1] - len(sizes))
    for a, b in zip(bounds[:-1], bounds[1:]):
        off = sample_off[a : b + 1]
        dist, dist_off = backend.lcs_distance_matrix(db.codes, db.offsets, sample[off[0] : off[-1]], off - off[0])
        rows = slice(off[0] - a, off[-1] - b)
        merges[rows], heights[rows] = batch_linkage(dist, dist_off, off - off[0], True)
    return merges, heights


def _emit_clusters(members, cluster, c_node_off, merges, heights, node_root, params, nodes, exact):
    """Graft each node's tree over its clusters, queue the exact subtrees, return the next depth's nodes.

    ``cluster`` is each member's global cluster index (node k's clusters are
    ``c_node_off[k]:c_node_off[k+1]``), ``merges``/``heights`` the local trees over them.
    """
    order = np.argsort(cluster, kind="stable")
    members = members[order]
    c_sizes = np.bincount(cluster, minlength=int(c_node_off[-1]))
    c_off = np.concatenate(([0], np.cumsum(c_sizes)))
    c_tree = members[c_off[:-1]].copy()  # singleton clusters are their leaf
    big = c_sizes >= 2
    c_tree[big] = nodes.alloc(int(big.sum()))
    nodes.next_id = graft(
        merges, heights, c_tree, c_node_off, node_root, nodes.next_id, nodes.left, nodes.right, nodes.height
    )

    small = big & (c_sizes <= params.exact_tree_max)
    exact.add(*_select_nodes(members, c_off, small), c_tree[small])
    limit = exact_limit(params, exact.method, exact.backend)
    for c in np.flatnonzero((c_sizes > params.exact_tree_max) & (c_sizes <= limit)):
        exact.add_mst(members[c_off[c] : c_off[c + 1]], c_tree[c])
    large = c_sizes > limit
    next_members, next_off = _select_nodes(members, c_off, large)
    return next_members, next_off, c_tree[large]


def _select_nodes(members: np.ndarray, off: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Members and offsets of the groups where ``mask`` holds."""
    sizes = np.diff(off)
    return members[np.repeat(mask, sizes)], np.concatenate(([0], np.cumsum(sizes[mask])))


@njit(cache=True, nogil=True)
def _segment_argmax(values: np.ndarray, off: np.ndarray) -> np.ndarray:
    """Position of each segment's largest value; the earliest wins ties (MAFFT's reference)."""
    out = np.empty(len(off) - 1, dtype=np.int64)
    for k in range(len(off) - 1):
        best = off[k]
        for p in range(off[k] + 1, off[k + 1]):
            if values[p] > values[best]:
                best = p
        out[k] = best
    return out


@njit(cache=True, nogil=True)
def _choose_picks(node_off, pick_off, partsize, seed, refs) -> np.ndarray:
    """Positions of each node's picks, in rank order: reference, farthest, median, random.

    Members of a node are sorted by distance to its reference (position 0).
    """
    out = np.empty(pick_off[-1], dtype=np.int64)
    for k in range(len(node_off) - 1):
        lo, hi = node_off[k], node_off[k + 1]
        s = hi - lo
        p0 = pick_off[k]
        if s <= partsize:
            for i in range(s):
                out[p0 + i] = lo + i
            continue
        picks = out[p0 : p0 + partsize]
        picks[0] = lo
        picks[1] = hi - 1
        picks[2] = lo + 1 + (s - 2) // 2
        count = 3
        state = splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(refs[k])))
        while count < partsize:
            state = splitmix64(state)
            cand = lo + 1 + np.int64(state % np.uint64(s - 2))
            fresh = True
            for i in range(count):
                if picks[i] == cand:
                    fresh = False
                    break
            if fresh:
                picks[count] = cand
                count += 1
        picks.sort()
    return out


@njit(cache=True, nogil=True)
def _thin_picks(pick_d, pick_d_off, pick_off, maxdist, factor) -> np.ndarray:
    """MAFFT's greedy thinning: drop pick j if an earlier live pick i has d(i,j) < factor*maxdist."""
    keep = np.ones(pick_off[-1], dtype=np.bool_)
    for k in range(len(pick_off) - 1):
        p0 = pick_off[k]
        p = pick_off[k + 1] - p0
        d0 = pick_d_off[k]
        limit = factor * maxdist[k]
        for i in range(p):
            if not keep[p0 + i]:
                continue
            for j in range(i + 1, p):
                if keep[p0 + j] and pick_d[d0 + condensed_index(p, i, j)] < limit:
                    keep[p0 + j] = False
    return keep


@njit(cache=True, nogil=True)
def _survivor_condensed(pick_d, pick_d_off, pick_off, survive, surv_off):
    """Each node's surviving picks' rows and columns of its pick x pick matrix, stacked."""
    n_nodes = len(pick_off) - 1
    sd_off = condensed_offsets(surv_off)
    sd = np.empty(sd_off[-1])
    for k in range(n_nodes):
        p0 = pick_off[k]
        p = pick_off[k + 1] - p0
        idx = np.flatnonzero(survive[p0 : p0 + p])
        s = len(idx)
        t = sd_off[k]
        for a in range(s):
            i = idx[a]
            for b in range(a + 1, s):
                j = idx[b]
                sd[t] = pick_d[pick_d_off[k] + condensed_index(p, i, j)]
                t += 1
    return sd, sd_off


@njit(cache=True, nogil=True)
def _link_condensed(link, link_off, surv_off):
    """Cluster-to-cluster distances min(link[i, j], link[j, i]) of every node, condensed.

    ``link[i, j]`` is the nearest member of cluster i to survivor j, so this is an
    upper bound of the single-linkage distance between the two clusters that
    sees the whole clusters, not only their survivors.
    """
    n_nodes = len(surv_off) - 1
    sd_off = condensed_offsets(surv_off)
    sd = np.empty(sd_off[-1])
    for k in range(n_nodes):
        s = surv_off[k + 1] - surv_off[k]
        base = link_off[k]
        t = sd_off[k]
        for i in range(s):
            for j in range(i + 1, s):
                sd[t] = min(link[base + i * s + j], link[base + j * s + i])
                t += 1
    return sd, sd_off


@njit(cache=True, nogil=True)
def _mixed_trees(sd, sd_off, surv_off):
    """MAFFT's mixed-linkage tree over each node's surviving picks (local ids, stacked)."""
    n_nodes = len(surv_off) - 1
    merges = np.empty((surv_off[-1] - n_nodes, 2), dtype=np.int64)
    heights = np.empty(surv_off[-1] - n_nodes)
    for k in range(n_nodes):
        s = surv_off[k + 1] - surv_off[k]
        m, h = mixed_linkage(sd[sd_off[k] : sd_off[k + 1]], s, MAFFT_SUEFF)
        row = surv_off[k] - k
        merges[row : row + s - 1] = m
        heights[row : row + s - 1] = h
    return merges, heights
