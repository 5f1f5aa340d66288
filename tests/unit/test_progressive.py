"""Progressive stage: invariants on many tree shapes, the DP against a plain reference,
the incremental gap typing against a recount, and agreement with FAMSA on real data."""
from pathlib import Path

import numba
import numpy as np
import pytest

from msa.alphabet import ALPHABET, load_matrix
from msa.backends.cpu import CpuBackend
from msa.backends.cpu import forest
from msa.backends.cpu.align import (
    NEG_INF, NO_BONUS, WAVE_CELLS, WAVE_ROWS, align_batch, dp_path, dp_path_wave, dp_seqseq, wave_tiles,
)
from msa.params import AlignParams, GapCosts, gap_costs
from msa.profile import GE, GO, N_COUNTS, TGE, TGO, gap_counts_from_rows
from msa.progressive import progressive_align, progressive_align_many
from msa.rows import gapped_rows
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
MATRIX = load_matrix("PFASUM43")
GAPS = GapCosts(open=-14850, extend=-1250, term_open=-660, term_extend=-660)
G = np.array([GAPS.open, GAPS.extend, GAPS.term_open, GAPS.term_extend], dtype=np.int64)


def random_db(rng, n, lo, hi):
    letters = np.frombuffer(ALPHABET[:20].encode(), dtype=np.uint8)
    pairs = []
    for i in range(n):
        length = int(rng.integers(lo, hi + 1))
        pairs.append((f"s{i}", letters[rng.integers(0, 20, length)].tobytes()))
    return SeqDB.from_pairs(pairs)


def caterpillar(n):
    kids = ([[0, 1]] if n > 1 else []) + [[n + k - 1, k + 1] for k in range(1, n - 1)]
    return GuideTree(n, np.array(kids).reshape(-1, 2), np.arange(n - 1, dtype=float))


def balanced(n):
    nodes, kids, nxt = list(range(n)), [], n
    while len(nodes) > 1:
        new = []
        for a in range(0, len(nodes) - 1, 2):
            kids.append([nodes[a], nodes[a + 1]])
            new.append(nxt)
            nxt += 1
        if len(nodes) % 2:
            new.append(nodes[-1])
        nodes = new
    return GuideTree(n, np.array(kids).reshape(-1, 2), np.arange(n - 1, dtype=float))


def random_tree(rng, n):
    pool, kids = list(range(n)), []
    for k in range(n - 1):
        a, b = rng.choice(len(pool), 2, replace=False)
        kids.append([pool[a], pool[b]])
        pool = [p for i, p in enumerate(pool) if i not in (a, b)] + [n + k]
    return GuideTree(n, np.array(kids).reshape(-1, 2), np.arange(n - 1, dtype=float))


def random_weights(rng, dbs):
    """Per family: None (every sequence once) for every third, else random integer weights."""
    return [None if f % 3 == 0 else rng.integers(1, 40, len(db)) for f, db in enumerate(dbs)]


def check_invariants(db, columns, width):
    rows = gapped_rows(db, columns, width)
    assert rows.shape == (len(db), width)
    for i in range(len(db)):
        row = rows[i].tobytes()
        assert row.replace(b"-", b"") == db.sequence(i)
        cols = columns[db.offsets[i] : db.offsets[i + 1]]
        assert (np.diff(cols) > 0).all()
    assert (rows != ord("-")).any(axis=0).all(), "an all-gap column"


@pytest.mark.parametrize(
    "n,lo,hi,shape",
    [(1, 5, 5, "cat"), (2, 1, 3, "cat"), (2, 1, 500, "cat"), (9, 1, 40, "cat"),
     (9, 1, 40, "bal"), (12, 3, 60, "rand"), (7, 1, 1, "bal"), (6, 2, 300, "rand")],
)
def test_invariants_many_shapes(n, lo, hi, shape):
    rng = np.random.default_rng(n * 1000 + hi)
    db = random_db(rng, n, lo, hi)
    tree = {"cat": caterpillar, "bal": balanced}.get(shape, lambda m: random_tree(rng, m))(n)
    columns, width = progressive_align(db, tree, MATRIX, GAPS, CpuBackend())
    assert columns.dtype == np.int64 and len(columns) == len(db.codes)
    check_invariants(db, columns, width)


