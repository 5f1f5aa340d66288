"""PartTree and exact trees: valid binary trees, determinism, and sensible clusters."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage

from msa.backends.cpu import CpuBackend
from msa.params import AlignParams
from msa.seqdb import SeqDB
from msa.tree import GuideTree, build_guide_tree
import msa.tree.parttree as parttree_module
from msa.tree.linkage import batch_linkage, prim_single_linkages
from msa.tree.sample_split import cut_sample_trees, sample_positions

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", np.uint8)
BACKEND = CpuBackend()


def family(rng: np.random.Generator, n_clusters: int, per: int, length: int) -> tuple[SeqDB, np.ndarray]:
    """Clusters of point mutants around centres that are themselves mutants of one root."""
    root = rng.choice(AMINO, length)
    pairs, labels = [], []
    for c in range(n_clusters):
        centre = root.copy()
        hit = rng.random(length) < 0.35
        centre[hit] = rng.choice(AMINO, hit.sum())
        for k in range(per):
            seq = centre.copy()
            hit = rng.random(length) < 0.08
            seq[hit] = rng.choice(AMINO, hit.sum())
            trim = rng.integers(0, 4, 2)
            pairs.append((f"c{c}_{k}", seq[trim[0] : length - trim[1]].tobytes()))
            labels.append(c)
    return SeqDB.from_pairs(pairs), np.array(labels)


def clade_sets(tree: GuideTree) -> set[frozenset[int]]:
    n = tree.n_leaves
    sets: dict[int, frozenset[int]] = {}
    for k, (a, b) in enumerate(tree.children.tolist()):
        sets[n + k] = sets.get(a, frozenset([a])) | sets.get(b, frozenset([b]))
    return set(sets.values())


def assert_valid(tree: GuideTree, n: int) -> None:
    assert tree.n_leaves == n
    assert tree.children.shape == (max(n - 1, 0), 2)
    if n > 1:
        used = np.sort(tree.children.ravel())
        assert np.array_equal(used, np.arange(2 * n - 2))  # every node but the root once
        assert np.all(tree.children < (n + np.arange(n - 1))[:, None])  # children first
        parent = tree.parents()
        h = np.concatenate((np.zeros(n), tree.heights))
        assert np.all(h[parent[:-1]] >= h[:-1])  # branch lengths never negative


@pytest.mark.parametrize("method", ["parttree", "auto", "upgma", "single"])
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_tiny_inputs(method: str, n: int) -> None:
    db = SeqDB.from_pairs([(f"s{i}", "MKVLAAGIVGLLL"[: 4 + 2 * i] + "W" * i) for i in range(n)])
    assert_valid(build_guide_tree(db, AlignParams(guide_tree=method), BACKEND), n)


def test_identical_and_short_sequences() -> None:
    same = SeqDB.from_pairs([(f"s{i}", "MKVLAAGIVGLLLAV") for i in range(300)])
    params = AlignParams(guide_tree="parttree", exact_tree_max=8, keep_duplicates=True)
    assert_valid(build_guide_tree(same, params, BACKEND), 300)
    rng = np.random.default_rng(5)
    short = SeqDB.from_pairs([(f"s{i}", rng.choice(AMINO, rng.integers(0, 8)).tobytes()) for i in range(400)])
    assert_valid(build_guide_tree(short, params, BACKEND), 400)
    assert_valid(build_guide_tree(short, AlignParams(distance="lcs"), BACKEND), 400)


@pytest.mark.parametrize("partsize,exact", [(50, 2), (500, 16), (50, 4096)])
def test_clusters_become_clades(partsize: int, exact: int) -> None:
    db, labels = family(np.random.default_rng(partsize + exact), 6, 40, 120)
    params = AlignParams(guide_tree="parttree", parttree_split="picks", partsize=partsize, exact_tree_max=exact)
    tree = build_guide_tree(db, params, BACKEND)
    assert_valid(tree, len(db))
    found = clade_sets(tree)
    assert all(frozenset(np.flatnonzero(labels == c).tolist()) in found for c in range(6))


def test_small_partsize_gives_valid_tree() -> None:
    """Few picks per node may split a cluster (as in MAFFT) but never break the tree."""
    db, _ = family(np.random.default_rng(8), 6, 40, 120)
    for partsize, exact in [(2, 2), (3, 2), (4, 4)]:
        params = AlignParams(guide_tree="parttree", parttree_split="picks", partsize=partsize, exact_tree_max=exact)
        assert_valid(build_guide_tree(db, params, BACKEND), len(db))


@pytest.mark.parametrize("distance", ["kmer", "lcs"])
@pytest.mark.parametrize("method", ["upgma", "single"])
def test_exact_trees_recover_clusters(method: str, distance: str) -> None:
    db, labels = family(np.random.default_rng(1), 5, 20, 100)
    tree = build_guide_tree(db, AlignParams(guide_tree=method, distance=distance), BACKEND)
    assert_valid(tree, len(db))
    found = clade_sets(tree)
    assert all(frozenset(np.flatnonzero(labels == c).tolist()) in found for c in range(5))


def test_exact_tree_refused_past_leaf_size() -> None:
    db, _ = family(np.random.default_rng(2), 2, 10, 50)
    with pytest.raises(ValueError, match="exact_tree_max"):
        build_guide_tree(db, AlignParams(guide_tree="upgma", exact_tree_max=10), BACKEND)


@pytest.mark.parametrize("single", [False, True])
def test_linkage_matches_scipy(single: bool) -> None:
    rng = np.random.default_rng(4)
    sizes = [2, 3, 17, 120]
    dists = [rng.random(s * (s - 1) // 2) for s in sizes]
    off = np.concatenate(([0], np.cumsum(sizes)))
    dist_off = np.concatenate(([0], np.cumsum([len(d) for d in dists])))
    merges, heights = batch_linkage(np.concatenate(dists), dist_off, off, single)
    for g, s in enumerate(sizes):
        rows = slice(off[g] - g, off[g + 1] - g - 1)
        z = linkage(dists[g], "single" if single else "average")
        ours = GuideTree(s, merges[rows], heights[rows])
        theirs = GuideTree(s, z[:, :2].astype(np.int64), z[:, 2] / 2)
        assert clade_sets(ours) == clade_sets(theirs)
        assert np.allclose(np.sort(heights[rows]), np.sort(z[:, 2] / 2))


def test_large_parttree_deterministic_per_seed() -> None:
    rng = np.random.default_rng(9)
    db, labels = family(rng, 40, 500, 60)
    params = AlignParams(guide_tree="auto", parttree_split="picks", exact_tree_max=16, partsize=20, seed=3)
    first = build_guide_tree(db, params, BACKEND)
    assert_valid(first, len(db))
    again = build_guide_tree(db, params, BACKEND)
    assert np.array_equal(first.children, again.children)
    assert np.array_equal(first.heights, again.heights)
    small = db.subset(np.arange(0, len(db), 10))
    for seed in (4, 5):
        assert_valid(build_guide_tree(small, params.with_(seed=seed, exact_tree_max=2), BACKEND), len(small))


@pytest.mark.parametrize("distance,pick_tree", [("kmer", "mafft"), ("lcs", "single"), ("lcs", "link")])
@pytest.mark.parametrize("thin", [0.0, 0.7])
def test_parttree_modes_keep_clusters_as_clades(distance: str, pick_tree: str, thin: float) -> None:
    db, labels = family(np.random.default_rng(11), 6, 40, 120)
    params = AlignParams(
        guide_tree="parttree", parttree_split="picks", partsize=30, exact_tree_max=16, parttree_distance=distance,
        pick_tree=pick_tree, thin_factor=thin,
    )
    tree = build_guide_tree(db, params, BACKEND)
    assert_valid(tree, len(db))
    assert np.array_equal(tree.children, build_guide_tree(db, params, BACKEND).children)
    found = clade_sets(tree)
    assert all(frozenset(np.flatnonzero(labels == c).tolist()) in found for c in range(6))


def test_parttree_grafts_prim_subtrees() -> None:
    """Clusters between exact_tree_max and mst_tree_max get Prim's exact subtrees."""
    db, labels = family(np.random.default_rng(14), 4, 60, 100)
    params = AlignParams(
        guide_tree="parttree", parttree_split="picks", partsize=20, exact_tree_max=8, mst_tree_max=100
    )
    tree = build_guide_tree(db, params, BACKEND)
    assert_valid(tree, len(db))
    found = clade_sets(tree)
    assert all(frozenset(np.flatnonzero(labels == c).tolist()) in found for c in range(4))


