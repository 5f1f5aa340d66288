"""Newick writer and parser: round trips, pruning, quoting, errors, deep trees."""
from __future__ import annotations

import numpy as np
import pytest

from msa.tree import GuideTree, read_newick, write_newick


def clade_sets(tree: GuideTree) -> set[frozenset[int]]:
    n = tree.n_leaves
    sets: dict[int, frozenset[int]] = {}
    for k, (a, b) in enumerate(tree.children.tolist()):
        sets[n + k] = sets.get(a, frozenset([a])) | sets.get(b, frozenset([b]))
    return set(sets.values())


def random_tree(rng: np.random.Generator, n: int) -> GuideTree:
    pool = list(range(n))
    children, heights, h = [], [], {i: 0.0 for i in range(n)}
    for k in range(n - 1):
        a, b = (pool.pop(int(rng.integers(len(pool)))) for _ in range(2))
        node = n + k
        h[node] = max(h[a], h[b]) + float(rng.random())
        children.append((a, b))
        heights.append(h[node])
        pool.append(node)
    return GuideTree(n, np.array(children).reshape(-1, 2), np.array(heights))


@pytest.mark.parametrize("n", [1, 2, 3, 50])
def test_round_trip(n: int) -> None:
    tree = random_tree(np.random.default_rng(n), n)
    names = [f"seq {i}" if i % 3 == 0 else f"sp|P{i}|X_HUMAN" for i in range(n)]
    names[0] = "it's (odd): [x]"
    back = read_newick(write_newick(tree, names), names)
    assert clade_sets(back) == clade_sets(tree)
    assert np.allclose(np.sort(back.heights), np.sort(tree.heights))


def test_names_map_to_given_order_and_extra_leaves_are_pruned() -> None:
    text = "[comment]((a:1,(b:1,zz:2):1):0.5,('c d':1,e:1,f:1)lab:2,y:3);"
    tree = read_newick(text, ["f", "a", "c d", "b", "e"])
    assert clade_sets(tree) == {
        frozenset({1, 3}),  # (a,b) after pruning zz
        frozenset({0, 2, 4}),
        frozenset({2, 4}),  # multifurcation (c d, e, f) resolved as ((c d, e), f)
        frozenset(range(5)),
    }


def test_missing_or_duplicate_names() -> None:
    with pytest.raises(ValueError, match="'q'"):
        read_newick("(a,b);", ["a", "q", "b"])
    with pytest.raises(ValueError, match="twice"):
        read_newick("(a,(b,a));", ["a", "b"])
    with pytest.raises(ValueError):
        read_newick("(a,b", ["a", "b"])


def test_deep_caterpillar() -> None:
    n = 100_000
    children = np.array([[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)])
    tree = GuideTree(n, children, np.arange(1, n, dtype=float))
    names = [f"s{i}" for i in range(n)]
    text = write_newick(tree, names)
    back = read_newick(text, names)
    assert np.array_equal(back.children, children)
    assert np.allclose(back.heights, tree.heights)