def test_related_sequences_align_their_common_core():
    core = b"MKVLAAGWTRPEDHIKLF"
    db = SeqDB.from_pairs([("a", b"PP" + core), ("b", core + b"QQQ"), ("c", core[:8] + b"S" + core[8:])])
    columns, width = progressive_align(db, caterpillar(3), MATRIX, GAPS, CpuBackend())
    rows = gapped_rows(db, columns, width)
    starts = [row.tobytes().index(b"M") for row in rows]
    assert len(set(starts)) == 1


# ---- a plain-Python reference of the same DP ---------------------------------------------


def random_profile(rng, n, w):
    """Counts of a random gapped alignment of n rows and w columns (every row has a residue)."""
    gap = rng.random((n, w)) < 0.35
    gap[np.arange(n), rng.integers(0, w, n)] = False
    gap[:, gap.all(axis=0)] = False  # a profile has no all-gap column
    codes = rng.integers(0, 24, (n, w))
    table = np.zeros((w, N_COUNTS), dtype=np.int32)
    for c in range(w):
        for s in range(n):
            if not gap[s, c]:
                table[c, codes[s, c]] += 1
    table[:, GO:] = gap_counts_from_rows(gap)
    return table, gap, codes


def reference_dp(c1, n1, c2, n2, m, g, seqseq):
    """FAMSA's recurrences written out cell by cell with full matrices; returns (score, path)."""
    go, ge, tgo, tge = (int(x) for x in g)
    w1, w2 = len(c1), len(c2)
    pen = lambda o, e, to, te: o * go + e * ge + to * tgo + te * tge

    def col(c, i):  # 1-based column, as python ints
        return [int(x) for x in c[i - 1]]

    def start(c, n, i):
        w = len(c)
        if i >= w:
            te = int(c[w - 1][TGO] + c[w - 1][TGE])
            return pen(0, 0, n - te, te)
        to = int(c[i][TGO])
        te = int(c[i - 1][TGO] + c[i - 1][TGE])
        e = int(c[i - 1][GO] + c[i - 1][GE])
        return pen(n - e - to - te, e, to, te)

    def cont(c, n, i):
        if i >= len(c):
            return pen(0, 0, 0, n)
        te = int(c[i][TGO] + c[i - 1][TGO] + c[i - 1][TGE])
        return pen(0, n - te, 0, te)

    def res(c, i):
        return sum(col(c, i)[:24])

    def gapcost(c, i):
        x = col(c, i)
        return pen(x[GO], x[GE], x[TGO], x[TGE])

    def t(i, j):
        a, b = col(c1, i), col(c2, j)
        pair = sum(a[x] * b[y] * int(m[x][y]) for x in range(24) for y in range(24))
        return pair + res(c1, i) * gapcost(c2, j) + res(c2, j) * gapcost(c1, i)

    def retype(c, i):
        x = col(c, i)
        return x[GO] * (ge - go) + x[TGO] * (tge - tgo)

    inf = NEG_INF
    D = [[inf] * (w2 + 1) for _ in range(w1 + 1)]
    H = [[inf] * (w2 + 1) for _ in range(w1 + 1)]
    V = [[inf] * (w2 + 1) for _ in range(w1 + 1)]
    dirs = {}
    D[0][0] = 0
    for j in range(1, w2 + 1):
        H[0][j] = n1 * res(c2, 1) * tgo if j == 1 else H[0][j - 1] + n1 * res(c2, j) * tge
        dirs[0, j] = ("H", "H", "H")
    H[0][w2] = inf
    for i in range(1, w1 + 1):
        if i < w1:
            V[i][0] = max(D[i - 1][0], V[i - 1][0]) + n2 * res(c1, i) * (tgo if i == 1 else tge)
        dirs[i, 0] = ("V", "V", "V")
        for j in range(1, w2 + 1):
            tt = t(i, j)
            cand = [D[i - 1][j - 1], H[i - 1][j - 1] + res(c2, j) * retype(c1, i),
                    V[i - 1][j - 1] + res(c1, i) * retype(c2, j)]
            if cand[0] > cand[1] and cand[0] > cand[2]:
                dd = "D"
            elif cand[1] > cand[2] or (seqseq and cand[1] == cand[2]):
                dd = "H"
            else:
                dd = "V"
            D[i][j] = cand["DHV".index(dd)] + tt
            three = (not seqseq) and i > 1 and j > 1
            corr = res(c2, j) * start(c1, n1, i)
            a, b = D[i][j - 1] + corr, H[i][j - 1] + res(c2, j) * cont(c1, n1, i)
            cv = V[i][j - 1] + corr
            if three:
                hd = "D" if a > b and a > cv else ("V" if cv > b else "H")
            else:
                hd = "D" if a > b else "H"
            H[i][j] = {"D": a, "H": b, "V": cv}[hd]
            corr = res(c1, i) * start(c2, n2, j)
            a, b = D[i - 1][j] + corr, V[i - 1][j] + res(c1, i) * cont(c2, n2, j)
            ch = H[i - 1][j] + corr
            if three:
                vd = "D" if a > ch and a > b else ("H" if ch > b else "V")
            else:
                vd = "D" if a > b else "V"
            V[i][j] = {"D": a, "H": ch, "V": b}[vd]
            dirs[i, j] = (dd, hd, vd)
    last = (D[w1][w2], H[w1][w2], V[w1][w2])
    state = "D" if last[0] >= last[1] and last[0] >= last[2] else ("H" if last[1] > last[2] else "V")
    best = last["DHV".index(state)]
    i, j, path = w1, w2, []
    while i > 0 or j > 0:
        path.append(state)
        nxt = dirs[i, j]["DHV".index(state)]
        if state == "D":
            i, j = i - 1, j - 1
        elif state == "H":
            j -= 1
        else:
            i -= 1
        state = nxt
    return best, "".join(path)


