"""Nucleotides: detection (--seq-type auto), the nucleotide alphabet and NUC scheme,
letters kept as written, alignment invariants, and the one-line errors."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from msa.alignment import check_alignment
from msa.alphabet import NUC_N, detect_seq_type, encode, load_matrix
from msa.params import check_matrix_kind
from msa.backends.cpu import CpuBackend
from msa.distances.kmers import NUCLEOTIDE, PROTEIN
from msa.params import NUCLEOTIDE_SCHEME, PROTEIN_SCHEME, AlignParams
from msa.pipeline import align_db, prepare
from msa.seqdb import SeqDB

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402


def detect(*seqs: str) -> str:
    db = SeqDB.from_pairs([(f"s{i}", s) for i, s in enumerate(seqs)])
    return detect_seq_type(db.residues, db.offsets)


def small_dna_family(n: int = 30, length: int = 90, seed: int = 4, alphabet: str = "dna") -> list[tuple[str, bytes]]:
    fam = simulate(SimParams(n=n, length=length, seed=seed, height=0.4, indel_rate=0.03, alphabet=alphabet))
    return fam.records()


@pytest.mark.parametrize(
    ("seqs", "kind"),
    [
        (("ACGTACGTTGCA", "acgtnnacgt"), "dna"),
        (("ACGUACGUUGCA", "acguuacg"), "rna"),
        (("MKVLAAGIVGLLLAQPTRSW", "MKVLSAGIV"), "protein"),
        (("ACGTRYKMSWBDHVN",), "protein"),  # mostly IUPAC ambiguity codes: 5 of 15 letters are ACGTN
        (("ACGTACGTACGTACGTRYKM",), "dna"),  # 16 of 20 letters (80%) > 75%
        (("ACGTACGTACGTACGTACGTRYKMS",), "dna"),  # 20 of 25 (80%)
        (("ACGTACGTACGTACGTACGTACGTRYKMSWBD",), "protein"),  # 24 of 32 = exactly 75%: not more than 75%
        (("NNNNNNNNNN",), "dna"),  # N counts as a nucleotide letter (MAFFT's countATGC)
        (("ACGT*", "ACGT*"), "dna"),  # '*' is not a letter
        (("ACTGU",), "dna"),  # U does not outnumber T
        (("ATGCAGCTAG", "ATGCAGCTAGGATTACAAAAA", "AC"), "dna"),
    ],
)
def test_detection(seqs, kind) -> None:
    assert detect(*seqs) == kind


def test_detection_reads_whole_sequences_up_to_a_million_letters() -> None:
    dna, protein = b"ACGT" * 250_000, b"MKVLWPRSEQ" * 200_000  # 10^6 DNA letters, then protein
    residues = np.frombuffer(dna + protein, dtype=np.uint8)
    offsets = np.array([0, len(dna), len(dna) + len(protein)])
    assert detect_seq_type(residues, offsets) == "dna"  # the protein comes after the first 10^6 letters
    residues = np.frombuffer(protein + dna, dtype=np.uint8)
    assert detect_seq_type(residues, np.array([0, len(protein), len(protein) + len(dna)])) == "protein"


def test_nucleotide_codes_and_scheme() -> None:
    raw = np.frombuffer(b"ACGTUacgtuNRYSWKMBDHVn*X", dtype=np.uint8)
    codes = encode(raw, "dna")
    assert codes[:10].tolist() == [0, 1, 2, 3, 3, 0, 1, 2, 3, 3]  # U is T, case folded
    assert (codes[10:] == NUC_N).all() and NUC_N >= 20  # never matches in the LCS distance
    assert (encode(raw, "rna") == codes).all()
    m = load_matrix("NUC")
    assert m.shape == load_matrix("PFASUM43").shape
    assert (np.diag(m)[:4] == 2000).all() and m[0, 1] == m[2, 3] == -1000 and (m == m.T).all()
    assert (m[NUC_N] == 0).all()  # N and ambiguity codes score 0


def test_lcs_distance_on_the_four_bases() -> None:
    """The LCS path needs nothing but the encoding: bases match, N and ambiguity codes never do."""
    seqs = [b"ACGTACGTAC", b"ACGTACGTAC", b"ACGUACGUAC", b"NNNNNNNNNN", b"acgtRYacgt"]
    residues = np.frombuffer(b"".join(seqs), dtype=np.uint8)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in seqs])))
    d, _ = CpuBackend().lcs_distance_matrix(encode(residues, "dna"), offsets, np.arange(5), np.array([0, 5]))
    full = np.zeros((5, 5))
    full[np.triu_indices(5, 1)] = d
    assert full[0, 1] == 0 and full[0, 2] == 0  # U = T
    assert full[0, 3] == full.max() and full[0, 3] == full[1, 3]  # no common subsequence with N: the farthest
    assert 0 < full[0, 4] < full[0, 3]  # RY never match the bases


def test_params_resolve_by_seq_type() -> None:
    p = AlignParams()
    assert p.seq_type == "auto" and p.matrix is None
    assert p.resolved().matrix == PROTEIN_SCHEME.matrix and p.resolved().gap_open == PROTEIN_SCHEME.gap_open
    dna = p.resolved("dna")
    assert (dna.seq_type, dna.matrix, dna.gap_open, dna.gap_extend, dna.terminal_gap) == (
        "dna", NUCLEOTIDE_SCHEME.matrix, NUCLEOTIDE_SCHEME.gap_open, NUCLEOTIDE_SCHEME.gap_extend,
        NUCLEOTIDE_SCHEME.terminal_gap,
    )
    assert AlignParams(seq_type="protein").resolved("dna").seq_type == "protein"  # given beats detected
    assert AlignParams(gap_open=3.0).resolved("rna").gap_open == 3.0  # a given cost stays
    with pytest.raises(ValueError, match="unknown sequence type"):
        AlignParams(seq_type="nucleotide")


def test_protein_matrix_for_dna_is_refused() -> None:
    with pytest.raises(ValueError, match="BLOSUM62 is a protein matrix; dna sequences"):
        AlignParams(seq_type="dna", matrix="BLOSUM62").resolved()
    with pytest.raises(ValueError, match="nucleotide scheme"):
        check_matrix_kind("NUC", "protein")
    db = SeqDB.from_pairs([("a", "ACGTACGT"), ("b", "ACGTTACGT")])
    with pytest.raises(ValueError, match="protein matrix"):
        prepare(db, AlignParams(matrix="PFASUM43", quiet=True))  # detected dna, a protein matrix given


@pytest.mark.parametrize("alphabet", ["dna", "rna"])
def test_dna_family_invariants_and_letters_kept(alphabet: str) -> None:
    pairs = small_dna_family(alphabet=alphabet)
    # IUPAC codes, N, lower case and '*' in some sequences: aligned, written back as they were
    pairs[0] = (pairs[0][0], pairs[0][1][:10] + b"RYSWKMBDHVN" + pairs[0][1][10:])
    pairs[1] = (pairs[1][0], pairs[1][1][:20].lower() + pairs[1][1][20:] + b"n")
    db = SeqDB.from_pairs(pairs)
    _, run = prepare(db, AlignParams(quiet=True))
    assert run.seq_type == alphabet and run.matrix == "NUC"
    aligned = align_db(db, AlignParams(quiet=True), CpuBackend())
    rows = [bytes(r) for r in aligned.rows]
    check_alignment(pairs, aligned.names, rows)
    assert rows[0].replace(b"-", b"") == pairs[0][1] and b"RYSWKMBDHVN" in rows[0].replace(b"-", b"")
    # --seq-type given gives the same as detected
    again = align_db(db, AlignParams(quiet=True, seq_type=alphabet), CpuBackend())
    np.testing.assert_array_equal(np.asarray(again.rows), np.asarray(aligned.rows))


def test_dna_alignment_is_accurate_on_a_small_family() -> None:
    fam = simulate(SimParams(n=40, length=120, seed=7, height=0.4, alphabet="dna"))
    pairs = fam.records()
    aligned = align_db(SeqDB.from_pairs(pairs), AlignParams(quiet=True), CpuBackend())
    from msa.scoring import score_alignments

    newcol, width = fam.true_columns(np.arange(40))
    true = dict(zip(fam.names, (bytes(r) for r in fam.true_rows(np.arange(40), newcol, width))))
    test = dict(zip(aligned.names, (bytes(r) for r in aligned.rows)))
    assert score_alignments(test, true).sp > 0.9


def test_cli_seq_type(run_msa, tmp_path: Path) -> None:
    fa = tmp_path / "dna.fa"
    pairs = small_dna_family(n=12, length=60)
    pairs[2] = (pairs[2][0], pairs[2][1] + b"ryN")
    fa.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s) for n, s in pairs))
    done = run_msa("align", fa, "-o", tmp_path / "out.fa", "--device", "cpu", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"msa: aligned 12 sequences (dna, detected) into" in done.stderr
    out = (tmp_path / "out.fa").read_bytes()
    assert b"ryN" in out.replace(b"-", b"").replace(b"\n", b"")
    quiet = run_msa("align", fa, "-o", tmp_path / "q.fa", "--device", "cpu", "-q", "--seq-type", "dna", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == b""
    assert (tmp_path / "q.fa").read_bytes() == out
    bad = run_msa("align", fa, "--seq-type", "dna", "--matrix", "BLOSUM62", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout == b""
    assert bad.stderr.count(b"\n") == 1 and b"msa: error: --matrix BLOSUM62 is a protein matrix" in bad.stderr
    bad = run_msa("align", fa, "--matrix", "BLOSUM62", "-o", tmp_path / "x.fa", cwd=tmp_path)  # auto-detected
    assert bad.returncode == 1 and bad.stderr.count(b"\n") == 1 and b"protein matrix" in bad.stderr
    assert not (tmp_path / "x.fa").exists()


def test_dna_kmer_trees_use_the_nucleotide_alphabet(monkeypatch) -> None:
    """The 6-mer tables of a family are made in its type's alphabet (and so its lenfac)."""
    seen = []
    original = CpuBackend.kmer_tables

    def recording(self, codes, offsets, alphabet):
        seen.append(alphabet)
        return original(self, codes, offsets, alphabet)

    monkeypatch.setattr(CpuBackend, "kmer_tables", recording)
    pairs = small_dna_family()
    align_db(SeqDB.from_pairs(pairs), AlignParams(quiet=True, distance="kmer"), CpuBackend())
    protein = [(n, s.replace(b"T", b"W").replace(b"G", b"K")) for n, s in pairs]
    align_db(SeqDB.from_pairs(protein), AlignParams(quiet=True, distance="kmer"), CpuBackend())
    assert seen == [NUCLEOTIDE, PROTEIN]


