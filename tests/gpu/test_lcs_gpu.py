"""The CUDA LCS distance (kernels/lcs_distance.cu) against its CPU oracle: bit-identical matrices and trees."""
from __future__ import annotations

import numpy as np
import pytest

from msa.alphabet import encode
from msa.backends.cpu import CpuBackend
from msa.params import AlignParams
from msa.seqdb import SeqDB
from msa.tree.build import build_guide_tree

pytestmark = pytest.mark.gpu
cuda = pytest.importorskip("msa.backends.cuda", reason="needs CuPy")
from msa.backends.cuda import lcs as cuda_lcs  # noqa: E402  (after the skip)

CPU = CpuBackend()
STANDARD = b"ACDEFGHIKLMNPQRSTVWY"
ODD = b"BZXUO*J"


def random_set(rng, lens, odd_rate: float = 0.02, n_anc: int = 4, rate: float = 0.3):
    """Codes and offsets of sequences of these lengths: mutated copies of a few ancestors (so LCSs are long),
    ``odd_rate`` of the residues non-standard (they never match)."""
    lens = np.asarray(lens, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    seq = np.repeat(np.arange(len(lens)), lens)
    pos = np.arange(offsets[-1]) - offsets[seq]
    anc = rng.integers(0, 20, (n_anc, max(int(lens.max(initial=0)), 1)))
    letters = np.frombuffer(STANDARD, dtype=np.uint8)[anc[rng.integers(0, n_anc, len(lens))[seq], pos]].copy()
    mutate = rng.random(len(letters)) < rate
    letters[mutate] = np.frombuffer(STANDARD, dtype=np.uint8)[rng.integers(0, 20, int(mutate.sum()))]
    odd = rng.random(len(letters)) < odd_rate
    letters[odd] = np.frombuffer(ODD, dtype=np.uint8)[rng.integers(0, len(ODD), int(odd.sum()))]
    return encode(letters), offsets


def groups(rng, n: int, sizes) -> tuple[np.ndarray, np.ndarray]:
    """Random disjoint ids (in random order) for groups of these sizes."""
    sizes = np.asarray(sizes, dtype=np.int64)
    ids = rng.permutation(n)[: sizes.sum()]
    return ids.astype(np.int64), np.concatenate(([0], np.cumsum(sizes)))


def assert_equal_to_cpu(backend, codes, offsets, ids, group_off) -> None:
    want, want_off = CPU.lcs_distance_matrix(codes, offsets, ids, group_off)
    got, got_off = backend.lcs_distance_matrix(codes, offsets, ids, group_off)
    np.testing.assert_array_equal(got_off, want_off)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))  # bit for bit


