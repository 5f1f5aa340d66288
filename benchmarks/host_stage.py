"""A GPU run's progressive stage two ways, per family: the level loop (each level on the GPU or
the host, as the level model picks) against the host's one compiled call, and which one
msa.progressive's model picks (docs/progressive.md). Guide tree built once per family on the
GPU; each way timed warm, ``--rounds`` times, interleaved; both must give the same columns.

    python benchmarks/host_stage.py data/balifam/balifam10000-dev/in/* --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import msa.progressive as progressive  # noqa: E402
from msa.alphabet import load_matrix  # noqa: E402
from msa.backends import get_backend  # noqa: E402
from msa.io.fasta import read_fasta  # noqa: E402
from msa.params import AlignParams, gap_costs  # noqa: E402
from msa.pipeline import family_tree, prepare_family  # noqa: E402
from msa.tree.weights import family_weights  # noqa: E402
from common import write_manifest  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    backend = get_backend("cuda", quiet=True)
    rows = []
    for path in a.inputs:
        family = prepare_family(read_fasta(str(path)), AlignParams(quiet=True), note=False)
        params, db = family.params, family.unique
        tree = family_tree(family, backend)
        matrix, gaps, weights = load_matrix(params.matrix), gap_costs(params, len(family.db)), family_weights(tree, params)
        forest = progressive._Forest.of([db], [tree], [gaps], [weights])
        progressive.HOST_STAGE = "model"
        picked = "host" if progressive._host_stage_first(forest) else "device"
        times: dict[str, list[float]] = {"host": [], "device": []}
        out = {}
        for _ in range(a.rounds + 1):  # the first round warms both
            for way in ("device", "host"):
                progressive.HOST_STAGE = way
                t = time.perf_counter()
                out[way] = progressive.progressive_align(db, tree, matrix, gaps, backend, weights)
                times[way].append(time.perf_counter() - t)
        assert out["host"][1] == out["device"][1] and np.array_equal(out["host"][0], out["device"][0]), path
        row = {"input": path.name, "sequences": len(db), "mean_length": float(db.offsets[-1]) / len(db),
               "levels": int(tree.levels().max()), "width": out["host"][1], "picked": picked,
               "host_s": min(times["host"][1:]), "device_s": min(times["device"][1:])}
        rows.append(row)
        best = "host" if row["host_s"] < row["device_s"] else "device"
        print(f"{path.name:18s} n={len(db):6d} L={row['mean_length']:6.1f} levels={row['levels']:5d} "
              f"host {row['host_s']:.3f} s device {row['device_s']:.3f} s  picked {picked}{'' if picked == best else ' (WRONG)'}",
              flush=True)
    lost = sum(abs(r["host_s"] - r["device_s"]) for r in rows if (r["host_s"] < r["device_s"]) != (r["picked"] == "host"))
    print(f"picked {sum(r['picked'] == 'host' for r in rows)} of {len(rows)} for the host; lost {lost:.3f} s to wrong picks; "
          f"sum picked {sum(r[r['picked'] + '_s'] for r in rows):.3f} s, level loop {sum(r['device_s'] for r in rows):.3f} s, "
          f"best {sum(min(r['host_s'], r['device_s']) for r in rows):.3f} s")
    if a.json:
        write_manifest(a.json.parent)
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