def test_prim_mst_gives_the_full_matrix_tree() -> None:
    """O(n)-memory Prim builds the same single-linkage tree as the condensed-matrix path."""
    db, _ = family(np.random.default_rng(12), 7, 30, 90)
    ids = np.random.default_rng(0).permutation(len(db))
    off = np.array([0, len(ids)])
    dist, dist_off = BACKEND.lcs_distance_matrix(db.codes, db.offsets, ids, off)
    want_m, want_h = batch_linkage(dist, dist_off, off, True)
    got_m, got_h = prim_single_linkages(db.codes, db.offsets, ids, np.array([0, len(ids)]), BACKEND)
    assert np.array_equal(got_m, want_m)
    assert np.array_equal(got_h, want_h)
    full = build_guide_tree(db, AlignParams(exact_tree_max=len(db)), BACKEND)
    prim = build_guide_tree(db, AlignParams(exact_tree_max=8, mst_tree_max=len(db)), BACKEND)
    assert np.array_equal(prim.children, full.children)
    assert np.array_equal(prim.heights, full.heights)


def test_lcs_nearest_reference_matches_full_matrix() -> None:
    db, _ = family(np.random.default_rng(13), 3, 25, 80)
    n = len(db)
    members = np.arange(n)
    node = (members >= 40).astype(np.int64)
    refs = np.array([0, 7, 30, 40, 41, 60, 74])
    ref_off = np.array([0, 3, 7])
    nearest, dist, link, link_off = BACKEND.lcs_nearest_reference(
        db.codes, db.offsets, refs, ref_off, members, node
    )
    full, _ = BACKEND.lcs_distance_matrix(db.codes, db.offsets, members, np.array([0, n]))
    square = np.zeros((n, n))
    square[np.triu_indices(n, 1)] = full
    square += square.T
    for k in range(2):
        r = refs[ref_off[k] : ref_off[k + 1]]
        mine = members[node == k]
        d = square[np.ix_(mine, r)]
        assert np.array_equal(nearest[mine], d.argmin(axis=1))
        assert np.array_equal(dist[mine], d.min(axis=1))
        want = np.full((len(r), len(r)), np.inf)
        for row, a in zip(d, d.argmin(axis=1)):
            want[a] = np.minimum(want[a], row)
        assert np.array_equal(link[link_off[k] : link_off[k + 1]].reshape(len(r), len(r)), want)


