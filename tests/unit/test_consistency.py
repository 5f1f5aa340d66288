"""Consistency at the top merges (msa.consistency, ``--consistency N``): the compiled stage adds
the bonuses its definition gives (a merge-by-merge oracle here), the library is what the
sampled pairs' alignments say, runs of one family and of many give the same bytes, and the
alignments keep their invariants."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import msa.consistency
from msa.alignment import check_alignment
from msa.alphabet import load_matrix
from msa.backends.cpu import CpuBackend
from msa.backends.cpu.align import _first_is_p1, build_parent, dp_path
from msa.io.fasta import read_aligned_fasta, read_fasta
from msa.params import (
    CONSISTENCY_ABSORB_PER, CONSISTENCY_AUTO_SAMPLES, CONSISTENCY_MAX_SEQUENCES, REFINE_AUTO_MAX, AlignParams,
    gap_costs,
)
from msa.pipeline import align_db, align_families, family_library, prepare_family
from msa.profile import N_COUNTS, gap_vector
from msa.progressive import progressive_align
from msa.seqdb import SeqDB
from msa.tree import build_guide_tree
from msa.tree.guide_tree import GuideTree
from msa.tree.weights import family_weights

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402

from tests.unit.test_hybrid import sides  # noqa: E402, F401 (a fixture: levels on random sides)

EXAMPLE = REPO / "datasets" / "examples" / "example.fa"
MATRIX = load_matrix("PFASUM43")


def _family(seed: int, n: int, length: int) -> SeqDB:
    return SeqDB.from_pairs(simulate(SimParams(n=n, length=length, seed=seed)).records())


def _oracle(db: SeqDB, tree, weights, library, gaps) -> tuple[np.ndarray, int]:
    """The progressive stage merge by merge in Python, each bonus from its definition: the
    sampled pairs' residues' columns in the two children, their votes summed, times na x nb."""
    n = tree.n_leaves
    offsets = np.asarray(db.offsets, dtype=np.int64)
    cols = np.concatenate([np.arange(offsets[i + 1] - offsets[i]) for i in range(n)])  # within its node
    node_of = np.repeat(np.arange(n), np.diff(offsets))  # every residue's current node
    tables, sizes = {}, {}
    for i in range(n):
        t = np.zeros((offsets[i + 1] - offsets[i], N_COUNTS), dtype=np.int32)
        t[np.arange(len(t)), db.codes[offsets[i]:offsets[i + 1]]] = 1 if weights is None else weights[i]
        tables[i], sizes[i] = t, 1 if weights is None else int(weights[i])
    g = gap_vector(gaps)
    for k, (a, b) in enumerate(tree.children.tolist()):
        ca, cb, na, nb = tables.pop(a), tables.pop(b), sizes.pop(a), sizes.pop(b)
        lo, hi = library.off[k], library.off[k + 1]
        bonus = np.zeros(0, dtype=np.int64)
        if hi > lo:
            table = np.zeros((len(ca), len(cb)), dtype=np.int64)
            assert (node_of[library.a[lo:hi]] == a).all() and (node_of[library.b[lo:hi]] == b).all()
            np.add.at(table, (cols[library.a[lo:hi]], cols[library.b[lo:hi]]), library.vote[lo:hi])
            bonus = (table * (na * nb)).reshape(-1)
        path = np.empty(len(ca) + len(cb), dtype=np.uint8)
        map_a, map_b = np.empty(len(ca), dtype=np.int64), np.empty(len(cb), dtype=np.int64)
        first, seqseq = _first_is_p1(ca, na, cb, nb), na == 1 and nb == 1
        p1, p2 = ((ca, na, map_a), (cb, nb, map_b)) if first else ((cb, nb, map_b), (ca, na, map_a))
        length = dp_path(p1[0], p1[1], p2[0], p2[1], MATRIX, g, seqseq, path, bonus, not first)[0]
        out = np.zeros((length, N_COUNTS), dtype=np.int32)
        build_parent(path, length, p1[0], p1[1], p2[0], p2[1], p1[2], p2[2], out)
        for child, mp in ((a, map_a), (b, map_b)):
            mine = node_of == child
            cols[mine] = mp[cols[mine]]
            node_of[mine] = n + k
        tables[n + k], sizes[n + k] = out, na + nb
    return cols, len(tables[tree.root])


@pytest.mark.parametrize(("seed", "n", "length", "samples", "weighted"),
                         [(1, 40, 60, 2, False), (2, 70, 45, 3, True), (3, 25, 80, 8, True)])
def test_the_stage_adds_the_bonuses_the_definition_gives(monkeypatch, seed, n, length, samples, weighted):
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 4)
    db = _family(seed, n, length)
    params = AlignParams(device="cpu", quiet=True, consistency=str(samples), seed=seed,
                         weights="tree" if weighted else "none")
    backend = CpuBackend()
    tree = build_guide_tree(db, params, backend)
    weights = family_weights(tree, params)
    library = family_library(db, tree, MATRIX, params, backend)
    assert library.n_pairs > 0 and (library.vote >= 0).all() and len(np.unique(library.vote)) > 2
    gaps = gap_costs(params, len(db))
    got = progressive_align(db, tree, MATRIX, gaps, backend, weights, library)
    want = _oracle(db, tree, weights, library, gaps)
    assert got[1] == want[1]
    np.testing.assert_array_equal(got[0], want[0])
    plain = progressive_align(db, tree, MATRIX, gaps, backend, weights)
    assert plain[1] != got[1] or (plain[0] != got[0]).any()  # the bonuses changed the alignment


def _chain(n: int, seed: int) -> GuideTree:
    """A cluster that takes in one sequence at a time (single linkage's chains), here and
    there from a small subtree of its own, each side first or second at random."""
    rng = np.random.default_rng(seed)
    leaves, children = rng.permutation(n).tolist(), []
    top = leaves.pop()
    while leaves:
        other = leaves.pop()
        if len(leaves) > 2 and rng.random() < 0.2:
            children.append([other, leaves.pop()])
            other = n + len(children) - 1
        children.append([top, other] if rng.random() < 0.5 else [other, top])
        top = n + len(children) - 1
    return GuideTree(n, children, np.arange(len(children), dtype=np.float64))


@pytest.mark.parametrize("seed", [4, 5])
def test_walks_up_a_chain_jump_to_the_same_columns(monkeypatch, seed):
    """Most merges of a chain guided and new samples drawn at each: a sampled sequence climbs
    from where its last walk stopped through nodes that other walks made jump
    (msa.backends.cpu.forest._climb); the compiled stage and the level loop add the bonuses
    the definition gives."""
    import msa.progressive as progressive

    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 3)
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_ABSORB_PER", 1)
    db = _family(seed, 50, 40)
    tree = _chain(len(db), seed)
    params = AlignParams(device="cpu", quiet=True, consistency="4", seed=seed)
    library = family_library(db, tree, MATRIX, params, CpuBackend())
    assert (np.diff(library.seq_off) > 0).sum() > 30
    weights = family_weights(tree, params)
    gaps = gap_costs(params, len(db))
    want = _oracle(db, tree, weights, library, gaps)
    for backend in (CpuBackend(), LevelLoop()):
        got = progressive.progressive_align(db, tree, MATRIX, gaps, backend, weights, library)
        assert got[1] == want[1]
        np.testing.assert_array_equal(got[0], want[0])


def test_the_library_is_the_sampled_pairs_alignments(monkeypatch):
    """Every merge with two large sides, and the n / CONSISTENCY_ABSORB_PER merges with the
    largest larger sides, have their pairs' residues, each pair drawn from the two sides (a
    small side whole); no other merge has any; a random draw follows the seed."""
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 5)
    db = _family(4, 60, 50)
    params = AlignParams(device="cpu", quiet=True)
    tree = build_guide_tree(db, params, CpuBackend())
    lib = msa.consistency.top_library(db, tree, MATRIX, gap_vector(gap_costs(params, 2)), CpuBackend(), 3, 7)
    from msa.tree.guide_tree import subtree_spans

    order, start, size = subtree_spans(tree.children, tree.n_leaves)
    seq_of = np.repeat(np.arange(len(db)), np.diff(db.offsets))
    larger = [max(size[a], size[b]) for a, b in tree.children.tolist()]
    absorbing = sorted((k for k in range(len(larger)) if larger[k] >= 5),
                       key=lambda k: (-larger[k], k))
    absorbing = set(absorbing[: -(-tree.n_leaves // CONSISTENCY_ABSORB_PER)])
    assert absorbing and any(min(size[a], size[b]) < 5 for a, b in tree.children[sorted(absorbing)].tolist())
    for k, (a, b) in enumerate(tree.children.tolist()):
        big = min(size[a], size[b]) >= 5 or k in absorbing
        drawn = min(3, size[a]) + min(3, size[b])
        assert (lib.off[k + 1] > lib.off[k]) == big and (lib.seq_off[k + 1] - lib.seq_off[k] == drawn) == big
        if big:
            side_a, side_b = (set(order[start[c]:start[c] + size[c]].tolist()) for c in (a, b))
            assert set(seq_of[lib.a[lib.off[k]:lib.off[k + 1]]].tolist()) <= side_a
            assert set(seq_of[lib.b[lib.off[k]:lib.off[k + 1]]].tolist()) <= side_b
    # Each pair votes by its alignment's identity (identical residue pairs / the shorter length).
    diagonal = np.diag(MATRIX)
    full = float(diagonal[diagonal > 0].mean())
    lengths = np.diff(db.offsets)
    for k in np.flatnonzero(np.diff(lib.off)).tolist():
        lo, hi = lib.off[k], lib.off[k + 1]
        sa, sb = seq_of[lib.a[lo:hi]], seq_of[lib.b[lo:hi]]
        n_pairs = min(3, size[tree.children[k, 0]]) * min(3, size[tree.children[k, 1]])
        for x, y in set(zip(sa.tolist(), sb.tolist())):
            mine = (sa == x) & (sb == y)
            same = np.count_nonzero(db.codes[lib.a[lo:hi][mine]] == db.codes[lib.b[lo:hi][mine]])
            assert (lib.vote[lo:hi][mine] == round(full * (same / min(lengths[x], lengths[y])) / n_pairs)).all()
    again = msa.consistency.top_library(db, tree, MATRIX, gap_vector(gap_costs(params, 2)), CpuBackend(), 3, 7)
    np.testing.assert_array_equal(again.a, lib.a)
    drawn = [msa.consistency.top_library(db, tree, MATRIX, gap_vector(gap_costs(params, 2)), CpuBackend(), 3, seed,
                                         "random") for seed in (7, 8)]
    assert len(drawn[0].a) != len(drawn[1].a) or (drawn[0].a != drawn[1].a).any()


def test_one_family_and_many_give_the_same_rows():
    db = read_fasta(str(EXAMPLE))
    halves = [SeqDB.from_pairs([(db.names[i], db.sequence(i)) for i in idx]) for idx in (range(0, 120), range(120, 200))]
    params = AlignParams(device="cpu", quiet=True, consistency="4", refine="off")
    alone = [align_db(h, params, CpuBackend()) for h in halves]
    together = align_families([prepare_family(h, params, note=False) for h in halves], CpuBackend())
    for x, y, h in zip(alone, together, halves):
        np.testing.assert_array_equal(x.rows, y.rows)
        check_alignment([(n, h.sequence(i)) for i, n in enumerate(h.names)], y.names, y.rows)


def test_the_command_line_option(tmp_path):
    out = tmp_path / "out.fa"
    run = subprocess.run([sys.executable, "-m", "msa", "align", str(EXAMPLE), "-o", str(out), "--consistency", "8",
                          "-q"], capture_output=True)
    assert run.returncode == 0, run.stderr
    db = read_fasta(str(EXAMPLE))
    rows = read_aligned_fasta(str(out))
    check_alignment([(n, db.sequence(i)) for i, n in enumerate(db.names)], list(rows), list(rows.values()))
    plain = subprocess.run([sys.executable, "-m", "msa", "align", str(EXAMPLE), "--consistency", "off", "-q"],
                           capture_output=True)
    assert plain.returncode == 0 and plain.stdout != out.read_bytes()
    bad = subprocess.run([sys.executable, "-m", "msa", "align", str(EXAMPLE), "--consistency", "many"],
                         capture_output=True)
    assert bad.returncode != 0 and len(bad.stderr.splitlines()) == 1 and b"consistency" in bad.stderr
    assert not (tmp_path / "many").exists()


class LevelLoop(CpuBackend):
    align_forest = None  # msa.progressive's level loop on the CPU


@pytest.mark.parametrize("where", ["level loop", "hybrid"])
def test_the_level_loop_adds_the_same_bonuses(monkeypatch, request, where):
    """A GPU run's level loop (here the CPU's, or a fake device beside the host's levels, each
    level on a side drawn at random: the samples walked and the tables made on the device, those
    of the host's levels brought over) gives the bytes of the CPU's one compiled call, many
    families at once."""
    from tests.unit.test_hybrid import FakeGpu

    import msa.progressive as progressive

    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 4)
    if where == "hybrid":
        request.getfixturevalue("sides")
    monkeypatch.setattr(progressive, "HOST_STAGE", "device")
    monkeypatch.setattr(progressive, "HYBRID", True)
    dbs = [_family(seed, n, 50) for seed, n in ((5, 40), (6, 3), (7, 60))]
    params = AlignParams(device="cpu", quiet=True, consistency="3", seed=2)
    trees = [build_guide_tree(db, params, CpuBackend()) for db in dbs]
    weights = [family_weights(t, params) for t in trees]
    libraries = [family_library(db, t, MATRIX, params, CpuBackend()) for db, t in zip(dbs, trees)]
    gaps = [gap_costs(params, len(db)) for db in dbs]
    want = progressive.progressive_align_many(dbs, trees, MATRIX, gaps, CpuBackend(), weights, libraries)
    backend = LevelLoop() if where == "level loop" else FakeGpu(per=2)
    got = progressive.progressive_align_many(dbs, trees, MATRIX, gaps, backend, weights, libraries)
    assert sum(lib.n_pairs for lib in libraries) > 0
    if where == "hybrid":
        assert backend.bonus_levels > 1
    for (c1, w1), (c2, w2) in zip(got, want):
        assert w1 == w2
        np.testing.assert_array_equal(c1, c2)


def test_at_most_so_many_merges_take_bonuses(monkeypatch):
    """Past CONSISTENCY_MAX_MERGES merges with two large sides, those of the largest smaller
    sides; past as many with a large side, those of the largest larger sides."""
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 2)
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_ABSORB_PER", 1)
    db = _family(8, 80, 40)
    tree = build_guide_tree(db, AlignParams(device="cpu", quiet=True), CpuBackend())
    args = (db, tree, MATRIX, gap_vector(gap_costs(AlignParams(), 2)), CpuBackend(), 2, 0)
    every = np.flatnonzero(np.diff(msa.consistency.top_library(*args).off))
    assert len(every) == len(tree.children) - np.count_nonzero(tree.children.max(axis=1) < tree.n_leaves)
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MAX_MERGES", 3)
    kept = np.flatnonzero(np.diff(msa.consistency.top_library(*args).off))
    from msa.tree.guide_tree import leaf_counts

    size = leaf_counts(tree.children, tree.n_leaves)
    smaller = np.minimum(size[tree.children[:, 0]], size[tree.children[:, 1]])
    larger = np.maximum(size[tree.children[:, 0]], size[tree.children[:, 1]])
    both = kept[smaller[kept] >= 2]
    assert 3 <= len(kept) <= 6 and set(kept) <= set(every)
    assert np.sort(smaller[both])[-3:].min() >= np.sort(smaller[every])[-3]
    assert larger[kept].max() == larger.max() and len(kept[smaller[kept] < 2]) <= 3


def test_auto_draws_where_refinement_stops():
    """``--consistency auto`` (the default) takes the families ``--refine auto`` leaves alone."""
    auto = AlignParams()
    assert auto.consistency == "auto"
    assert auto.consistency_samples(REFINE_AUTO_MAX) == 0 and auto.refine_rounds(REFINE_AUTO_MAX) > 0
    assert auto.consistency_samples(REFINE_AUTO_MAX + 1) == CONSISTENCY_AUTO_SAMPLES
    assert auto.refine_rounds(REFINE_AUTO_MAX + 1) == 0
    assert auto.consistency_samples(CONSISTENCY_MAX_SEQUENCES + 1) == 0
    assert AlignParams(consistency="off").consistency_samples(1000) == 0
    assert AlignParams(consistency="3").consistency_samples(10) == 3
    assert AlignParams(consistency="3").consistency_samples(1) == 0
    assert auto.needs_whole(10) and auto.needs_whole(1000) and not auto.needs_whole(CONSISTENCY_MAX_SEQUENCES + 1)
    for bad in ("0", "many", "-2", "\u0663", ""):
        with pytest.raises(ValueError, match="consistency"):
            AlignParams(consistency=bad)


def test_auto_aligns_a_large_family_as_the_default_samples_do(monkeypatch):
    """Past REFINE_AUTO_MAX distinct sequences the default command adds the bonuses of
    CONSISTENCY_AUTO_SAMPLES a side; at the example's size it adds none."""
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 4)
    big = _family(9, REFINE_AUTO_MAX + 20, 40)
    default = align_db(big, AlignParams(device="cpu", quiet=True), CpuBackend())
    drawn = align_db(big, AlignParams(device="cpu", quiet=True, consistency=str(CONSISTENCY_AUTO_SAMPLES)),
                     CpuBackend())
    np.testing.assert_array_equal(default.rows, drawn.rows)
    check_alignment([(n, big.sequence(i)) for i, n in enumerate(big.names)], default.names, default.rows)
    small = read_fasta(str(EXAMPLE))
    plain = align_db(small, AlignParams(device="cpu", quiet=True), CpuBackend())
    off = align_db(small, AlignParams(device="cpu", quiet=True, consistency="off"), CpuBackend())
    np.testing.assert_array_equal(plain.rows, off.rows)


