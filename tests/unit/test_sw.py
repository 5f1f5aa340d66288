"""The Smith-Waterman tree distance (msa/backends/cpu/sw.py): scores against a plain Gotoh reference,
distance properties, and ``distance="sw"`` end to end."""
from __future__ import annotations

import numpy as np
import pytest

import msa
from msa.alphabet import ALPHABET, encode, load_matrix
from msa.backends.cpu import sw as cpu_sw
from msa.backends.cpu import CpuBackend
from msa.params import AlignParams, GapCosts, gap_costs

MATRIX = load_matrix("PFASUM43")
GAPS = gap_costs(AlignParams(), 1)
CPU = CpuBackend()


def reference_score(a: np.ndarray, b: np.ndarray, matrix: np.ndarray, gap_open: int, gap_extend: int) -> int:
    """Textbook Gotoh local alignment with full H, E, F tables and minus-infinity gap borders."""
    neg = -(1 << 60)
    la, lb = len(a), len(b)
    h = np.zeros((la + 1, lb + 1), dtype=np.int64)
    e = np.full((la + 1, lb + 1), neg, dtype=np.int64)
    f = np.full((la + 1, lb + 1), neg, dtype=np.int64)
    for i in range(1, la + 1):
        for j in range(1, lb + 1):
            e[i, j] = max(e[i, j - 1] + gap_extend, h[i, j - 1] + gap_open)
            f[i, j] = max(f[i - 1, j] + gap_extend, h[i - 1, j] + gap_open)
            h[i, j] = max(0, h[i - 1, j - 1] + matrix[a[i - 1], b[j - 1]], e[i, j], f[i, j])
    return int(h.max())


def score(a: np.ndarray, b: np.ndarray, matrix: np.ndarray = MATRIX, gaps: GapCosts = GAPS) -> int:
    """cpu_sw.sw_score of two code arrays."""
    codes = np.concatenate((a, b)).astype(np.uint8)
    la = len(a)
    prof = np.empty((cpu_sw.N_CODES, max(la, 1)), dtype=np.int64)
    h, f = np.empty(max(la, 1), dtype=np.int64), np.empty(max(la, 1), dtype=np.int64)
    cpu_sw._profile(prof, matrix, codes, 0, la)
    return int(cpu_sw.sw_score(prof, la, codes, la, len(codes), h, f, gaps.open, gaps.extend))


def codes_of(text: str) -> np.ndarray:
    return encode(np.frombuffer(text.encode(), dtype=np.uint8))


