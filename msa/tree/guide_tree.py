"""The guide tree as arrays: leaves 0..n-1, internal node n+k joins children[k]."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from msa._runtime.jit import njit


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
        """Leaves in left-to-right order (iterative, no recursion limit)."""
        out: list[int] = []
        stack = [self.root] if self.n_leaves else []
        while stack:
            node = stack.pop()
            if node < self.n_leaves:
                out.append(node)
            else:
                a, b = self.children[node - self.n_leaves]
                stack.append(int(b))
                stack.append(int(a))
        return np.asarray(out, dtype=np.int64)


@njit(cache=True, nogil=True)
def node_levels(children: np.ndarray, n_leaves: int) -> np.ndarray:
    """GuideTree.levels: each internal node's level, 1 + the larger of its children's (leaves 0),
    in one pass over the merges (children are earlier nodes); compiled, since a Python loop
    took 2.3 s at 10^6 leaves."""
    level = np.zeros(n_leaves + len(children), dtype=np.int64)
    for k in range(len(children)):
        level[n_leaves + k] = 1 + max(level[children[k, 0]], level[children[k, 1]])
    return level[n_leaves:]