def test_isolation_rank_puts_the_latest_joined_leaves_first():
    """A leaf's isolation is the height of the merge that first takes it in; ties in the
    generator's order, so a tree without branch lengths gives a random draw."""
    tree = GuideTree(5, [[0, 1], [2, 5], [3, 4], [6, 7]], [0.1, 0.3, 0.1, 0.5])
    rank = msa.consistency.isolation_rank(tree, np.random.default_rng(0))
    assert sorted(rank.tolist()) == list(range(5))
    assert rank[2] == 0 and set(rank[[0, 1, 3, 4]].tolist()) == {1, 2, 3, 4}
    flat = GuideTree(5, tree.children, np.zeros(4))
    orders = {tuple(msa.consistency.isolation_rank(flat, np.random.default_rng(s)).tolist()) for s in range(6)}
    assert len(orders) > 1


def test_the_isolated_draw_takes_each_sides_most_isolated_members(monkeypatch):
    """Each guided merge's side gives its ``samples`` members of the lowest isolation rank (a
    small side whole); the random draw gives others, and both libraries hold the pairs' alignments."""
    monkeypatch.setattr(msa.consistency, "CONSISTENCY_MIN_SIDE", 5)
    db = _family(4, 60, 50)
    params = AlignParams(device="cpu", quiet=True)
    tree = build_guide_tree(db, params, CpuBackend())
    args = (db, tree, MATRIX, gap_vector(gap_costs(params, 2)), CpuBackend(), 3, 7)
    lib = msa.consistency.top_library(*args, draw="isolated")
    rank = msa.consistency.isolation_rank(tree, np.random.default_rng(7))
    from msa.tree.guide_tree import subtree_spans

    order, start, size = subtree_spans(tree.children, tree.n_leaves)
    guided = np.flatnonzero(np.diff(lib.seq_off))
    assert len(guided)
    for k in guided.tolist():
        drawn = lib.seqs[lib.seq_off[k]:lib.seq_off[k + 1]].tolist()
        want = []
        for c in tree.children[k].tolist():
            members = order[start[c]:start[c] + size[c]]
            want += members[np.argsort(rank[members])[:3]].tolist()
        assert drawn == want
    other = msa.consistency.top_library(*args, draw="random")
    assert not np.array_equal(other.seqs, lib.seqs)
    assert lib.n_pairs > 0 and other.n_pairs > 0


