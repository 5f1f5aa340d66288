"""6-mer struct arrays, shared counts and distances (protein and nucleotides) against brute force
and MAFFT's own output."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from msa.alphabet import ALPHABET, GROUP6
from msa.backends.cpu import CpuBackend
from msa.backends.cpu.kmers import build_kmer_tables
from msa.distances.condensed import condensed_index
from msa.distances.kmers import EMPTY_DISTANCE, NUCLEOTIDE, PAD_CODE, PROTEIN, SECTION
from msa.seqdb import SeqDB

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
TESTVECTORS = SHARED / "data" / "testvectors"


def random_db(rng: np.random.Generator, n: int, max_len: int, x_rate: float = 0.05) -> SeqDB:
    letters = np.frombuffer(ALPHABET[:20].encode(), np.uint8)
    pairs = []
    for i in range(n):
        seq = rng.choice(letters[: rng.integers(2, 21)], rng.integers(0, max_len + 1))
        seq[rng.random(len(seq)) < x_rate] = ord("X")
        pairs.append((f"s{i}", seq.tobytes()))
    return SeqDB.from_pairs(pairs)


def brute_kmers(db: SeqDB, i: int) -> Counter:
    groups = [int(g) for g in GROUP6[db.codes[db.offsets[i] : db.offsets[i + 1]]] if g < 6]
    return Counter(
        sum(g * 6 ** (5 - k) for k, g in enumerate(groups[p : p + 6])) for p in range(len(groups) - 5)
    )


def brute_distance(ca: Counter, cb: Counter, la: int, lb: int, cap: float, b: float = 10000.0) -> float:
    """The documented operation order, in Python floats (IEEE double, no FMA); ``b`` is MAFFT's
    B = C constant (10000 protein, 2500 DNA 6-mers; A .01, D .1 both)."""
    m = min(sum(ca.values()), sum(cb.values()))
    if m == 0:
        return EMPTY_DISTANCE
    common = sum(min(c, cb[t]) for t, c in ca.items())
    ll, ls = float(max(la, lb)), float(min(la, lb))
    f = 1.0 / ((ls / ll * 0.1 + b / (ll + b)) + 0.01)
    return min((1.0 - common / m) * f, cap)


def check_distances(rng, db: SeqDB, alphabet, kmers: list[Counter], b: float, sizes, refs_at, members_per_node):
    """kmer_distance_matrix over random groups of ``sizes`` and nearest_reference over three nodes
    (references ``ids[refs_at[k]:refs_at[k+1]]``), against brute_distance; the matrix's values."""
    be = CpuBackend()
    t = be.kmer_tables(db.codes, db.offsets, alphabet)
    lengths = db.lengths
    groups = [rng.choice(len(db), size, replace=False) for size in sizes]
    ids = np.concatenate(groups)
    off = np.concatenate(([0], np.cumsum([len(g) for g in groups])))
    dist, dist_off = be.kmer_distance_matrix(t, ids, off, 10.0)
    for g, members in enumerate(groups):
        expect = [
            brute_distance(kmers[x], kmers[y], lengths[x], lengths[y], 10.0, b)
            for k, x in enumerate(members)
            for y in members[k + 1 :]
        ]
        assert dist[dist_off[g] : dist_off[g + 1]].tolist() == expect

    # nearest reference: three nodes, references given per node, ties to the earliest
    refs = [ids[refs_at[k] : refs_at[k + 1]] for k in range(3)]
    ref_off = np.concatenate(([0], np.cumsum([len(r) for r in refs])))
    member_node = np.repeat([0, 1, 2], members_per_node)
    members = rng.choice(len(db), len(member_node))
    nearest, best = be.nearest_reference(t, np.concatenate(refs), ref_off, members, member_node)
    for k, (m, node) in enumerate(zip(members, member_node)):
        d = [brute_distance(kmers[r], kmers[m], lengths[r], lengths[m], 10.0, b) for r in refs[node]]
        assert nearest[k] == int(np.argmin(d)) and best[k] == min(d)
    return dist


