"""``--consistency`` on the GPU: the library's pairwise alignments run on the device, its bonuses
are built on the host between levels and added by the merge kernels; the rows are the CPU's,
byte for byte."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.io.fasta import read_fasta
from msa.params import AlignParams
from msa.pipeline import align_db, align_families, prepare_family
from msa.seqdb import SeqDB

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402

from tests.gpu.same_rows import assert_gpu_rows_are_cpus  # noqa: E402

pytestmark = pytest.mark.gpu


def _same(db: SeqDB, params: AlignParams, cuda_backend) -> None:
    assert_gpu_rows_are_cpus(db, params, cuda_backend, params.with_(consistency="off"))


@pytest.mark.parametrize(("n", "length", "seed"), [(200, 120, 1), (600, 90, 2)])
def test_random_families(cuda_backend, n, length, seed):
    fam = simulate(SimParams(n=n, length=length, seed=seed))
    _same(SeqDB.from_pairs(fam.records()), AlignParams(quiet=True, consistency="8", seed=seed, refine="off"), cuda_backend)


def test_balifam_families(cuda_backend, shared_dir):
    base = shared_dir / "datasets" / "balifam" / "balifam1000" / "in"
    paths = [base / f for f in ("PF00009.1000", "PF00018.1000")]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"{base} is absent")
    params = AlignParams(quiet=True, consistency="8")
    dbs = [read_fasta(str(p)) for p in paths]
    _same(dbs[0], params, cuda_backend)
    many = align_families([prepare_family(db, params, note=False) for db in dbs], cuda_backend)
    for db, rows in zip(dbs, many):
        np.testing.assert_array_equal(rows.rows, align_db(db, params, CpuBackend()).rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_merge_kernels_add_the_bonuses_the_cpu_adds(cuda_backend, seed):
    """profile_align with random cell bonuses on some merges (profiles and sequences, both
    roles, wide and narrow; many merges and few): the CPU's maps and parents, and the bonuses
    change them."""
    import cupy

    from msa.profile import AlignBatch
    from msa.testing import MATRIX, gaps, profile

    rng = np.random.default_rng(seed)
    shapes = [(1, 60, 1, 70), (4, 120, 9, 90), (7, 300, 3, 40), (12, 35, 20, 400), (2, 200, 2, 200),
              (30, 500, 25, 450)] + [(int(rng.integers(1, 8)), int(rng.integers(5, 90)),
                                     int(rng.integers(1, 8)), int(rng.integers(5, 90))) for _ in range(int(rng.integers(1, 300)))]
    tables, n_seqs = [], []
    for na, la, nb, lb in shapes:
        for n, length in ((na, la), (nb, lb)):
            tables.append(profile(rng, n, length))
            n_seqs.append(n)
    off = np.concatenate(([0], np.cumsum([len(t) for t in tables])))
    w = np.diff(off)
    has = rng.random(len(shapes)) < 0.6
    size = np.where(has, w[0::2] * w[1::2], 0)
    boff = np.concatenate(([0], np.cumsum(size))).astype(np.int64)
    values = rng.integers(0, 4, int(boff[-1])) * rng.integers(0, 20_000, int(boff[-1]))
    batch = AlignBatch(np.concatenate(tables), off, np.array(n_seqs, dtype=np.int64), MATRIX, gaps(sum(n_seqs)),
                       bonus=(values.astype(np.int64), boff))
    cpu = CpuBackend().profile_align(batch)
    gpu = cuda_backend.profile_align(batch)
    np.testing.assert_array_equal(gpu.col_offsets, cpu.col_offsets)
    np.testing.assert_array_equal(cupy.asnumpy(gpu.maps), cpu.maps)
    np.testing.assert_array_equal(cupy.asnumpy(gpu.counts), cpu.counts)
    plain = CpuBackend().profile_align(AlignBatch(batch.counts, off, batch.n_seqs, MATRIX, batch.gaps))
    assert len(plain.maps) == len(cpu.maps) and (plain.maps != cpu.maps).any()


@pytest.mark.parametrize("alphabet", [4, 20])
def test_pair_residues_are_the_cpus(cuda_backend, alphabet):
    """The libraries' pairwise alignments: the GPU's batch of one-sequence merges read off its
    maps against the CPU's kernel on the codes, fresh random pairs (one-residue sequences, a
    sequence with itself, either order)."""
    import cupy

    from msa.testing import MATRIX, gaps, related

    rng = np.random.default_rng()
    seqs = related(rng, 40, int(rng.integers(5, 300)), alphabet)
    seqs += [rng.integers(0, alphabet, int(rng.integers(1, 400))).astype(np.uint8) for _ in range(6)]
    seqs += [np.array([rng.integers(0, alphabet)], dtype=np.uint8)]
    codes = np.concatenate(seqs)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in seqs]))).astype(np.int64)
    pairs = rng.integers(0, len(seqs), (500, 2))
    pairs[:2] = [[0, 0], [len(seqs) - 1, 3]]
    got = cuda_backend.pair_residues(cupy.asarray(codes), offsets, pairs, MATRIX, gaps(2))
    want = CpuBackend().pair_residues(codes, offsets, pairs, MATRIX, gaps(2))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
