"""Sequence-weight scales side by side on a BaliFam folder: the progressive alignment (no
refinement) unweighted and with ClustalW's tree weights at each scale (msa.tree.weights),
per-family and mean SP/TC against the reference (docs/accuracy.md, "Sequence weights").

Each family's guide tree is built once (CPU backend); every scale aligns along that tree.

Example:
    python benchmarks/weights.py data/balifam/balifam1000 --scales 0,2,4,8 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from msa.alphabet import load_matrix  # noqa: E402
from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.io.fasta import read_aligned_fasta, read_fasta  # noqa: E402
from msa.params import AlignParams, gap_costs  # noqa: E402
from msa.pipeline import prepare_family  # noqa: E402
from msa.progressive import progressive_align  # noqa: E402
from msa.scoring import score_alignments  # noqa: E402
from msa.tree import build_guide_tree  # noqa: E402
from msa.tree.weights import tree_weights  # noqa: E402
from common import write_manifest  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", type=Path, help="a BaliFam folder with in/, ref/ and info/ids.txt")
    ap.add_argument("--scales", default="0,4", help="comma-separated; 0 is unweighted (FAMSA's)")
    ap.add_argument("--json", type=Path, help="write every family's scores here")
    a = ap.parse_args()
    scales = [int(s) for s in a.scales.split(",")]
    backend = CpuBackend()
    rows = []
    for case in (a.sets / "info" / "ids.txt").read_text().split():
        family = prepare_family(read_fasta(str(a.sets / "in" / case)), AlignParams(quiet=True), note=False)
        params = family.params
        tree = build_guide_tree(family.unique, params, backend)
        matrix, gaps = load_matrix(params.matrix), gap_costs(params, len(family.db))
        ref = read_aligned_fasta(str(a.sets / "ref" / case))
        row = {"case": case}
        for scale in scales:
            weights = tree_weights(tree, scale) if scale else None
            columns, width = progressive_align(family.unique, tree, matrix, gaps, backend, weights)
            aligned = family.aligned(columns, width)
            test = {name: bytes(r) for name, r in zip(aligned.names, aligned.rows) if name in ref}
            score = score_alignments(test, ref)
            row[str(scale)] = (score.sp, score.tc)
        rows.append(row)
        print(case, " ".join(f"{s}: {row[str(s)][0]:.4f}/{row[str(s)][1]:.4f}" for s in scales), file=sys.stderr)
    print(f"{a.sets.name}: {len(rows)} families, SP / TC means (change against the first scale)")
    base = np.array([r[str(scales[0])] for r in rows]).mean(axis=0)
    for s in scales:
        mean = np.array([r[str(s)] for r in rows]).mean(axis=0)
        print(f"scale {s:>3}: {mean[0]:.4f} / {mean[1]:.4f}  ({100 * (mean[0] - base[0]):+.2f} / {100 * (mean[1] - base[1]):+.2f})")
    if a.json:
        write_manifest(a.json.parent)
        a.json.write_text(json.dumps({"sets": str(a.sets), "scales": scales, "families": rows}, indent=1))


if __name__ == "__main__":
    main()