@pytest.mark.parametrize(
    "n,max_len,x_rate",
    [(300, 5, 0.0), (2000, 60, 0.05), (200, 40, 0.6), (70, 0, 0.0), (1, 9, 0.0)],
)
def test_runs_match_brute_force(n: int, max_len: int, x_rate: float) -> None:
    rng = np.random.default_rng(n + max_len)
    db = random_db(rng, n, max_len, x_rate)
    t = build_kmer_tables(db.codes, db.offsets, PROTEIN)
    assert np.array_equal(t.lengths, db.lengths)
    for i in range(n):
        ref = brute_kmers(db, i)
        codes, counts = t.runs(i)
        assert codes.tolist() == sorted(ref)
        assert counts.tolist() == [ref[c] for c in sorted(ref)]
        assert t.self_scores[i] == sum(ref.values())
    # layout: ranks sorted by distinct count, sections padded with PAD_CODE / 0
    ranked = np.empty(n, dtype=np.int64)
    ranked[t.slot] = t.n_distinct
    assert np.all(np.diff(ranked) >= 0)
    assert np.array_equal(np.sort(t.slot), np.arange(n))
    filled = np.zeros(len(t.kcodes), dtype=bool)
    for i in range(n):
        filled[t.start[i] + SECTION * np.arange(t.n_distinct[i])] = True
    assert np.all(t.kcodes[~filled] == PAD_CODE) and np.all(t.kcounts[~filled] == 0)


def test_equal_lengths_share_sections() -> None:
    rng = np.random.default_rng(3)
    db = SeqDB.from_pairs([(f"s{i}", rng.choice(list("ACDEFGHIKLMNPQRSTVWY"), 30).tobytes()) for i in range(100)])
    t = build_kmer_tables(db.codes, db.offsets, PROTEIN)
    assert len(t.section_off) - 1 == 4
    assert np.all(np.diff(t.section_off) % SECTION == 0)


def test_distances_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    db = random_db(rng, 120, 80, 0.05)
    kmers = [brute_kmers(db, i) for i in range(len(db))]
    check_distances(rng, db, PROTEIN, kmers, 10000.0, (1, 2, 5, 40), (0, 3, 4, 12), [50, 30, 40])


#: MAFFT's nucleotide groups (MAFFT's core/disttbfast.c, makepointtable_nuc): a g c t/u; N and every other code dropped.
MAFFT_NUC = {b: g for g, letters in enumerate(("aA", "gG", "cC", "tTuU")) for b in letters.encode()}
NUC_LETTERS = np.frombuffer(b"ACGTacgtUu", np.uint8)
AMBIGUOUS = np.frombuffer(b"NnRYSWKMBDHV*", np.uint8)


def random_dna(rng: np.random.Generator, n: int, max_len: int, ambiguous_rate: float) -> SeqDB:
    """Mutated pieces of one ancestor (shared 6-mers), some from fewer letters (repeats), with
    N, IUPAC codes, lower case and U; encoded in the nucleotide alphabet."""
    ancestor = NUC_LETTERS[rng.integers(0, 4, max_len)]
    pairs = []
    for i in range(n):
        length = int(rng.integers(0, max_len + 1))
        seq = ancestor[:length].copy() if i % 3 else NUC_LETTERS[rng.integers(0, rng.integers(1, 11), length)]
        mutate = rng.random(length) < 0.15
        seq[mutate] = NUC_LETTERS[rng.integers(0, 10, int(mutate.sum()))]
        odd = rng.random(length) < ambiguous_rate
        seq[odd] = AMBIGUOUS[rng.integers(0, len(AMBIGUOUS), int(odd.sum()))]
        pairs.append((f"s{i}", seq.tobytes()))
    return SeqDB.from_pairs(pairs).encoded("dna")


def brute_nuc_kmers(db: SeqDB, i: int) -> Counter:
    """MAFFT's DNA 6-mers (base 4, its own group numbers) of sequence i's letters."""
    groups = [MAFFT_NUC[b] for b in db.sequence(i) if b in MAFFT_NUC]
    return Counter(sum(g * 4 ** (5 - k) for k, g in enumerate(groups[p : p + 6])) for p in range(len(groups) - 5))