def random_pair(rng: np.random.Generator, shape: str) -> tuple[np.ndarray, np.ndarray]:
    la, lb = (int(x) for x in rng.integers(1, 25, 2))
    if shape == "length_one":
        la = 1
    a = rng.integers(0, 24, la)
    if shape == "identical":
        return a, a.copy()
    if shape == "repeats":  # low complexity: two or three residues
        alpha = rng.integers(0, 20, 3)
        return alpha[rng.integers(0, 3, la)], alpha[rng.integers(0, 3, lb)]
    if shape == "related":  # b = a mutated, with an insertion and a deletion
        b = a.copy()
        b[rng.random(la) < 0.3] = rng.integers(0, 20)
        b = np.concatenate((b[: la // 3], rng.integers(0, 20, 3), b[la // 3 + 1 :]))
        return a, b
    return a, rng.integers(0, 24, lb)  # unrelated, unequal lengths


@pytest.mark.parametrize("shape", ["length_one", "identical", "repeats", "related", "unrelated"])
def test_score_equals_reference(shape: str) -> None:
    rng = np.random.default_rng(["length_one", "identical", "repeats", "related", "unrelated"].index(shape))
    for _ in range(40):
        a, b = random_pair(rng, shape)
        assert score(a, b) == reference_score(a, b, MATRIX, GAPS.open, GAPS.extend)
        assert score(b, a) == score(a, b)  # symmetric matrix: symmetric score


def test_score_other_gap_costs_and_matrix() -> None:
    rng = np.random.default_rng(7)
    matrix = load_matrix("BLOSUM62")
    for gaps in (GapCosts(0, 0, 0, 0), GapCosts(-3000, -3000, 0, 0), GapCosts(-20000, -100, 0, 0)):
        for _ in range(15):
            a, b = random_pair(rng, "related")
            assert score(a, b, matrix, gaps) == reference_score(a, b, matrix, gaps.open, gaps.extend)


def test_hand_checked_scores() -> None:
    m = MATRIX
    a = ALPHABET.index
    w, c = a("W"), a("C")
    # one residue: its own diagonal entry, or 0 against a negative entry
    assert score(codes_of("W"), codes_of("W")) == m[w, w]
    assert score(codes_of("W"), codes_of("G")) == max(0, m[w, a("G")])
    # identical short sequence with positive diagonal: the diagonal sum
    assert score(codes_of("WCW"), codes_of("WCW")) == 2 * m[w, w] + m[c, c]
    # WW against W-gap(3)-W: one gap of length 3 costs open + 2 extend, else the best single W
    gapped = 2 * m[w, w] + GAPS.open + 2 * GAPS.extend
    assert score(codes_of("WW"), codes_of("WGGGW")) == max(m[w, w], gapped, m[w, w] + m[w, a("G")])
    # local: unrelated flanks do not lower the score of the shared core
    assert score(codes_of("DDDDWCWDDDD"), codes_of("KKKWCWKKK")) >= 2 * m[w, w] + m[c, c]
    assert score(codes_of(""), codes_of("WCW")) == 0


def family(rng: np.random.Generator, n: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Codes and offsets of n mutated copies (with indels) of one random ancestor."""
    anc = rng.integers(0, 20, length)
    seqs = []
    for _ in range(n):
        s = anc.copy()
        s[rng.random(length) < 0.25] = rng.integers(0, 20)
        cut = int(rng.integers(0, length))
        seqs.append(np.concatenate((s[:cut], rng.integers(0, 20, int(rng.integers(0, 4))), s[cut + 1 :])))
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in seqs])))
    return np.concatenate(seqs).astype(np.uint8), offsets


def test_distance_matrix_properties_and_formula() -> None:
    rng = np.random.default_rng(11)
    codes, offsets = family(rng, 24, 40)
    ids = rng.permutation(24).astype(np.int64)
    group_off = np.array([0, 1, 11, 11, 24])
    dist, off = CPU.sw_distance_matrix(codes, offsets, ids, group_off, MATRIX, GAPS)
    assert list(off) == [0, 0, 45, 45, 123] and dist.dtype == np.float64
    assert ((dist >= 0) & (dist <= 1)).all()
    seqs = [codes[offsets[i] : offsets[i + 1]] for i in range(24)]
    for g in range(4):
        members = ids[group_off[g] : group_off[g + 1]]
        t = off[g]
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                s = score(seqs[i], seqs[j])
                m = min(score(seqs[i], seqs[i]), score(seqs[j], seqs[j]))
                assert dist[t] == max(0.0, min(1.0, 1.0 - s / m))
                t += 1


def test_self_distance_zero_and_symmetry() -> None:
    rng = np.random.default_rng(12)
    codes, offsets = family(rng, 6, 30)
    d_dup, _ = CPU.sw_distance_matrix(codes, offsets, np.array([2, 2, 4, 4]), np.array([0, 2, 4]), MATRIX, GAPS)
    assert list(d_dup) == [0.0, 0.0]  # a sequence against itself
    fwd, _ = CPU.sw_distance_matrix(codes, offsets, np.arange(6), np.array([0, 6]), MATRIX, GAPS)
    rev, _ = CPU.sw_distance_matrix(codes, offsets, np.arange(6)[::-1].copy(), np.array([0, 6]), MATRIX, GAPS)
    square = np.zeros((2, 6, 6))
    for k, (vec, order) in enumerate(((fwd, np.arange(6)), (rev, np.arange(6)[::-1]))):
        iu = np.triu_indices(6, 1)
        square[k][order[iu[0]], order[iu[1]]] = vec
        square[k] = square[k] + square[k].T
    np.testing.assert_array_equal(square[0], square[1])


def test_empty_and_nonpositive_self_scores_give_one() -> None:
    codes, offsets = codes_of("WCWCW"), np.array([0, 5, 5])  # sequence 1 is empty
    d, _ = CPU.sw_distance_matrix(codes, offsets, np.array([0, 1]), np.array([0, 2]), MATRIX, GAPS)
    assert d[0] == 1.0


def test_align_with_sw_distance() -> None:
    rng = np.random.default_rng(13)
    codes, offsets = family(rng, 12, 50)
    letters = np.frombuffer(ALPHABET.encode(), dtype=np.uint8)[codes]
    pairs = [(f"s{i}", letters[offsets[i] : offsets[i + 1]].tobytes().decode()) for i in range(12)]
    aln = msa.align(pairs, distance="sw", guide_tree="upgma", device="cpu", quiet=True)
    rows = [aln[i] for i in range(len(pairs))]  # the gapped rows
    assert [rec.id for rec in aln.sequences] == [name for name, _ in pairs]
    assert len({len(r) for r in rows}) == 1
    assert [r.replace("-", "") for r in rows] == [seq for _, seq in pairs]


def test_sw_is_an_exact_tree_distance_only() -> None:
    from msa.tree.parttree import exact_limit

    params = AlignParams(distance="sw", exact_tree_max=100, mst_tree_max=5000)
    assert exact_limit(params, "single", CpuBackend()) == 100
    with pytest.raises(ValueError, match="PartTree distance"):
        AlignParams(parttree_distance="sw")