@pytest.mark.parametrize("seed", range(12))
def test_dp_matches_plain_reference(seed):
    rng = np.random.default_rng(seed)
    seqseq = seed % 3 == 0
    n1, n2 = (1, 1) if seqseq else (int(rng.integers(1, 5)), int(rng.integers(2, 5)))
    c1, _, _ = random_profile(rng, n1, int(rng.integers(1, 8)))
    c2, _, _ = random_profile(rng, n2, int(rng.integers(1, 8)))
    path = np.empty(len(c1) + len(c2), dtype=np.uint8)
    length, best = dp_path(c1, n1, c2, n2, MATRIX, G, seqseq, path, NO_BONUS, False)
    ref_best, ref_path = reference_dp(c1, n1, c2, n2, MATRIX, G, seqseq)
    assert best == ref_best
    assert "".join("DHV"[s] for s in path[:length]) == ref_path


@pytest.mark.parametrize("seed", range(8))
def test_seqseq_dp_is_the_general_dp(seed):
    """dp_seqseq (two one-sequence profiles: the consistency library's merges, leaf pairs) gives
    dp_path's score and path: lengths from 1, few residue kinds and small scores (ties on every
    side), and a real matrix with the run's gap costs."""
    rng = np.random.default_rng(300 + seed)
    for trial in range(60):
        small = trial % 2 == 0
        matrix = rng.integers(-3, 4, (24, 24)).astype(np.int64) if small else MATRIX
        g = -rng.integers(0, 4, 4).astype(np.int64) if small else G
        kinds = 3 if small else 24
        c1, c2 = (np.eye(N_COUNTS, dtype=np.int32)[rng.integers(0, kinds, int(rng.integers(1, 40)))] for _ in range(2))
        want, got = (np.empty(len(c1) + len(c2), dtype=np.uint8) for _ in range(2))
        length, best = dp_path(c1, 1, c2, 1, matrix, g, True, want, NO_BONUS, False)
        assert dp_seqseq(c1, c2, matrix, g, got) == (length, best)
        np.testing.assert_array_equal(got[:length], want[:length])


