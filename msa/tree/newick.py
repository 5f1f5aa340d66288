"""Newick in and out, without recursion (caterpillar trees of 10^5 leaves are fine)."""
from __future__ import annotations

import math
import re

import numpy as np

from msa.tree.guide_tree import GuideTree

class NewickError(ValueError):
    """Newick text that is not one tree, or a tree that does not fit the sequence names."""


_TOKEN = re.compile(r"\s*(?:(\[[^\]]*\])|('(?:[^']|'')*')|([(),:;])|([^\s(),:;'\[\]]+))")
_PLAIN_NAME = re.compile(r"[^\s()\[\]':;,]+")


def write_newick(tree: GuideTree, names: list[str]) -> str:
    """Newick text of ``tree`` with leaf i named ``names[i]``; branch lengths from heights.

    Example:
        >>> write_newick(GuideTree(3, [[0, 1], [3, 2]], [0.5, 1.0]), ["a", "b c", "d"])
        "((a:0.5,'b c':0.5):0.5,d:1);"
    """
    n = tree.n_leaves
    if n == 0:
        raise ValueError("an empty tree has no Newick form")
    if len(names) < n:
        raise ValueError(f"{n} leaves but only {len(names)} names")
    height = [0.0] * n + tree.heights.tolist()
    parent = tree.parents().tolist()
    children = tree.children.tolist()

    def length(node: int) -> str:
        p = parent[node]
        return "" if p < 0 else f":{height[p] - height[node]:.10g}"

    parts: list[str] = []
    stack: list[int | str] = [tree.root]  # node ids, or text to emit
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif item < n:
            parts.append(_quote(names[item]) + length(item))
        else:
            a, b = children[item - n]
            parts.append("(")
            stack += [")" + length(item), b, ",", a]
    return "".join(parts) + ";"


def _quote(name: str) -> str:
    if _PLAIN_NAME.fullmatch(name):
        return name
    return "'" + name.replace("'", "''") + "'"


def read_newick(text: str, names: list[str]) -> GuideTree:
    """A tree over ``names`` (leaf i = ``names[i]``) from Newick text.

    Leaves whose name is not in ``names`` are pruned, and so are nodes left with
    one child; a node with more than two children is resolved into a balanced
    binary subtree, pairing neighbours left to right. Missing branch lengths
    count as 0.

    Raises:
        NewickError (a ValueError): a name of ``names`` is absent from the tree (or appears
            twice), or the text is not Newick.

    Example:
        >>> read_newick("((a,b),(c,x),d);", ["d", "c", "b", "a"]).children.tolist()
        [[3, 2], [4, 1], [5, 0]]
    """
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in index:
            raise NewickError(f"name {name!r} occurs twice in the sequences")
        index[name] = i
    children, labels, lengths = _parse(text)
    n = len(names)
    if n == 0:
        raise NewickError("no names to map the tree onto")

    leaf_seen = np.zeros(n, dtype=bool)
    merges: list[tuple[int, int]] = []
    merge_heights: list[float] = []
    n_nodes = len(labels)
    result_id = [-1] * n_nodes  # new id of each parsed node's kept subtree, -1 if none
    result_h = [0.0] * n_nodes  # height at the top of that subtree
    for v in _postorder(children):
        kids = children[v]
        if not kids:
            i = index.get(labels[v])
            if i is not None:
                if leaf_seen[i]:
                    raise NewickError(f"name {labels[v]!r} occurs twice in the tree")
                leaf_seen[i] = True
                result_id[v] = i
            continue
        kept = [c for c in kids if result_id[c] >= 0]
        if not kept:
            continue
        top = max(result_h[c] + lengths[c] for c in kept)
        ids = [result_id[c] for c in kept]
        while len(ids) > 1:  # balanced resolution of multifurcations
            paired = []
            for k in range(0, len(ids) - 1, 2):
                merges.append((ids[k], ids[k + 1]))
                merge_heights.append(top)
                paired.append(n + len(merges) - 1)
            if len(ids) % 2:
                paired.append(ids[-1])
            ids = paired
        result_id[v] = ids[0]
        result_h[v] = top
    missing = [names[i] for i in np.flatnonzero(~leaf_seen)]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise NewickError(f"names missing from the tree: {', '.join(map(repr, missing[:5]))}{more}")
    return GuideTree(
        n, np.asarray(merges, dtype=np.int64).reshape(-1, 2), np.asarray(merge_heights, dtype=np.float64)
    )


