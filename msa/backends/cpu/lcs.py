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

These are the CPU oracles of ``kernels/lcs_distance.cu``.
"""
from __future__ import annotations

import numpy as np
from numba import prange

from msa.distances.condensed import condensed_row, condensed_rows
from msa.jit import njit


@njit(cache=True, nogil=True, inline="always")
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def _lcs_length(masks, words, len_a, codes, lo, hi, v) -> int:
    """Hyyro's bit-parallel LCS: V' = (V + U) | (V - U), U = V & match(c).

    U's bits are a subset of V's, so V - U = V ^ U never borrows: only the
    addition carries from word to word.
    """
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    zero = np.uint64(0)
    for w in range(words):
        v[w] = ones
    for k in range(lo, hi):
        c = codes[k]
        if c >= 20:  # only the 20 standard residues match (FAMSA)
            continue
        carry = zero
        row = np.int64(c) * words
        for w in range(words):
            x = v[w]
            u = x & masks[row + w]
            s1 = x + u
            c1 = s1 < x
            s2 = s1 + carry
            c2 = s2 < s1
            carry = np.uint64(c1 | c2)
            v[w] = s2 | (x ^ u)
    zeros = 0
    for w in range(words):
        x = ~v[w]
        bits = len_a - 64 * w
        if bits < 64:
            x &= (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
        zeros += _popcount(x)
    return zeros


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


@njit(cache=True, nogil=True)
def _fill_masks(masks: np.ndarray, words: int, codes: np.ndarray, lo: int, hi: int) -> None:
    """Match bit-vectors of one sequence (20 rows of ``words`` words) for Hyyro's LCS."""
    masks[: 20 * words] = 0
    for p in range(hi - lo):
        c = codes[lo + p]
        if c < 20:  # only the 20 standard residues match (FAMSA)
            masks[np.int64(c) * words + p // 64] |= np.uint64(1) << np.uint64(p % 64)


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


@njit(cache=True, nogil=True, parallel=True)
def lcs_distance_matrix(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, group_off: np.ndarray, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """Condensed FAMSA ``indel075_div_lcs`` matrices of many groups (layout as kmer_distance_matrix).

    ``d = (la + lb - 2 LCS) ** 0.75 / LCS``; where LCS = 0 FAMSA uses the largest
    float, which would overflow average linkage, so we use ``2 (la + lb) ** 0.75``,
    still above every pair of the same lengths with LCS >= 1. The powers come from
    :func:`pow075_table`, the table the CUDA kernel reads too.
    """
    row_group, row_index, out_off = condensed_rows(group_off)
    out = np.empty(out_off[-1], dtype=np.float64)
    n_rows = len(row_group)
    max_len = _max_len(offsets, ids)
    max_words = (max_len + 63) // 64
    pow075 = pow075_table(2 * max_len + 1)
    workers = max(min(threads, n_rows), 1)
    for w in prange(workers):
        masks = np.zeros(20 * max_words, dtype=np.uint64)
        v = np.empty(max_words, dtype=np.uint64)
        for t in range(w, n_rows, workers):
            i, base, s, o = condensed_row(t, row_group, row_index, group_off, out_off)
            a = ids[base + i]
            la = offsets[a + 1] - offsets[a]
            words = max((la + 63) // 64, 1)
            _fill_masks(masks, words, codes, offsets[a], offsets[a + 1])
            for j in range(i + 1, s):
                b = ids[base + j]
                lb = offsets[b + 1] - offsets[b]
                lcs = _lcs_length(masks, words, la, codes, offsets[b], offsets[b + 1], v)
                out[o + j] = _lcs_dist(lcs, la, lb, pow075)
    return out, out_off


@njit(cache=True, nogil=True)
def _nearest_row(codes, offsets, seq, ref_ids, r0, n_refs, masks, v, row, pow075) -> tuple[int, float]:
    """Distances of ``seq`` to ``ref_ids[r0:r0+n_refs]`` into ``row``; the nearest (earliest on ties)."""
    lb = offsets[seq + 1] - offsets[seq]
    words = max((lb + 63) // 64, 1)
    _fill_masks(masks, words, codes, offsets[seq], offsets[seq + 1])
    arg = 0
    dmin = np.inf
    for r in range(n_refs):
        ref = ref_ids[r0 + r]
        la = offsets[ref + 1] - offsets[ref]
        lcs = _lcs_length(masks, words, lb, codes, offsets[ref], offsets[ref + 1], v)
        d = _lcs_dist(lcs, la, lb, pow075)
        row[r] = d
        if d < dmin:
            dmin = d
            arg = r
    return arg, dmin


@njit(cache=True, nogil=True, parallel=True)
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

    Members of one node must be contiguous. Node k's link matrix (k_r x k_r,
    row-major, ``k_r`` its reference count) is ``link[link_off[k]:link_off[k+1]]``.
    Each worker takes members in chunks with its own masks and link buffer;
    the buffers are reduced by ``min``, so the result does not depend on the split.
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
    n_chunks = (m + chunk - 1) // chunk
    workers = max(min(threads, n_chunks), 1)
    links = np.full((workers, link_off[-1]), np.inf)
    if m == 0:
        return best, best_d, links[0].copy(), link_off
    max_len = max(_max_len(offsets, ref_ids), _max_len(offsets, member_ids))
    pow075 = pow075_table(2 * max_len + 1)
    max_words = (max_len + 63) // 64
    max_refs = 1
    for k in range(n_nodes):
        max_refs = max(max_refs, ref_off[k + 1] - ref_off[k])
    for w in prange(workers):
        masks = np.zeros(20 * max_words, dtype=np.uint64)
        v = np.empty(max_words, dtype=np.uint64)
        row = np.empty(max_refs, dtype=np.float64)
        link = links[w]
        for c in range(w, n_chunks, workers):
            for t in range(c * chunk, min((c + 1) * chunk, m)):
                node = member_node[t]
                n_refs = ref_off[node + 1] - ref_off[node]
                arg, dmin = _nearest_row(
                    codes, offsets, member_ids[t], ref_ids, ref_off[node], n_refs, masks, v, row, pow075
                )
                best[t] = arg
                best_d[t] = dmin
                base = link_off[node] + arg * n_refs
                for r in range(n_refs):
                    if row[r] < link[base + r]:
                        link[base + r] = row[r]
    out = links[0].copy()
    for w in range(1, workers):
        for e in range(len(out)):
            out[e] = min(out[e], links[w, e])
    return best, best_d, out, link_off


@njit(cache=True, nogil=True, parallel=True)
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
    if m == 0:
        return best, best_d
    max_len = max(_max_len(offsets, ref_ids), _max_len(offsets, member_ids))
    pow075 = pow075_table(2 * max_len + 1)
    max_words = (max_len + 63) // 64
    max_refs = 1
    for k in range(len(ref_off) - 1):
        max_refs = max(max_refs, ref_off[k + 1] - ref_off[k])
    chunk = 64
    n_chunks = (m + chunk - 1) // chunk
    workers = max(min(threads, n_chunks), 1)
    for w in prange(workers):
        masks = np.zeros(20 * max_words, dtype=np.uint64)
        v = np.empty(max_words, dtype=np.uint64)
        row = np.empty(max_refs, dtype=np.float64)
        for c in range(w, n_chunks, workers):
            for t in range(c * chunk, min((c + 1) * chunk, m)):
                node = member_node[t]
                arg, dmin = _nearest_row(
                    codes, offsets, member_ids[t], ref_ids, ref_off[node], ref_off[node + 1] - ref_off[node],
                    masks, v, row, pow075,
                )
                best[t] = arg
                best_d[t] = dmin
    return best, best_d


@njit(cache=True, nogil=True, parallel=True)
def _relax_row(
    codes, offsets, ids, cur, in_tree, best, via, masks, words, pow075, threads
) -> None:
    """Lower ``best[k]`` to d(cur, k) for every vertex k outside the tree."""
    s = len(ids)
    a = ids[cur]
    la = offsets[a + 1] - offsets[a]
    workers = max(min(threads, s), 1)
    span = (s + workers - 1) // workers
    for w in prange(workers):
        v = np.empty(max(words, 1), dtype=np.uint64)
        for k in range(w * span, min((w + 1) * span, s)):
            if in_tree[k]:
                continue
            b = ids[k]
            lb = offsets[b + 1] - offsets[b]
            lcs = _lcs_length(masks, words, la, codes, offsets[b], offsets[b + 1], v)
            d = _lcs_dist(lcs, la, lb, pow075)
            if d < best[k]:
                best[k] = d
                via[k] = cur


@njit(cache=True, nogil=True)
def lcs_prim_mst(
    codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray, threads: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's MST (from vertex 0) of ``ids`` under LCS distances, in O(n) memory.

    Returns the edges in Prim order as (a, b, weight), local indices. The next
    vertex is the lowest-index one of smallest ``best`` (the order of
    :func:`msa.tree.linkage._single_linkage`), so both give the same tree.
    """
    s = len(ids)
    edge_a = np.empty(max(s - 1, 0), dtype=np.int64)
    edge_b = np.empty(max(s - 1, 0), dtype=np.int64)
    edge_w = np.empty(max(s - 1, 0))
    if s < 2:
        return edge_a, edge_b, edge_w
    max_len = _max_len(offsets, ids)
    pow075 = pow075_table(2 * max_len + 1)
    masks = np.zeros(20 * ((max_len + 63) // 64), dtype=np.uint64)
    in_tree = np.zeros(s, dtype=np.bool_)
    best = np.full(s, np.inf)
    via = np.zeros(s, dtype=np.int64)
    cur = 0
    in_tree[0] = True
    for step in range(s - 1):
        a = ids[cur]
        la = offsets[a + 1] - offsets[a]
        words = max((la + 63) // 64, 1)
        _fill_masks(masks, words, codes, offsets[a], offsets[a + 1])
        _relax_row(codes, offsets, ids, cur, in_tree, best, via, masks, words, pow075, threads)
        nxt, nxt_d = -1, np.inf
        for k in range(s):
            if not in_tree[k] and (best[k] < nxt_d or nxt == -1):
                nxt_d = best[k]
                nxt = k
        edge_a[step], edge_b[step], edge_w[step] = via[nxt], nxt, nxt_d
        in_tree[nxt] = True
        cur = nxt
    return edge_a, edge_b, edge_w