@pytest.mark.parametrize("sample,exact", [(1000, 16), (30, 16), (30, 4), (60, 40)])
def test_sample_split_keeps_clusters_as_clades(sample: int, exact: int) -> None:
    """The sampled single-linkage split: valid tree, same tree twice, the families stay clades."""
    db, labels = family(np.random.default_rng(11), 6, 40, 120)
    params = AlignParams(
        guide_tree="parttree", parttree_split="sample", split_sample=sample, exact_tree_max=exact
    )
    tree = build_guide_tree(db, params, BACKEND)
    assert_valid(tree, len(db))
    again = build_guide_tree(db, params, BACKEND)
    assert np.array_equal(tree.children, again.children)
    assert np.array_equal(tree.heights, again.heights)
    found = clade_sets(tree)
    assert all(frozenset(np.flatnonzero(labels == c).tolist()) in found for c in range(6))


def test_sample_split_batches_give_the_same_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sample matrices cut into many batches (as at 10^6 sequences) change nothing."""
    db, _ = family(np.random.default_rng(17), 5, 30, 80)
    params = AlignParams(guide_tree="parttree", parttree_split="sample", split_sample=20, exact_tree_max=8)
    whole = build_guide_tree(db, params, BACKEND)
    monkeypatch.setattr(parttree_module, "EXACT_BATCH_PAIRS", 150)
    batched = build_guide_tree(db, params, BACKEND)
    assert np.array_equal(whole.children, batched.children)
    assert np.array_equal(whole.heights, batched.heights)


def test_sample_split_whole_node_sample_is_single_linkage() -> None:
    """A node no larger than its sample is cut from its exact single-linkage tree, so the tree is that tree."""
    db, _ = family(np.random.default_rng(15), 4, 15, 80)
    exact = build_guide_tree(db, AlignParams(guide_tree="single"), BACKEND)
    params = AlignParams(guide_tree="parttree", parttree_split="sample", exact_tree_max=8)
    assert clade_sets(build_guide_tree(db, params, BACKEND)) == clade_sets(exact)


def test_sample_split_tiny_and_identical_inputs() -> None:
    params = AlignParams(guide_tree="parttree", parttree_split="sample", split_sample=4, exact_tree_max=2)
    for n in (2, 3, 7):
        db = SeqDB.from_pairs([(f"s{i}", "MKVLAAGIVGLLL"[: 4 + 2 * i] + "W" * i) for i in range(n)])
        assert_valid(build_guide_tree(db, params, BACKEND), n)
    same = SeqDB.from_pairs([(f"s{i}", "MKVLAAGIVGLLLAV") for i in range(60)])
    assert_valid(build_guide_tree(same, params.with_(keep_duplicates=True), BACKEND), 60)


def test_sample_positions_ignore_member_order() -> None:
    members = np.random.default_rng(3).permutation(500)
    off = np.array([0, 300, 305, 500])
    pos, s_off = sample_positions(members, off, 40, 7)
    assert s_off.tolist() == [0, 40, 45, 85]
    assert pos[40:45].tolist() == list(range(300, 305))  # a small node is its own sample
    shuffled = members.copy()
    shuffled[:300] = members[:300][::-1]
    pos2, _ = sample_positions(shuffled, off, 40, 7)
    assert set(shuffled[pos2[:40]]) == set(members[pos[:40]])
    assert np.all(np.diff(pos[:40]) > 0)
    assert set(members[sample_positions(members, off, 40, 8)[0][:40]]) != set(members[pos[:40]])


def test_cut_sample_trees_against_brute_force() -> None:
    """Clusters are clades of the sample tree, light enough or single leaves, split only when too heavy."""
    rng = np.random.default_rng(6)
    sizes = [2, 9, 60]
    dists = [rng.random(s * (s - 1) // 2) for s in sizes]
    s_off = np.concatenate(([0], np.cumsum(sizes)))
    dist_off = np.concatenate(([0], np.cumsum([len(d) for d in dists])))
    merges, heights = batch_linkage(np.concatenate(dists), dist_off, s_off, True)
    weights = rng.integers(1, 12, s_off[-1])
    limit = 25
    leaf_cl, c_off, top_m, top_h = cut_sample_trees(merges, heights, weights, s_off, limit)
    for g, s in enumerate(sizes):
        rows = slice(s_off[g] - g, s_off[g + 1] - g - 1)
        clades = clade_sets(GuideTree(s, merges[rows], heights[rows])) | {frozenset([i]) for i in range(s)}
        cl = leaf_cl[s_off[g] : s_off[g + 1]]
        n_cl = c_off[g + 1] - c_off[g]
        assert sorted(set(cl.tolist())) == list(range(n_cl)) and n_cl >= 2
        w = weights[s_off[g] : s_off[g + 1]]
        for c in range(n_cl):
            leaves = frozenset(np.flatnonzero(cl == c).tolist())
            assert leaves in clades
            assert len(leaves) == 1 or w[list(leaves)].sum() <= limit
        top = GuideTree(n_cl, top_m[c_off[g] - g : c_off[g + 1] - g - 1], top_h[c_off[g] - g : c_off[g + 1] - g - 1])
        assert_valid(top, n_cl)
        # every join above the cut is a sample clade heavier than the limit (or the root)
        for joined in clade_sets(top):
            leaves = frozenset(np.flatnonzero(np.isin(cl, list(joined))).tolist())
            assert leaves in clades
            assert len(joined) == n_cl or w[list(leaves)].sum() > limit


def test_lcs_nearest_sample_matches_full_matrix() -> None:
    db, _ = family(np.random.default_rng(16), 3, 25, 80)
    n = len(db)
    members = np.random.default_rng(1).permutation(n)
    node = (np.arange(n) >= 30).astype(np.int64)
    refs = np.array([members[3], members[5], members[30], members[31], members[50], members[74]])
    ref_off = np.array([0, 2, 6])
    nearest, dist = BACKEND.lcs_nearest_sample(db.codes, db.offsets, refs, ref_off, members, node)
    full, _ = BACKEND.lcs_distance_matrix(db.codes, db.offsets, np.arange(n), np.array([0, n]))
    square = np.zeros((n, n))
    square[np.triu_indices(n, 1)] = full
    for k in range(2):
        pick = (node == k) & ~np.isin(members, refs)  # the matrix has no self-distances
        r = refs[ref_off[k] : ref_off[k + 1]]
        d = (square + square.T)[np.ix_(members[pick], r)]
        assert np.array_equal(nearest[pick], d.argmin(axis=1))
        assert np.array_equal(dist[pick], d.min(axis=1))


def test_exact_limit_defaults_by_backend() -> None:
    """Without mst_tree_max the backend's MST_TREE_MAX applies; a given value applies on every backend."""
    from types import SimpleNamespace

    from msa.params import MST_TREE_MAX
    from msa.tree.parttree import exact_limit

    gpu = SimpleNamespace(name="cuda")
    assert exact_limit(AlignParams(), "single", gpu) == MST_TREE_MAX["cuda"]
    assert exact_limit(AlignParams(), "single", BACKEND) == MST_TREE_MAX["cpu"]
    assert exact_limit(AlignParams(mst_tree_max=9000), "single", BACKEND) == 9000
    assert exact_limit(AlignParams(mst_tree_max=9000), "upgma", gpu) == AlignParams().exact_tree_max


