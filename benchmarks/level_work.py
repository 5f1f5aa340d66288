"""The progressive stage's work, level by level: how much of a family's DP sits in levels too
small to fill a GPU, and what a level's fixed cost makes of them.

    python benchmarks/level_work.py FAMILY.fa [...] [--json OUT.json] [--level-ms 0.9] [--gcups 25] [--sms 132]

Each family runs msa's default pipeline on the CPU (tree, weights, consistency library) and
then its progressive stage through the level loop, one ``profile_align`` call per level piece,
each call counted: its merges, DP cells (the two children's widths multiplied), profile columns
read and written (counts rows of ``N_COUNTS`` int32), and whether it carries consistency
bonuses. The same alignment comes out as from the CPU's one-call stage (checked).

Levels are put in kinds by their merges (1, 2-15, 16-131, 132 and more: an H100 has 132
multiprocessors) and, per kind, the script prints the levels, merges, cells and bytes, and three
times on a GPU: ``levels x --level-ms`` (the level loop's fixed cost a level, measured on an
H100 host: docs/progressive.md), ``cells / --gcups`` (the wide-batch DP rate, docs/kernels.md)
and each level's largest merge at ``--gcups / --sms`` (one block a merge, as ``dp_fill`` runs
it: a level takes at least as long as its largest merge on one multiprocessor). Where the first
is the largest, that kind of level is bound by its launches and waits; where the third is, by
the one merge that a block aligns alone.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import msa.pipeline as pipeline
from msa.alphabet import load_matrix
from msa.backends.cpu import CpuBackend
from msa.io.fasta import read_fasta
from msa.params import AlignParams, gap_costs
from msa.profile import N_COUNTS
from msa.progressive import progressive_align
from msa.tree.weights import family_weights

#: Upper bounds of the level kinds by merges (the last: every level past the one before).
KINDS = ((1, "1 merge"), (15, "2-15"), (131, "16-131"), (None, ">=132"))


class CountingBackend(CpuBackend):
    """The CPU backend without its one-call stage, so the progressive stage runs level by
    level (as on a GPU); every ``profile_align`` call is recorded."""

    align_forest = None

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict] = []

    def profile_align(self, batch):
        widths = np.diff(np.asarray(batch.col_offsets))
        wa, wb = widths[0::2], widths[1::2]
        self.calls.append({
            "merges": int(batch.n_merges),
            "cells": int(np.dot(wa, wb)),
            "max_cells": int((wa * wb).max()),
            "columns_in": int(widths.sum()),
            "guided": batch.bonus is not None and int(batch.bonus[1][-1]) > 0,
        })
        return super().profile_align(batch)


def family_work(path: Path) -> dict:
    """The level-by-level counts of one family (msa's default parameters, CPU)."""
    family = pipeline.prepare_family(read_fasta(path), AlignParams(device="cpu", quiet=True), note=False)
    params, inner = family.params, CpuBackend()
    tree = pipeline.family_tree(family, inner)
    matrix = load_matrix(params.matrix)
    gaps = gap_costs(params, len(family.db))
    weights = family_weights(tree, params)
    library = pipeline.family_library(family.unique, tree, matrix, params, inner)
    want = progressive_align(family.unique, tree, matrix, gaps, inner, weights, library)
    counting = CountingBackend()
    start = time.perf_counter()
    got = progressive_align(family.unique, tree, matrix, gaps, counting, weights, library)
    loop_s = time.perf_counter() - start
    if not (np.array_equal(got[0], want[0]) and got[1] == want[1]):
        raise SystemExit(f"{path}: the level loop's alignment differs from the one-call stage's")
    return {"family": path.name, "sequences": len(family.unique), "levels": int(tree.levels().max()),
            "cpu_level_loop_s": loop_s, "calls": counting.calls}


def kind_of(merges: int) -> str:
    return next(name for bound, name in KINDS if bound is None or merges <= bound)


def summarize(work: list[dict], level_ms: float, gcups: float, sms: int) -> dict:
    """Per kind over all families: levels (calls), merges, cells, bytes, and three GPU times: the
    levels' fixed cost, the cells at the whole GPU's rate, and each level's largest merge at one
    multiprocessor's share of that rate (a merge that one block aligns)."""
    table = {name: {"levels": 0, "merges": 0, "cells": 0, "bytes": 0, "guided_levels": 0, "longest_merge_cells": 0}
             for _, name in KINDS}
    for fam in work:
        for call in fam["calls"]:
            row = table[kind_of(call["merges"])]
            row["levels"] += 1
            row["merges"] += call["merges"]
            row["cells"] += call["cells"]
            # children read, parents written (about the children's columns), int32 counts rows
            row["bytes"] += 2 * call["columns_in"] * N_COUNTS * 4
            row["guided_levels"] += call["guided"]
            row["longest_merge_cells"] += call["max_cells"]
    for row in table.values():
        row["latency_s"] = row["levels"] * level_ms / 1e3
        row["work_s"] = row["cells"] / (gcups * 1e9)
        row["one_sm_s"] = row["longest_merge_cells"] / (gcups * 1e9 / sms)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, help="write every family's calls and the summary here")
    ap.add_argument("--level-ms", type=float, default=0.9, help="a GPU level's fixed cost, ms")
    ap.add_argument("--gcups", type=float, default=25.0, help="the GPU's DP rate on wide levels, 10^9 cells/s")
    ap.add_argument("--sms", type=int, default=132, help="the GPU's multiprocessors (H100 SXM: 132)")
    a = ap.parse_args()
    work = []
    for path in a.families:
        fam = family_work(path)
        work.append(fam)
        cells = sum(c["cells"] for c in fam["calls"])
        small = sum(c["merges"] <= 15 for c in fam["calls"])
        print(f"{fam['family']:16s} {fam['sequences']:6d} distinct  {fam['levels']:5d} levels  "
              f"{small:5d} of <= 15 merges  {cells:.3g} cells  CPU level loop {fam['cpu_level_loop_s']:.2f} s",
              flush=True)
    table = summarize(work, a.level_ms, a.gcups, a.sms)
    print(f"\n{'kind':8s} {'levels':>7s} {'merges':>8s} {'cells':>9s} {'bytes':>9s} {'guided':>7s} "
          f"{'levels x ' + str(a.level_ms) + ' ms':>16s} {'cells / ' + str(a.gcups) + ' GCUPS':>18s} "
          f"{'largest merge / SM':>19s}")
    for name, row in table.items():
        print(f"{name:8s} {row['levels']:7d} {row['merges']:8d} {row['cells']:9.3g} {row['bytes']:9.3g} "
              f"{row['guided_levels']:7d} {row['latency_s']:15.2f}s {row['work_s']:17.3f}s {row['one_sm_s']:18.2f}s")
    if a.json:
        a.json.write_text(json.dumps({"families": work, "summary": table, "level_ms": a.level_ms,
                                      "gcups": a.gcups, "sms": a.sms}, indent=1))


if __name__ == "__main__":
    main()
