"""Refinement on the GPU: ``--refine`` output is byte-identical to the CPU's (random families and
a BaliFam family), the pairwise library and every realignment included."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from msa.io.fasta import read_fasta
from msa.params import AlignParams
from msa.seqdb import SeqDB

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402

from tests.gpu.same_rows import assert_gpu_rows_are_cpus  # noqa: E402

pytestmark = pytest.mark.gpu


def _same(db: SeqDB, params: AlignParams, cuda_backend) -> None:
    assert_gpu_rows_are_cpus(db, params, cuda_backend, params.with_(refine="off"))


@pytest.mark.parametrize(("n", "length", "seed", "refine"), [(30, 120, 1, "20"), (150, 200, 2, "40"),
                                                             (300, 90, 3, "8")])
def test_random_families(cuda_backend, n, length, seed, refine):
    fam = simulate(SimParams(n=n, length=length, seed=seed))
    _same(SeqDB.from_pairs(fam.records()), AlignParams(quiet=True, refine=refine, seed=seed), cuda_backend)


def test_balifam_family(cuda_backend, shared_dir):
    path = shared_dir / "datasets" / "balifam" / "balifam1000" / "in" / "PF00018.1000"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    _same(read_fasta(str(path)), AlignParams(quiet=True, refine="10"), cuda_backend)