@pytest.mark.parametrize("n,max_len,ambiguous_rate", [(300, 9, 0.0), (400, 120, 0.05), (150, 60, 0.5), (1, 3, 0.0)])
def test_nucleotide_runs_match_mafft_6mers(n: int, max_len: int, ambiguous_rate: float) -> None:
    """Base-6 codes of the bases are MAFFT's base-4 6-mers one to one: the same counts per 6-mer."""
    db = random_dna(np.random.default_rng(n + max_len), n, max_len, ambiguous_rate)
    t = build_kmer_tables(db.codes, db.offsets, NUCLEOTIDE)
    assert np.array_equal(t.lengths, db.lengths)  # N and ambiguity codes count in the length
    to_mafft = [MAFFT_NUC[ord(b)] for b in "ACGT"]  # msa's base order -> MAFFT's group numbers
    for i in range(n):
        ref = brute_nuc_kmers(db, i)
        codes, counts = t.runs(i)
        as_mafft = [sum(to_mafft[c // 6 ** (5 - k) % 6] * 4 ** (5 - k) for k in range(6)) for c in codes.tolist()]
        assert dict(zip(as_mafft, counts.tolist())) == ref
        assert t.self_scores[i] == sum(ref.values())


def test_nucleotide_distances_match_brute_force() -> None:
    rng = np.random.default_rng(17)
    db = random_dna(rng, 150, 400, 0.05)
    kmers = [brute_nuc_kmers(db, i) for i in range(len(db))]
    dist = check_distances(rng, db, NUCLEOTIDE, kmers, 2500.0, (1, 2, 7, 60), (0, 3, 4, 14), [60, 30, 50])
    assert 0.0 < np.median(dist) < 1.0  # related sequences: the shared counts matter


def lcs_dp(a: bytes, b: bytes) -> int:
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b):
            cur.append(prev[j] + 1 if ca == cb and ca < 20 else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def test_lcs_distance_matches_dynamic_programming() -> None:
    rng = np.random.default_rng(11)
    db = random_db(rng, 25, 150, 0.1)
    be = CpuBackend()
    n = len(db)
    dist, _ = be.lcs_distance_matrix(db.codes, db.offsets, np.arange(n), np.array([0, n]))
    k = 0
    for i in range(n):
        for j in range(i + 1, n):
            a = bytes(db.codes[db.offsets[i] : db.offsets[i + 1]])
            b = bytes(db.codes[db.offsets[j] : db.offsets[j + 1]])
            lcs = lcs_dp(a, b)
            la, lb = len(a), len(b)
            expect = 2.0 * float(la + lb) ** 0.75 if lcs == 0 else float(la + lb - 2 * lcs) ** 0.75 / lcs
            assert dist[k] == pytest.approx(expect, rel=1e-12)
            k += 1


def test_mafft_distance_vectors() -> None:
    fasta = TESTVECTORS / "mafft6mer_toy.fa"
    expected = TESTVECTORS / "mafft6mer_toy_expected.tsv"
    if not fasta.exists() or not expected.exists():
        pytest.skip("shared test vectors absent")
    pairs, name = [], None
    for line in fasta.read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
            pairs.append([name, ""])
        elif line.strip():
            pairs[-1][1] += line.strip()
    db = SeqDB.from_pairs([(a, b) for a, b in pairs])
    be = CpuBackend()
    t = be.kmer_tables(db.codes, db.offsets, PROTEIN)
    n = len(db)
    dist, _ = be.kmer_distance_matrix(t, np.arange(n), np.array([0, n]), np.inf)
    rows = [line.split("\t") for line in expected.read_text().splitlines() if not line.startswith("#")]
    header, rows = rows[0], rows[1:]
    col = {h: k for k, h in enumerate(header)}
    assert len(rows) == n * (n - 1) // 2
    for row in rows:
        a, b = db.names.index(row[col["seq_a"]]), db.names.index(row[col["seq_b"]])
        i, j = min(a, b), max(a, b)
        assert t.self_scores[a] == int(row[col["self_a"]])
        assert t.lengths[a] == int(row[col["len_a"]])
        assert f"{dist[condensed_index(n, i, j)]:.6f}" == row[col["dist_mafft_distance"]]