def _parse(text: str) -> tuple[list[list[int]], list[str], list[float]]:
    """Nodes of a Newick text: children lists, labels and branch lengths (root is node 0).

    Strict about what it does not understand: a character that starts no token (an
    unclosed quote or comment, a stray ']'), a second label or branch length on one
    node, or a length that is not a finite number is an error, never skipped.
    """
    children: list[list[int]] = []
    labels: list[str] = []
    lengths: list[float] = []
    has_length: list[bool] = []
    stack: list[int] = []
    last = -1  # node a label or ':length' attaches to
    want_item = True  # after '(' or ',' a child (possibly unnamed) is due
    labelled = False  # ``last`` has its label (or its length, after which no label comes)
    pos = 0
    done = False

    def new_node(label: str) -> int:
        children.append([])
        labels.append(label)
        lengths.append(0.0)
        has_length.append(False)
        node = len(labels) - 1
        if stack:
            children[stack[-1]].append(node)
        elif node != 0:
            raise NewickError("Newick text has more than one root")
        return node

    def next_token():
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == m.start():
            rest = text[pos:]
            if not rest.strip():
                return None
            at = pos + len(rest) - len(rest.lstrip())
            hint = " (an unclosed quote or comment)" if text[at] in "'[" else ""
            raise NewickError(f"unexpected {text[at]!r} in Newick text at {at}{hint}")
        return m

    while (m := next_token()) is not None:
        pos = m.end()
        comment, quoted, punct, word = m.groups()
        if comment is not None:
            continue
        if punct == "(":
            if not want_item:
                raise NewickError(f"'(' after a label or ')' in Newick text at {m.end() - 1}")
            stack.append(new_node(""))
            want_item = True
        elif punct in (",", ")"):
            if want_item:
                new_node("")
            if not stack:
                raise NewickError(f"unbalanced ')' or stray ',' in Newick text at {m.end() - 1}")
            if punct == ")":
                last = stack.pop()
                want_item, labelled = False, False
            else:
                want_item = True
        elif punct == ":":
            if want_item:  # '(:1,...': an unnamed leaf with a length
                last = new_node("")
                want_item = False
            length = next_token()
            if length is None or length.group(4) is None or last < 0:
                raise NewickError(f"bad branch length in Newick text at {pos}")
            value = length.group(4)
            try:
                lengths[last] = float(value)
            except ValueError:
                raise NewickError(f"bad branch length {value!r} in Newick text") from None
            if not math.isfinite(lengths[last]):
                raise NewickError(f"branch length {value!r} in Newick text is not a finite number")
            if has_length[last]:
                raise NewickError(f"a second branch length {value!r} for one node in Newick text")
            has_length[last] = labelled = True
            pos = length.end()
        elif punct == ";":
            done = True
            break
        else:
            label = quoted[1:-1].replace("''", "'") if quoted is not None else word
            if want_item:
                last = new_node(label)
                want_item = False
                labelled = True
            elif labelled:
                raise NewickError(
                    f"a second label {label!r} for one node in Newick text at {m.start(2 if quoted else 4)} "
                    "(quote names with blanks: 'seq 1')"
                )
            else:  # a label of an internal node (support value, name): not needed
                labelled = True
    if not done or stack or not labels or text[pos:].strip():
        raise NewickError("Newick text must be one tree ending with ';'")
    return children, labels, lengths


def _postorder(children: list[list[int]]) -> list[int]:
    """Nodes children-first, iteratively."""
    out: list[int] = []
    stack = [0]
    while stack:
        v = stack.pop()
        out.append(v)
        stack.extend(children[v])
    out.reverse()
    return out
