"""The hybrid's level model (msa.progressive GPU_* / CPU_*): every level timed on each side, then fitted.

Run on a GPU machine, then fit anywhere::

    python benchmarks/level_model.py time FAMILY.fa ... -o levels.npz
    python benchmarks/level_model.py fit levels.npz

``time`` builds each family's guide tree (on the GPU) and runs its progressive stage twice
with every level forced onto the GPU, and twice onto the host's CPU (all cores), keeping
the second run: per level, its merges, cells, largest merge's cells, longest merge's
narrower side and two sides, columns, and its wall time (the GPU's levels end in a wait for
the parents' widths, so their time is the device's too). ``fit`` fits each side's model by
non-negative least squares on relative error, prints the constants to put in
msa/progressive.py, and compares per family: all on the GPU, all on the host, the best side
per level (the oracle) and the model's choice (moves between sides not counted).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from fits import nnls_relative

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))

FIELDS = ("merges", "cells", "max_cells", "max_narrow", "max_steps", "columns", "seconds")


def time_levels(paths: list[str], out: str, threads: int) -> None:
    import msa.progressive as progressive
    from msa.alphabet import load_matrix
    from msa.backends import get_backend
    from msa.io.fasta import read_fasta
    from msa.params import AlignParams, gap_costs
    from msa.pipeline import _set_threads, family_tree, prepare_family

    from common import write_manifest  # after msa: common puts the checkout first on sys.path

    gpu = get_backend("cuda")
    force, rows, stamp = [0], [], [0.0]

    def choose(self, wa, wb, away):  # a level starts: the previous one ended
        now = time.perf_counter()
        if rows and rows[-1][-1] < 0:
            rows[-1][-1] = now - stamp[0]
        self.backend(1)
        rows.append([len(wa), float((wa * wb).sum()), float((wa * wb).max()), float(np.minimum(wa, wb).max()),
                     float((wa + wb).max()), float((wa + wb).sum()), -1.0])
        stamp[0] = time.perf_counter()
        return force[0]

    place = progressive._place_columns

    def placed(*args):  # the last level ended
        rows[-1][-1] = time.perf_counter() - stamp[0]
        return place(*args)

    progressive._Sides.choose, progressive._place_columns = choose, placed
    found = {}
    for path in paths:
        family = prepare_family(read_fasta(path), AlignParams(device="cuda", threads=threads), note=False)
        _set_threads(threads)
        tree = family_tree(family, gpu)
        matrix, gaps = load_matrix(family.params.matrix), gap_costs(family.params, len(family.db))
        for side in (0, 1):
            force[0] = side
            for _ in range(2):
                rows.clear()
                start = time.perf_counter()
                progressive.progressive_align(family.unique, tree, matrix, gaps, gpu)
                total = time.perf_counter() - start
            found[f"{Path(path).name}:{side}"] = np.array(rows)
            print(f"{Path(path).name} {'gpu' if side == 0 else 'host'}: {total:.3f} s, {len(rows)} levels", flush=True)
    write_manifest(Path(out).resolve().parent)
    np.savez_compressed(out, threads=threads, **found)


def features(a: np.ndarray, side: int, threads: int) -> np.ndarray:
    """The model's terms per level, in the order of msa.progressive's constants."""
    merges, cells, max_cells, narrow, steps, columns, _ = a.T
    if side == 0:  # GPU_LEVEL_S, GPU_ROW_S, GPU_STEP_S, GPU_COLUMN_S, GPU_MERGE_S
        return np.stack([np.ones_like(merges), narrow, steps, columns, merges], 1)
    # CPU_LEVEL_S, CPU_CELL_S, CPU_COLUMN_S, CPU_MERGE_S
    return np.stack([np.ones_like(merges), cells / threads + max_cells, columns, merges], 1)


def fit(path: str) -> None:
    data = np.load(path)
    threads = int(data["threads"])
    families = sorted({k.split(":")[0] for k in data.files if ":" in k})
    names = (("GPU_LEVEL_S", "GPU_ROW_S", "GPU_STEP_S", "GPU_COLUMN_S", "GPU_MERGE_S"),
             ("CPU_LEVEL_S", "CPU_CELL_S", "CPU_COLUMN_S", "CPU_MERGE_S"))
    coef = []
    for side in (0, 1):
        x = np.concatenate([features(data[f"{f}:{side}"], side, threads) for f in families])
        y = np.concatenate([data[f"{f}:{side}"][:, -1] for f in families])
        c = nnls_relative(x, y, floor=1e-4)
        coef.append(c)
        err = np.median(np.abs(x @ c - y) / y)
        print(f"{'gpu' if side == 0 else 'host'}: {len(y)} levels, median relative error {err:.2f}")
        for name, value in zip(names[side], c):
            print(f"  {name} = {value:.2g}")
    print("family: all GPU, all host, best side per level, the model's choice (seconds of levels)")
    for f in families:
        g, h = data[f"{f}:0"], data[f"{f}:1"]
        host = features(h, 1, threads) @ coef[1] < features(g, 0, threads) @ coef[0]
        print(f"  {f}: {g[:, -1].sum():.2f} {h[:, -1].sum():.2f} {np.minimum(g[:, -1], h[:, -1]).sum():.2f} "
              f"{np.where(host, h[:, -1], g[:, -1]).sum():.2f} (host for {host.sum()} of {len(g)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("time")
    t.add_argument("families", nargs="+")
    t.add_argument("-o", "--out", default="levels.npz")
    t.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    f = sub.add_parser("fit")
    f.add_argument("levels")
    a = ap.parse_args()
    if a.command == "time":
        time_levels(a.families, a.out, a.threads)
    else:
        fit(a.levels)


if __name__ == "__main__":
    main()
