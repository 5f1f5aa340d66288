"""Shared plumbing of the side-by-side benchmarks: run each aligner in a subprocess,
measure its wall time and peak memory, score it, print one table with ratios, and file the
results in a run set's folder with the manifest that says how to reproduce them.

    python3 benchmarks/common.py [HOST]   # make today's run-set folder (and manifest), print its path
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from msa.scoring import score_files  # noqa: E402

#: One folder per run set, ``<date>_<commit>_<host>``, each with a manifest.json.
RESULTS = REPO / "benchmarks" / "results"
#: Distributions whose versions a manifest records (those not installed are left out).
PACKAGES = ("msa", "numpy", "numba", "cupy-cuda12x", "cupy-cuda13x", "biopython", "scoring-matrices",
            "pyfamsa", "dask", "distributed", "dask-cuda", "matplotlib")

#: GNU time measures each run's peak memory (``apt-get install time`` where missing).
GNU_TIME = "/usr/bin/time"
_FAMSA = "{python} " + str(REPO / "benchmarks" / "famsa_align.py") + " {input} {output} --threads {threads}"
#: ``{python}``, ``{input}``, ``{output}`` and ``{threads}`` are filled in per run.
DEFAULT_COMMANDS = {
    "msa": "{python} -m msa align {input} -o {output} --device cpu --threads {threads} --quiet",
    "msa-gpu": "{python} -m msa align {input} -o {output} --device cuda --threads {threads} --quiet",
    "famsa": _FAMSA,
    "famsa-medoid": _FAMSA + " --guide-tree medoid",
    "mafft": "mafft --auto --anysymbol --thread {threads} --quiet {input}",
    "mafft-parttree": "mafft --parttree --anysymbol --thread {threads} --quiet {input}",
    "clustalo": "clustalo -i {input} -o {output} --threads {threads} --force",
    "kalign": "kalign -i {input} -o {output} --format fasta -n {threads}",
}
TOOLS = tuple(DEFAULT_COMMANDS)
#: Seconds before a run is stopped and reported as timed out (``--timeout``).
TIMEOUT_S: float | None = None
#: The error of a run stopped at TIMEOUT_S (after the tool's name), by which plot.py knows one.
TIMED_OUT = "timed out after"


@dataclass
class Run:
    """One aligner on one input: accuracy, wall time and peak resident memory."""

    tool: str
    case: str
    sp: float | None
    tc: float | None
    wall_s: float
    peak_rss_mb: float
    error: str | None = None


def run_tool(tool: str, command: str, inp: Path, out: Path, threads: int) -> tuple[float, float, str | None]:
    """Run one alignment command; return (wall seconds, peak RSS MiB, error or None).

    Peak memory is GNU time's ``%M`` (the largest RSS of the command and of the
    descendants it waited for: MAFFT is a shell script driving several programs).
    ``wait4`` on our own child would not do: a child forked from this Python process
    starts with its resident pages counted, and the high-water mark keeps them.
    A command without ``{output}`` writes the alignment to stdout.
    """
    rss_file = out.with_suffix(".rss")
    args = [GNU_TIME, "-f", "%M", "-o", str(rss_file)] + shlex.split(command.format(python=shlex.quote(sys.executable), input=shlex.quote(str(inp)),
                                      output=shlex.quote(str(out)), threads=threads))
    to_stdout = "{output}" not in command
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with open(out if to_stdout else os.devnull, "wb") as sink, open(out.with_suffix(".log"), "wb") as log:
        start = time.perf_counter()
        try:
            proc = subprocess.run(args, stdout=sink, stderr=log, env=env, check=False, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return time.perf_counter() - start, float("nan"), f"{tool} {TIMED_OUT} {TIMEOUT_S:.0f} s"
        wall = time.perf_counter() - start
    error = None
    rss_lines = rss_file.read_text().split() if rss_file.exists() else []
    rss_mb = int(rss_lines[-1]) / 1024.0 if rss_lines and rss_lines[-1].isdigit() else float("nan")
    if proc.returncode != 0:
        tail = out.with_suffix(".log").read_text(errors="replace").strip().splitlines()[-1:] or [""]
        error = f"{tool} exited {proc.returncode}: {tail[0][:200]}"
    return wall, rss_mb, error


#: Sequences of the warm-up family: past exact_tree_max, so PartTree and the few-merge kernels
#: of deep levels compile too (the bundled example alone left ~3.5 s of compilation in the
#: first timed 10^5-sequence run on a fresh machine).
WARM_UP_SEQUENCES = 6000


def warm_up(commands: dict[str, str], threads: int) -> None:
    """Run every msa variant once on the bundled example and on a 6,000-sequence family, untimed.

    The first run after an install compiles the Numba kernels (cached on disk)
    and, on the GPU, the CUDA kernels (CuPy's cache): once per installation, not
    per alignment, so it stays out of the timings.
    """
    tools = [tool for tool in commands if tool.startswith("msa")]
    if not tools:
        return
    sys.path.insert(0, str(REPO / "datasets"))
    from simulate import SimParams, simulate, write_family

    example = REPO / "datasets" / "examples" / "example.fa"
    with tempfile.TemporaryDirectory() as tmp:
        family = Path(tmp) / "warm.fa"
        write_family(simulate(SimParams(n=WARM_UP_SEQUENCES, length=120, seed=0)), family, None)
        for tool in tools:
            for inp in (example, family):
                run_tool(tool, commands[tool], inp, Path(tmp) / f"{tool}.afa", threads)


def align_and_score(tool: str, command: str, case: str, inp: Path, ref: Path, workdir: Path,
                    threads: int, keep: bool = True) -> Run:
    """Align ``inp`` with one tool and score the result against ``ref``; ``keep=False`` deletes
    the alignment once scored (10^6 rows of 10^4 columns are tens of GB each)."""
    out = workdir / f"{case}.{tool}.afa"
    wall, rss, error = run_tool(tool, command, inp, out, threads)
    sp = tc = None
    if error is None:
        try:
            score = score_files(out, ref)
            sp, tc = score["sp"], score["tc"]
        except (ValueError, OSError) as exc:
            error = f"scoring failed: {exc}"
    if not keep:
        out.unlink(missing_ok=True)
    return Run(tool, case, sp, tc, wall, rss, error)


def summarize(runs: list[Run], tools: list[str]) -> dict[str, dict[str, float]]:
    """Mean SP/TC per tool, total wall time and peak memory.

    Means are over the cases every tool finished, so tools are compared on the
    same inputs; where no case was finished by all (a run timed out), each
    tool's mean is over its own finished cases and ``common`` says so.
    """
    cases = {r.case for r in runs}
    for r in runs:
        if r.error is not None:
            cases.discard(r.case)
    summary = {}
    for tool in tools:
        mine = [r for r in runs if r.tool == tool]
        done = [r for r in mine if r.case in cases] if cases else [r for r in mine if r.error is None]
        summary[tool] = {
            "cases": len(done),
            "common": bool(cases),
            "failed": sum(r.error is not None for r in mine),
            "sp": sum(r.sp for r in done) / len(done) if done else float("nan"),
            "tc": sum(r.tc for r in done) / len(done) if done else float("nan"),
            "wall_s": sum(r.wall_s for r in mine),
            "peak_rss_mb": max((r.peak_rss_mb for r in mine), default=float("nan")),
        }
    return summary


def print_table(summary: dict[str, dict[str, float]]) -> None:
    """One line per tool, then every msa variant's ratios to every other tool that ran."""
    print(f"{'tool':<15}{'cases':>6}{'failed':>7}{'mean SP':>9}{'mean TC':>9}{'wall s':>10}{'peak MB':>10}")
    for tool, s in summary.items():
        print(f"{tool:<15}{s['cases']:>6}{s['failed']:>7}{s['sp']:>9.4f}{s['tc']:>9.4f}"
              f"{s['wall_s']:>10.1f}{s['peak_rss_mb']:>10.0f}")
    for lead in (t for t in summary if t.startswith("msa")):
        for base in (t for t in summary if not t.startswith("msa")):
            a, b = summary[lead], summary[base]
            if a["failed"] or b["failed"]:
                print(f"{lead}/{base}: not comparable ({base if b['failed'] else lead} failed)")
                continue
            print(f"{lead}/{base}: SP x{a['sp'] / b['sp']:.3f}  TC x{a['tc'] / b['tc']:.3f}  "
                  f"time x{a['wall_s'] / b['wall_s']:.3f}  memory x{a['peak_rss_mb'] / b['peak_rss_mb']:.2f}")


def write_json(path: Path | None, runs: list[Run], summary: dict, meta: dict) -> None:
    """Per-case results, the summary and the settings, for docs/benchmarks.md and later comparison;
    the folder's manifest.json records the command line, commit, packages and host."""
    if path is not None:
        write_manifest(path.parent)
        path.write_text(json.dumps({"meta": meta, "summary": summary, "runs": [asdict(r) for r in runs]},
                                   indent=1))


def add_tool_arguments(ap: argparse.ArgumentParser) -> None:
    """The options every side-by-side benchmark shares: tools, threads, output, timeout, commands."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tools", default="msa,famsa", help="comma-separated, from: " + ", ".join(DEFAULT_COMMANDS))
    ap.add_argument("--out", type=Path, help="JSON of results (default: NAME.json in today's run-set folder, "
                    "benchmarks/results/<date>_<commit>_<host>/, made with its manifest.json)")
    ap.add_argument("--workdir", type=Path, help="keep inputs and alignments here (simulated.py keeps alignments only with --keep-alignments)")
    ap.add_argument("--timeout", type=float, help="stop a run after this many seconds (reported as failed)")
    for tool, cmd in DEFAULT_COMMANDS.items():
        ap.add_argument(f"--{tool}-cmd", default=cmd, help=f"command for {tool} (default: %(default)s)")


def tool_commands(a: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The chosen tools and their commands; sets the timeout and warms msa's kernel caches."""
    global TIMEOUT_S
    TIMEOUT_S = a.timeout
    tools = parse_tools(a.tools)
    commands = {t: getattr(a, f"{t.replace('-', '_')}_cmd") for t in tools}
    warm_up(commands, a.threads)
    return tools, commands


def parse_tools(text: str) -> list[str]:
    """Comma-separated tool names, checked against TOOLS."""
    tools = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise SystemExit(f"unknown tool {bad[0]!r}; choose from {', '.join(TOOLS)}")
    return tools


def host() -> dict:
    """The machine a run set ran on: GPU model, count and driver (``nvidia-smi``), CPU and cores."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), None)
    gpus: list[list[str]] = []
    if shutil.which("nvidia-smi"):
        query = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, check=False)
        gpus = [[f.strip() for f in line.split(",")] for line in query.stdout.splitlines() if line.strip()]
    return {"gpu": gpus[0][0] if gpus else None, "gpus": len(gpus), "driver": gpus[0][1] if gpus else None,
            "cpu": cpu, "cores": os.cpu_count()}


def host_label(machine: dict) -> str:
    """A run set's host in its folder name: ``h100-16c``, ``2xh200-32c``, ``cpu-2c``."""
    if not machine.get("gpus"):
        return f"cpu-{machine['cores']}c"
    model = re.search(r"\b([A-Z]{1,2}\d{2,4})\b", machine.get("gpu") or "")
    count = f"{machine['gpus']}x" if machine["gpus"] > 1 else ""
    return f"{count}{model[1].lower() if model else 'gpu'}-{machine['cores']}c"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _commit() -> str:
    """The checkout's short commit (``nogit`` outside a git checkout)."""
    return _git("rev-parse", "--short=7", "HEAD") or "nogit"


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def packages() -> dict[str, str]:
    """Installed versions of PACKAGES, plus Python's."""
    found = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def write_manifest(folder: Path, machine: dict | None = None, record: bool = True) -> Path:
    """Record this command line (unless not ``record``) in ``folder/manifest.json``, made on first
    use with the date, the commit (``-dirty`` when msa/ has uncommitted changes), the package
    versions and the host."""
    path = folder / "manifest.json"
    dirty = "-dirty" if _git("status", "--porcelain", "--", "msa") else ""
    manifest = json.loads(path.read_text()) if path.exists() else {
        "date": _today(), "commit": _commit() + dirty, "host": machine or host(), "packages": packages(),
        "commands": [],
    }
    command = shlex.join(["python3", *sys.argv])
    if record and command not in manifest["commands"]:
        manifest["commands"].append(command)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return path


def results_dir(tag: str | None = None, root: Path = RESULTS, record: bool = True) -> Path:
    """Today's run-set folder ``<date>_<commit>_<host>`` under ``root``, made with its manifest
    (which records this command line unless not ``record``); ``tag`` replaces the detected host
    label (say, a cloud instance's name)."""
    if tag is not None and not re.fullmatch(r"[A-Za-z0-9.-]+", tag):
        raise ValueError(f"a host tag is letters, digits, '.' and '-' (the folder's '_' separate its parts): {tag!r}")
    machine = host()
    folder = root / f"{_today()}_{_commit()}_{tag or host_label(machine)}"
    write_manifest(folder, machine, record)
    return folder


if __name__ == "__main__":
    print(results_dir(sys.argv[1] if len(sys.argv) > 1 else None, record=False))
