"""End to end: ``--device cuda`` output is byte-identical to ``--device cpu``
(align_db on simulated families and on BaliFam sets, and the CLI once)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.io.fasta import read_fasta
from msa.params import AlignParams
from msa.pipeline import align_db
from msa.seqdb import SeqDB

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402

pytestmark = pytest.mark.gpu

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
BALIFAM = SHARED / "datasets" / "balifam" / "balifam1000" / "in"
PARAMS = AlignParams(quiet=True)


def simulated(n: int, length: int, seed: int) -> SeqDB:
    fam = simulate(SimParams(n=n, length=length, seed=seed))
    return SeqDB.from_pairs(fam.records())


def assert_identical(db: SeqDB, cuda_backend) -> None:
    cpu = align_db(db, PARAMS, CpuBackend())
    gpu = align_db(db, PARAMS, cuda_backend)
    assert gpu.names == cpu.names
    np.testing.assert_array_equal(gpu.rows, cpu.rows)


@pytest.mark.parametrize(("n", "length", "seed"), [(60, 150, 1), (400, 250, 2), (1500, 120, 3)])
def test_simulated(cuda_backend, n, length, seed):
    assert_identical(simulated(n, length, seed), cuda_backend)


@pytest.mark.parametrize(("n", "length", "seed"), [(400, 250, 2), (3000, 60, 7)])
def test_simulated_hybrid(cuda_backend, hybrid, n, length, seed):
    """Levels on the GPU or the host as the model puts them (a user's run)."""
    assert_identical(simulated(n, length, seed), cuda_backend)


@pytest.mark.parametrize(("n", "length", "seed", "alphabet"), [(80, 300, 5, "dna"), (600, 500, 6, "rna")])
def test_simulated_nucleotides(cuda_backend, n, length, seed, alphabet):
    """A DNA/RNA family (nucleotide codes, the NUC scheme, N and IUPAC codes) aligns identically."""
    fam = simulate(SimParams(n=n, length=length, seed=seed, height=0.5, alphabet=alphabet))
    pairs = fam.records()
    pairs[0] = (pairs[0][0], pairs[0][1][:30] + b"NRYKMn" + pairs[0][1][30:])
    assert_identical(SeqDB.from_pairs(pairs), cuda_backend)


@pytest.mark.skipif(not BALIFAM.is_dir(), reason="BaliFam inputs not found beside the repo")
@pytest.mark.parametrize("family", ["PF00018.1000", "PF00037.1000", "PF14604.1000"])
@pytest.mark.parametrize("levels", ["device", "hybrid", "level-loop"])
def test_balifam(cuda_backend, monkeypatch, family, levels):
    """Every level on the GPU; as a user's run (the model may give the whole stage to the host's
    one call); the hybrid level loop."""
    path = BALIFAM / family
    if not path.is_file():
        pytest.skip(f"{family} not in {BALIFAM}")
    monkeypatch.setattr("msa.progressive.HYBRID", levels != "device")
    if levels == "level-loop":
        monkeypatch.setattr("msa.progressive.HOST_STAGE", "device")
    assert_identical(read_fasta(path), cuda_backend)


def test_cli(run_msa, tmp_path):
    """``msa align --device cuda`` writes the same bytes as ``--device cpu``."""
    fa = tmp_path / "in.fa"
    db = simulated(200, 180, 4)
    fa.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), db.residues[db.offsets[i] : db.offsets[i + 1]].tobytes())
                            for i, n in enumerate(db.names)))
    outs = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / f"{device}.fa"
        done = run_msa("align", fa, "-o", out, "--device", device, "--quiet", cwd=tmp_path)
        assert done.returncode == 0, done.stderr.decode()
        outs[device] = out.read_bytes()
    assert outs["cuda"] == outs["cpu"]
