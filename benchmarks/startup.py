"""Wall clock of short msa runs, where start-up is most of the time; source trees side by side.

    python benchmarks/startup.py [--runs 7] [--devices auto,cuda] [--add EXISTING NEW]
                                 [--tree LABEL=DIR ...]

Each ``--tree`` is an msa source tree (a folder holding ``msa/``, e.g. ``git worktree add
/tmp/old <rev>``) run with ``python -m msa`` on ``PYTHONPATH``; the checkout is the default,
labelled ``this``. Runs of the trees are interleaved (one of each, then the next round), so a
machine's drift falls on all of them alike, and each tree runs every command once first to
fill its caches. Prints each command's median and every run; outputs are compared across
trees with ``cmp`` semantics (identical bytes). The figures in benchmarks/NOTES.md (session 8)
were measured this way.

Python must be able to write bytecode: with ``PYTHONDONTWRITEBYTECODE`` set (some container
images set it) every run recompiles every module it imports, which is not what a user who
ran ``pip install`` sees; the script refuses to run then.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "datasets" / "examples" / "example.fa"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command per tree")
    ap.add_argument("--devices", default="auto", help="comma-separated --device values for the example")
    ap.add_argument("--add", nargs=2, metavar=("EXISTING", "NEW"), help="also time msa add EXISTING NEW")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR", help="another source tree")
    args = ap.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        sys.exit("startup.py: PYTHONDONTWRITEBYTECODE is set: every run would recompile its imports; unset it")

    trees = {"this": REPO} | {t.split("=", 1)[0]: Path(t.split("=", 1)[1]).resolve() for t in args.tree}
    out = Path(tempfile.mkdtemp(prefix="msa-startup-"))
    commands = {f"example --device {d}": ["align", str(EXAMPLE), "--device", d] for d in args.devices.split(",")}
    if args.add:
        commands["add"] = ["add", *args.add]
    times: dict[tuple[str, str], list[float]] = {}
    for warm in (True, False):
        for _ in range(1 if warm else args.runs):
            for name, argv in commands.items():
                for label, tree in trees.items():
                    target = out / f"{label}-{name.replace(' ', '_')}.fa"
                    seconds = _run(tree, [*argv, "-o", str(target)])
                    if not warm:
                        times.setdefault((name, label), []).append(seconds)
    for name in commands:
        outputs = {label: (out / f"{label}-{name.replace(' ', '_')}.fa").read_bytes() for label in trees}
        same = len(set(outputs.values())) == 1
        print(f"{name}{'' if same else '   OUTPUTS DIFFER'}")
        for label in trees:
            xs = times[name, label]
            print(f"  {label:>8}: median {statistics.median(xs):.3f} s   [{' '.join(f'{x:.3f}' for x in xs)}]")


def _run(tree: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "msa", *argv], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