SHAPES = {
    "tiny": lambda r: (r.integers(0, 6, 400), 0.05, [1, 2, 3, 60, 300, 0, 34]),
    "one_word": lambda r: (r.integers(30, 65, 500), 0.02, [500]),
    "multi_word": lambda r: (r.integers(60, 400, 700), 0.02, [200, 2, 1, 330, 167]),
    "word_edges": lambda r: (r.choice([63, 64, 65, 127, 128, 129, 191, 192, 193], 300), 0.01, [300]),
    "odd_rich": lambda r: (r.integers(0, 200, 300), 0.6, [150, 150]),
    "all_odd": lambda r: (r.integers(0, 30, 50), 1.0, [50]),
    "long_rows": lambda r: (r.integers(1500, 2300, 40), 0.01, [25, 15]),  # 24, 32 and > 32 words
    "many_groups": lambda r: (r.integers(0, 250, 2000), 0.02, r.integers(0, 12, 300)),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_matrix_equal(cuda_backend, shape):
    rng = np.random.default_rng(sorted(SHAPES).index(shape))
    lens, odd, sizes = SHAPES[shape](rng)
    codes, offsets = random_set(rng, lens, odd)
    ids, group_off = groups(rng, len(lens), sizes)
    assert_equal_to_cpu(cuda_backend, codes, offsets, ids, group_off)


def test_long_rows_global_masks_and_small_scratch(cuda_backend, monkeypatch):
    """Rows past the register kernels with masks in global memory and a V scratch of a few blocks."""
    monkeypatch.setattr(cuda_lcs, "LCS_LONG_SHARED", 1024)
    monkeypatch.setattr(cuda_lcs, "LCS_LONG_SCRATCH", 3 * 8 * 40 * cuda_lcs.LCS_THREADS)
    rng = np.random.default_rng(21)
    codes, offsets = random_set(rng, rng.integers(2100, 2600, 200), 0.01)
    ids, group_off = groups(rng, 200, [180, 20])
    assert_equal_to_cpu(cuda_backend, codes, offsets, ids, group_off)


def test_pieces_under_a_memory_limit():
    rng = np.random.default_rng(22)
    codes, offsets = random_set(rng, rng.integers(0, 200, 1200), 0.02)
    ids, group_off = groups(rng, 1200, [70] * 15 + [1, 0, 140])
    assert_equal_to_cpu(cuda.CudaBackend(memory_limit=1 << 14), codes, offsets, ids, group_off)


def test_no_pairs(cuda_backend):
    codes, offsets = random_set(np.random.default_rng(23), [5, 0, 7], 0.0)
    got, off = cuda_backend.lcs_distance_matrix(codes, offsets, np.array([0, 1, 2]), np.array([0, 1, 2, 3]))
    assert len(got) == 0 and list(off) == [0, 0, 0, 0]


@pytest.mark.parametrize(("guide_tree", "n"), [("single", 900), ("upgma", 600), ("parttree", 3000)])
def test_guide_tree_equal(cuda_backend, guide_tree, n):
    rng = np.random.default_rng(24)
    codes, offsets = random_set(rng, rng.integers(20, 300, n), 0.02, n_anc=12)
    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBZX*", dtype=np.uint8)[codes]
    names = [f"s{i}" for i in range(n)]
    db = SeqDB.from_arrays(names, names, letters, offsets)
    params = AlignParams(guide_tree=guide_tree, distance="lcs", linkage="single", exact_tree_max=1000, seed=3)
    want = build_guide_tree(db, params, CPU)
    got = build_guide_tree(db, params, cuda_backend)
    np.testing.assert_array_equal(got.children, want.children)
    np.testing.assert_array_equal(got.heights, want.heights)


def sample_inputs(rng, n: int, node_members, node_refs, dup_refs: bool = False):
    """References (random ids, duplicated within nodes if ``dup_refs``, so ties occur) and members
    (random ids, nodes shuffled so a node's members are not contiguous)."""
    node_refs = np.asarray(node_refs, dtype=np.int64)
    ref_off = np.concatenate(([0], np.cumsum(node_refs)))
    ref_ids = rng.integers(0, n, int(ref_off[-1]))
    if dup_refs:
        ref_ids = np.repeat(ref_ids[::2], 2)[: len(ref_ids)]
    member_node = rng.permutation(np.repeat(np.arange(len(node_refs)), node_members))
    member_ids = rng.integers(0, n, len(member_node))
    return ref_ids.astype(np.int64), ref_off, member_ids.astype(np.int64), member_node.astype(np.int64)


def assert_sample_equal_to_cpu(backend, codes, offsets, ref_ids, ref_off, member_ids, member_node) -> None:
    want, want_d = CPU.lcs_nearest_sample(codes, offsets, ref_ids, ref_off, member_ids, member_node)
    got, got_d = backend.lcs_nearest_sample(codes, offsets, ref_ids, ref_off, member_ids, member_node)
    assert got.dtype == np.int32 and got_d.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_d.view(np.uint64), want_d.view(np.uint64))  # bit for bit


# (lengths, odd rate, members per node, references per node, duplicated references)
SAMPLE_SHAPES = {
    "tiny": lambda r: (r.integers(0, 6, 300), 0.05, [40, 200, 7, 1], [3, 50, 1, 9], False),
    "one_ref": lambda r: (r.integers(0, 100, 300), 0.02, [50, 1, 130], [1, 1, 1], False),
    "multi_word": lambda r: (r.integers(60, 400, 600), 0.02, [300, 250, 5], [120, 7, 300], False),
    "word_edges": lambda r: (r.choice([63, 64, 65, 127, 128, 129, 191, 192, 193], 300), 0.01, [400], [60], False),
    "x_rich": lambda r: (r.integers(0, 200, 300), 0.6, [150, 150], [40, 20], False),
    "all_odd": lambda r: (r.integers(0, 30, 60), 1.0, [80], [10], False),
    "long_refs": lambda r: (r.integers(1500, 2400, 60), 0.01, [70, 30], [25, 12], False),  # 24, 32, > 32 words
    "many_nodes": lambda r: (r.integers(0, 250, 2000), 0.02, r.integers(1, 30, 200), r.integers(1, 15, 200), False),
    "dup_refs": lambda r: (r.integers(0, 120, 200), 0.02, [300, 90], [40, 13], True),
}


