"""Numba kernels of FAMSA's LCS distance: full condensed matrices and the trees past them.

All operations use FAMSA's ``indel075_div_lcs`` distance with one rounding (same
LCS by Hyyro's bit-parallel algorithm, same power table, same LCS = 0 value, see
:func:`lcs_distance_matrix`), so every decision of the large-tree paths matches
the full-matrix path:

* :func:`lcs_distance_matrix`: condensed matrices of many groups (exact trees).
* :func:`lcs_nearest_reference`: each member's nearest reference of its node,
  plus the node's *link* matrix ``link[i, j]`` = the smallest distance from a
  member assigned to reference i to reference j, an upper bound of the
  single-linkage distance between the two clusters that PartTree uses to join them.
* :func:`lcs_nearest_sample`: the same nearest search without the link
  matrices, for the sampled single-linkage split whose samples run to
  thousands per node (a link matrix would be samples^2 per node and worker).
* :func:`lcs_prim_mst`: Prim's minimum spanning tree of one group with every
  distance row computed when its vertex joins the tree, so memory is O(n)
  instead of the condensed matrix's O(n^2).

Every one of them runs :func:`_lcs_lanes`: ``LANES`` sequences, packed in blocks of similar
lengths (:func:`_pack_lanes`), against one other sequence at once. The lanes' carry chains
are independent, so the compiler vectorizes across them: about 4x the pairs per second of
one pair at a time (docs/guide-tree.md). LCS is symmetric, so which sequence of a pair holds
the bit-vectors does not change a distance.

These are the CPU oracles of ``kernels/lcs_distance.cu``.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from msa.distances.condensed import condensed_index, condensed_offsets
from msa.jit import njit


@njit(cache=True, nogil=True, inline="always")
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def pow075_table(n: int) -> np.ndarray:
    """``k ** 0.75`` for ``k < n`` by libm's scalar pow, FAMSA's rounding.

    The LCS distances of both backends read their powers here: CUDA's pow (and
    NumPy's vectorized one) may round differently in the last bit.
    """
    out = np.empty(n, dtype=np.float64)
    for k in range(n):
        out[k] = float(k) ** 0.75
    return out


#: Sequences one :func:`_lcs_lanes` call takes at once (lane-major masks; see the module docstring).
LANES = 32
#: A Prim step of less work than this (vertices outside the tree x the new vertex's residues x
#: its 64-bit words) runs on the calling thread: waking the thread pool costs more than such a
#: step's LCS work (~0.5 ns a unit on one core of the 2-core dev machine, against ~35 us to
#: wake the second thread; 16 sleeping threads take longer to wake).
PRIM_SERIAL_WORK = 1 << 17


@njit(cache=True, nogil=True)
def _pack_lanes(
    codes: np.ndarray, offsets: np.ndarray, seqs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Match masks of ``seqs`` (sequence ids), ``LANES`` to a block in the given order.

    Returns ``(masks, base, words, lane_len)``: block b's masks start at ``base[b]``, laid out
    (20 residue codes, ``words[b]`` words, ``LANES`` lanes), so that one word of every lane is
    contiguous; ``lane_len[b * LANES + l]`` is lane l's length. An id of -1, and every lane past
    the last sequence, is an empty lane: length 0, masks zero (no residue matches it).
    """
    n = len(seqs)
    n_blocks = (n + LANES - 1) // LANES
    base = np.zeros(n_blocks + 1, dtype=np.int64)
    words = np.ones(n_blocks, dtype=np.int64)
    lane_len = np.zeros(n_blocks * LANES, dtype=np.int64)
    for k in range(n):
        q = seqs[k]
        lane_len[k] = offsets[q + 1] - offsets[q] if q >= 0 else 0
        b = k // LANES
        words[b] = max(words[b], (lane_len[k] + 63) // 64)
    for b in range(n_blocks):
        base[b + 1] = base[b] + 20 * words[b] * LANES
    masks = np.zeros(base[-1], dtype=np.uint64)
    for k in range(n):
        if seqs[k] < 0:
            continue
        b, lane = k // LANES, k % LANES
        lo = offsets[seqs[k]]
        for p in range(lane_len[k]):
            c = codes[lo + p]
            if c < 20:  # only the 20 standard residues match (FAMSA)
                at = base[b] + (np.int64(c) * words[b] + p // 64) * LANES + lane
                masks[at] |= np.uint64(1) << np.uint64(p % 64)
    return masks, base[:-1].copy(), words, lane_len


@njit(cache=True, nogil=True)
def _pack_segments(codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, seg_off: np.ndarray) -> tuple:
    """Segments ``ids[seg_off[k]:seg_off[k + 1]]`` (a matrix's groups, the nodes' references,
    Prim's vertices) in lane blocks, each sorted by length (stable) from a block of its own,
    so that a block's lanes have similar lengths and few idle words.

    Returns ``(masks, base, words, lane_len, lane_item, seg_block)`` (the first four as
    :func:`_pack_lanes`): segment k's blocks are ``seg_block[k] .. seg_block[k + 1]``, its sorted
    position p is lane ``seg_block[k] * LANES + p``, and ``lane_item`` holds each lane's index
    within its segment (-1: an empty lane).
    """
    n_seg = len(seg_off) - 1
    seg_block = np.zeros(n_seg + 1, dtype=np.int64)
    for k in range(n_seg):
        seg_block[k + 1] = seg_block[k] + (seg_off[k + 1] - seg_off[k] + LANES - 1) // LANES
    seqs = np.full(seg_block[-1] * LANES, -1, dtype=np.int64)
    lane_item = np.full(seg_block[-1] * LANES, -1, dtype=np.int64)
    for k in range(n_seg):
        lo, n = seg_off[k], seg_off[k + 1] - seg_off[k]
        lens = np.empty(n, dtype=np.int64)
        for i in range(n):
            lens[i] = offsets[ids[lo + i] + 1] - offsets[ids[lo + i]]
        order = np.argsort(lens, kind="mergesort")
        at = seg_block[k] * LANES
        for p in range(n):
            seqs[at + p] = ids[lo + order[p]]
            lane_item[at + p] = order[p]
    masks, base, words, lane_len = _pack_lanes(codes, offsets, seqs)
    return masks, base, words, lane_len, lane_item, seg_block


@njit(cache=True, nogil=True)
def _lcs_lanes(
    masks: np.ndarray, words: int, lane_len: np.ndarray, codes: np.ndarray, lo: int, hi: int,
    v: np.ndarray, carry: np.ndarray, out: np.ndarray,
) -> None:
    """``out[l]`` = LCS of the block's lane l against ``codes[lo:hi]`` by Hyyro's bit-parallel
    algorithm, V' = (V + U) | (V - U) with U = V & match(c), per lane. U's bits are a subset of
    V's, so V - U = V ^ U never borrows: only the addition carries from word to word, and the
    carry out of each 64-bit add is the full adder's majority of its top bits, computed without
    a compare so that the lanes vectorize. ``masks`` is the block's own view
    (``masks[base[b]:]``): an index the compiler can prove non-negative needs no wraparound
    check, and only then are the mask loads contiguous vector loads (1.7x, docs/guide-tree.md)."""
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    top = np.uint64(63)
    stride = words * LANES
    for i in range(stride):
        v[i] = ones
    for k in range(lo, hi):
        c = codes[k]
        if c >= 20:  # only the 20 standard residues match (FAMSA)
            continue
        row = np.int64(c) * stride
        for lane in range(LANES):
            carry[lane] = 0
        for w in range(words):
            o = w * LANES
            for lane in range(LANES):
                x = v[o + lane]
                u = x & masks[row + o + lane]
                t = x + u + carry[lane]
                carry[lane] = ((x & u) | ((x | u) & ~t)) >> top
                v[o + lane] = t | (x ^ u)
    for lane in range(LANES):
        zeros = 0
        for w in range(words):
            bits = lane_len[lane] - 64 * w
            if bits <= 0:
                break
            x = ~v[w * LANES + lane]
            if bits < 64:
                x &= (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
            zeros += _popcount(x)
        out[lane] = zeros


@njit(cache=True, nogil=True)
def _lane_buffers(words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One worker's scratch for :func:`_lcs_lanes` over blocks of at most ``max(words)`` words:
    the lanes' bit-vectors, their carries and their LCS lengths."""
    max_words = 1
    for k in range(len(words)):
        max_words = max(max_words, words[k])
    v = np.empty(max_words * LANES, dtype=np.uint64)
    return v, np.empty(LANES, dtype=np.uint64), np.empty(LANES, dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _lcs_dist(lcs: int, la: int, lb: int, pow075: np.ndarray) -> float:
    """FAMSA's indel075_div_lcs of two lengths and their LCS (the rule in lcs_distance_matrix)."""
    if lcs == 0:
        return 2.0 * pow075[la + lb]
    return pow075[la + lb - 2 * lcs] / float(lcs)


@njit(cache=True, nogil=True)
def _max_len(offsets: np.ndarray, ids: np.ndarray) -> int:
    """Longest sequence of ``ids`` (at least 1, so every buffer has a word)."""
    out = 1
    for k in range(len(ids)):
        out = max(out, offsets[ids[k] + 1] - offsets[ids[k]])
    return out


#: Sequences whose lane masks one pass packs (the matrices' groups, the nearest searches'
#: references; ~50 MB at 300 residues): memory stays proportional to a pass.
PASS_SEQUENCES = 1 << 16


@njit(cache=True, nogil=True)
def lcs_distance_matrix(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """Condensed FAMSA ``indel075_div_lcs`` matrices of many groups (layout as kmer_distance_matrix).

    ``d = (la + lb - 2 LCS) ** 0.75 / LCS``; where LCS = 0 FAMSA uses the largest
    float, which would overflow average linkage, so we use ``2 (la + lb) ** 0.75``,
    still above every pair of the same lengths with LCS >= 1. The powers come from
    :func:`pow075_table`, the table the CUDA kernel reads too. Groups are packed in passes
    of at most ``PASS_SEQUENCES`` sequences (one group may pass it), so memory stays
    proportional to a pass, not to every group at once.
    """
    out_off = condensed_offsets(group_off)
    out = np.empty(out_off[-1], dtype=np.float64)
    pow075 = pow075_table(2 * _max_len(offsets, ids) + 1)
    n_groups = len(group_off) - 1
    g = 0
    while g < n_groups:
        h = g + 1
        while h < n_groups and group_off[h + 1] - group_off[g] <= PASS_SEQUENCES:
            h += 1
        _matrix_pass(codes, offsets, ids, group_off, out_off, g, h, pow075, threads, out)
        g = h
    return out, out_off


@njit(cache=True, nogil=True, parallel=True)
def _matrix_pass(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, out_off: np.ndarray,
    g0: int, g1: int, pow075: np.ndarray, threads: int, out: np.ndarray,
) -> None:
    """Groups ``g0 .. g1-1`` of :func:`lcs_distance_matrix`, packed by :func:`_pack_segments`:
    block b (its group's sorted positions p0 .. p0+LANES-1) against every later sorted position
    q, so each pair (p, q), p < q, once."""
    packed = _pack_segments(codes, offsets, ids, group_off[g0 : g1 + 1])
    masks, base, words, lane_len, lane_item, seg_block = packed
    n_blocks = seg_block[-1]
    block_seg = np.empty(n_blocks, dtype=np.int64)
    for k in range(g1 - g0):
        block_seg[seg_block[k] : seg_block[k + 1]] = k
    workers = max(min(threads, n_blocks), 1)
    for w in prange(workers):
        v, carry, lcs = _lane_buffers(words)
        for blk in range(w, n_blocks, workers):
            k = block_seg[blk]
            lo, s = group_off[g0 + k], group_off[g0 + k + 1] - group_off[g0 + k]
            first = seg_block[k] * LANES  # the lane of the group's sorted position 0
            p0 = blk * LANES - first
            lens = lane_len[blk * LANES : (blk + 1) * LANES]
            for q in range(p0 + 1, s):
                j = lane_item[first + q]
                bq = ids[lo + j]
                lb = offsets[bq + 1] - offsets[bq]
                _lcs_lanes(masks[base[blk] :], words[blk], lens, codes, offsets[bq], offsets[bq + 1], v, carry, lcs)
                for lane in range(min(LANES, q - p0)):
                    i = lane_item[blk * LANES + lane]
                    a, c = min(i, j), max(i, j)
                    out[out_off[g0 + k] + condensed_index(s, a, c)] = _lcs_dist(lcs[lane], lens[lane], lb, pow075)


@njit(cache=True, nogil=True, parallel=True)
def _nearest_pass(
    codes, offsets, member_ids, member_node, ref_off, n0, n1, packed, max_refs, pow075, chunk, workers,
    best, best_d, links, link_off,
) -> None:
    """The members of nodes ``n0 .. n1-1`` against their node's packed references (``packed``,
    :func:`_pack_segments` of the nodes' references): nearest (earliest index on ties) and its distance into ``best`` /
    ``best_d``; where ``links`` has rows (one a worker), the link matrices as
    :func:`lcs_nearest_reference` defines them, each worker into its own row."""
    masks, base, words, lane_len, lane_ref, node_block = packed
    m = len(member_ids)
    n_chunks = (m + chunk - 1) // chunk
    for w in prange(workers):
        v, carry, lcs = _lane_buffers(words)
        row = np.empty(max_refs, dtype=np.float64)
        for c in range(w, n_chunks, workers):
            for t in range(c * chunk, min((c + 1) * chunk, m)):
                node = member_node[t]
                if node < n0 or node >= n1:
                    continue
                lo, hi = offsets[member_ids[t]], offsets[member_ids[t] + 1]
                lb = hi - lo
                for blk in range(node_block[node - n0], node_block[node - n0 + 1]):
                    lens = lane_len[blk * LANES : (blk + 1) * LANES]
                    _lcs_lanes(masks[base[blk] :], words[blk], lens, codes, lo, hi, v, carry, lcs)
                    for lane in range(LANES):
                        r = lane_ref[blk * LANES + lane]
                        if r >= 0:
                            row[r] = _lcs_dist(lcs[lane], lens[lane], lb, pow075)
                n_refs = ref_off[node + 1] - ref_off[node]
                arg, dmin = 0, np.inf
                for r in range(n_refs):
                    if row[r] < dmin:
                        dmin = row[r]
                        arg = r
                best[t] = arg
                best_d[t] = dmin
                if links.shape[0] > 0:
                    at = link_off[node] + arg * n_refs
                    for r in range(n_refs):
                        if row[r] < links[w, at + r]:
                            links[w, at + r] = row[r]


@njit(cache=True, nogil=True)
def _nearest(
    codes, offsets, ref_ids, ref_off, member_ids, member_node, chunk, workers, best, best_d, links, link_off
) -> None:
    """:func:`_nearest_pass` over passes of whole nodes of at most ``PASS_SEQUENCES`` references."""
    max_len = max(_max_len(offsets, ref_ids), _max_len(offsets, member_ids))
    pow075 = pow075_table(2 * max_len + 1)
    n_nodes = len(ref_off) - 1
    max_refs = 1
    for k in range(n_nodes):
        max_refs = max(max_refs, ref_off[k + 1] - ref_off[k])
    n0 = 0
    while n0 < n_nodes:
        n1 = n0 + 1
        while n1 < n_nodes and ref_off[n1 + 1] - ref_off[n0] <= PASS_SEQUENCES:
            n1 += 1
        packed = _pack_segments(codes, offsets, ref_ids, ref_off[n0 : n1 + 1])
        _nearest_pass(
            codes, offsets, member_ids, member_node, ref_off, n0, n1, packed, max_refs, pow075, chunk, workers,
            best, best_d, links, link_off,
        )
        n0 = n1


@njit(cache=True, nogil=True)
def lcs_nearest_reference(
    codes: np.ndarray,
    offsets: np.ndarray,
    ref_ids: np.ndarray,
    ref_off: np.ndarray,
    member_ids: np.ndarray,
    member_node: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nearest reference (index within its node, earlier wins ties), its distance, and link matrices.

    Node k's link matrix (k_r x k_r, row-major, ``k_r`` its reference count) is
    ``link[link_off[k]:link_off[k+1]]``. Each worker takes members in chunks with its own
    link buffer; the buffers are reduced by ``min``, so the result does not depend on the split.
    """
    m = len(member_ids)
    n_nodes = len(ref_off) - 1
    link_off = np.zeros(n_nodes + 1, dtype=np.int64)
    for k in range(n_nodes):
        r = ref_off[k + 1] - ref_off[k]
        link_off[k + 1] = link_off[k] + r * r
    best = np.zeros(m, dtype=np.int32)
    best_d = np.zeros(m, dtype=np.float64)
    chunk = 256
    workers = max(min(threads, (m + chunk - 1) // chunk), 1)
    links = np.full((workers, link_off[-1]), np.inf)
    if m > 0:
        _nearest(
            codes, offsets, ref_ids, ref_off, member_ids, member_node, chunk, workers, best, best_d, links, link_off,
        )
    out = links[0].copy()
    for w in range(1, workers):
        for e in range(len(out)):
            out[e] = min(out[e], links[w, e])
    return best, best_d, out, link_off


@njit(cache=True, nogil=True)
def lcs_nearest_sample(
    codes: np.ndarray,
    offsets: np.ndarray,
    ref_ids: np.ndarray,
    ref_off: np.ndarray,
    member_ids: np.ndarray,
    member_node: np.ndarray,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Each member's nearest reference of its node (index within the node, earlier wins ties) and distance.

    Work is split in chunks of members; each result depends on its member only,
    so it does not depend on the split.
    """
    m = len(member_ids)
    best = np.zeros(m, dtype=np.int32)
    best_d = np.zeros(m, dtype=np.float64)
    if m > 0:
        chunk = 64
        workers = max(min(threads, (m + chunk - 1) // chunk), 1)
        _nearest(
            codes, offsets, ref_ids, ref_off, member_ids, member_node, chunk, workers, best, best_d,
            np.empty((0, 0)), np.zeros(1, dtype=np.int64),
        )
    return best, best_d


@njit(cache=True, nogil=True)
def _relax_share(
    w, workers, codes, lo, hi, lb, masks, base, words, lane_len, lane_vertex, in_tree, best, via, cur, pow075,
) -> None:
    """Worker ``w``'s share of :func:`_relax_blocks`: blocks ``w, w + workers, ...``."""
    n_blocks = len(base)
    v, carry, lcs = _lane_buffers(words)
    for k in range(w, n_blocks, workers):
        live = False
        for lane in range(LANES):
            x = lane_vertex[k * LANES + lane]
            if x >= 0 and not in_tree[x]:
                live = True
        if not live:
            continue
        lens = lane_len[k * LANES : (k + 1) * LANES]
        _lcs_lanes(masks[base[k] :], words[k], lens, codes, lo, hi, v, carry, lcs)
        for lane in range(LANES):
            x = lane_vertex[k * LANES + lane]
            if x >= 0 and not in_tree[x]:
                d = _lcs_dist(lcs[lane], lens[lane], lb, pow075)
                if d < best[x]:
                    best[x] = d
                    via[x] = cur


@njit(cache=True, nogil=True, parallel=True)
def _relax_blocks(
    codes, offsets, lo, hi, lb, masks, base, words, lane_len, lane_vertex, in_tree, best, via, cur, pow075,
    threads,
) -> None:
    """Lower ``best[k]`` to d(cur, k) for every vertex k outside the tree (``cur``'s residues are
    ``codes[lo:hi]``, ``lb`` of them), a block of ``LANES`` packed vertices at a time; each
    vertex is one worker's, so the split changes nothing."""
    workers = max(min(threads, len(base)), 1)
    for w in prange(workers):
        _relax_share(w, workers, codes, lo, hi, lb, masks, base, words, lane_len, lane_vertex, in_tree, best, via,
                     cur, pow075)


@njit(cache=True, nogil=True)
def _pack_vertices(codes, offsets, ids, in_tree) -> tuple:
    """The vertices outside the tree in lane blocks (:func:`_pack_segments`, one segment):
    ``(masks, base, words, lane_len, lane_vertex, count)``, ``lane_vertex`` -1 for an empty lane."""
    live = np.empty(len(ids), dtype=np.int64)
    count = 0
    for k in range(len(ids)):
        if not in_tree[k]:
            live[count] = k
            count += 1
    live = live[:count]
    masks, base, words, lane_len, lane_item, _ = _pack_segments(
        codes, offsets, ids[live], np.array([0, count], dtype=np.int64)
    )
    lane_vertex = np.full(len(lane_item), -1, dtype=np.int64)
    for x in range(count):  # the segment's lanes come first, all filled
        lane_vertex[x] = live[lane_item[x]]
    return masks, base, words, lane_len, lane_vertex, count


@njit(cache=True, nogil=True)
def lcs_prim_mst(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, threads: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's MST (from vertex 0) of ``ids`` under LCS distances, in O(n) memory.

    Returns the edges in Prim order as (a, b, weight), local indices. The next
    vertex is the lowest-index one of smallest ``best`` (the order of
    :func:`msa.tree.linkage._single_linkage`), so both give the same tree. The vertices
    outside the tree hold the bit-vectors, in lane blocks by length, and each new vertex's
    residues run against them; the blocks are packed again whenever a quarter of their
    lanes have joined the tree (O(n log n) packing in all).
    """
    s = len(ids)
    edge_a = np.empty(max(s - 1, 0), dtype=np.int64)
    edge_b = np.empty(max(s - 1, 0), dtype=np.int64)
    edge_w = np.empty(max(s - 1, 0))
    if s < 2:
        return edge_a, edge_b, edge_w
    in_tree = np.zeros(s, dtype=np.bool_)
    best = np.full(s, np.inf)
    via = np.zeros(s, dtype=np.int64)
    in_tree[0] = True
    lcs_prim_steps(codes, offsets, ids, threads, in_tree, best, via, edge_a, edge_b, edge_w, 0, s - 1)
    return edge_a, edge_b, edge_w


@njit(cache=True, nogil=True)
def lcs_prim_steps(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, threads: int, in_tree: np.ndarray, best: np.ndarray,
    via: np.ndarray, edge_a: np.ndarray, edge_b: np.ndarray, edge_w: np.ndarray, first: int, last: int,
) -> None:
    """Steps ``first`` .. ``last - 1`` of :func:`lcs_prim_mst`, its state (``in_tree``, ``best``,
    ``via`` and the edges so far) carried from the steps before: a large tree built a slice of
    steps a call, with a checkpoint of msa.interrupts between calls. The outside vertices are
    packed afresh each call (their layout, not the tree, depends on when they are packed)."""
    s = len(ids)
    lens = np.empty(s, dtype=np.int64)
    for k in range(s):
        lens[k] = offsets[ids[k] + 1] - offsets[ids[k]]
    pow075 = pow075_table(2 * _max_len(offsets, ids) + 1)
    cur = 0 if first == 0 else edge_b[first - 1]
    masks, base, words, lane_len, lane_vertex, live = _pack_vertices(codes, offsets, ids, in_tree)
    for step in range(first, last):
        if 4 * (s - 1 - step) < 3 * live:
            masks, base, words, lane_len, lane_vertex, live = _pack_vertices(codes, offsets, ids, in_tree)
        a = ids[cur]
        if threads == 1 or (s - 1 - step) * lens[cur] * ((lens[cur] + 63) // 64) < PRIM_SERIAL_WORK:
            _relax_share(0, 1, codes, offsets[a], offsets[a + 1], lens[cur], masks, base, words, lane_len,
                         lane_vertex, in_tree, best, via, cur, pow075)
        else:
            _relax_blocks(
                codes, offsets, offsets[a], offsets[a + 1], lens[cur], masks, base, words, lane_len, lane_vertex,
                in_tree, best, via, cur, pow075, threads,
            )
        nxt, nxt_d = -1, np.inf
        for k in range(s):
            if not in_tree[k] and (best[k] < nxt_d or nxt == -1):
                nxt_d = best[k]
                nxt = k
        edge_a[step], edge_b[step], edge_w[step] = via[nxt], nxt, nxt_d
        in_tree[nxt] = True
        cur = nxt
