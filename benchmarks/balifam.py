"""Side-by-side accuracy, time and memory on BaliFam: msa vs FAMSA 2 (pyfamsa) vs MAFFT.

Every set in ``SETS/info/ids.txt`` is aligned from ``SETS/in/<id>`` by each tool
(each run a subprocess, timed and memory-measured the same way) and scored with
``msa.scoring`` against ``SETS/ref/<id>`` (qscore's Q and TC).

Example (``--sets`` defaults to ``data/balifam/balifam1000``, fetched by
``python -m datasets.fetch balifam``):
    python benchmarks/balifam.py --sets data/balifam/balifam1000 \
        --threads 2 --tools famsa,mafft --out bench-out/balifam1000.json

Without ``--out`` the JSON goes to today's run-set folder under benchmarks/results/
(``common.results_dir``), beside the manifest.json that records this command line.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from common import (REPO, add_tool_arguments, align_and_score, print_table, results_dir, summarize, tool_commands,
                    write_json)


def main() -> None:
    """Run every tool on every set, print the table, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=Path, default=REPO / "data" / "balifam" / "balifam1000",
                    help="a BaliFam folder with in/, ref/, info/ids.txt (default: the fetched balifam1000)")
    ap.add_argument("--limit", type=int, help="only the first N sets")
    add_tool_arguments(ap)
    a = ap.parse_args()
    if not (a.sets / "info" / "ids.txt").is_file():
        ap.error(f"{a.sets} is not a BaliFam folder (python -m datasets.fetch balifam gets data/balifam/)")
    tools, commands = tool_commands(a)
    ids = (a.sets / "info" / "ids.txt").read_text().split()[: a.limit]
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = a.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for i, case in enumerate(ids, 1):
            for tool in tools:
                run = align_and_score(tool, commands[tool], case, a.sets / "in" / case, a.sets / "ref" / case,
                                      workdir, a.threads)
                runs.append(run)
                status = run.error or f"SP {run.sp:.3f} TC {run.tc:.3f}"
                print(f"[{i}/{len(ids)}] {case} {tool}: {status} ({run.wall_s:.1f} s, {run.peak_rss_mb:.0f} MB)",
                      file=sys.stderr)
    summary = summarize(runs, tools)
    print(f"BaliFam {a.sets.name}: {len(ids)} sets, {a.threads} threads")
    print_table(summary)
    write_json(a.out or results_dir() / f"{a.sets.name}.json", runs, summary,
               {"sets": str(a.sets), "threads": a.threads, "commands": commands})


if __name__ == "__main__":
    main()