@pytest.mark.parametrize("shape", sorted(SAMPLE_SHAPES))
def test_nearest_sample_equal(cuda_backend, shape):
    rng = np.random.default_rng(100 + sorted(SAMPLE_SHAPES).index(shape))
    lens, odd, members, refs, dup = SAMPLE_SHAPES[shape](rng)
    codes, offsets = random_set(rng, lens, odd)
    assert_sample_equal_to_cpu(cuda_backend, codes, offsets, *sample_inputs(rng, len(lens), members, refs, dup))


def test_nearest_sample_identical_sequences_tie(cuda_backend):
    """Every reference the same sequence content: all distances tie, the first reference wins."""
    rng = np.random.default_rng(120)
    codes, offsets = random_set(rng, [90] * 5, 0.0, n_anc=1, rate=0.0)
    got, got_d = cuda_backend.lcs_nearest_sample(
        codes, offsets, np.array([4, 3, 2, 1]), np.array([0, 4]), np.arange(5), np.zeros(5, dtype=np.int64)
    )
    assert list(got) == [0] * 5 and list(got_d) == [0.0] * 5
    assert_sample_equal_to_cpu(
        cuda_backend, codes, offsets, np.array([4, 3, 2, 1]), np.array([0, 4]), np.arange(5), np.zeros(5, np.int64)
    )


def test_nearest_sample_long_refs_global_masks_and_pieces(monkeypatch):
    """References past the register kernels with masks in global memory, a small V scratch, many pieces."""
    monkeypatch.setattr(cuda_lcs, "LCS_LONG_SHARED", 1024)
    monkeypatch.setattr(cuda_lcs, "LCS_LONG_SCRATCH", 3 * 8 * 40 * cuda_lcs.LCS_THREADS)
    rng = np.random.default_rng(121)
    codes, offsets = random_set(rng, rng.integers(2100, 2600, 80), 0.01)
    inputs = sample_inputs(rng, 80, [100, 60], [20, 9])
    assert_sample_equal_to_cpu(cuda.CudaBackend(memory_limit=1 << 12), codes, offsets, *inputs)


def test_nearest_sample_no_members_and_empty_node(cuda_backend):
    codes, offsets = random_set(np.random.default_rng(122), [5, 0, 7, 9], 0.0)
    got, got_d = cuda_backend.lcs_nearest_sample(
        codes, offsets, np.array([0, 1]), np.array([0, 2, 2]), np.zeros(0, np.int64), np.zeros(0, np.int64)
    )
    assert len(got) == 0 and len(got_d) == 0
    assert_sample_equal_to_cpu(  # node 1 has no references: index 0, distance inf, as on the CPU
        cuda_backend, codes, offsets, np.array([0, 1]), np.array([0, 2, 2]), np.array([2, 3, 1]), np.array([1, 0, 0])
    )


def test_parttree_sampled_split_equal(cuda_backend):
    """The default sampled PartTree split (500-member sample, then exact subtrees) gives the same tree on both backends."""
    n = 3000
    rng = np.random.default_rng(123)
    codes, offsets = random_set(rng, rng.integers(20, 300, n), 0.02, n_anc=12)
    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBZX*", dtype=np.uint8)[codes]
    names = [f"s{i}" for i in range(n)]
    db = SeqDB.from_arrays(names, names, letters, offsets)
    params = AlignParams(guide_tree="parttree", exact_tree_max=150, mst_tree_max=150, split_cluster_max=100, seed=5)
    assert params.parttree_split == "sample" and params.parttree_distance == "lcs"
    want = build_guide_tree(db, params, CPU)
    got = build_guide_tree(db, params, cuda_backend)
    np.testing.assert_array_equal(got.children, want.children)
    np.testing.assert_array_equal(got.heights, want.heights)
