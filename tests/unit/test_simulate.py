"""The family simulator: exact true alignments, determinism, sizes, the bundled example."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from msa.alignment import check_alignment
from msa.io import read_aligned_fasta
from msa.scoring import score_alignments

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, main, simulate, write_family  # noqa: E402


def written(tmp_path: Path, tag: str, params: SimParams, ref_size: int | None = None
            ) -> tuple[dict[str, bytes], dict[str, bytes]]:
    out, true = tmp_path / f"{tag}.fa", tmp_path / f"{tag}.true.fa"
    write_family(simulate(params), out, true, ref_size, params.seed, chunk=7)
    return read_aligned_fasta(out), read_aligned_fasta(true)


@pytest.mark.parametrize("tree", ["yule", "coalescent"])
def test_true_alignment_degaps_to_the_sequences(tmp_path: Path, tree: str) -> None:
    params = SimParams(n=60, length=80, seed=3, tree=tree, indel_rate=0.05)
    seqs, true = written(tmp_path, tree, params)
    assert len(seqs) == 60 and list(true) == list(seqs)
    check_alignment(list(seqs.items()), list(true), list(true.values()))
    mat = np.frombuffer(b"".join(true.values()), dtype=np.uint8).reshape(len(true), -1)
    assert (mat != ord("-")).any(axis=0).all(), "an all-gap column was written"
    assert score_alignments(true, true).tc == 1.0


def test_deterministic_per_seed(tmp_path: Path) -> None:
    a = written(tmp_path, "a", SimParams(n=40, length=50, seed=5))
    b = written(tmp_path, "b", SimParams(n=40, length=50, seed=5))
    c = written(tmp_path, "c", SimParams(n=40, length=50, seed=6))
    assert a == b
    assert a[0] != c[0]


def test_sizes_and_substitution_level() -> None:
    fam = simulate(SimParams(n=300, length=200, seed=2))
    lens = np.diff(fam.offsets)
    assert fam.offsets[-1] == fam.residues.size and len(fam.names) == 300
    assert 150 < lens.mean() < 250
    assert set(np.unique(fam.residues).tobytes()) <= set(b"ARNDCQEGHILKMFPSTWYV")
    newcol, width = fam.true_columns(np.arange(300))
    mat = fam.true_rows(np.arange(300), newcol, width)
    both = (mat[0::2] != ord("-")) & (mat[1::2] != ord("-"))
    identity = (mat[0::2] == mat[1::2])[both].mean()
    assert 0.2 < identity < 0.9  # diverged, but still homologous


def test_reference_subset(tmp_path: Path) -> None:
    seqs, true = written(tmp_path, "s", SimParams(n=50, length=60, seed=1), ref_size=9)
    assert len(true) == 9 and set(true) <= set(seqs)
    check_alignment([(n, seqs[n]) for n in true], list(true), list(true.values()))


def test_single_sequence_and_cli(tmp_path: Path) -> None:
    main(["-n", "1", "--length", "30", "--out", str(tmp_path / "o.fa"), "--true", str(tmp_path / "t.fa")])
    assert read_aligned_fasta(tmp_path / "o.fa") == read_aligned_fasta(tmp_path / "t.fa")
    assert len(next(iter(read_aligned_fasta(tmp_path / "o.fa").values()))) == 30


def test_bundled_example_is_consistent() -> None:
    ex = REPO / "datasets" / "examples"
    seqs, true = read_aligned_fasta(ex / "example.fa"), read_aligned_fasta(ex / "example.true.fa")
    assert len(seqs) == 200
    check_alignment(list(seqs.items()), list(true), list(true.values()))
