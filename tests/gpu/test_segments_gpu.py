"""kernels/segments.cu (the progressive stage's per-level gathers, scatters and bonuses) against the
CPU backend's (Numba) version, on fresh random segments: leaves and profile rows mixed, empty,
one-row and multi-chunk segments, several sources and targets."""
from __future__ import annotations

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.profile import N_COUNTS

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy", reason="needs CuPy")

CPU = CpuBackend()


def _widths(rng, n: int) -> np.ndarray:
    """Mostly short, some empty, one row, and some longer than a block's chunk."""
    w = rng.integers(1, 400, n)
    w[rng.random(n) < 0.1] = 0
    w[rng.random(n) < 0.1] = 1
    w[rng.random(n) < 0.05] = rng.integers(200, 3000, 1)
    return w.astype(np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_gather_profiles_equals_cpu(cuda_backend, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_seg = int(rng.integers(1, 200))
    widths = _widths(rng, n_seg)
    parts = [rng.integers(0, 50, (int(rng.integers(1, 8000)), N_COUNTS)).astype(np.int32) for _ in range(3)]
    codes = rng.integers(0, 24, 50_000).astype(np.uint8)
    part = rng.integers(-1, len(parts), n_seg)
    limit = np.where(part < 0, len(codes), np.array([len(p) for p in parts] + [0])[part])
    widths = np.minimum(widths, limit)
    start = (rng.random(n_seg) * (limit - widths + 1)).astype(np.int64)
    values = None if seed == 0 else rng.integers(1, 1 << 20, n_seg)  # the leaves' weights (1 without)
    want = CPU.gather_profiles(parts, part, start, widths, codes, values)
    got = cuda_backend.gather_profiles([cp.asarray(p) for p in parts], part, start, widths, cp.asarray(codes), values)
    np.testing.assert_array_equal(cp.asnumpy(got), want)


@pytest.mark.parametrize("seed", range(4))
def test_place_segments_equals_cpu(cuda_backend, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_seg = 2 * int(rng.integers(1, 100))  # children come in pairs, each pair one parent
    widths = _widths(rng, n_seg)
    values = rng.integers(0, 10**9, 20_000)
    maps = np.concatenate([rng.integers(0, max(w, 1) * 2, w) for w in widths]).astype(np.int32)
    parent = np.repeat(rng.integers(0, len(values) - 2 * int(widths.max()) - 1, n_seg // 2), 2)
    target = rng.integers(0, 3, n_seg)
    start = np.zeros(n_seg, dtype=np.int64)  # disjoint destinations, as a level's children have
    sizes = []
    for t in range(3):
        pick = np.flatnonzero(target == t)
        room = widths[pick] + rng.integers(0, 50, len(pick))
        start[pick] = np.cumsum(room) - room
        sizes.append(int(room.sum()) + 1)
    want = [np.full(s, -1, dtype=np.int64) for s in sizes]
    CPU.place_segments(want, target, start, values, maps, parent, widths)
    got = [cp.full(s, -1, dtype=cp.int64) for s in sizes]
    cuda_backend.place_segments(got, target, start, cp.asarray(values), cp.asarray(maps), parent, widths)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(cp.asnumpy(g), w)


@pytest.mark.parametrize("seed", range(4))
def test_add_bonuses_equals_cpu(cuda_backend, seed: int) -> None:
    """A level's consistency bonuses (msa.consistency.LevelBonuses): merges of few and of many
    (past a block's chunk) residue pairs, some of none, many pairs on one cell (the atomics)."""
    rng = np.random.default_rng(seed)
    n_merges = int(rng.integers(1, 60))
    wa, wb = rng.integers(1, 300, n_merges), rng.integers(1, 300, n_merges)
    count = rng.integers(0, 3000, n_merges)
    count[rng.random(n_merges) < 0.1] = 0
    count[rng.random(n_merges) < 0.1] = rng.integers(5000, 20_000, 1)
    first = np.cumsum(count) - count + rng.integers(0, 5, n_merges).cumsum()  # pairs of no merge between
    n_pairs = int((first + count).max()) + 1
    sides = rng.integers(1, 40, (n_merges, 2))  # each merge's residues on either side, columns < wa, < wb
    res_off = np.concatenate(([0], np.cumsum(sides.ravel())))
    cur = np.concatenate([rng.integers(0, min(w, 4) if i % 2 == 0 else w, r)  # few a columns: shared cells
                          for i, (w, r) in enumerate(zip(np.stack((wa, wb), 1).ravel(), sides.ravel()))])
    lib_a, lib_b = np.zeros(n_pairs, dtype=np.int64), np.zeros(n_pairs, dtype=np.int64)
    for g in range(n_merges):
        p = slice(first[g], first[g] + count[g])
        lib_a[p] = res_off[2 * g] + rng.integers(0, sides[g, 0], count[g])
        lib_b[p] = res_off[2 * g + 1] + rng.integers(0, sides[g, 1], count[g])
    vote = rng.integers(0, 1 << 20, n_pairs)
    scale = rng.integers(1, 1 << 20, n_merges)
    base = np.cumsum(wa * wb) - wa * wb
    want = np.zeros(int((wa * wb).sum()), dtype=np.int64)
    CPU.add_bonuses(want, first, count, wb, base, scale, lib_a, lib_b, vote, cur)
    got = cp.zeros(len(want), dtype=cp.int64)
    cuda_backend.add_bonuses(got, first, count, wb, base, scale, *(cp.asarray(x) for x in (lib_a, lib_b, vote, cur)))
    assert (want != 0).sum() > 100
    np.testing.assert_array_equal(cp.asnumpy(got), want)


@pytest.mark.parametrize("seed", range(4))
def test_walk_columns_equals_cpu(cuda_backend, seed: int) -> None:
    """A level's walk of the consistency samples (msa.consistency.LevelBonuses): children of few
    and of many (past a block's chunk) sampled residues, some of none, spans apart in ``cur``
    (what lies between them is left as it is)."""
    rng = np.random.default_rng(seed)
    n_kids = int(rng.integers(1, 80))
    widths = rng.integers(1, 400, n_kids)
    count = rng.integers(0, 2000, n_kids)
    count[rng.random(n_kids) < 0.1] = 0
    count[rng.random(n_kids) < 0.1] = rng.integers(5000, 20_000, 1)
    start = np.cumsum(count) - count + rng.integers(0, 50, n_kids).cumsum()  # residues of other nodes between
    base = np.cumsum(widths) - widths
    maps = np.concatenate([np.sort(rng.choice(2 * w, w, replace=False)) for w in widths]).astype(np.int32)
    cur = rng.integers(0, 1 << 40, int((start + count).max()) + 7)  # the others' columns stay as they are
    for g in range(n_kids):
        cur[start[g] : start[g] + count[g]] = rng.integers(0, widths[g], count[g])
    want = cur.copy()
    CPU.walk_columns(want, start, count, base, maps)
    got = cp.asarray(cur)
    cuda_backend.walk_columns(got, start, count, base, cp.asarray(maps))
    assert (want != cur).sum() > 100
    np.testing.assert_array_equal(cp.asnumpy(got), want)
