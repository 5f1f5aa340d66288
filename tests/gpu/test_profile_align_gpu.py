"""The GPU profile-profile DP against its CPU oracle: equal column maps and parent counts,
on fresh random sequence and profile pairs of many shapes, in one batch and split in pieces,
with narrow and wide dp_fill blocks; and the device-resident progressive driver against the CPU's."""
from __future__ import annotations

import numpy as np
import pytest

from msa.alphabet import load_matrix
from msa.backends.cpu import CpuBackend
from msa.backends.cpu_align import align_batch
from msa.params import AlignParams, gap_costs
from msa.profile import AlignBatch, gap_vector, sequence_counts

pytestmark = pytest.mark.gpu

CPU = CpuBackend()
MATRIX = load_matrix("PFASUM43")


def gaps(n: int) -> np.ndarray:
    return gap_vector(gap_costs(AlignParams(), n))


def related(rng, n: int, length: int, alphabet: int = 20) -> list[np.ndarray]:
    """Codes of ``n`` mutated copies (substitutions, short indels) of one random ancestor."""
    anc = rng.integers(0, alphabet, length)
    out = []
    for _ in range(n):
        s = anc.copy()
        sub = rng.random(len(s)) < 0.3
        s[sub] = rng.integers(0, alphabet, int(sub.sum()))
        keep = rng.random(len(s)) > 0.08
        s = s[keep] if keep.any() else s[:1]
        ins = rng.integers(0, alphabet, int(rng.integers(0, 1 + length // 10)))
        at = int(rng.integers(0, len(s) + 1))
        out.append(np.concatenate((s[:at], ins, s[at:])).astype(np.uint8))
    return out


def profile(rng, n: int, length: int, alphabet: int = 20) -> np.ndarray:
    """A profile table of ``n`` related sequences, built by pairwise CPU merges."""
    tables = [sequence_counts(s) for s in related(rng, n, length, alphabet)]
    sizes = [1] * n
    g = gaps(n)
    while len(tables) > 1:
        pairs = len(tables) // 2
        counts = np.concatenate(tables[: 2 * pairs])
        off = np.concatenate(([0], np.cumsum([len(t) for t in tables[: 2 * pairs]])))
        _, parents, poff = align_batch(counts, off, np.array(sizes[: 2 * pairs]), MATRIX, g)
        new = [parents[poff[k] : poff[k + 1]] for k in range(pairs)]
        new_sizes = [sizes[2 * k] + sizes[2 * k + 1] for k in range(pairs)]
        tables = new + tables[2 * pairs :]
        sizes = new_sizes + sizes[2 * pairs :]
    return tables[0]


def batch_of(rng, shapes: list[tuple[int, int, int, int]], alphabet: int = 20) -> AlignBatch:
    """One batch with a merge per (n_a, len_a, n_b, len_b)."""
    tables, n_seqs = [], []
    for na, la, nb, lb in shapes:
        for n, length in ((na, la), (nb, lb)):
            tables.append(profile(rng, n, length, alphabet))
            n_seqs.append(n)
    off = np.concatenate(([0], np.cumsum([len(t) for t in tables])))
    n_total = sum(n_seqs)
    return AlignBatch(np.concatenate(tables), off, np.array(n_seqs, dtype=np.int64), MATRIX, gaps(n_total))


def assert_same(gpu, cpu) -> None:
    """``gpu`` holds device arrays (maps, counts), ``cpu`` NumPy ones."""
    import cupy

    np.testing.assert_array_equal(gpu.col_offsets, cpu.col_offsets)
    np.testing.assert_array_equal(cupy.asnumpy(gpu.maps), cpu.maps)
    np.testing.assert_array_equal(cupy.asnumpy(gpu.counts), cpu.counts)


SHAPES = [
    (1, 1, 1, 1),  # one column each
    (1, 1, 1, 300),
    (1, 300, 1, 1),
    (1, 120, 1, 130),
    (1, 255, 1, 256),  # one dp_fill chunk exactly, then one more
    (1, 257, 1, 513),
    (1, 40, 1, 700),  # very unequal
    (1, 700, 1, 40),
    (3, 90, 1, 100),  # profile against a sequence, both orders
    (1, 100, 5, 90),
    (4, 60, 7, 80),
    (12, 200, 9, 300),
    (2, 5, 30, 400),
    (17, 1, 1, 2),
]


def test_mixed_batch(cuda_backend):
    batch = batch_of(np.random.default_rng(11), SHAPES)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


@pytest.mark.parametrize("seed", range(4))
def test_random_shapes(cuda_backend, seed):
    rng = np.random.default_rng(100 + seed)
    shapes = [(int(rng.choice([1, 1, 2, 5, 20])), int(rng.integers(1, 400)),
               int(rng.choice([1, 1, 3, 8])), int(rng.integers(1, 400))) for _ in range(24)]
    batch = batch_of(rng, shapes)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_ties_low_complexity(cuda_backend):
    """Two-letter sequences tie everywhere: the comparison order decides every cell."""
    rng = np.random.default_rng(5)
    batch = batch_of(rng, [(1, 80, 1, 90), (1, 300, 1, 290), (4, 100, 3, 120), (1, 1, 6, 50)], alphabet=2)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_long_pair(cuda_backend):
    rng = np.random.default_rng(7)
    batch = batch_of(rng, [(6, 1500, 5, 1800), (1, 2000, 1, 1900)])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_pieces(cuda_backend, monkeypatch):
    """A budget of about one merge per piece gives the same result as one launch."""
    batch = batch_of(np.random.default_rng(3), SHAPES[:8])
    monkeypatch.setattr("msa.backends.cuda.MEMORY_FRACTION", 1e-12)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


@pytest.mark.parametrize("few_threads", [32, 64])
def test_narrow_blocks(cuda_backend, monkeypatch, few_threads):
    """Narrow blocks force many chunks per merge (the last column carried in global memory)."""
    monkeypatch.setattr("msa.backends.cuda.DP_FEW_THREADS", few_threads)
    rng = np.random.default_rng(21 + few_threads)
    batch = batch_of(rng, SHAPES + [(1, 300, 16, 1000), (3, 517, 1, 290)])
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_wide_batch(cuda_backend):
    """At least as many merges as SMs: one column per thread (the leaves' levels)."""
    rng = np.random.default_rng(9)
    shapes = [(1, int(rng.integers(1, 300)), 1, int(rng.integers(1, 300))) for _ in range(cuda_backend.n_sm + 8)]
    batch = batch_of(rng, shapes)
    assert_same(cuda_backend.profile_align(batch), CPU.profile_align(batch))


def test_device_batch(cuda_backend):
    """Counts already on the device (as the progressive driver passes them) give the same result."""
    import cupy

    batch = batch_of(np.random.default_rng(13), SHAPES[:6])
    want = CPU.profile_align(batch)
    batch.counts = cupy.asarray(batch.counts)
    assert_same(cuda_backend.profile_align(batch), want)


@pytest.mark.parametrize("shape", ["caterpillar", "balanced"])
def test_progressive_on_device(cuda_backend, shape):
    """The one progressive driver: device-resident on CUDA, the same columns as on the CPU."""
    from msa.progressive import progressive_align
    from msa.tree.guide_tree import GuideTree

    rng = np.random.default_rng(17)
    seqs = related(rng, 70, 120)
    from msa.seqdb import SeqDB

    db = SeqDB.from_pairs([(f"s{k}", bytes(b"ARNDCQEGHILKMFPSTWYV"[c] for c in s)) for k, s in enumerate(seqs)])
    n = len(db)
    if shape == "caterpillar":
        children = [[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)]
    else:
        nodes, children = list(range(n)), []
        while len(nodes) > 1:
            nxt = []
            for a, b in zip(nodes[0::2], nodes[1::2]):
                children.append([a, b])
                nxt.append(n + len(children) - 1)
            nodes = nxt + nodes[len(nodes) // 2 * 2 :]
    tree = GuideTree(n, np.array(children), np.arange(n - 1, dtype=float))
    g = gap_costs(AlignParams(), n)
    want = progressive_align(db, tree, MATRIX, g, CPU)
    got = progressive_align(db, tree, MATRIX, g, cuda_backend)
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[0], want[0])
