"""Iterative refinement (msa.refine): the objective against a direct pairwise sum, only improving
steps kept, determinism for a seed, and the alignment invariants with refinement on."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from msa.alignment import check_alignment
from msa.alphabet import N_CODES, load_matrix
from msa.backends.cpu import CpuBackend
from msa.backends.cpu.library import batch_residues
from msa.io.fasta import read_aligned_fasta
from msa.params import REFINE_AUTO_MAX, REFINE_AUTO_ROUNDS, AlignParams, gap_costs
from msa.pipeline import align_db, prepare_family
from msa.profile import block_counts, gap_vector
from msa.progressive import progressive_align
from msa.refine import (
    Method, consistency, neighbour_pairs, pair_library, partner_pairs, refine, sp_objective, tree_splits,
)
from msa.seqdb import SeqDB
from msa.testing import MATRIX, related
from msa.tree import build_guide_tree
from msa.tree.guide_tree import GuideTree

LETTERS = "ARNDCQEGHILKMFPSTWYV"


def _slow_sp(rows: np.ndarray, matrix: np.ndarray, gaps: np.ndarray) -> int:
    """The objective by its definition, pair of rows by pair of rows, column by column: both
    residues score the matrix; a residue against a gap scores the gap's type in its row
    (open where the row's gap run starts, terminal before its first or after its last residue)."""
    go, ge, tgo, tge = (int(x) for x in gaps)
    n, w = rows.shape
    total = 0
    for r in range(n):
        res = np.flatnonzero(rows[r] >= 0)
        first, last = (res[0], res[-1]) if len(res) else (w, -1)
        cost = []
        for j in range(w):
            opening = j == 0 or rows[r, j - 1] >= 0
            terminal = j < first or j > last
            cost.append((tgo if opening else tge) if terminal else (go if opening else ge))
        for q in range(n):
            if q == r:
                continue
            for j in range(w):
                a, b = rows[r, j], rows[q, j]
                if a >= 0 and b >= 0 and q > r:
                    total += int(matrix[a, b])
                elif a < 0 <= b:
                    total += cost[j]
    return total


def _random_alignment(rng: np.random.Generator, n: int, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of codes (-1 a gap), each with a residue, no all-gap column; and their codes/offsets/columns."""
    while True:
        rows = np.where(rng.random((n, w)) < 0.35, -1, rng.integers(0, 24, (n, w)))
        if (rows >= 0).any(axis=0).all() and (rows >= 0).any(axis=1).all():
            break
    r, c = np.nonzero(rows >= 0)
    offsets = np.concatenate(([0], np.cumsum(np.bincount(r, minlength=n))))
    return rows, rows[r, c], offsets, c


@pytest.mark.parametrize("seed", range(6))
def test_objective_is_the_pairwise_sum(seed):
    rng = np.random.default_rng(seed)
    matrix = load_matrix("PFASUM43")
    gaps = np.array([-14850, -1250, -660, -660]) * (1 + seed % 2)
    rows, codes, offsets, cols = _random_alignment(rng, int(rng.integers(2, 7)), int(rng.integers(1, 12)))
    table = block_counts(codes, offsets, cols, rows.shape[1])
    got = sp_objective(table, np.array([0, rows.shape[1]]), matrix, gaps)
    assert got.tolist() == [_slow_sp(rows, matrix, gaps)]


def test_objective_of_many_tables_laid_end_to_end():
    rng = np.random.default_rng(7)
    matrix, gaps = load_matrix("PFASUM43"), np.array([-3000, -500, -200, -100])
    tables, want, off = [], [], [0]
    for _ in range(3):
        rows, codes, offsets, cols = _random_alignment(rng, 4, 6)
        tables.append(block_counts(codes, offsets, cols, 6))
        want.append(_slow_sp(rows, matrix, gaps))
        off.append(off[-1] + 6)
    assert sp_objective(np.concatenate(tables), np.array(off), matrix, gaps).tolist() == want


def test_neighbour_pairs():
    order = np.array([3, 0, 4, 1, 2])
    assert neighbour_pairs(order, 4).tolist() == [[0, 1], [0, 3], [0, 4], [1, 2], [1, 4], [2, 4], [3, 4]]
    assert neighbour_pairs(order[:2], 8).tolist() == [[0, 3]]


def test_tree_splits_are_the_rows_under_each_node():
    tree = GuideTree(4, [[0, 1], [2, 4], [3, 5]], [1.0, 2.0, 3.0])
    got = {tuple(np.flatnonzero(m)) for m in tree_splits(tree)}
    assert got == {(0,), (1,), (2,), (3,), (0, 1)}  # the root's other child (0, 1, 2) splits as (3,)


def _family(seed: int, n: int = 12, length: int = 40) -> SeqDB:
    rng = np.random.default_rng(seed)
    seqs = related(rng, n, length)
    return SeqDB.from_pairs([(f"s{i}", "".join(LETTERS[c % 20] for c in s)) for i, s in enumerate(seqs)])


def _progressive(db: SeqDB):
    family = prepare_family(db, AlignParams(seq_type="protein", threads=1), note=False)
    backend = CpuBackend()
    tree = build_guide_tree(family.unique, family.params, backend)
    matrix, gaps = load_matrix(family.params.matrix), gap_costs(family.params, len(family.db))
    cols, width = progressive_align(family.unique, tree, matrix, gaps, backend)
    return family.unique, tree, matrix, gaps, backend, cols, width


def _objective(db: SeqDB, cols: np.ndarray, width: int, matrix, gaps) -> int:
    table = block_counts(db.codes, db.offsets, cols, width)
    return int(sp_objective(table, np.array([0, width]), matrix, gap_vector(gaps))[0])


PAIR_GAPS = gap_costs(AlignParams(seq_type="protein"), 2)


def _library(db: SeqDB, tree, seed: int, method: Method):
    """The library refine builds (random partners: the same generator, drawn first)."""
    if method.library == "neighbours":
        pairs = neighbour_pairs(tree.leaf_order(), method.partners)
    else:
        pairs = partner_pairs(len(db), method.partners, np.random.default_rng(seed))
    return pair_library(db.codes, np.asarray(db.offsets), pairs, load_matrix("PFASUM43"), gap_vector(PAIR_GAPS),
                        CpuBackend())[:2]


class _CutEvery3(CpuBackend):
    """A backend whose memory takes three merges a piece (as a capped GPU cuts a level)."""

    def level_cuts(self, kid_widths: np.ndarray) -> np.ndarray:
        return np.unique(np.append(np.arange(0, len(kid_widths) // 2, 3), len(kid_widths) // 2))


def test_library_cut_where_the_backend_asks_is_the_same():
    db = _family(3, n=12)
    pairs = partner_pairs(len(db), 3, np.random.default_rng(1))
    args = (db.codes, np.asarray(db.offsets), pairs, load_matrix("PFASUM43"), gap_vector(PAIR_GAPS))
    whole, cut = pair_library(*args, CpuBackend()), pair_library(*args, _CutEvery3())
    assert len(pairs) > 6 and len(whole[0]) > 0
    for x, y in zip(whole, cut):
        np.testing.assert_array_equal(x, y)
    empty = pair_library(db.codes, np.asarray(db.offsets), pairs[:0], load_matrix("PFASUM43"), gap_vector(PAIR_GAPS),
                         CpuBackend())
    assert [len(x) for x in empty] == [0, 0, 0]


def test_library_is_the_pairwise_alignments():
    """Each library pair is a pair of residues that the two rows' own alignment puts in one column,
    named with its pair."""
    db = _family(2, n=6)
    pairs = partner_pairs(len(db), 2, np.random.default_rng(0))
    li, lj, pair = pair_library(db.codes, np.asarray(db.offsets), pairs, load_matrix("PFASUM43"),
                                gap_vector(PAIR_GAPS), CpuBackend())
    row = np.repeat(np.arange(len(db)), np.diff(db.offsets))
    np.testing.assert_array_equal(row[li], pairs[pair, 0])  # each residue pair's own pair, in pair order
    np.testing.assert_array_equal(row[lj], pairs[pair, 1])
    assert np.all(np.diff(pair) >= 0)
    for a, b in pairs[:3]:
        two = SeqDB.from_pairs([("a", db.sequence(int(a))), ("b", db.sequence(int(b)))])
        cols, _ = progressive_align(two.encoded("protein"), GuideTree(2, [[0, 1]], [1.0]), load_matrix("PFASUM43"),
                                    PAIR_GAPS, CpuBackend())
        la = int(db.offsets[a + 1] - db.offsets[a])
        want = {(int(i), int(j)) for i in range(la) for j in range(len(cols) - la) if cols[i] == cols[la + j]}
        sel = (row[li] == a) & (row[lj] == b)
        got = {(int(i - db.offsets[a]), int(j - db.offsets[b])) for i, j in zip(li[sel], lj[sel])}
        assert got == want and want


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("alphabet", [4, 20, N_CODES])
def test_pair_residues_is_the_level_batch_read_off(alphabet, threads):
    """The CPU aligns a library's pairs straight from the codes (msa.backends.cpu.library), in
    pieces on one thread or several: the residue pairs of a batch of one-sequence merges read
    off its maps, on fresh random pairs (related and unrelated, either order, one-residue
    sequences, a sequence with itself)."""
    rng = np.random.default_rng()
    seqs = related(rng, 24, int(rng.integers(5, 120)), alphabet)
    seqs += [rng.integers(0, alphabet, int(rng.integers(1, 200))).astype(np.uint8) for _ in range(6)]
    seqs += [np.array([rng.integers(0, alphabet)], dtype=np.uint8) for _ in range(2)]
    codes = np.concatenate(seqs)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in seqs]))).astype(np.int64)
    pairs = rng.integers(0, len(seqs), (300, 2))
    pairs[:3] = [[0, 0], [len(seqs) - 1, len(seqs) - 2], [len(seqs) - 2, 1]]
    gaps = gap_vector(PAIR_GAPS) if rng.random() < 0.5 else np.sort(rng.integers(-3000, -1, 4))
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = CpuBackend().pair_residues(codes, offsets, pairs, MATRIX, gaps)
    finally:
        numba.set_num_threads(before)
    want = batch_residues(CpuBackend(), codes, offsets, pairs, MATRIX, gaps)  # the GPU's way
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert len(got[0]) > 0


@pytest.mark.parametrize("objective", ["consistency", "random", "sp"])
@pytest.mark.parametrize("source", ["tree", "gaps"])
@pytest.mark.parametrize("seed", range(3))
def test_refinement_only_improves(seed, source, objective):
    db, tree, matrix, gaps, backend, cols, width = _progressive(_family(seed))
    method = Method(source, "sp" if objective == "sp" else "consistency", batch=4, partners=4,
                    library="random" if objective == "random" else "neighbours")
    out, w, accepted = refine(db, cols, width, tree, matrix, gaps, PAIR_GAPS, backend, rounds=6, seed=seed,
                              method=method)
    if objective == "sp":
        before, after = _objective(db, cols, width, matrix, gaps), _objective(db, out, w, matrix, gaps)
    else:
        library = _library(db, tree, seed, method)
        before, after = consistency(cols, library), consistency(out, library)
    if accepted:
        assert after > before
    else:
        assert (w, out.tolist()) == (width, cols.tolist())


@pytest.mark.parametrize("objective", ["consistency", "sp"])
def test_refinement_keeps_a_step_that_improves(objective):
    """A deliberately bad alignment (every row left-justified) is improved by refinement (its gap
    splits are few and as bad, so the tree's, whose leaves realign one row each)."""
    db = _family(3)
    _, tree, matrix, gaps, backend, _, _ = _progressive(db)
    lengths = np.diff(db.offsets)
    cols = np.arange(len(db.codes)) - np.repeat(db.offsets[:-1], lengths)
    width = int(lengths.max())
    out, w, accepted = refine(db, cols, width, tree, matrix, gaps, PAIR_GAPS, backend, rounds=4,
                              method=Method("tree", objective, batch=4))
    assert accepted > 0
    assert _objective(db, out, w, matrix, gaps) > _objective(db, cols, width, matrix, gaps)


def test_refinement_is_deterministic_for_a_seed():
    db, tree, matrix, gaps, backend, cols, width = _progressive(_family(11, n=16))
    runs = [refine(db, cols, width, tree, matrix, gaps, PAIR_GAPS, backend, rounds=5, seed=s,
                   method=Method(batch=3, partners=3, library="random")) for s in (1, 1, 2)]
    assert runs[0][0].tolist() == runs[1][0].tolist() and runs[0][1:] == runs[1][1:]
    assert runs[0][2] > 0


@pytest.mark.parametrize("refine_opt", ["4", "12"])
def test_invariants_with_refinement_on(refine_opt):
    db = _family(5, n=14)
    pairs = [(n, db.sequence(i)) for i, n in enumerate(db.names)]
    dup = SeqDB.from_pairs(pairs + [("copy", pairs[0][1])])
    aligned = align_db(dup, AlignParams(seq_type="protein", threads=1, refine=refine_opt), CpuBackend())
    check_alignment([(n, dup.sequence(i)) for i, n in enumerate(dup.names)], aligned.names, aligned.rows)
    assert aligned.row(len(pairs)) == aligned.row(0)


def test_refine_option():
    assert AlignParams(refine="off").refine_rounds(10) == 0
    assert AlignParams(refine="7").refine_rounds(10**6) == 7
    assert AlignParams().refine_rounds(REFINE_AUTO_MAX + 1) == 0
    assert AlignParams().refine_rounds(max(REFINE_AUTO_MAX, 3)) == (REFINE_AUTO_ROUNDS if REFINE_AUTO_MAX >= 3 else 0)
    with pytest.raises(ValueError, match="refine must be"):
        AlignParams(refine="-3")


def test_refine_flag(run_msa, tmp_path):
    """``--refine N`` aligns (the invariants hold); a bad value is one line and no output."""
    db = _family(8, n=10)
    pairs = [(n, db.sequence(i)) for i, n in enumerate(db.names)]
    (tmp_path / "in.fa").write_bytes(b"".join(b">%s\n%s\n" % (n.encode(), s) for n, s in pairs))
    ok = run_msa("align", "in.fa", "-o", "out.fa", "--refine", "6", "-q", "--device", "cpu", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr.decode()
    rows = read_aligned_fasta(tmp_path / "out.fa")
    check_alignment(pairs, list(rows), list(rows.values()))
    bad = run_msa("align", "in.fa", "-o", "bad.fa", "--refine", "many", "--device", "cpu", cwd=tmp_path)
    assert bad.returncode != 0 and not (tmp_path / "bad.fa").exists()
    assert bad.stderr.decode().strip().splitlines() == ["msa: error: refine must be a number of rounds, auto or off; got 'many'"]


def test_families_refined_together_are_refined_alone():
    """refine_many: one library and one profile_align a round for all families (each merge with
    its family's gap costs and sequence weights), each family's result the one refine gives it alone."""
    from msa.refine import refine_many

    runs = [_progressive(_family(s, n=n)) for s, n in ((21, 9), (22, 14), (23, 2), (24, 11))]
    calls = []

    class Counting(CpuBackend):
        def profile_align(self, batch):
            calls.append(batch.n_merges)
            return super().profile_align(batch)

    weights = [None, np.random.default_rng(5).integers(1, 9, len(runs[1][0])), None, np.arange(1, len(runs[3][0]) + 1)]
    together = refine_many([r[0] for r in runs], [r[5] for r in runs], [r[6] for r in runs], [r[1] for r in runs],
                           runs[0][2], [r[3] for r in runs], PAIR_GAPS, Counting(), 5, method=Method(batch=3),
                           weights=weights)
    shared = len(calls)
    alone = [refine(db, cols, width, tree, matrix, gaps, PAIR_GAPS, Counting(), 5, method=Method(batch=3), weights=w)
             for (db, tree, matrix, gaps, _, cols, width), w in zip(runs, weights)]
    assert [(c.tolist(), w, a) for c, w, a in together] == [(c.tolist(), w, a) for c, w, a in alone]
    assert sum(a for _, _, a in together) > 0
    assert shared <= 6 < len(calls) - shared


@pytest.mark.parametrize("seed", range(4))
def test_split_sides_are_block_counts_of_each_side(seed):
    """The compiled sides of a round (msa.refine._split_sides) against block_counts, the
    tables' definition, side by side: each side's rows, their all-gap columns dropped."""
    from msa.refine import _split_sides

    rng = np.random.default_rng(seed)
    n, w = int(rng.integers(3, 12)), int(rng.integers(2, 30))
    _, codes, offsets, cols = _random_alignment(rng, n, w)
    masks = rng.random((5, n)) < 0.5
    masks[:, 0], masks[:, 1] = True, False  # both sides of every split hold a row
    counted = rng.integers(1, 5, n) if seed % 2 else np.ones(n, dtype=np.int64)
    tables, widths, n_seqs, ranks = _split_sides(codes.astype(np.uint8), offsets, cols.astype(np.int64), w, masks,
                                                 counted)
    row_of = np.repeat(np.arange(n), np.diff(offsets))
    at = 0
    for s in range(2 * len(masks)):
        side = masks[s // 2] if s % 2 == 0 else ~masks[s // 2]
        res = side[row_of]
        used = np.zeros(w, dtype=bool)
        used[cols[res]] = True
        rank = np.where(used, np.cumsum(used) - 1, -1)
        want = block_counts(codes[res], np.concatenate(([0], np.cumsum(np.diff(offsets)[side]))), rank[cols[res]],
                            int(used.sum()), counted[side])
        assert widths[s] == used.sum() and n_seqs[s] == counted[side].sum()
        assert ranks[s].tolist() == rank.tolist()
        assert tables[at : at + widths[s]].tolist() == want.tolist()
        at += widths[s]
    assert at == len(tables)
