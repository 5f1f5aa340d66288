"""One family split along its guide tree (msa.run.split), in one process: the cut covers every
sequence once, and the pieces' output is the one-process output, byte for byte."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from msa.alignment import check_alignment
from msa.backends.cpu import CpuBackend
from msa.io import read_fasta, write_alignment
from msa.params import AlignParams
from msa.pipeline import align_prepared, family_tree, prepare_family
from msa.testing import split_output
from msa.seqdb import SeqDB
from msa.tree.guide_tree import GuideTree, cut_tree

EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "example.fa"


def chain(n: int) -> GuideTree:
    kids = [[0, 1]] + [[n + k - 1, k + 1] for k in range(1, n - 1)]
    return GuideTree(n, np.array(kids), np.arange(n - 1, dtype=float))


def random_tree(rng: np.random.Generator, n: int) -> GuideTree:
    nodes, kids = list(range(n)), []
    while len(nodes) > 1:
        a, b = sorted(rng.choice(len(nodes), 2, replace=False).tolist(), reverse=True)
        kids.append([nodes.pop(a), nodes.pop(b)])
        nodes.append(n + len(kids) - 1)
    return GuideTree(n, np.array(kids), np.arange(n - 1, dtype=float))


@pytest.mark.parametrize("seed", range(4))
def test_a_cut_covers_every_leaf_once_and_keeps_every_merge(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    tree = random_tree(rng, n)
    most = int(rng.integers(1, n + 1))
    cut = cut_tree(tree, most, 1 << 12)
    assert sorted(np.concatenate(cut.leaves).tolist()) == list(range(n))
    assert all(len(leaves) <= most for leaves in cut.leaves)
    # Every merge is in one subtree or in the top: n - 1 in all, the top over the subtrees.
    assert sum(t.n_leaves - 1 for t in cut.trees) + len(cut.top.children) == n - 1
    assert cut.top.n_leaves == len(cut.roots) and cut.sizes.tolist() == [len(x) for x in cut.leaves]
    for leaves, sub in zip(cut.leaves, cut.trees):  # the subtree's leaves in the same left-to-right order
        order = leaves[sub.leaf_order()]
        whole = tree.leaf_order()
        assert order.tolist() == whole[np.isin(whole, leaves)].tolist()


def test_a_chain_stops_at_the_most_top_merges() -> None:
    cut = cut_tree(chain(100), 10, 5)
    assert len(cut.top.children) == 5 and sorted(cut.sizes.tolist()) == [1, 1, 1, 1, 1, 95]


def _family(seed: int) -> SeqDB:
    """Random records of the example, some of them twice under other names (duplicates' rows)."""
    rng = np.random.default_rng(seed)
    db = read_fasta(EXAMPLE)
    take = rng.choice(len(db), int(rng.integers(30, len(db))), replace=False)
    index = np.concatenate([take, rng.choice(take, 10)])
    out = db.subset(index)
    for k in range(len(take), len(index)):
        out.names[k] = f"copy{k}"
        out.descriptions[k] = f"copy{k} of {out.descriptions[k]}"
    return out


@pytest.mark.parametrize("seed", range(3))
def test_the_pieces_write_the_one_process_output(seed: int, tmp_path: Path) -> None:
    db = _family(seed)
    family = prepare_family(db, AlignParams(device="cpu", refine="off", consistency="off"), note=False)
    backend = CpuBackend()
    whole = align_prepared(family, backend)
    expected = io.BytesIO()
    write_alignment(expected, whole, "fasta")
    tree = family_tree(family, backend)
    for pieces in (1, 2, 3, 8):
        got = split_output(family, tree, pieces, backend, tmp_path / f"out-{pieces}.fa")
        assert got == expected.getvalue(), pieces
    records = [r.split(b"\n", 1) for r in got[1:].split(b"\n>")]
    check_alignment([(n, db.sequence(i)) for i, n in enumerate(db.names)],
                    [head.split()[0].decode() for head, _ in records], [rows.replace(b"\n", b"") for _, rows in records])


def test_the_split_size_is_the_constant_unless_the_environment_sets_one(monkeypatch) -> None:
    """msa.run.split.split_family_bytes: SPLIT_FAMILY_BYTES, or $MSA_SPLIT_FAMILY_BYTES (digits) where set."""
    from msa.run import split

    monkeypatch.delenv(split.SPLIT_BYTES_ENV, raising=False)
    assert split.split_family_bytes() == split.SPLIT_FAMILY_BYTES == 1 << 30
    monkeypatch.setenv(split.SPLIT_BYTES_ENV, "0")
    assert split.split_family_bytes() == 0
    monkeypatch.setenv(split.SPLIT_BYTES_ENV, "lots")
    assert split.split_family_bytes() == split.SPLIT_FAMILY_BYTES
