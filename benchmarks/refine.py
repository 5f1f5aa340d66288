"""Refinement variants side by side on a BaliFam folder: msa without refinement and with each
variant, per-family SP/TC against the reference and the refinement's time (docs/accuracy.md).

Each family is aligned once (guide tree, progressive, on the CPU backend); every variant refines
that same alignment. A variant is ``source:rounds:batch:objective:partners[:library]``
(msa.refine.Method; library ``neighbours``, the default, or ``random``).

Example:
    python benchmarks/refine.py data/balifam/balifam100 \
        --variants gaps:100:16:consistency:8,gaps:100:16:sp:8,tree:100:16:consistency:8
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from msa.alphabet import load_matrix  # noqa: E402
from msa.backends.cpu import CpuBackend  # noqa: E402
from msa.io.fasta import read_aligned_fasta, read_fasta  # noqa: E402
from msa.params import AlignParams, gap_costs  # noqa: E402
from msa.pipeline import prepare_family  # noqa: E402
from msa.progressive import progressive_align  # noqa: E402
from msa.refine import Method, refine  # noqa: E402
from msa.scoring import score_alignments  # noqa: E402
from msa.tree import build_guide_tree  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", type=Path, help="a BaliFam folder with in/ and ref/")
    ap.add_argument("--variants", default="gaps:100:16:consistency:8")
    ap.add_argument("--start", type=int, default=0, help="first family (sorted by name)")
    ap.add_argument("--stop", type=int, help="family after the last")
    ap.add_argument("--step", type=int, default=1, help="every STEP-th family")
    a = ap.parse_args()
    ids = sorted(p.name for p in (a.sets / "ref").iterdir())[a.start : a.stop : a.step]
    backend, params = CpuBackend(), AlignParams(threads=1, quiet=True)
    variants = {v: (v.split(":") + ["neighbours"])[:6] for v in a.variants.split(",")}
    scores: dict[str, list[tuple[float, float]]] = {"off": [], **{v: [] for v in variants}}
    seconds = dict.fromkeys(scores, 0.0)
    for case in ids:
        family = prepare_family(read_fasta(str(a.sets / "in" / case)), params, note=False)
        p = family.params
        start = time.perf_counter()
        tree = build_guide_tree(family.unique, p, backend)
        matrix, gaps = load_matrix(p.matrix), gap_costs(p, len(family.db))
        cols, width = progressive_align(family.unique, tree, matrix, gaps, backend)
        seconds["off"] += time.perf_counter() - start
        ref = read_aligned_fasta(str(a.sets / "ref" / case))

        def score(cols: np.ndarray, width: int) -> tuple[float, float]:
            aligned = family.aligned(cols, width)
            rows = aligned.rows
            s = score_alignments({n: rows[i].tobytes() for i, n in enumerate(aligned.names)}, ref)
            return s.sp, s.tc

        scores["off"].append(score(cols, width))
        line = [f"{case} n={len(family.unique)} off {scores['off'][-1][0]:.3f}/{scores['off'][-1][1]:.3f}"]
        for name, (source, rounds, batch, objective, partners, library) in variants.items():
            start = time.perf_counter()
            out, w, accepted = refine(family.unique, cols, width, tree, matrix, gaps, gap_costs(p, 2), backend,
                                      int(rounds), method=Method(source, objective, int(batch), int(partners), library))
            seconds[name] += time.perf_counter() - start
            scores[name].append(score(out, w))
            line.append(f"{name} {scores[name][-1][0]:.3f}/{scores[name][-1][1]:.3f} ({accepted} steps)")
        print(" | ".join(line), flush=True)
    for name, values in scores.items():
        v = np.array(values)
        print(f"{name}: {len(v)} families, SP {v[:, 0].mean():.4f} TC {v[:, 1].mean():.4f}, {seconds[name]:.1f} s")


if __name__ == "__main__":
    main()
