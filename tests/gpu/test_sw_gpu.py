"""The CUDA Smith-Waterman distance (kernels/sw_distance.cu) against its CPU oracle: bit-identical matrices
(int32 and int64 kernels, in pieces) and alignments."""
from __future__ import annotations

import numpy as np
import pytest

from msa.alphabet import load_matrix
from msa.backends.cpu import CpuBackend
from msa.params import AlignParams, GapCosts, gap_costs
from msa.pipeline import align_db
from msa.seqdb import SeqDB

pytestmark = pytest.mark.gpu
cuda = pytest.importorskip("msa.backends.cuda", reason="needs CuPy")
from msa.backends.cuda import sw as cuda_sw  # noqa: E402  (after the skip)

CPU = CpuBackend()
MATRIX = load_matrix("PFASUM43")
GAPS = gap_costs(AlignParams(), 1)


def random_set(rng, lens, n_anc: int = 4, rate: float = 0.3, odd_rate: float = 0.02):
    """Codes and offsets of mutated copies of a few ancestors (so local scores are high), some residues
    B, Z, X or * (codes 20..23)."""
    lens = np.asarray(lens, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    seq = np.repeat(np.arange(len(lens)), lens)
    pos = np.arange(offsets[-1]) - offsets[seq]
    anc = rng.integers(0, 20, (n_anc, max(int(lens.max(initial=0)), 1)))
    codes = anc[rng.integers(0, n_anc, len(lens))[seq], pos]
    mutate = rng.random(len(codes)) < rate
    codes[mutate] = rng.integers(0, 20, int(mutate.sum()))
    odd = rng.random(len(codes)) < odd_rate
    codes[odd] = rng.integers(20, 24, int(odd.sum()))
    return codes.astype(np.uint8), offsets


def groups(rng, n: int, sizes) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.asarray(sizes, dtype=np.int64)
    ids = rng.permutation(n)[: sizes.sum()]
    return ids.astype(np.int64), np.concatenate(([0], np.cumsum(sizes)))


def assert_equal_to_cpu(backend, codes, offsets, ids, group_off, matrix=MATRIX, gaps=GAPS) -> None:
    want, want_off = CPU.sw_distance_matrix(codes, offsets, ids, group_off, matrix, gaps)
    got, got_off = backend.sw_distance_matrix(codes, offsets, ids, group_off, matrix, gaps)
    np.testing.assert_array_equal(got_off, want_off)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))  # bit for bit


# (lengths, group sizes); strips are 16 columns, tiles 128 members
SHAPES = {
    "tiny": lambda r: (r.integers(0, 6, 300), [1, 2, 3, 60, 200, 0, 34]),
    "strip_edges": lambda r: (r.choice([1, 15, 16, 17, 31, 32, 33], 250), [250]),
    "medium": lambda r: (r.integers(60, 400, 500), [200, 2, 1, 130, 167]),
    "tile_edges": lambda r: (r.integers(20, 80, 800), [127, 128, 129, 257, 1]),
    "long": lambda r: (r.integers(1500, 4000, 30), [20, 10]),
    "many_groups": lambda r: (r.integers(0, 250, 1500), r.integers(0, 12, 250)),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_matrix_equal(cuda_backend, shape):
    rng = np.random.default_rng(200 + sorted(SHAPES).index(shape))
    lens, sizes = SHAPES[shape](rng)
    codes, offsets = random_set(rng, lens)
    ids, group_off = groups(rng, len(lens), sizes)
    assert_equal_to_cpu(cuda_backend, codes, offsets, ids, group_off)


def test_int64_kernels(cuda_backend, monkeypatch):
    """The int64 kernels (taken where int32 could overflow) give the same matrices."""
    monkeypatch.setattr(cuda_sw, "SW_INT32_MAX", 0)
    rng = np.random.default_rng(210)
    codes, offsets = random_set(rng, rng.integers(0, 300, 400))
    ids, group_off = groups(rng, 400, [150, 3, 200, 1])
    assert_equal_to_cpu(cuda_backend, codes, offsets, ids, group_off)


def test_large_scores_go_int64(cuda_backend):
    """Gap costs past int32: the host check picks the int64 kernels, still equal to the CPU."""
    rng = np.random.default_rng(211)
    codes, offsets = random_set(rng, rng.integers(1, 120, 150))
    ids, group_off = groups(rng, 150, [150])
    gaps = GapCosts(-(3 << 30), -5, 0, 0)
    assert not cuda_sw._sw_fits_int32(MATRIX, gaps, 120)
    assert_equal_to_cpu(cuda_backend, codes, offsets, ids, group_off, gaps=gaps)


def test_other_matrix_and_zero_gaps(cuda_backend):
    rng = np.random.default_rng(212)
    codes, offsets = random_set(rng, rng.integers(0, 200, 300), odd_rate=0.2)
    ids, group_off = groups(rng, 300, [300])
    assert_equal_to_cpu(cuda_backend, codes, offsets, ids, group_off, load_matrix("BLOSUM62"), GapCosts(0, 0, 0, 0))


def test_pieces_and_small_scratch(monkeypatch):
    """A tiny memory limit (many pieces) and a scratch of one block."""
    monkeypatch.setattr(cuda_sw, "SW_SCRATCH", 1)
    rng = np.random.default_rng(213)
    codes, offsets = random_set(rng, rng.integers(0, 200, 1000))
    ids, group_off = groups(rng, 1000, [70] * 12 + [1, 0, 140])
    assert_equal_to_cpu(cuda.CudaBackend(memory_limit=1 << 14), codes, offsets, ids, group_off)


def test_no_pairs(cuda_backend):
    codes, offsets = random_set(np.random.default_rng(214), [5, 0, 7])
    ids, group_off = np.array([0, 1, 2]), np.array([0, 1, 2, 3])
    got, off = cuda_backend.sw_distance_matrix(codes, offsets, ids, group_off, MATRIX, GAPS)
    assert len(got) == 0 and list(off) == [0, 0, 0, 0]


@pytest.mark.parametrize(("n", "guide_tree"), [(300, "single"), (500, "upgma"), (2500, "auto")])
def test_align_db_identical(cuda_backend, n, guide_tree):
    """Whole alignments with distance="sw" (exact trees, and PartTree's exact subtrees past exact_tree_max)."""
    rng = np.random.default_rng(215)
    codes, offsets = random_set(rng, rng.integers(30, 250, n), n_anc=10)
    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYVBZX*", dtype=np.uint8)[codes]
    names = [f"s{i}" for i in range(n)]
    db = SeqDB.from_arrays(names, names, letters, offsets)
    params = AlignParams(distance="sw", guide_tree=guide_tree, exact_tree_max=1000, quiet=True)
    cpu = align_db(db, params, CPU)
    gpu = align_db(db, params, cuda_backend)
    assert gpu.names == cpu.names
    np.testing.assert_array_equal(gpu.rows, cpu.rows)