def test_prim_of_many_groups_gives_their_matrix_trees() -> None:
    """Batched Prim (groups of 1 to 40 members) lays out the same merges as batch_linkage."""
    db, _ = family(np.random.default_rng(21), 6, 30, 120)
    rng = np.random.default_rng(1)
    ids = rng.permutation(len(db))
    sizes = [1, 2, 40, 3, 17, 1, 5]
    off = np.concatenate(([0], np.cumsum(sizes)))
    ids = ids[: off[-1]]
    dist, dist_off = BACKEND.lcs_distance_matrix(db.codes, db.offsets, ids, off)
    want_m, want_h = batch_linkage(dist, dist_off, off, True)
    got_m, got_h = prim_single_linkages(db.codes, db.offsets, ids, off, BACKEND)
    assert np.array_equal(got_m, want_m)
    assert np.array_equal(got_h, want_h)


def test_prim_for_every_group_gives_the_same_parttree() -> None:
    """A backend that sends every single-linkage group through Prim (as the GPU does) builds
    the tree of the condensed-matrix path."""
    from msa.backends.cpu import CpuBackend

    class PrimEverywhere(CpuBackend):
        prim_every_group = True

    db, _ = family(np.random.default_rng(22), 8, 40, 100)
    params = AlignParams(guide_tree="parttree", exact_tree_max=30, split_cluster_max=25, split_sample=40, seed=3)
    want = build_guide_tree(db, params, BACKEND)
    got = build_guide_tree(db, params, PrimEverywhere())
    assert np.array_equal(got.children, want.children)
    assert np.array_equal(got.heights, want.heights)


