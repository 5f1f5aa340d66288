"""msa beside the other aligners, family by family: where is msa furthest below the best tool?

Every family of each BaliFam folder (``in/``, ``ref/``, ``info/ids.txt``) is aligned by each
tool in its own process (benchmarks/common.py's run_tool: wall time, peak memory) and scored
against the reference (msa.scoring: Q as SP, TC). Each family's runs go to
``OUT/<set>/<family>.json`` as soon as they finish, so a stopped run resumes where it was
(``--rerun`` runs them again); the report then lists the families where msa's SP is furthest
below the best other tool's, and each tool's mean over the families every tool finished.
``--variant NAME=COMMAND`` adds msa variants (names starting ``msa``), each reported against
the other aligners like msa itself.

Tools: msa (its default command), FAMSA 2 (pyfamsa), Clustal Omega, MAFFT ``--auto``, MAFFT
L-INS-i (only for families of at most ``--linsi-max`` sequences: its time grows as n^2 x L^2)
and Kalign 3. A tool whose program is not on PATH (or pyfamsa not importable) is skipped with
one line. On Debian: ``apt-get install clustalo mafft kalign``.

Example (the worst families first, one thread each, under nice on a shared machine):
    nice -n 10 python benchmarks/aligners.py /work/shared/datasets/balifam/balifam1000 \\
        --families PF04908.1000,PF00142.1000 --threads 1 --out bench-out/aligners
    python benchmarks/aligners.py /work/shared/datasets/balifam/balifam1000 --report-only \\
        --out bench-out/aligners
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import shutil
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from common import DEFAULT_COMMANDS, Run, align_and_score

#: The tools this runner compares, by name; ``{python}``, ``{input}``, ``{output}`` and
#: ``{threads}`` are filled in per run (common.run_tool). L-INS-i is MAFFT's
#: ``--localpair --maxiterate 1000``.
COMMANDS = {
    "msa": DEFAULT_COMMANDS["msa"],
    "famsa": DEFAULT_COMMANDS["famsa"],
    "clustalo": DEFAULT_COMMANDS["clustalo"],
    "mafft": DEFAULT_COMMANDS["mafft"],
    "mafft-linsi": "mafft --localpair --maxiterate 1000 --anysymbol --thread {threads} --quiet {input}",
    "kalign": DEFAULT_COMMANDS["kalign"],
}
#: L-INS-i runs on families of at most this many sequences by default (``--linsi-max``).
LINSI_MAX = 300


def available(tool: str, command: str) -> str | None:
    """Why ``tool`` cannot run here (one line), or None when it can."""
    words = shlex.split(command)
    if words[0] == "{python}":
        if tool.startswith("famsa") and importlib.util.find_spec("pyfamsa") is None:
            return f"{tool}: skipped (pyfamsa is not installed)"
        return None
    if shutil.which(words[0]) is None:
        return f"{tool}: skipped ({words[0]} is not on PATH)"
    return None


def count_sequences(path: Path) -> int:
    """Records of a FASTA file."""
    return path.read_bytes().count(b">")


def run_family(sets: Path, case: str, tools: list[str], commands: dict[str, str], threads: dict[str, int],
               linsi_max: int, workdir: Path) -> list[Run]:
    """Every tool on one family (L-INS-i only up to ``linsi_max`` sequences)."""
    inp, ref = sets / "in" / case, sets / "ref" / case
    n = count_sequences(inp)
    runs = []
    for tool in tools:
        if tool == "mafft-linsi" and n > linsi_max:
            continue
        runs.append(align_and_score(tool, commands[tool], case, inp, ref, workdir, threads[tool], keep=False))
        r = runs[-1]
        status = r.error or f"SP {r.sp:.3f} TC {r.tc:.3f}"
        print(f"{case} {tool}: {status} ({r.wall_s:.1f} s)", file=sys.stderr, flush=True)
    return runs


def load_runs(folder: Path) -> dict[str, list[dict]]:
    """The stored runs of a set's folder, by family."""
    return {p.stem: json.loads(p.read_text())["runs"] for p in sorted(folder.glob("*.json"))}


def gaps_to_best(families: dict[str, list[dict]], lead: str = "msa") -> list[tuple[str, float, str, float]]:
    """(family, lead's SP, best other aligner, its SP) of every family the lead and another
    aligner finished, the largest shortfall first; msa's variants are not other aligners."""
    rows = []
    for case, runs in families.items():
        sp = {r["tool"]: r["sp"] for r in runs if r["error"] is None}
        others = {t: s for t, s in sp.items() if not t.startswith("msa")}
        if lead in sp and others:
            best = max(others, key=others.get)
            rows.append((case, sp[lead], best, others[best]))
    return sorted(rows, key=lambda row: row[1] - row[3])