#: 6-mer distances for exact trees, and MAFFT's PartTree (6-mer picks) forced on a small family.
KMER_RUNS = {
    "exact": ["--distance", "kmer", "--tree", "upgma"],
    "parttree": ["--tree", "parttree", "--parttree-split", "picks", "--parttree-distance", "kmer",
                 "--distance", "kmer", "--exact-tree-max", "12", "--partsize", "8"],
}


@pytest.mark.parametrize("case", sorted(KMER_RUNS))
def test_cli_dna_with_kmer_distances(run_msa, tmp_path: Path, case: str) -> None:
    """``msa align`` of a simulated DNA family (N, IUPAC codes, lower case in some records)
    with 6-mer distances runs and keeps every invariant."""
    from msa.io.formats import read_alignment

    pairs = small_dna_family(n=80, length=150, seed=12)
    pairs[0] = (pairs[0][0], pairs[0][1][:30] + b"NNRYKN" + pairs[0][1][30:])
    pairs[1] = (pairs[1][0], pairs[1][1][:40].lower() + b"n" + pairs[1][1][40:])
    fa = tmp_path / "dna.fa"
    fa.write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s) for n, s in pairs))
    done = run_msa("align", fa, "-o", tmp_path / "out.fa", "--device", "cpu", "-q", *KMER_RUNS[case], cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    aligned = read_alignment(str(tmp_path / "out.fa"))
    check_alignment(pairs, aligned.names, [bytes(r) for r in aligned.rows])


def test_simulator_nucleotide_mode() -> None:
    dna = simulate(SimParams(n=50, length=100, seed=2, height=0.5, alphabet="dna"))
    rna = simulate(SimParams(n=50, length=100, seed=2, height=0.5, alphabet="rna"))
    assert set(np.unique(dna.residues).tobytes()) <= set(b"ACGT")
    assert rna.residues.tobytes() == dna.residues.tobytes().replace(b"T", b"U")  # same draws, U for T
    assert dna.residues.tobytes() == simulate(SimParams(n=50, length=100, seed=2, height=0.5, alphabet="dna")).residues.tobytes()
    newcol, width = dna.true_columns(np.arange(50))
    mat = dna.true_rows(np.arange(50), newcol, width)
    both = (mat[0::2] != ord("-")) & (mat[1::2] != ord("-"))
    identity = (mat[0::2] == mat[1::2])[both].mean()
    assert 0.4 < identity < 0.95  # diverged beyond chance (0.26), still alignable
    with pytest.raises(ValueError, match="alphabet"):
        simulate(SimParams(n=5, length=10, alphabet="codons"))


def test_add_and_merge_detect_nucleotides_and_refuse_protein() -> None:
    from msa.merge import add_sequences, merge_alignments

    pairs = small_dna_family(n=24, length=80, seed=9)
    backend = CpuBackend()
    old = align_db(SeqDB.from_pairs(pairs[:16]), AlignParams(quiet=True), backend)
    new = SeqDB.from_pairs(pairs[16:])
    result, _ = add_sequences(old, new, AlignParams(quiet=True), backend)
    check_alignment(pairs, result.names, [bytes(r) for r in result.rows])
    other = align_db(new, AlignParams(quiet=True), backend)
    merged = merge_alignments(old, other, AlignParams(quiet=True), backend)
    check_alignment(pairs, merged.names, [bytes(r) for r in merged.rows])
    protein = SeqDB.from_pairs([("p", "MKVLAAGIVGLLLAQPTRSWEHNDCYFG")])
    with pytest.raises(ValueError, match="protein and nucleotides"):
        add_sequences(old, protein, AlignParams(quiet=True), backend)
