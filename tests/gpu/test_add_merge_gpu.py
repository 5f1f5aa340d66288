"""msa add and msa merge on the GPU: the same rows as the CPU backend (the oracle), on fresh
random families and on a real BaliFam family where one is present."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.io import read_fasta
from msa.io.formats import read_alignment
from msa.merge import add_sequences, merge_alignments
from msa.params import AlignParams
from msa.pipeline import align_db
from msa.seqdb import SeqDB

BALIFAM = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "balifam" / "balifam1000"
LETTERS = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def _family(rng: np.random.Generator, n: int, prefix: str) -> list[tuple[str, str]]:
    """Mutated copies of one random root: substitutions and short indels."""
    root = LETTERS[rng.integers(0, 20, int(rng.integers(40, 160)))]
    out = []
    for i in range(n):
        seq = root.copy()
        hit = rng.random(len(seq)) < 0.25
        seq[hit] = LETTERS[rng.integers(0, 20, int(hit.sum()))]
        for _ in range(int(rng.integers(0, 4))):
            k = int(rng.integers(0, len(seq)))
            if rng.random() < 0.5 and len(seq) > 20:
                seq = np.delete(seq, slice(k, k + int(rng.integers(1, 5))))
            else:
                seq = np.insert(seq, k, LETTERS[rng.integers(0, 20, int(rng.integers(1, 5)))])
        out.append((f"{prefix}{i}", seq.tobytes().decode()))
    return out


def _aligned(tmp_path: Path, name: str, records: list[tuple[str, str]]):
    aligned = align_db(SeqDB.from_pairs(records), AlignParams(quiet=True), CpuBackend())
    path = tmp_path / name
    path.write_text("".join(f">{n}\n{r.tobytes().decode()}\n" for n, r in zip(aligned.names, aligned.rows)))
    return read_alignment(str(path))


def _same(a, b) -> None:
    assert a.names == b.names and a.width == b.width
    assert [r.tobytes() for r in a.rows] == [r.tobytes() for r in b.rows]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("keep_length", [False, True])
def test_add_equals_cpu_on_random_families(cuda_backend, tmp_path: Path, seed: int, keep_length: bool) -> None:
    rng = np.random.default_rng([seed, 20261125])
    existing = _aligned(tmp_path, "e.fa", _family(rng, int(rng.integers(2, 60)), "e"))
    new = SeqDB.from_pairs(_family(rng, int(rng.integers(1, 200)), "n"))
    params = AlignParams(quiet=True)
    want, dropped = add_sequences(existing, new, params, CpuBackend(), keep_length)
    got, got_dropped = add_sequences(existing, new, params, cuda_backend, keep_length)
    _same(got, want)
    assert got_dropped == dropped


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merge_equals_cpu_on_random_families(cuda_backend, tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng([seed, 20261126])
    a = _aligned(tmp_path, "a.fa", _family(rng, int(rng.integers(1, 80)), "a"))
    b = _aligned(tmp_path, "b.fa", _family(rng, int(rng.integers(1, 80)), "b"))
    params = AlignParams(quiet=True)
    _same(merge_alignments(a, b, params, cuda_backend), merge_alignments(a, b, params, CpuBackend()))


@pytest.mark.skipif(not BALIFAM.is_dir(), reason="../shared/datasets/balifam/balifam1000 is not present")
def test_add_and_merge_equal_cpu_on_a_real_family(cuda_backend, tmp_path: Path) -> None:
    """PF00078.1000 split in two halves: the first aligned, the second added to it; the two
    halves aligned apart and merged."""
    db = read_fasta(BALIFAM / "in" / "PF00078.1000")
    half = len(db) // 2
    records = [(db.names[i], db.sequence(i).decode()) for i in range(len(db))]
    first = _aligned(tmp_path, "first.fa", records[:half])
    second = _aligned(tmp_path, "second.fa", records[half:])
    params = AlignParams(quiet=True)
    new = SeqDB.from_pairs(records[half:])
    for keep_length in (False, True):
        want, _ = add_sequences(first, new, params, CpuBackend(), keep_length)
        got, _ = add_sequences(first, new, params, cuda_backend, keep_length)
        _same(got, want)
    _same(merge_alignments(first, second, params, cuda_backend), merge_alignments(first, second, params, CpuBackend()))


def _profile_table(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    """The profile table of ``n`` random gapped rows over ``width`` columns, every column used
    (as msa add's profiles are: all-gap columns are left out)."""
    from msa.profile import block_counts

    held = rng.random((n, width)) < rng.uniform(0.3, 0.95)
    held[rng.integers(0, n, width), np.arange(width)] = True  # every column has a residue
    held[np.arange(n), rng.integers(0, width, n)] = True  # every row has one
    rows, columns = np.nonzero(held)
    offsets = np.concatenate(([0], np.cumsum(held.sum(axis=1))))
    codes = rng.integers(0, 24, len(columns)).astype(np.uint8)
    return block_counts(codes, offsets, columns, width)


@pytest.mark.parametrize(
    "seed, n_profile, n_merges, limit",
    [(0, 1, 5, None), (1, 3, 40, None), (2, 60, 150, None), (3, 400, 300, None), (4, 9, 170, 1 << 21)],
)
def test_profile_slots_equal_cpu(seed: int, n_profile: int, n_merges: int, limit: int | None) -> None:
    """msa add's merges on the GPU (the profile's table once a piece, each residue's place off the
    path) against the CPU's (the profile repeated a merge, read off the maps), on fresh random
    profiles and sequences: a one-row profile (sequence against sequence), fewer merges than SMs
    (dp_fill) and more (dp_rows), sequences of 1 to ~600 residues, pieces forced by a low limit."""
    from msa.alphabet import load_matrix
    from msa.backends.cuda import CudaBackend
    from msa.params import gap_costs
    from msa.profile import gap_vector

    rng = np.random.default_rng([seed, 20261126])
    profile = _profile_table(rng, n_profile, int(rng.integers(1, 500)))
    lengths = rng.integers(1, 600, n_merges)
    lengths[: min(3, n_merges)] = [1, 2, 129][: min(3, n_merges)]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    codes = rng.integers(0, 24, int(offsets[-1])).astype(np.uint8)
    params = AlignParams(quiet=True).resolved("protein")
    matrix = np.ascontiguousarray(load_matrix(params.matrix), dtype=np.int64)
    gaps = gap_vector(gap_costs(params, n_profile + n_merges))
    done: list[int] = []
    want = CpuBackend().profile_slots(profile, n_profile, codes, offsets, matrix, gaps)
    got = CudaBackend(memory_limit=limit).profile_slots(profile, n_profile, codes, offsets, matrix, gaps, done.append)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert sum(done) == n_merges and (limit is None or len(done) > 1)
