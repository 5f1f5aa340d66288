"""One process per family, tools interleaved: wall and CPU time of each tool on each input.

    python benchmarks/per_family.py --rounds 1 \
        --tool 'msa=/tmp/venv/bin/msa align {input} -o {output}' \
        --tool 'famsa=python benchmarks/famsa_align.py {input} {output} --threads 2' \
        /work/shared/datasets/balifam/balifam1000/in/*

This is how users compare aligners (a workflow runs one process per family), so start-up is
part of the time. Each input is run by every tool before the next input, the tools' order
alternating from one input to the next, so the load of a shared machine falls on all tools
alike; ``--rounds`` repeats the whole pass. Prints each tool's sum and median of the per-input
medians (wall, and user+sys CPU from the child's rusage), the ratios to the last tool, and
the load average before and after. Commands run from an empty folder with ``{input}`` and
``{output}`` filled in (shell-quoted).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from common import write_manifest  # noqa: E402


def run_once(command: str, cwd: Path) -> tuple[float, float]:
    """Wall and user+sys CPU seconds of one shell command (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, shell=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"per_family.py: {command!r} exited {proc.returncode}: {err.strip()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", type=Path)
    ap.add_argument("--tool", action="append", required=True, metavar="LABEL=COMMAND")
    ap.add_argument("--rounds", type=int, default=1, help="passes over the inputs")
    ap.add_argument("--warm", action="store_true", help="run each tool once on the first input first, untimed")
    ap.add_argument("--keep", type=Path, help="write outputs here as LABEL/NAME (default: a temporary folder)")
    ap.add_argument("--json", type=Path, help="write every input's median wall and CPU seconds per tool here")
    a = ap.parse_args()
    tools = dict(t.split("=", 1) for t in a.tool)
    out = a.keep or Path(tempfile.mkdtemp(prefix="msa-per-family-"))
    cwd = Path(tempfile.mkdtemp(prefix="msa-per-family-cwd-"))
    for label in tools:
        (out / label).mkdir(parents=True, exist_ok=True)

    def command(label: str, inp: Path) -> str:
        return tools[label].format(input=shlex.quote(str(inp.resolve())),
                                   output=shlex.quote(str(out / label / inp.name)))

    load_before = os.getloadavg()
    if a.warm:
        for label in tools:
            run_once(command(label, a.inputs[0]), cwd)
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    order = list(tools)
    for _ in range(a.rounds):
        for inp in a.inputs:
            for label in order:
                times.setdefault((label, inp.name), []).append(run_once(command(label, inp), cwd))
            order.reverse()
    load_after = os.getloadavg()
    summary = {}
    for label in tools:
        wall = [statistics.median(w for w, _ in times[label, i.name]) for i in a.inputs]
        cpu = [statistics.median(c for _, c in times[label, i.name]) for i in a.inputs]
        summary[label] = (sum(wall), statistics.median(wall), sum(cpu), statistics.median(cpu))
    print(f"{len(a.inputs)} inputs, {a.rounds} round(s); load average before "
          f"{' '.join(f'{x:.2f}' for x in load_before)}, after {' '.join(f'{x:.2f}' for x in load_after)}")
    print(f"{'tool':>10} {'wall sum':>9} {'median':>7} {'cpu sum':>8} {'median':>7}")
    for label, (ws, wm, cs, cm) in summary.items():
        print(f"{label:>10} {ws:9.2f} {wm:7.3f} {cs:8.2f} {cm:7.3f}")
    base = list(tools)[-1]
    for label in list(tools)[:-1]:
        s, b = summary[label], summary[base]
        print(f"{label}/{base}: wall sum {s[0] / b[0]:.2f}x, median {s[1] / b[1]:.2f}x; "
              f"cpu sum {s[2] / b[2]:.2f}x, median {s[3] / b[3]:.2f}x")
    if a.json:
        write_manifest(a.json.parent)
        a.json.write_text(json.dumps({
            "load_before": load_before, "load_after": load_after, "rounds": a.rounds, "tools": tools,
            "inputs": {i.name: {label: {"wall": statistics.median(w for w, _ in times[label, i.name]),
                                        "cpu": statistics.median(c for _, c in times[label, i.name])}
                                for label in tools} for i in a.inputs}}, indent=1))
    if len(a.inputs) <= 12:
        for inp in a.inputs:
            print(f"  {inp.name}: " + "  ".join(
                f"{label} {statistics.median(w for w, _ in times[label, inp.name]):.3f} s" for label in tools))


if __name__ == "__main__":
    main()
