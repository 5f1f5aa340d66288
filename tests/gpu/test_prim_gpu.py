"""The GPU Prim MST (kernels/lcs_prim.cu) against its CPU oracle: the same edges, in the same order, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.params import AlignParams
from msa.seqdb import SeqDB
from msa.tree.build import build_guide_tree

from test_lcs_gpu import random_set

pytestmark = pytest.mark.gpu
cuda_lcs = pytest.importorskip("msa.backends.cuda.lcs", reason="needs CuPy")

CPU = CpuBackend()


def assert_prim_equal(cuda_backend, codes, offsets, ids, compact_min: int = 4096, group_off=None) -> None:
    group_off = np.array([0, len(ids)]) if group_off is None else group_off
    want = CPU.lcs_prim_msts(codes, offsets, ids, group_off)
    got = cuda_lcs.prim_msts(codes, offsets, ids, group_off, cuda_backend.device, cuda_backend.n_sm, compact_min)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g.view(np.uint64) if g.dtype == np.float64 else g,
                                      w.view(np.uint64) if w.dtype == np.float64 else w)


# (lengths, non-standard residue rate, group size, compaction threshold)
SHAPES = {
    "two": lambda r: (r.integers(5, 40, 2), 0.02, 2, 4096),
    "one_word": lambda r: (r.integers(20, 65, 700), 0.02, 700, 4096),
    "each_register_width": lambda r: (r.integers(1, 520, 900), 0.02, 900, 4096),  # 1..9 words
    "word_edges": lambda r: (r.choice([63, 64, 65, 127, 128, 129, 511, 512, 513], 300), 0.01, 300, 4096),
    "scratch_words": lambda r: (r.integers(300, 1400, 200), 0.01, 200, 4096),  # > 8 words: V in global
    "compaction": lambda r: (r.integers(50, 300, 1500), 0.02, 1500, 16),  # many phases
    "empty_and_odd": lambda r: (r.integers(0, 30, 300), 0.6, 300, 32),  # LCS 0 and empty sequences
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_prim_equal(cuda_backend, shape):
    rng = np.random.default_rng(abs(hash(shape)) % 2**32)
    lens, odd, size, compact_min = SHAPES[shape](rng)
    codes, offsets = random_set(rng, lens, odd)
    ids = rng.permutation(len(lens))[:size].astype(np.int64)
    assert_prim_equal(cuda_backend, codes, offsets, ids, compact_min)


def test_prim_ties(cuda_backend):
    """Identical and equidistant sequences: every best is tied many ways; the lowest local index wins."""
    rng = np.random.default_rng(7)
    base_codes, base_off = random_set(rng, rng.integers(40, 60, 6), 0.0, n_anc=2, rate=0.1)
    pick = rng.integers(0, 6, 600)
    lens = np.diff(base_off)[pick]
    codes = np.concatenate([base_codes[base_off[k] : base_off[k + 1]] for k in pick])
    offsets = np.concatenate(([0], np.cumsum(lens)))
    ids = np.arange(600, dtype=np.int64)
    assert_prim_equal(cuda_backend, codes, offsets, ids, 64)


@pytest.mark.parametrize("compact_min", [8, 4096])
def test_prim_many_groups_one_launch(cuda_backend, compact_min):
    """Groups of 1 to 3000 members (many below a warp, some long) share launches and phases."""
    rng = np.random.default_rng(compact_min)
    sizes = np.concatenate(([1, 2, 3000, 33, 1], rng.integers(1, 200, 60)))
    codes, offsets = random_set(rng, rng.integers(1, 700, int(sizes.sum())), 0.03)
    ids = rng.permutation(int(sizes.sum())).astype(np.int64)
    assert_prim_equal(cuda_backend, codes, offsets, ids, compact_min, np.concatenate(([0], np.cumsum(sizes))))


def test_prim_more_groups_than_resident_blocks(cuda_backend):
    """More groups than the GPU holds blocks: the launch takes them in turns."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(2, 12, 3000)
    codes, offsets = random_set(rng, rng.integers(20, 200, int(sizes.sum())), 0.02)
    ids = np.arange(int(sizes.sum()), dtype=np.int64)
    assert_prim_equal(cuda_backend, codes, offsets, ids, 4096, np.concatenate(([0], np.cumsum(sizes))))


def test_prim_fresh_random_groups(cuda_backend):
    """Fresh inputs every run (the seed is printed on failure)."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        sizes = rng.integers(1, 1500, int(rng.integers(1, 6)))
        n = int(sizes.sum())
        codes, offsets = random_set(rng, rng.integers(1, 700, n), 0.03)
        ids = rng.permutation(n).astype(np.int64)
        group_off = np.concatenate(([0], np.cumsum(sizes)))
        assert_prim_equal(cuda_backend, codes, offsets, ids, int(rng.choice([16, 4096])), group_off), seed


@pytest.mark.parametrize("n", [3000, 6000])
def test_exact_tree_equal(cuda_backend, n):
    """--tree auto (Prim on the GPU; the matrix below exact_tree_max and Prim above it on the CPU)
    gives the CPU's tree on a real-looking family."""
    rng = np.random.default_rng(n)
    codes, offsets = random_set(rng, rng.integers(80, 400, n), 0.02, n_anc=6, rate=0.25)
    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBZX*", dtype=np.uint8)[codes]
    pairs = [(f"s{i}", letters[offsets[i] : offsets[i + 1]].tobytes().decode()) for i in range(n)]
    db = SeqDB.from_pairs(pairs)
    for params in (AlignParams(exact_tree_max=1000, mst_tree_max=n), AlignParams(exact_tree_max=n)):
        want = build_guide_tree(db, params, CPU)
        got = build_guide_tree(db, params, cuda_backend)
        np.testing.assert_array_equal(got.children, want.children)
        np.testing.assert_array_equal(got.heights, want.heights)


def test_parttree_exact_groups_equal(cuda_backend):
    """PartTree's exact subtrees (batched Prim on the GPU, matrices on the CPU) give the CPU's tree."""
    rng = np.random.default_rng(9)
    n = 5000
    codes, offsets = random_set(rng, rng.integers(80, 300, n), 0.02, n_anc=8, rate=0.25)
    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBZX*", dtype=np.uint8)[codes]
    db = SeqDB.from_pairs([(f"s{i}", letters[offsets[i] : offsets[i + 1]].tobytes().decode()) for i in range(n)])
    params = AlignParams(guide_tree="parttree", exact_tree_max=400, mst_tree_max=900, split_cluster_max=300, seed=2)
    want = build_guide_tree(db, params, CPU)
    got = build_guide_tree(db, params, cuda_backend)
    np.testing.assert_array_equal(got.children, want.children)
    np.testing.assert_array_equal(got.heights, want.heights)
