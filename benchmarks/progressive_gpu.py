"""End-to-end progressive stage on a simulated family along its default guide tree: CPU vs GPU.

Run on a GPU machine::

    python benchmarks/progressive_gpu.py --tree tree10k.npz

The family is ``datasets/simulate.py`` (``--n`` sequences of ``--length``, seed
``--seed``); the default guide tree (single linkage over LCS distances, PartTree
above ``exact_tree_max``) is read from ``--tree`` (an ``.npz`` with ``children``
and ``heights``, written by ``--save-tree`` on any machine, since building it is
not what is measured). Times ``progressive_align`` on the CPU backend (Numba,
all cores) and the CUDA backend (after a warm-up on a small family, so
compilation is not counted), checks both give the same columns, and counts the
tree's levels and one-merge levels. ``MSA`` on ``PYTHONPATH`` decides which msa
is measured (the checkout is appended last), so an older copy can be timed too.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))
sys.path.insert(0, str(REPO / "datasets"))

from simulate import SimParams, simulate  # noqa: E402

from msa.alphabet import load_matrix  # noqa: E402
from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.params import AlignParams, gap_costs  # noqa: E402
from msa.progressive import progressive_align  # noqa: E402
from msa.seqdb import SeqDB  # noqa: E402
from msa.tree.guide_tree import GuideTree  # noqa: E402


def family(n: int, length: int, seed: int) -> SeqDB:
    fam = simulate(SimParams(n=n, length=length, seed=seed))
    return SeqDB.from_pairs(
        [(name, fam.residues[fam.offsets[i] : fam.offsets[i + 1]].tobytes()) for i, name in enumerate(fam.names)]
    )


def balanced(n: int) -> GuideTree:
    """Pairs of pairs: wide levels, for the warm-up."""
    nodes, children = list(range(n)), []
    while len(nodes) > 1:
        nxt = []
        for a, b in zip(nodes[0::2], nodes[1::2]):
            children.append([a, b])
            nxt.append(n + len(children) - 1)
        nodes = nxt + nodes[len(nodes) // 2 * 2 :]
    return GuideTree(n, np.array(children), np.arange(n - 1, dtype=float))


def timed(db: SeqDB, tree: GuideTree, backend) -> tuple[np.ndarray, float]:
    params = AlignParams(quiet=True).resolved("protein")
    matrix = load_matrix(params.matrix)
    t0 = time.perf_counter()
    cols, _ = progressive_align(db, tree, matrix, gap_costs(params, len(db)), backend)
    return cols, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--length", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tree", type=Path, required=True)
    ap.add_argument("--save-tree", action="store_true", help="build the default tree (CPU) and write --tree")
    ap.add_argument("--skip-cpu", action="store_true")
    args = ap.parse_args()
    db = family(args.n, args.length, args.seed)
    if args.save_tree:
        from msa.tree import build_guide_tree

        tree = build_guide_tree(db, AlignParams(quiet=True), CpuBackend())
        np.savez(args.tree, children=tree.children, heights=tree.heights)
        return
    saved = np.load(args.tree)
    tree = GuideTree(len(db), saved["children"], saved["heights"])
    levels = np.bincount(tree.levels())
    row = {"n": len(db), "residues": int(db.offsets[-1]), "levels": len(levels),
           "one_merge_levels": int((levels == 1).sum())}
    from msa.backends.cuda import CudaBackend

    gpu = CudaBackend()
    timed(family(200, args.length, args.seed + 1), balanced(200), gpu)  # compile
    got, row["gpu_s"] = timed(db, tree, gpu)
    if not args.skip_cpu:
        want, row["cpu_s"] = timed(db, tree, CpuBackend())
        row["equal"] = bool(np.array_equal(got, want))
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
