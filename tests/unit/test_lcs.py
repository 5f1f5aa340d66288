"""The CPU's LCS lanes (many sequences' bit-vectors against one sequence) against one pair at a time."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from msa.backends.cpu import CpuBackend, lcs
from msa.tree.linkage import batch_linkage, prim_single_linkages
from tests.unit.test_kmers import lcs_dp

BACKEND = CpuBackend()
#: Lengths at and around the 64-bit word boundaries, where carries cross words.
EDGES = (0, 1, 63, 64, 65, 127, 128, 129, 191, 192)


def random_codes(rng: np.random.Generator, n: int, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Related sequences (mutants of one root) of random lengths, word edges among them, ~5 % X/B/Z/*."""
    root = rng.integers(0, 20, max_len)
    lens = rng.integers(0, max_len + 1, n)
    edges = [e for e in EDGES if e <= max_len][:n]
    lens[: len(edges)] = edges
    rng.shuffle(lens)
    seqs = []
    for length in lens:
        s = np.where(rng.random(length) < 0.4, rng.integers(0, 20, length), root[:length])
        seqs.append(np.where(rng.random(length) < 0.05, rng.integers(20, 24, length), s))
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    return np.concatenate(seqs).astype(np.uint8), offsets


@numba.njit
def pair_lcs(codes: np.ndarray, a0: int, a1: int, b0: int, b1: int) -> int:
    """LCS of two sequences, one pair at a time: Hyyro's bit-vector of ``a`` with the carry of
    each word's add by compares (no lanes), the oracle of msa's lane kernel."""
    la = a1 - a0
    words = max((la + 63) // 64, 1)
    masks = np.zeros((20, words), dtype=np.uint64)
    for p in range(la):
        if codes[a0 + p] < 20:  # only the 20 standard residues match (FAMSA)
            masks[codes[a0 + p], p // 64] |= np.uint64(1) << np.uint64(p % 64)
    v = np.full(words, np.uint64(0xFFFFFFFFFFFFFFFF))
    for k in range(b0, b1):
        c = codes[k]
        if c >= 20:
            continue
        carry = np.uint64(0)
        for w in range(words):
            x = v[w]
            u = x & masks[c, w]
            s1 = x + u
            s2 = s1 + carry
            carry = np.uint64((s1 < x) | (s2 < s1))
            v[w] = s2 | (x ^ u)
    zeros = 0
    for p in range(la):
        zeros += 1 - int((v[p // 64] >> np.uint64(p % 64)) & np.uint64(1))
    return zeros


def pair_distance(codes: np.ndarray, offsets: np.ndarray, a: int, b: int, pow075: np.ndarray) -> float:
    la, lb = int(offsets[a + 1] - offsets[a]), int(offsets[b + 1] - offsets[b])
    got = pair_lcs(codes, offsets[a], offsets[a + 1], offsets[b], offsets[b + 1])
    return 2.0 * pow075[la + lb] if got == 0 else pow075[la + lb - 2 * got] / got


def pairwise_matrix(codes: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The condensed matrix of ``ids`` one pair at a time."""
    pow075 = lcs.pow075_table(2 * int(np.diff(offsets).max(initial=0)) + 1)
    return np.array([
        pair_distance(codes, offsets, ids[i], ids[j], pow075) for i in range(len(ids)) for j in range(i + 1, len(ids))
    ])


def test_pair_oracle_is_the_lcs() -> None:
    """The oracle against the textbook dynamic programme on short sequences."""
    rng = np.random.default_rng(5)
    codes, offsets = random_codes(rng, 30, 140)
    for a, b in rng.integers(0, 30, (60, 2)).tolist():
        want = lcs_dp(bytes(codes[offsets[a] : offsets[a + 1]]), bytes(codes[offsets[b] : offsets[b + 1]]))
        assert pair_lcs(codes, offsets[a], offsets[a + 1], offsets[b], offsets[b + 1]) == want


@pytest.mark.parametrize("seed", range(4))
def test_lane_matrices_equal_pairs_one_at_a_time(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several groups (sizes across block edges, ids out of order) in one call, and in passes."""
    rng = np.random.default_rng(seed)
    sizes = [1, 2, lcs.LANES - 1, lcs.LANES, lcs.LANES + 1, int(rng.integers(40, 110))]
    rng.shuffle(sizes)
    codes, offsets = random_codes(rng, sum(sizes), int(rng.choice([70, 200, 300])))
    ids = rng.permutation(sum(sizes)).astype(np.int64)
    group_off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    groups = zip(group_off[:-1], group_off[1:])
    want = np.concatenate([pairwise_matrix(codes, offsets, ids[lo:hi]) for lo, hi in groups])
    for threads in (1, 2):
        got, got_off = lcs.lcs_distance_matrix(codes, offsets, ids, group_off, threads)
        assert np.array_equal(got, want)
        assert got_off[-1] == len(want)
    # Passes of at most 40 sequences (every group but the largest alone): the compiled function
    # reads PASS_SEQUENCES when it is compiled, its Python form when it runs.
    monkeypatch.setattr(lcs, "PASS_SEQUENCES", 40)
    got, _ = lcs.lcs_distance_matrix.py_func(codes, offsets, ids, group_off, 2)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("distinct", [3, 40])
def test_prim_lanes_give_the_matrix_tree_with_ties(distinct: int) -> None:
    """Prim over lane blocks (packed again as vertices join) against single linkage of the full
    matrix, where few distinct sequences make most distances tie."""
    rng = np.random.default_rng(distinct)
    codes, offsets = random_codes(rng, distinct, 150)
    pick = rng.integers(0, distinct, 180)
    lens = np.diff(offsets)[pick]
    codes = np.concatenate([codes[offsets[p] : offsets[p + 1]] for p in pick])
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    keep = np.flatnonzero(lens > 0)
    ids = rng.permutation(keep).astype(np.int64)
    off = np.array([0, len(ids)])
    dist, dist_off = BACKEND.lcs_distance_matrix(codes, offsets, ids, off)
    want_m, want_h = batch_linkage(dist, dist_off, off, True)
    got_m, got_h = prim_single_linkages(codes, offsets, ids, off, BACKEND)
    assert np.array_equal(got_m, want_m)
    assert np.array_equal(got_h, want_h)


def test_prim_steps_on_the_pool_or_the_calling_thread_give_the_same_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Prim step runs on the thread pool or, below PRIM_SERIAL_WORK, on the calling thread:
    every step either way gives the same edges (the compiled function reads the constant when it
    is compiled, its Python form when it runs)."""
    rng = np.random.default_rng(12)
    codes, offsets = random_codes(rng, 300, 150)
    ids = np.flatnonzero(np.diff(offsets) > 0).astype(np.int64)
    want = lcs.lcs_prim_mst(codes, offsets, ids, 2)
    s = len(ids)
    for work in (0, 1 << 62):  # every step on the pool; every step on the calling thread
        monkeypatch.setattr(lcs, "PRIM_SERIAL_WORK", work)
        in_tree, best, via = np.zeros(s, dtype=np.bool_), np.full(s, np.inf), np.zeros(s, dtype=np.int64)
        in_tree[0] = True
        got = np.empty(s - 1, dtype=np.int64), np.empty(s - 1, dtype=np.int64), np.empty(s - 1)
        lcs.lcs_prim_steps.py_func(codes, offsets, ids, 2, in_tree, best, via, *got, 0, s - 1)
        for g, w in zip(got, want):
            assert np.array_equal(g, w)


def test_prim_in_slices_of_steps_gives_the_same_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large tree is built a slice of steps a call (a checkpoint between): the same edges."""
    import msa.backends.cpu as cpu

    rng = np.random.default_rng(13)
    codes, offsets = random_codes(rng, 300, 150)
    ids = np.flatnonzero(np.diff(offsets) > 0).astype(np.int64)
    want = lcs.lcs_prim_mst(codes, offsets, ids, 2)
    monkeypatch.setattr(cpu, "PRIM_CALL_WORK", 1 << 16)  # a few steps a call
    got = cpu._prim_mst(codes, offsets, ids)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


@pytest.mark.parametrize("links", [False, True])
def test_nearest_lanes_equal_pairs_one_at_a_time(links: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes of 1, LANES - 1, LANES, LANES + 1 and ~70 references, members in any node order,
    in one pass and in passes of a few nodes: nearest (earliest on ties), distance, link matrix."""
    rng = np.random.default_rng(9)
    ref_counts = np.array([1, lcs.LANES - 1, lcs.LANES, lcs.LANES + 1, 70])
    n_members = 150
    codes, offsets = random_codes(rng, int(ref_counts.sum()) + n_members, 200)
    refs = rng.permutation(int(ref_counts.sum())).astype(np.int64)
    ref_off = np.concatenate(([0], np.cumsum(ref_counts))).astype(np.int64)
    members = np.arange(int(ref_counts.sum()), len(offsets) - 1, dtype=np.int64)
    node = rng.integers(0, len(ref_counts), n_members).astype(np.int64)
    pow075 = lcs.pow075_table(2 * int(np.diff(offsets).max()) + 1)
    rows = [np.array([pair_distance(codes, offsets, refs[r], m, pow075) for r in range(ref_off[k], ref_off[k + 1])])
            for m, k in zip(members, node)]
    search = lcs.lcs_nearest_reference if links else lcs.lcs_nearest_sample
    compiled = search(codes, offsets, refs, ref_off, members, node, 2)
    monkeypatch.setattr(lcs, "_nearest", lcs._nearest.py_func)  # its pass loop reads PASS_SEQUENCES
    for passes in (lcs.PASS_SEQUENCES, 40):  # 40 references a pass: the 70-reference node alone
        monkeypatch.setattr(lcs, "PASS_SEQUENCES", passes)
        got = search.py_func(codes, offsets, refs, ref_off, members, node, 2)
        assert got[0].tolist() == [int(np.argmin(r)) for r in rows]
        assert np.array_equal(got[1], [r.min() for r in rows])
        if links:
            link, link_off = got[2], got[3]
            for k, r in enumerate(ref_counts.tolist()):
                want = np.full((r, r), np.inf)
                for t in np.flatnonzero(node == k).tolist():
                    want[got[0][t]] = np.minimum(want[got[0][t]], rows[t])
                assert np.array_equal(link[link_off[k] : link_off[k + 1]].reshape(r, r), want)
    assert all(np.array_equal(a, b) for a, b in zip(compiled, got))