@pytest.mark.parametrize("seed", range(10))
def test_wavefront_dp_is_the_serial_dp(seed):
    """dp_path_wave (one merge's DP in tiles, a block of columns a thread, each strip of rows
    handed on to the next block) gives dp_path's score and path for any cut into blocks and strips: more blocks or
    strips than columns or rows, one of each, a row or column each; with and without cell
    bonuses (either layout), small matrices and gap costs (ties everywhere) and the real ones."""
    rng = np.random.default_rng(500 + seed)
    for trial in range(12):
        small = trial % 3 == 0
        matrix = rng.integers(-3, 4, (24, 24)).astype(np.int64) if small else MATRIX
        g = -rng.integers(0, 4, 4).astype(np.int64) if small else G
        seqseq = trial % 4 == 1
        n1, n2 = (1, 1) if seqseq else (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        c1, _, _ = random_profile(rng, n1, int(rng.integers(1, 60)))
        c2, _, _ = random_profile(rng, n2, int(rng.integers(1, 60)))
        w1, w2 = len(c1), len(c2)
        bonus = rng.integers(-500, 500, w1 * w2).astype(np.int64) if trial % 2 else NO_BONUS
        bonus_tr = bool(trial % 5 == 0)
        want = np.empty(w1 + w2, dtype=np.uint8)
        length, best = dp_path(c1, n1, c2, n2, matrix, g, seqseq, want, bonus, bonus_tr)
        for blocks, strips in ((1, 1), (2, 3), (w2, w1), (w2 + 3, w1 + 2), (int(rng.integers(1, 9)), int(rng.integers(1, 9)))):
            got = np.empty(w1 + w2, dtype=np.uint8)
            assert dp_path_wave(c1, n1, c2, n2, matrix, g, seqseq, got, bonus, bonus_tr, blocks, strips) == (length, best)
            np.testing.assert_array_equal(got[:length], want[:length])


def test_wave_tiles_give_a_block_per_thread_and_short_strips():
    """A block per thread of at least 32 columns, strips of WAVE_ROWS rows, at least one of each."""
    assert wave_tiles(400, 2000, 16) == (16, 400 // WAVE_ROWS)
    assert wave_tiles(400, 2000, 1) == (1, 400 // WAVE_ROWS)
    assert wave_tiles(3, 40, 16) == (1, 1)
    assert wave_tiles(5, 100_000, 4) == (4, 1)


# ---- incremental gap typing ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_incremental_gap_counts_match_recount(seed):
    rng = np.random.default_rng(100 + seed)
    na, nb = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    ca, gap_a, codes_a = random_profile(rng, na, int(rng.integers(1, 15)))
    cb, gap_b, codes_b = random_profile(rng, nb, int(rng.integers(1, 15)))
    counts = np.concatenate([ca, cb])
    offsets = np.array([0, len(ca), len(ca) + len(cb)], dtype=np.int64)
    maps, parent, poff = align_batch(counts, offsets, np.array([na, nb], dtype=np.int64), MATRIX, G)
    w = int(poff[1])
    rows = np.ones((na + nb, w), dtype=bool)
    letters = np.full((na + nb, w), -1)
    for gap, codes, sl, first in ((gap_a, codes_a, slice(0, len(ca)), 0), (gap_b, codes_b, slice(len(ca), None), na)):
        m = maps[sl]
        assert (np.diff(m) > 0).all()
        rows[first : first + len(gap), m] = gap
        letters[first : first + len(gap), m] = np.where(gap, -1, codes)
    np.testing.assert_array_equal(parent[:, GO:], gap_counts_from_rows(rows))
    for c in range(w):
        np.testing.assert_array_equal(parent[c, :24], np.bincount(letters[:, c][letters[:, c] >= 0], minlength=24))


@pytest.mark.parametrize("serial_cells", [0, 1 << 30])
def test_batch_equals_merges_one_by_one(serial_cells, monkeypatch):
    """A batch on the thread pool and on the calling thread gives each merge as it is alone."""
    monkeypatch.setattr("msa.backends.cpu.align.SERIAL_CELLS", serial_cells)
    rng = np.random.default_rng(7)
    profs = [random_profile(rng, int(rng.integers(1, 4)), int(rng.integers(1, 12))) for _ in range(8)]
    sizes = np.array([int(p[1].shape[0]) for p in profs], dtype=np.int64)
    counts = np.concatenate([p[0] for p in profs])
    offsets = np.concatenate([[0], np.cumsum([len(p[0]) for p in profs])]).astype(np.int64)
    maps, parents, poff = align_batch(counts, offsets, sizes, MATRIX, G)
    for k in range(4):
        sub = np.concatenate([profs[2 * k][0], profs[2 * k + 1][0]])
        so = np.array([0, len(profs[2 * k][0]), len(sub)], dtype=np.int64)
        m1, p1, _ = align_batch(sub, so, sizes[2 * k : 2 * k + 2], MATRIX, G)
        np.testing.assert_array_equal(m1, maps[offsets[2 * k] : offsets[2 * k + 2]])
        np.testing.assert_array_equal(p1, parents[poff[k] : poff[k + 1]])


def test_batch_with_gaps_per_merge_equals_each_merge_alone():
    """A batch whose merges have different gap costs (families of different sizes in one
    level): each merge gives what it gives alone with its own costs, and the costs matter."""
    rng = np.random.default_rng(8)
    profs = [random_profile(rng, int(rng.integers(1, 5)), int(rng.integers(1, 25))) for _ in range(24)]
    sizes = np.array([int(p[1].shape[0]) for p in profs], dtype=np.int64)
    counts = np.concatenate([p[0] for p in profs])
    offsets = np.concatenate([[0], np.cumsum([len(p[0]) for p in profs])]).astype(np.int64)
    n_merges = len(profs) // 2
    rows = np.array([[gap_costs(AlignParams(), int(n)), gap_costs(AlignParams(gap_open=3.0), int(n))][k % 2]
                     for k, n in enumerate(rng.integers(1, 5000, n_merges))])
    rows = np.array([[g.open, g.extend, g.term_open, g.term_extend] for g in rows], dtype=np.int64)
    assert len({tuple(r) for r in rows}) > 3
    maps, parents, poff = align_batch(counts, offsets, sizes, MATRIX, rows)
    differs = 0
    for k in range(n_merges):
        sub = np.concatenate([profs[2 * k][0], profs[2 * k + 1][0]])
        so = np.array([0, len(profs[2 * k][0]), len(sub)], dtype=np.int64)
        m1, p1, _ = align_batch(sub, so, sizes[2 * k : 2 * k + 2], MATRIX, rows[k])
        np.testing.assert_array_equal(m1, maps[offsets[2 * k] : offsets[2 * k + 2]])
        np.testing.assert_array_equal(p1, parents[poff[k] : poff[k + 1]])
        m2, _, _ = align_batch(sub, so, sizes[2 * k : 2 * k + 2], MATRIX, rows[(k + 1) % n_merges])
        differs += not np.array_equal(m1, m2)
    assert differs  # some merge aligns differently under another merge's costs
    with pytest.raises(ValueError, match="gaps must be"):
        align_batch(counts, offsets, sizes, MATRIX, rows[:-1])


class CountingBackend(CpuBackend):
    """The CPU backend through the level loop (as the GPU), counting its progressive calls."""

    align_forest = None

    def __init__(self) -> None:
        super().__init__()
        self.calls = {"profile_align": 0, "gather_profiles": 0, "place_segments": 0}

    def profile_align(self, batch):
        self.calls["profile_align"] += 1
        return super().profile_align(batch)

    def gather_profiles(self, *args):
        self.calls["gather_profiles"] += 1
        return super().gather_profiles(*args)

    def place_segments(self, *args):
        self.calls["place_segments"] += 1
        return super().place_segments(*args)


def random_families(rng):
    """Small random families of different sizes and tree shapes (1 and 2 sequences too), each
    with its own gap costs (the defaults rescaled for its size, or other costs)."""
    shapes = [caterpillar, balanced, lambda n: random_tree(rng, n)]
    sizes = [1, 2, 3, 5, 8, 13, 40, 60, 2, 1, 30, 7]
    dbs, trees, gaps = [], [], []
    for f, n in enumerate(sizes):
        dbs.append(random_db(rng, n, 1, int(rng.integers(2, 60))))
        trees.append(shapes[f % 3](n))
        params = AlignParams() if f % 4 else AlignParams(gap_open=5.0, gap_extend=2.0, terminal_gap=0.3)
        gaps.append(gap_costs(params, n * int(rng.integers(1, 100))))  # as if the family had duplicates
    return dbs, trees, gaps


def test_many_families_each_as_alone():
    """Families aligned in shared level batches get exactly the columns they get alone; the
    progressive calls are as many as the deepest tree's levels, not the sum."""
    rng = np.random.default_rng(61)
    dbs, trees, gaps = random_families(rng)
    assert len({(g.open, g.extend) for g in gaps}) > 5
    weights = random_weights(rng, dbs)
    backend = CountingBackend()
    got = progressive_align_many(dbs, trees, MATRIX, gaps, backend, weights)
    depth = [int(t.levels().max()) if t.n_leaves > 1 else 0 for t in trees]
    assert backend.calls["profile_align"] == backend.calls["place_segments"] == max(depth)
    assert backend.calls["gather_profiles"] < sum(depth)  # one a level, and the pool's compactions
    assert sum(depth) > 1.5 * max(depth)
    for db, tree, g, w, (columns, width) in zip(dbs, trees, gaps, weights, got):
        want_columns, want_width = progressive_align(db, tree, MATRIX, g, CpuBackend(), w)
        assert width == want_width
        np.testing.assert_array_equal(columns, want_columns)
        rows = gapped_rows(db, columns, width)
        assert rows.shape == (len(db), width)
    # another order and a subset: the same columns for each family
    order = rng.permutation(len(dbs))[:7]
    again = progressive_align_many([dbs[f] for f in order], [trees[f] for f in order],
                                   MATRIX, [gaps[f] for f in order], CpuBackend(), [weights[f] for f in order])
    for f, (columns, width) in zip(order, again):
        assert width == got[f][1]
        np.testing.assert_array_equal(columns, got[f][0])


@pytest.mark.parametrize("serial_cells", [1 << 14, 0])
def test_one_compiled_call_equals_the_level_loop(serial_cells, monkeypatch):
    """The CPU's progressive stage in one compiled call (msa.backends.cpu.forest) gives every
    family the columns the level loop gives it, with levels on the calling thread and on the
    thread pool, and reports every merge to the progress bar."""
    monkeypatch.setattr("msa.backends.cpu.align.SERIAL_CELLS", serial_cells)
    rng = np.random.default_rng(serial_cells)
    dbs, trees, gaps = random_families(rng)
    steps: list[int] = []
    fused = CpuBackend.align_forest

    def counted(*args, **kw):
        return fused(*args[:-1], lambda k: steps.append(k) or args[-1](k), **kw)

    monkeypatch.setattr(CpuBackend, "align_forest", staticmethod(counted))
    weights = random_weights(rng, dbs)
    got = progressive_align_many(dbs, trees, MATRIX, gaps, CpuBackend(), weights)
    want = progressive_align_many(dbs, trees, MATRIX, gaps, CountingBackend(), weights)
    assert sum(steps) == sum(len(db) - 1 for db in dbs if len(db) > 1)
    for db, (columns, width), (want_columns, want_width) in zip(dbs, got, want):
        assert width == want_width
        np.testing.assert_array_equal(columns, want_columns)
        check_invariants(db, columns, width)


def test_a_signal_stops_the_compiled_call_at_its_next_level(monkeypatch):
    """A signal noted while the one compiled call runs (here at its first progress report) stops
    it at its next level (it runs on a thread of its own, the calling one watching); Interrupted
    is raised once it has stopped, and no merge after it is reported."""
    import signal
    import threading

    from msa import interrupts

    monkeypatch.setattr(forest, "POLL_S", 0.0)
    n = 2000
    db = random_db(np.random.default_rng(3), n, 20, 60)
    tree = caterpillar(n)
    seen: list[int] = []

    def advance(k: int) -> None:  # msa.progress's: a checkpoint
        seen.append(k)
        interrupts._state.pending = interrupts._state.pending or signal.SIGINT  # what the handler notes
        interrupts.check()

    with pytest.raises(interrupts.Interrupted), interrupts.handling():
        CpuBackend.align_forest(db.codes, db.offsets, np.ones(n, dtype=np.int64), tree.children, tree.levels(),
                                np.tile(G, (n - 1, 1)), MATRIX, advance)
    assert sum(seen) < n - 1
    assert not [t for t in threading.enumerate() if t.name == "msa-forest"]


def test_a_chain_of_large_merges_gives_the_same_columns_in_the_wavefront():
    """align_forest on a caterpillar of long sequences, whose top levels are single merges past
    WAVE_CELLS (spread over the threads), gives the columns of the same call on one thread,
    every time (the blocks hand strips on between threads)."""
    n = 24
    db = random_db(np.random.default_rng(11), n, 500, 700)
    tree = caterpillar(n)
    args = (db.codes, db.offsets, np.ones(n, dtype=np.int64), tree.children, tree.levels(), np.tile(G, (n - 1, 1)),
            MATRIX, lambda k: None)
    path = np.empty(2, dtype=np.uint8)
    dp_path_wave(*(random_profile(np.random.default_rng(0), 1, 1)[0], 1) * 2, MATRIX, G, False, path, NO_BONUS, False, 1, 1)
    if numba.config.NUMBA_NUM_THREADS > 1:  # a parallel loop has run: the pool is chosen
        assert forest.wave_threads(2) == (2 if numba.threading_layer() in ("omp", "workqueue") else 1)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = CpuBackend.align_forest(*args)
        numba.set_num_threads(max(2, threads) if numba.config.NUMBA_NUM_THREADS > 1 else 1)
        for _ in range(3):
            for a, b in zip(one, CpuBackend.align_forest(*args)):
                np.testing.assert_array_equal(a, b)
    finally:
        numba.set_num_threads(threads)
    widths = one[1]
    assert (widths[tree.children[:, 0]] * widths[tree.children[:, 1]] >= WAVE_CELLS).sum() >= 5  # the wave ran


@pytest.mark.parametrize(("layer", "threads", "spread"), [("omp", 8, 8), ("workqueue", 4, 4), ("tbb", 8, 1), (None, 8, 1)])
def test_one_merge_spreads_only_where_the_pool_runs_blocks_in_turn(monkeypatch, layer, threads, spread):
    """The wavefront's blocks wait on lower ones: only OpenMP's and the workqueue's pools, which run
    each thread's share in order, always reach them; under TBB, or before a pool is chosen, one thread."""

    def threading_layer():
        if layer is None:
            raise ValueError("Threading layer is not initialized.")
        return layer

    monkeypatch.setattr(numba, "threading_layer", threading_layer)
    assert forest.wave_threads(threads) == spread


def test_many_families_checks_each_family():
    rng = np.random.default_rng(62)
    dbs, trees, gaps = random_families(rng)
    with pytest.raises(ValueError, match="the tree has 5 leaves for 3 sequences"):
        progressive_align_many(dbs[:3], trees[:2] + [trees[3]], MATRIX, gaps[:3], CpuBackend())
    with pytest.raises(ValueError, match="3 families, 2 trees"):
        progressive_align_many(dbs[:3], trees[:2], MATRIX, gaps[:3], CpuBackend())
    empty = SeqDB.from_pairs([("a", "MKV"), ("b", "")])
    with pytest.raises(ValueError, match="cannot align an empty sequence"):
        progressive_align_many(dbs[:3] + [empty], trees[:3] + [balanced(2)], MATRIX, gaps[:4], CpuBackend())
    assert progressive_align_many([], [], MATRIX, [], CpuBackend()) == []


# ---- FAMSA agreement on real data --------------------------------------------------------------


def _famsa_matrix():
    path = SHARED / "data" / "matrices" / "PFASUM43_famsa_int.tsv"
    rows = [line.rstrip("\n").split("\t") for line in path.open() if not line.startswith("#")]
    return np.array([[int(x) for x in r[1:]] for r in rows[1:]], dtype=np.int64)


class CutEveryLevel(CpuBackend):
    """Cuts every level into pieces of ``per`` merges, as the GPU does under --gpu-memory."""

    align_forest = None  # the level loop, as the GPU

    def __init__(self, per: int) -> None:
        self.per, self.pieces = per, 0

    def level_cuts(self, kid_widths):
        n = len(kid_widths) // 2
        cuts = np.unique(np.append(np.arange(0, n, self.per), n))
        self.pieces += len(cuts) - 1
        return cuts


@pytest.mark.parametrize("per", [1, 2, 3])
def test_levels_cut_into_pieces_give_the_same_alignment(per):
    """A level run as several batches (device memory too small for its tables) changes nothing."""
    rng = np.random.default_rng(per)
    db = random_db(rng, 40, 5, 80)
    for tree in (balanced(40), random_tree(rng, 40)):
        want = progressive_align(db, tree, MATRIX, GAPS, CpuBackend())
        cut = CutEveryLevel(per)
        got = progressive_align(db, tree, MATRIX, GAPS, cut)
        assert got[1] == want[1] and np.array_equal(got[0], want[0])
        assert cut.pieces > len(np.unique(tree.levels()))  # some level was cut
        check_invariants(db, *got)


def test_identical_to_famsa_with_its_tree_and_matrix():
    pyfamsa = pytest.importorskip("pyfamsa")
    fasta = SHARED / "datasets" / "balifam" / "balifam1000" / "in" / "PF00046.1000"
    if not fasta.exists():
        pytest.skip("shared data not present")
    names, seqs = [], []
    for block in fasta.read_text().split(">")[1:]:
        head, *body = block.splitlines()
        seq = "".join(body).upper()
        if seq not in seqs:
            names.append(head.split()[0])
            seqs.append(seq)
        if len(seqs) == 60:
            break
    aligner = pyfamsa.Aligner(refine=False, guide_tree="sl", threads=1, keep_duplicates=True)
    items = [pyfamsa.Sequence(n.encode(), s.encode()) for n, s in zip(names, seqs)]
    expected = {s.id.decode(): s.sequence.decode() for s in aligner.align(items)}
    tree = aligner.build_tree(items)
    n = len(tree.names)
    by_name = dict(zip(names, seqs))
    db = SeqDB.from_pairs([(nm.decode(), by_name[nm.decode()]) for nm in tree.names])
    gt = GuideTree(n, np.array(list(tree)[n:], dtype=np.int64), np.arange(n - 1, dtype=float))
    gaps = gap_costs(AlignParams(), n)
    columns, width = progressive_align(db, gt, _famsa_matrix(), gaps, CpuBackend())
    rows = gapped_rows(db, columns, width)
    got = {db.names[i]: rows[i].tobytes().decode() for i in range(n)}
    assert got == expected


@pytest.mark.parametrize("serial_rows", [0, 1 << 30])
@pytest.mark.parametrize("seed", range(3))
def test_gather_profiles_by_definition(seed: int, serial_rows: int, monkeypatch) -> None:
    """The CPU gather (the GPU's oracle): each segment's rows copied from its store, or one-hot
    rows (of the leaf's weight) from the codes for a leaf (store -1), end to end; empty and one-row segments included,
    on the thread pool and on the calling thread."""
    monkeypatch.setattr("msa.backends.cpu.segments.SERIAL_ROWS", serial_rows)
    rng = np.random.default_rng(seed)
    n_seg = int(rng.integers(1, 60))
    parts = [rng.integers(0, 50, (int(rng.integers(1, 500)), N_COUNTS)).astype(np.int32) for _ in range(3)]
    codes = rng.integers(0, 24, 5_000).astype(np.uint8)
    part = rng.integers(-1, len(parts), n_seg)
    limit = np.where(part < 0, len(codes), np.array([len(p) for p in parts] + [0])[part])
    widths = np.minimum(rng.integers(0, 80, n_seg), limit)
    widths[rng.random(n_seg) < 0.2] = 1
    start = (rng.random(n_seg) * (limit - widths + 1)).astype(np.int64)
    values = None if seed == 0 else rng.integers(1, 1000, n_seg)  # the leaves' weights (1 without)
    want = []
    for g, (p, s, w) in enumerate(zip(part, start, widths)):
        if p < 0:
            rows = np.zeros((w, N_COUNTS), dtype=np.int32)
            rows[np.arange(w), codes[s : s + w]] = 1 if values is None else values[g]
        else:
            rows = parts[p][s : s + w]
        want.append(rows)
    got = CpuBackend.gather_profiles(parts, part, start, widths, codes, values)
    np.testing.assert_array_equal(got, np.concatenate(want))
    assert got.dtype == np.int32


@pytest.mark.parametrize("serial_rows", [0, 1 << 30])
@pytest.mark.parametrize("seed", range(3))
def test_place_segments_by_definition(seed: int, serial_rows: int, monkeypatch) -> None:
    """The CPU placement (the GPU's oracle): targets[target[g]][start[g] + c] =
    values[parent[g] + maps[off[g] + c]], on the thread pool and on the calling thread."""
    monkeypatch.setattr("msa.backends.cpu.segments.SERIAL_ROWS", serial_rows)
    rng = np.random.default_rng(seed)
    n_seg = int(rng.integers(1, 50))
    widths = rng.integers(0, 40, n_seg)
    values = rng.integers(0, 10**6, 5_000)
    maps = rng.integers(0, 100, int(widths.sum())).astype(np.int32)
    parent = rng.integers(0, 4_000, n_seg)
    target = rng.integers(0, 3, n_seg) if seed else np.zeros(n_seg, dtype=np.int64)
    sizes = [int(widths.sum()) + 10 for _ in range(3)]
    start = np.array([int(widths[:g].sum()) for g in range(n_seg)])  # disjoint segments per target
    want = [np.full(s, -1) for s in sizes]
    got = [np.full(s, -1) for s in sizes]
    off = np.concatenate(([0], np.cumsum(widths)))
    for g in range(n_seg):
        for c in range(widths[g]):
            want[target[g]][start[g] + c] = values[parent[g] + maps[off[g] + c]]
    CpuBackend.place_segments(got, target, start, values, maps, parent, widths)
    for w, o in zip(want, got):
        np.testing.assert_array_equal(o, w)