def test_the_draw_option(tmp_path):
    """``--consistency-draw`` takes isolated or random; the command line refuses anything else."""
    for draw in ("isolated", "random"):
        out = tmp_path / f"{draw}.fa"
        run = subprocess.run([sys.executable, "-m", "msa", "align", str(EXAMPLE), "-o", str(out), "--consistency", "8",
                              "--consistency-draw", draw, "-q"], capture_output=True)
        assert run.returncode == 0, run.stderr
        db = read_fasta(str(EXAMPLE))
        rows = read_aligned_fasta(str(out))
        check_alignment([(n, db.sequence(i)) for i, n in enumerate(db.names)], list(rows), list(rows.values()))
    bad = subprocess.run([sys.executable, "-m", "msa", "align", str(EXAMPLE), "--consistency-draw", "nearest"],
                         capture_output=True)
    assert bad.returncode != 0 and b"nearest" in bad.stderr and not bad.stdout
    with pytest.raises(ValueError, match="consistency draw"):
        AlignParams(consistency_draw="nearest")


def test_the_isolated_draw_mends_a_family_the_random_draw_fails(shared_dir):
    """PF09173.1000 (BaliFam, 671 distinct sequences): the random draw's near copies leave its
    divergent sequences unguided (SP 0.453, Clustal Omega 0.671); each side's most isolated
    members give 0.678 (docs/hard-families.md)."""
    from msa.scoring import score_alignments

    sets = shared_dir / "datasets" / "balifam" / "balifam1000"
    db = read_fasta(str(sets / "in" / "PF09173.1000"))
    ref = read_aligned_fasta(str(sets / "ref" / "PF09173.1000"))
    sp = {}
    for draw in ("random", "isolated"):
        rows = align_db(db, AlignParams(device="cpu", quiet=True, consistency_draw=draw), CpuBackend())
        sp[draw] = score_alignments(dict(zip(rows.names, (bytes(r) for r in rows.rows))), ref).sp
    assert sp["random"] < 0.5 and sp["isolated"] > 0.65
