"""Side-by-side accuracy, time and memory on a simulated family with a known true alignment.

Simulates a family with ``datasets/simulate.py``, aligns it with each tool (each a
timed, memory-measured subprocess) and scores the result against the true
alignment (all upper case, so SP and TC count every column). For large ``-n``,
``--ref-size`` scores against a random subset, BaliFam-style.

Example:
    python benchmarks/simulated.py -n 10000 --length 300 --seed 1 --tools famsa,mafft --out bench-out/sim10k.json
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from common import (REPO, add_tool_arguments, align_and_score, print_table, results_dir, summarize, tool_commands,
                    write_json)

sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate, write_family  # noqa: E402


def main() -> None:
    """Simulate, align with every tool, print the table, write the JSON."""
    d = SimParams()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("--length", type=int, default=d.length)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--tree", choices=["yule", "coalescent"], default=d.tree)
    ap.add_argument("--height", type=float, default=d.height)
    ap.add_argument("--indel-rate", type=float, default=d.indel_rate)
    ap.add_argument("--ref-size", type=int, help="score against this many random sequences only")
    ap.add_argument("--keep-alignments", action="store_true",
                    help="keep each tool's alignment in --workdir (a 10^6-row one is tens of GB)")
    add_tool_arguments(ap)
    a = ap.parse_args()
    tools, commands = tool_commands(a)
    params = SimParams(n=a.n, length=a.length, seed=a.seed, tree=a.tree, height=a.height,
                       indel_rate=a.indel_rate)
    case = f"sim-n{a.n}-L{a.length}-s{a.seed}"
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = a.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        inp, ref = workdir / f"{case}.fa", workdir / f"{case}.true.fa"
        write_family(simulate(params), inp, ref, a.ref_size, a.seed)
        for tool in tools:
            run = align_and_score(tool, commands[tool], case, inp, ref, workdir, a.threads, keep=a.keep_alignments)
            runs.append(run)
            status = run.error or f"SP {run.sp:.3f} TC {run.tc:.3f}"
            print(f"{case} {tool}: {status} ({run.wall_s:.1f} s, {run.peak_rss_mb:.0f} MB)", file=sys.stderr)
    summary = summarize(runs, tools)
    print(f"{case}: {a.threads} threads")
    print_table(summary)
    meta = {"params": asdict(params), "ref_size": a.ref_size, "threads": a.threads, "commands": commands}
    write_json(a.out or results_dir() / f"sim{a.n}.json", runs, summary, meta)


if __name__ == "__main__":
    main()
