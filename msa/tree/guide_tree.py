"""The guide tree as arrays: leaves 0..n-1, internal node n+k joins children[k]."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa.jit import njit


@dataclass
class GuideTree:
    """A rooted binary tree in merge order.

    Leaves are ``0..n_leaves-1`` (indices into the sequences it was built for).
    Internal node ``n_leaves + k`` joins ``children[k, 0]`` and ``children[k, 1]``;
    both are smaller node ids, so rows are already in a valid bottom-up order and
    the root is the last node. ``heights[k]`` is that node's height (for branch
    lengths in Newick output).
    """

    n_leaves: int
    children: np.ndarray  # int64 (n_leaves - 1, 2)
    heights: np.ndarray  # float64 (n_leaves - 1,)

    def __post_init__(self) -> None:
        self.children = np.asarray(self.children, dtype=np.int64).reshape(-1, 2)
        self.heights = np.asarray(self.heights, dtype=np.float64).reshape(-1)
        if len(self.children) != max(self.n_leaves - 1, 0):
            raise ValueError("a binary tree over n leaves has n-1 internal nodes")

    @property
    def n_nodes(self) -> int:
        return 2 * self.n_leaves - 1 if self.n_leaves else 0

    @property
    def root(self) -> int:
        return self.n_nodes - 1

    def parents(self) -> np.ndarray:
        """parent id of every node; -1 for the root."""
        parent = np.full(self.n_nodes, -1, dtype=np.int64)
        internal = np.arange(self.n_leaves, self.n_nodes)
        parent[self.children[:, 0]] = internal
        parent[self.children[:, 1]] = internal
        return parent

    def levels(self) -> np.ndarray:
        """Scheduling level of each internal node: 1 + max level of its children (leaves 0).

        Every internal node of one level can be aligned in the same batch.
        """
        return node_levels(self.children, self.n_leaves)

    def leaf_order(self) -> np.ndarray:
        """Leaves in left-to-right order (each node's first child's leaves first)."""
        return subtree_spans(self.children, self.n_leaves)[0]


@njit(cache=True, nogil=True)
def node_levels(children: np.ndarray, n_leaves: int) -> np.ndarray:
    """GuideTree.levels: each internal node's level, 1 + the larger of its children's (leaves 0),
    in one pass over the merges (children are earlier nodes); compiled, since a Python loop
    took 2.3 s at 10^6 leaves."""
    level = np.zeros(n_leaves + len(children), dtype=np.int64)
    for k in range(len(children)):
        level[n_leaves + k] = 1 + max(level[children[k, 0]], level[children[k, 1]])
    return level[n_leaves:]


@dataclass
class TreeCut:
    """A tree cut into subtrees below a top part: subtree ``k`` is rooted at ``roots[k]`` (its
    leaves ``leaves[k]``, ascending, and its own tree over them, leaf ``i`` being
    ``leaves[k][i]``); ``top`` is the tree over the subtrees (its leaf ``k`` is subtree ``k``),
    whose merges are the original tree's above the cut, in its order. Aligning each subtree
    and then merging their roots along ``top`` makes every merge of the whole tree, so a family
    can be split across workers without changing a byte (msa.run.split)."""

    roots: np.ndarray
    top: GuideTree
    leaves: list[np.ndarray]
    trees: list[GuideTree]

    @property
    def sizes(self) -> np.ndarray:
        """Leaves of each subtree."""
        return np.array([len(leaves) for leaves in self.leaves], dtype=np.int64)


def cut_tree(tree: GuideTree, max_leaves: int, max_top: int) -> TreeCut:
    """Cut ``tree`` from its root down, always at the largest subtree, until none has more than
    ``max_leaves`` leaves or ``max_top`` nodes are above the cut (a tree like a chain would
    otherwise peel off one leaf per cut)."""
    import heapq

    n = tree.n_leaves
    sizes = leaf_counts(tree.children, n)
    heap = [(-int(sizes[tree.root]), tree.root)]
    above: list[int] = []
    while -heap[0][0] > max_leaves and len(above) < max_top:
        _, node = heapq.heappop(heap)
        above.append(node)
        for child in tree.children[node - n].tolist():
            heapq.heappush(heap, (-int(sizes[child]), child))
    roots = np.array(sorted(node for _, node in heap), dtype=np.int64)
    top_nodes = np.array(sorted(above), dtype=np.int64)
    k = len(roots)
    rank = np.full(tree.n_nodes, -1, dtype=np.int64)  # a node's id in the top tree
    rank[roots] = np.arange(k)
    rank[top_nodes] = k + np.arange(len(top_nodes))
    top = GuideTree(k, rank[tree.children[top_nodes - n]] if len(top_nodes) else np.zeros((0, 2)),
                    tree.heights[top_nodes - n] if len(top_nodes) else np.zeros(0))
    label = subtree_labels(tree.children, n, roots)
    leaves, trees = [], []
    leaf_order = np.argsort(label[:n], kind="stable")
    leaf_bounds = np.searchsorted(label[:n][leaf_order], np.arange(k + 1))
    inner = label[n:]
    inner_order = np.argsort(inner, kind="stable")
    inner_bounds = np.searchsorted(inner[inner_order], np.arange(k + 1))
    local = np.zeros(tree.n_nodes, dtype=np.int64)  # a node's id in its subtree's tree
    for s in range(k):
        own = leaf_order[leaf_bounds[s] : leaf_bounds[s + 1]]
        merges = inner_order[inner_bounds[s] : inner_bounds[s + 1]]  # rows of tree.children, ascending
        local[own] = np.arange(len(own))
        local[merges + n] = len(own) + np.arange(len(merges))
        leaves.append(own)
        trees.append(GuideTree(len(own), local[tree.children[merges]], tree.heights[merges]))
    return TreeCut(roots, top, leaves, trees)


@njit(cache=True, nogil=True)
def leaf_counts(children: np.ndarray, n_leaves: int) -> np.ndarray:
    """Leaves below every node (1 for a leaf)."""
    size = np.ones(n_leaves + len(children), dtype=np.int64)
    for k in range(len(children)):
        size[n_leaves + k] = size[children[k, 0]] + size[children[k, 1]]
    return size


@njit(cache=True, nogil=True)
def forest_spans(children: np.ndarray, counts: np.ndarray, roots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(start, size)``: leaf ``i``'s ``counts[i]`` slots laid out left to right, the trees of
    ``roots`` one after another, so that every node's leaves hold the one span ``start[v] ..
    start[v] + size[v]`` (children are merged before their parents, as in a GuideTree)."""
    n = len(counts)
    size = np.zeros(n + len(children), dtype=np.int64)
    size[:n] = counts
    for k in range(len(children)):
        size[n + k] = size[children[k, 0]] + size[children[k, 1]]
    start = np.zeros(n + len(children), dtype=np.int64)
    at = 0
    for r in roots:
        start[r] = at
        at += size[r]
    for k in range(len(children) - 1, -1, -1):
        a, b = children[k, 0], children[k, 1]
        start[a] = start[n + k]
        start[b] = start[n + k] + size[a]
    return start, size


@njit(cache=True, nogil=True)
def subtree_spans(children: np.ndarray, n_leaves: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, start, size)``: the leaves left to right (GuideTree.leaf_order's order), and each
    node's leaves as ``order[start[v]:start[v] + size[v]]``."""
    root = np.full(1 if n_leaves else 0, n_leaves + len(children) - 1, dtype=np.int64)
    start, size = forest_spans(children, np.ones(n_leaves, dtype=np.int64), root)
    order = np.empty(n_leaves, dtype=np.int64)
    for i in range(n_leaves):
        order[start[i]] = i
    return order, start, size


@njit(cache=True, nogil=True)
def subtree_labels(children: np.ndarray, n_leaves: int, roots: np.ndarray) -> np.ndarray:
    """For every node, the index in ``roots`` of the subtree it is in (-1 above them): each
    node passes its label to its children, parents first (children are smaller ids)."""
    label = np.full(n_leaves + len(children), -1, dtype=np.int64)
    for s in range(len(roots)):
        label[roots[s]] = s
    for k in range(len(children) - 1, -1, -1):
        if label[n_leaves + k] >= 0:
            label[children[k, 0]] = label[n_leaves + k]
            label[children[k, 1]] = label[n_leaves + k]
    return label
