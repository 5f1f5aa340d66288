"""Wall clock of short msa runs, where start-up is most of the time; source trees side by side.

    python benchmarks/startup.py [--runs 7] [--devices auto,cuda] [--add EXISTING NEW]
                                 [--tree LABEL=DIR ...]

Each ``--tree`` is an msa source tree (a folder holding ``msa/``, e.g. ``git worktree add
/tmp/old <rev>``) run with ``python -m msa`` on ``PYTHONPATH``; the checkout is the default,
labelled ``this``. Runs of the trees are interleaved (one of each, then the next round), so a
machine's drift falls on all of them alike, and each tree runs every command once first to
fill its caches. Prints each command's median and every run; outputs are compared across
trees with ``cmp`` semantics (identical bytes). Every run is made from an empty folder: run from
a checkout, ``python -m msa`` imports that checkout whatever ``PYTHONPATH`` says (``-m`` puts the
working folder first on the path), which would make every tree the same code in a comparison (docs/start-up.md); each tree is
checked first.

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
    ap.add_argument("--devices", default="auto", help="comma-separated --device values for the example ('' for none)")
    ap.add_argument("--add", nargs=2, metavar=("EXISTING", "NEW"), help="also time msa add EXISTING NEW")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR", help="another source tree")
    args = ap.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        sys.exit("startup.py: PYTHONDONTWRITEBYTECODE is set: every run would recompile its imports; unset it")

    trees = {"this": REPO} | {t.split("=", 1)[0]: Path(t.split("=", 1)[1]).resolve() for t in args.tree}
    out = Path(tempfile.mkdtemp(prefix="msa-startup-"))
    for label, tree in trees.items():
        _check_tree(label, tree, out)
    commands = {f"example --device {d}": ["align", str(EXAMPLE), "--device", d] for d in args.devices.split(",") if d}
    if args.add:
        commands["add"] = ["add", *(str(Path(a).resolve()) for a in args.add)]
    times: dict[tuple[str, str], list[float]] = {}
    for warm in (True, False):
        for _ in range(1 if warm else args.runs):
            for name, argv in commands.items():
                for label, tree in trees.items():
                    target = out / f"{label}-{name.replace(' ', '_')}.fa"
                    seconds = _run(tree, [*argv, "-o", str(target)], out)
                    if not warm:
                        times.setdefault((name, label), []).append(seconds)
    for name in commands:
        outputs = {label: (out / f"{label}-{name.replace(' ', '_')}.fa").read_bytes() for label in trees}
        same = len(set(outputs.values())) == 1
        print(f"{name}{'' if same else '   OUTPUTS DIFFER'}")
        for label in trees:
            xs = times[name, label]
            print(f"  {label:>8}: median {statistics.median(xs):.3f} s   [{' '.join(f'{x:.3f}' for x in xs)}]")


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))}


def _check_tree(label: str, tree: Path, cwd: Path) -> None:
    """Refuse a tree whose msa is not the one imported: ``python -m`` puts the working folder
    first on the path, so runs are made from ``cwd`` (an empty folder), never from a checkout."""
    code = "import msa; print(msa.__file__)"
    found = subprocess.run([sys.executable, "-c", code], env=_env(tree), cwd=cwd, check=True,
                           capture_output=True, text=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"startup.py: tree {label!r} ({tree}) imports msa from {found}")


def _run(tree: Path, argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "msa", *argv], env=_env(tree), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
