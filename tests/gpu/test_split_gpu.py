"""One family split along its tree (msa.run.split) on the GPU: its pieces' output is the CPU's
whole run, byte for byte, on fresh random families and on a real one."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.io import read_fasta, write_alignment
from msa.params import AlignParams
from msa.pipeline import align_prepared, family_tree, prepare_family
from msa.testing import split_output

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402

SHARED = REPO.parent / "shared" / "datasets" / "balifam" / "balifam10000-dev" / "in"


def _check(db, cuda_backend, tmp_path: Path, pieces: tuple[int, ...]) -> None:
    family = prepare_family(db, AlignParams(refine="off", consistency="off", quiet=True), note=False)
    expected = io.BytesIO()
    write_alignment(expected, align_prepared(family, CpuBackend()), "fasta")
    tree = family_tree(family, cuda_backend)
    for p in pieces:
        assert split_output(family, tree, p, cuda_backend, tmp_path / f"{p}.fa") == expected.getvalue(), p


@pytest.mark.parametrize("seed", range(3))
def test_split_on_the_gpu_is_the_cpu_whole_run(seed: int, cuda_backend, tmp_path: Path) -> None:
    rng = np.random.default_rng(seed)
    from msa.seqdb import SeqDB

    fam = simulate(SimParams(n=int(rng.integers(300, 3000)), length=int(rng.integers(50, 300)), seed=seed))
    db = SeqDB.from_pairs(fam.records())
    _check(db, cuda_backend, tmp_path, (2, 5))


@pytest.mark.skipif(not (SHARED / "PF00037.10000").exists(), reason="balifam10000-dev is not in ../shared")
def test_split_of_a_real_family_on_the_gpu(cuda_backend, tmp_path: Path) -> None:
    _check(read_fasta(SHARED / "PF00037.10000"), cuda_backend, tmp_path, (4, 16))
