"""Sequence weights (msa.tree.weights): ClustalW's from the guide tree, as small integers, and
what a weight means in the progressive stage: a sequence of weight w merges as w copies of it."""
from __future__ import annotations

import numpy as np
import pytest

from msa.params import AlignParams, gap_costs
from msa.progressive import progressive_align
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree
from msa.tree.weights import _clustalw, family_weights, tree_weights

from tests.unit.test_progressive import MATRIX, balanced, caterpillar, check_invariants, random_db, random_tree


def _random_heights(rng, tree: GuideTree) -> GuideTree:
    """``tree`` with random heights that grow towards the root (a node above its children)."""
    n = tree.n_leaves
    h = np.zeros(tree.n_nodes)
    for k, (a, b) in enumerate(tree.children.tolist()):
        h[n + k] = max(h[a], h[b]) + rng.random()
    return GuideTree(n, tree.children, h[n:])


def test_clustalw_by_hand() -> None:
    """((a, b) at 0.1, c) at 0.5: a and b each keep 0.1 and half of the shared 0.4, c its 0.5."""
    t = GuideTree(3, [[0, 1], [2, 3]], [0.1, 0.5])
    np.testing.assert_allclose(_clustalw(t.children, t.heights, 3), [0.3, 0.3, 0.5])
    assert tree_weights(t).tolist() == [3, 3, 5]  # 4 x w / mean w, rounded
    assert tree_weights(t, scale=40).tolist() == [33, 33, 55]


@pytest.mark.parametrize("seed", range(4))
def test_weights_share_out_every_branch(seed: int) -> None:
    """Each branch's length is shared by the leaves below it, so the weights add up to the
    tree's total branch length; a leaf is never lighter than its own branch."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 200))
    tree = _random_heights(rng, random_tree(rng, n))
    raw = _clustalw(tree.children, tree.heights, n)
    h = np.concatenate((np.zeros(n), tree.heights))
    parent = tree.parents()
    branches = h[parent[:-1]] - h[:-1]
    assert raw.sum() == pytest.approx(branches.sum())
    assert (raw >= branches[:n] - 1e-12).all()
    w = tree_weights(tree)
    assert w.dtype == np.int64 and w.min() >= 1 and len(w) == n


def test_no_weights_where_they_are_all_equal_or_off(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    flat = GuideTree(4, balanced(4).children, [1.0, 1.0, 2.0])  # every leaf the same path
    assert tree_weights(flat) is None
    assert tree_weights(GuideTree(5, caterpillar(5).children, np.zeros(4))) is None  # no branch lengths
    tree = _random_heights(rng, random_tree(rng, 30))
    assert family_weights(tree, AlignParams()) is not None
    assert family_weights(tree, AlignParams(weights="none")) is None
    assert family_weights(GuideTree(2, [[0, 1]], [1.0]), AlignParams()) is None
    monkeypatch.setattr("msa.tree.weights.WEIGHTS_MAX_SEQUENCES", 29)
    assert family_weights(tree, AlignParams()) is None  # too many sequences: unweighted
    with pytest.raises(ValueError, match="unknown weights"):
        AlignParams(weights="henikoff")


def _copies(db: SeqDB, tree: GuideTree, weights: np.ndarray) -> tuple[SeqDB, GuideTree, np.ndarray]:
    """Each sequence i as weights[i] identical copies, joined first (a chain), then ``tree``
    over the chains' roots. Returns the family, its tree and each sequence's first copy."""
    n = len(db)
    pairs, first = [], np.zeros(n, dtype=np.int64)
    for i in range(n):
        first[i] = len(pairs)
        pairs += [(f"{db.names[i]}.{c}", db.sequence(i)) for c in range(int(weights[i]))]
    total = len(pairs)
    kids, node = [], np.zeros(2 * n - 1, dtype=np.int64)
    for i in range(n):
        root = int(first[i])
        for c in range(1, int(weights[i])):
            kids.append([root, int(first[i]) + c])
            root = total + len(kids) - 1
        node[i] = root
    for k, (a, b) in enumerate(tree.children.tolist()):
        kids.append([int(node[a]), int(node[b])])
        node[n + k] = total + len(kids) - 1
    return SeqDB.from_pairs(pairs), GuideTree(total, np.array(kids), np.arange(len(kids), dtype=float)), first


@pytest.mark.parametrize("shape", ["caterpillar", "balanced", "random"])
def test_a_weight_merges_as_that_many_copies(shape: str) -> None:
    """Sequence i of weight w aligns exactly as w identical copies of it, merged among
    themselves first: the weighted profile is the copies' profile (counts w, no gaps)."""
    rng = np.random.default_rng(len(shape))
    n = 12
    db = random_db(rng, n, 20, 60)
    tree = {"caterpillar": caterpillar, "balanced": balanced}.get(shape, lambda k: random_tree(rng, k))(n)
    weights = rng.integers(1, 6, n)
    gaps = gap_costs(AlignParams(), n)
    columns, width = progressive_align(db, tree, MATRIX, gaps, _cpu(), weights)
    check_invariants(db, columns, width)
    big, big_tree, first = _copies(db, tree, weights)
    big_columns, big_width = progressive_align(big, big_tree, MATRIX, gaps, _cpu())
    assert width == big_width
    for i in range(n):
        np.testing.assert_array_equal(
            columns[db.offsets[i] : db.offsets[i + 1]], big_columns[big.offsets[first[i]] : big.offsets[first[i] + 1]])


def _cpu():
    from msa.backends.cpu import CpuBackend

    return CpuBackend()