def report(name: str, families: dict[str, list[dict]], worst: int) -> None:
    """Each tool's means (over the families all finished) and, for msa and each variant, the
    families furthest below the best other aligner."""
    known = list(COMMANDS)
    tools = sorted({r["tool"] for runs in families.values() for r in runs},
                   key=lambda t: (known.index(t) if t in known else len(known), t))
    print(f"{name}: {len(families)} families")
    for tool in tools:
        done = {case: r for case, runs in families.items() for r in runs if r["tool"] == tool and r["error"] is None}
        common = [c for c in done if all(any(r["tool"] == t and r["error"] is None for r in families[c])
                                         for t in tools if t != "mafft-linsi")]
        if tool == "mafft-linsi":
            common = list(done)
        if not common:
            continue
        sp = sum(done[c]["sp"] for c in common) / len(common)
        tc = sum(done[c]["tc"] for c in common) / len(common)
        wall = sum(done[c]["wall_s"] for c in common)
        print(f"  {tool:<12} {len(common):>4} families  SP {sp:.4f}  TC {tc:.4f}  wall {wall:8.1f} s")
    for lead in (t for t in tools if t.startswith("msa")):
        rows = gaps_to_best(families, lead)
        below = [row for row in rows if row[1] < row[3] - 0.05]
        print(f"  {lead} more than 5 SP points below the best other tool: {len(below)} of {len(rows)}")
        for case, sp, best, best_sp in rows[:worst]:
            print(f"  {case:<16} {lead} {sp:.3f}  {best} {best_sp:.3f}  {100 * (sp - best_sp):+6.1f}")


def main() -> None:
    """Parse the arguments, run what is missing, print the report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", type=Path, nargs="+", help="BaliFam folders (in/, ref/, info/ids.txt)")
    ap.add_argument("--tools", default=",".join(COMMANDS), help="comma-separated, from: " + ", ".join(COMMANDS))
    ap.add_argument("--families", help="comma-separated family ids (default: every family of info/ids.txt)")
    ap.add_argument("--limit", type=int, help="only the first N families of each set")
    ap.add_argument("--threads", type=int, default=1, help="threads of every tool but msa")
    ap.add_argument("--msa-threads", type=int, default=2, help="threads of msa")
    ap.add_argument("--linsi-max", type=int, default=LINSI_MAX, help="L-INS-i only up to this many sequences")
    ap.add_argument("--out", type=Path, default=Path("bench-out") / "aligners", help="per-family JSON here")
    ap.add_argument("--rerun", help="comma-separated tools to run again where stored")
    ap.add_argument("--report-only", action="store_true", help="print the report of the stored runs")
    ap.add_argument("--worst", type=int, default=15, help="families listed in the report")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=COMMAND",
                    help="an msa variant to run too (NAME starts with msa), e.g. "
                    "'msa-random={python} -m msa align {input} -o {output} --consistency-draw random -q'")
    for tool, cmd in COMMANDS.items():
        ap.add_argument(f"--{tool}-cmd", default=cmd, help=f"command for {tool} (default: %(default)s)")
    a = ap.parse_args()
    tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    bad = [t for t in tools if t not in COMMANDS]
    if bad:
        ap.error(f"unknown tool {bad[0]!r}; choose from {', '.join(COMMANDS)}")
    commands = {t: getattr(a, f"{t.replace('-', '_')}_cmd") for t in tools}
    for variant in a.variant:
        name, _, command = variant.partition("=")
        if not name.startswith("msa") or not command or name in COMMANDS:
            ap.error(f"--variant takes NAME=COMMAND with a new NAME starting with msa, got {variant!r}")
        tools.append(name)
        commands[name] = command
    for tool in list(tools):
        why = available(tool, commands[tool])
        if why:
            print(why, file=sys.stderr)
            tools.remove(tool)
    threads = {t: a.msa_threads if t.startswith("msa") else a.threads for t in tools}
    rerun = set(filter(None, (a.rerun or "").split(",")))
    for sets in a.sets:
        if not (sets / "info" / "ids.txt").is_file():
            ap.error(f"{sets} is not a BaliFam folder (no info/ids.txt)")
        folder = a.out / sets.name
        folder.mkdir(parents=True, exist_ok=True)
        ids = a.families.split(",") if a.families else (sets / "info" / "ids.txt").read_text().split()
        ids = [case for case in ids if (sets / "in" / case).is_file()][: a.limit]
        for case in ids if not a.report_only else []:
            path = folder / f"{case}.json"
            stored = json.loads(path.read_text())["runs"] if path.is_file() else []
            have = {r["tool"] for r in stored if r["tool"] not in rerun}
            todo = [t for t in tools if t not in have]
            if not todo:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                new = run_family(sets, case, todo, commands, threads, a.linsi_max, Path(tmp))
            runs = [r for r in stored if r["tool"] in have] + [asdict(r) for r in new]
            meta = {"set": str(sets), "threads": threads, "commands": {r["tool"]: commands.get(r["tool"]) for r in runs}}
            path.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1))
        report(sets.name, load_runs(folder), a.worst)


if __name__ == "__main__":
    main()