class CountingCpu(CpuBackend):
    """The CPU backend counting its tree-stage calls; ``prim_every_group`` as the GPU's if asked."""

    def __init__(self, prim_every_group: bool = False) -> None:
        super().__init__()
        self.prim_every_group = prim_every_group
        self.calls: dict[str, int] = {}

    def __getattribute__(self, name: str):
        attr = super().__getattribute__(name)
        if name in ("lcs_prim_msts", "lcs_distance_matrix", "kmer_tables", "kmer_distance_matrix", "sw_distance_matrix"):
            calls = super().__getattribute__("calls")

            def counted(*args, **kwargs):
                calls[name] = calls.get(name, 0) + 1
                return attr(*args, **kwargs)

            return counted
        return attr


@pytest.mark.parametrize(
    ("options", "prim", "shared"),
    [
        ({}, False, {"lcs_distance_matrix": 1}),  # the CPU's default: condensed matrices
        ({}, True, {"lcs_prim_msts": 1}),  # the GPU's: every family's Prim in one call
        ({"linkage": "upgma"}, True, {"lcs_distance_matrix": 1}),
        ({"distance": "kmer"}, False, {"kmer_tables": 1, "kmer_distance_matrix": 1}),
        ({"distance": "sw", "guide_tree": "upgma"}, False, {"sw_distance_matrix": 1}),
        ({"exact_tree_max": 20, "mst_tree_max": 30}, False, None),  # exact, Prim past 20, PartTree past 30
    ],
)
def test_trees_of_many_families_are_each_built_alone(options, prim, shared) -> None:
    """build_guide_trees: each family's tree is build_guide_tree's alone (1 and 2 sequences too),
    and the families' exact trees share the backend's calls."""
    from msa.tree.build import build_guide_trees

    rng = np.random.default_rng(31)
    dbs = [family(rng, c, per, int(rng.integers(30, 90)))[0] for c, per in
           [(1, 1), (3, 9), (1, 2), (4, 10), (2, 13), (1, 1), (5, 8)]]
    params = AlignParams(**options)
    backend = CountingCpu(prim)
    trees = build_guide_trees(dbs, params, backend)
    if shared is not None:
        assert backend.calls == shared
    for db, tree in zip(dbs, trees):
        want = build_guide_tree(db, params, CountingCpu(prim))
        assert tree.n_leaves == len(db)
        assert np.array_equal(tree.children, want.children)
        assert np.array_equal(tree.heights, want.heights)


def test_trees_of_many_families_refuse_as_alone() -> None:
    from msa.tree.build import build_guide_trees

    dbs = [family(np.random.default_rng(32), 2, n, 40)[0] for n in (3, 12)]
    with pytest.raises(ValueError, match="needs the full distance matrix of 24 sequences"):
        build_guide_trees(dbs, AlignParams(guide_tree="upgma", exact_tree_max=10), BACKEND)
