"""Plots of the side-by-side benchmark JSONs: time against sequences (log-log) and accuracy per set.

    python benchmarks/plot.py bench-out/*.json -o bench-out/

Reads the files ``common.write_json`` writes (``meta``, ``summary``, ``runs``):
a file whose ``meta.params.n`` is set comes from ``simulated.py`` (sequences
against wall time, a line per tool through the median of its finished runs at
each size; a size where a tool only timed out is an open triangle at the time
it was stopped, a lower bound); any other (``balifam.py``, ``semisynthetic.sh``)
is a set, named by the folder in ``meta.sets``, drawn as each tool's mean SP and
TC over the cases every tool finished (``common.summarize``). Files of one set
are merged, so its tools can come from separate runs; a tool already seen on a
set from another file is kept apart as ``tool (file)``. Writes ``time.png``/
``time.svg`` and ``accuracy.png``/``accuracy.svg`` into the output folder (a
plot without data is left out); needs matplotlib (the ``bench`` extra).

With ``--sets-root DIR`` (the folder that holds the sets, e.g. data/balifam), the set files'
runs are also drawn one point per family, wall time against the family's residues
(``per-family.png``/``.svg``): how one process per family compares, the way users time aligners.

With ``--table FILE`` it also writes the Markdown table of the same files (``table``): a row per
set and run-set folder, a column per tool's command, each cell mean SP / TC and the summed wall
time. ``--readme README.md`` puts that table between the README's ``<!-- results table -->``
markers, so the README's table and plots come from the same command.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from common import DEFAULT_COMMANDS, TIMED_OUT, Run, summarize

#: Per tool, per family size: the wall times of finished runs and of runs stopped by the timeout.
Times = dict[str, dict[int, tuple[list[float], list[float]]]]
#: Per set: per tool (mean SP, mean TC), and the number of cases the means are over.
Accuracy = dict[str, tuple[dict[str, tuple[float, float]], int]]
#: Legend names where the harness's tool name does not say the device (its ``msa`` runs ``--device cpu``).
LABELS = {"msa": "msa-cpu"}


def label(tool: str) -> str:
    """The legend's name of ``tool`` (or of ``tool (file)``, as ``load`` names a repeated one)."""
    name, space, rest = tool.partition(" ")
    return LABELS.get(name, name) + space + rest


def load(paths: list[Path]) -> tuple[Times, Accuracy]:
    """``(times, accuracy)`` from the harness's JSON files."""
    times: Times = defaultdict(lambda: defaultdict(lambda: ([], [])))
    runs_of: dict[str, list[Run]] = defaultdict(list)
    summary_only: Accuracy = {}
    owner: dict[tuple[str, str], str] = {}
    for path in paths:
        data = json.loads(path.read_text())
        meta = data.get("meta", {})
        n = (meta.get("params") or {}).get("n")
        if n is not None:
            for run in data.get("runs", []):
                error, wall = run.get("error"), run.get("wall_s")
                if wall is None or (error is not None and TIMED_OUT not in error):
                    continue
                times[run["tool"]][int(n)][error is not None].append(float(wall))
            continue
        name = Path(meta["sets"]).name if meta.get("sets") else path.stem
        if not data.get("runs"):
            scores = {tool: (float(s["sp"]), float(s["tc"])) for tool, s in data.get("summary", {}).items()
                      if s.get("cases") and s.get("sp") is not None}
            if scores:
                summary_only[name] = (scores, max(int(s["cases"]) for s in data["summary"].values()))
            continue
        commands = meta.get("commands") or {}
        for run in data["runs"]:
            tool = plot_tool(run["tool"], commands.get(run["tool"]))
            if owner.setdefault((name, tool), path.stem) != path.stem:
                tool = f"{tool} ({path.stem})"
            runs_of[name].append(Run(**{**run, "tool": tool}))
    accuracy: Accuracy = dict(summary_only)
    for name, runs in runs_of.items():
        tools = list(dict.fromkeys(r.tool for r in runs))
        summary = summarize(runs, tools)
        scores = {t: (s["sp"], s["tc"]) for t, s in summary.items() if s["cases"]}
        if scores:
            accuracy[name] = (scores, max(s["cases"] for s in summary.values()))
    return {t: dict(v) for t, v in times.items()}, accuracy


#: Names of the harness's tools in the table; msa's columns name the options its command sets.
TOOL_NAMES = {"famsa": "FAMSA 2", "famsa-medoid": "FAMSA 2 medoid", "mafft": "`mafft --auto`",
              "mafft-parttree": "`mafft --parttree`", "clustalo": "Clustal Omega", "kalign": "Kalign"}
#: msa's options that change what is measured, named in its column's heading.
MSA_OPTIONS = ("--device", "--consistency", "--refine", "--tree", "--weights")
#: The README's table lies between these two lines.
TABLE_MARKERS = ("<!-- results table -->", "<!-- end of results table -->")


def tool_name(tool: str, command: str) -> str:
    """The table's heading of a tool: ``msa`` and the options its command sets, else TOOL_NAMES."""
    if not tool.startswith("msa"):
        return TOOL_NAMES.get(tool, tool)
    words = command.split()
    options = [f"{w} {words[i + 1]}" for i, w in enumerate(words[:-1]) if w in MSA_OPTIONS]
    return "`" + " ".join(["msa", *options]) + "`"


def plot_tool(tool: str, command: str | None) -> str:
    """A plot's name of a tool whose command is known: msa's default command (no ``--device``) is
    ``msa-auto``, and options that change what is measured (``--consistency off``) are named."""
    if command is None or not tool.startswith("msa"):
        return tool
    words = command.split()
    options = [f"{w} {words[i + 1]}" for i, w in enumerate(words[:-1]) if w in MSA_OPTIONS and w != "--device"]
    return " ".join(["msa-auto" if tool == "msa" and "--device" not in words else tool, *options])


def _cell(run_summary: dict, runs: list[dict]) -> str:
    if not run_summary.get("cases"):
        stopped = [r["error"] for r in runs if TIMED_OUT in (r.get("error") or "")]
        return f"stopped at {stopped[0].rsplit(' ', 2)[-2]} s" if stopped else "failed"
    return f"{run_summary['sp']:.3f} / {run_summary['tc']:.3f}, {run_summary['wall_s']:.1f} s"


def table(paths: list[Path], root: Path | None = None) -> str:
    """A Markdown table of the harness's JSONs: a row per set and folder (the folder relative to
    ``root``, which names the run set), a column per tool command; cells are mean SP / TC over
    the cases every tool of the file finished, and the summed wall time of its runs."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    columns: list[str] = []
    for path in paths:
        data = json.loads(path.read_text())
        meta = data.get("meta")
        if not meta:
            continue
        n = (meta.get("params") or {}).get("n")
        folder = str(path.resolve().parent.relative_to(root)) if root else str(path.parent)
        tools = list(data.get("summary", {}))
        cases = max((s.get("cases", 0) for s in data["summary"].values()), default=0)
        name = f"simulated {n:,}" if n is not None else f"{Path(meta['sets']).name} ({cases})"
        key = (name, folder)
        for tool in tools:
            heading = tool_name(tool, meta.get("commands", {}).get(tool, DEFAULT_COMMANDS.get(tool, "")))
            if heading in rows.get(key, {}):
                key = (f"{name}, {path.name}", folder)
            rows.setdefault(key, {})[heading] = _cell(data["summary"][tool],
                                                      [r for r in data.get("runs", []) if r["tool"] == tool])
            if heading not in columns:
                columns.append(heading)
    columns.sort(key=lambda c: not c.startswith("`msa"))  # msa's commands first, each group as met
    lines = ["| input | results | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for (name, folder), cells in rows.items():
        lines.append(f"| {name} | `{folder}` | " + " | ".join(cells.get(c, "") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def put_table(readme: Path, text: str) -> None:
    """Replace the table between the README's TABLE_MARKERS with ``text``."""
    page = readme.read_text(encoding="utf-8")
    start, end = (page.index(m) for m in TABLE_MARKERS)
    readme.write_text(page[: start + len(TABLE_MARKERS[0])] + "\n" + text + page[end:], encoding="utf-8")


def family_times(paths: list[Path], roots: list[Path]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per set, per tool, ``(residues, wall seconds)`` of each finished run of the set files whose
    inputs are found as ``ROOT/SET/in/CASE`` under one of ``roots``."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    sizes: dict[Path, int] = {}
    for path in paths:
        data = json.loads(path.read_text())
        meta = data.get("meta", {})
        if (meta.get("params") or {}).get("n") is not None or not meta.get("sets"):
            continue
        name = Path(meta["sets"]).name
        found = [root / name / "in" for root in roots if (root / name / "in").is_dir()]
        for run in data.get("runs", []) if found else []:
            inp = found[0] / run["case"]
            if run.get("error") is not None or run.get("wall_s") is None or not inp.is_file():
                continue
            if inp not in sizes:
                sizes[inp] = sum(len(line.strip()) for line in inp.read_text().splitlines() if not line.startswith(">"))
            tool = plot_tool(run["tool"], (meta.get("commands") or {}).get(run["tool"]))
            out[name][tool].append((sizes[inp], float(run["wall_s"])))
    return {name: dict(tools) for name, tools in out.items()}


def plot_families(families: dict[str, dict[str, list[tuple[int, float]]]], colors: dict[str, str], out: Path,
                  plt, caption: Sequence[str] = ()) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    markers = "os^Dv"
    for k, name in enumerate(sorted(families)):
        for tool in sorted(families[name]):
            xs, ys = zip(*families[name][tool])
            ax.plot(xs, ys, linestyle="none", marker=markers[k % len(markers)], markersize=4, alpha=0.75,
                    color=colors[tool], label=f"{label(tool)}, {name}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("residues in the family")
    ax.set_ylabel("wall time of its process (s)")
    ax.set_title("One process per family")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _save(fig, out / "per-family", plt, caption)


def plot_time(times: Times, colors: dict[str, str], out: Path, plt, caption: Sequence[str] = ()) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    stopped = False
    tools = sorted(times)
    for k, tool in enumerate(tools):
        color = colors[tool]
        done = sorted((n, statistics.median(f)) for n, (f, _) in times[tool].items() if f)
        if done:
            ax.plot(*zip(*done), marker="o", color=color, label=label(tool))
        # Nudged sideways by tool, so that tools stopped at the same timeout stay apart.
        nudge = 1.06 ** (k - (len(tools) - 1) / 2)
        cut = sorted((n * nudge, max(s)) for n, (f, s) in times[tool].items() if s and not f)
        if cut:
            ax.plot(*zip(*cut), linestyle="none", marker="^", markersize=9, markerfacecolor="none",
                    color=color, label=None if done else label(tool))
            stopped = True
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sequences")
    ax.set_ylabel("wall time (s)")
    ax.set_title("Time against family size (simulated families)")
    ax.grid(True, which="both", alpha=0.3)
    if stopped:
        ax.plot([], [], linestyle="none", marker="^", markerfacecolor="none", color="gray",
                label="stopped at the timeout (at least)")
    # Outside the axes: inside, it covered the lines of the largest sizes.
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _save(fig, out / "time", plt, caption)


def plot_accuracy(accuracy: Accuracy, colors: dict[str, str], out: Path, plt, caption: Sequence[str] = ()) -> list[Path]:
    sets = sorted(accuracy)
    tools = sorted({t for s in sets for t in accuracy[s][0]})
    fig, axes = plt.subplots(1, 2, figsize=(max(6, 2.5 + 1.6 * len(sets)) * 1.6, 4.5), sharey=True)
    # Each set's bars are its own tools only, side by side around the set's tick.
    present = [[t for t in tools if t in accuracy[s][0]] for s in sets]
    width = 0.8 / max(1, max(len(p) for p in present))
    for k, (ax, what) in enumerate(zip(axes, ("SP (Q)", "TC"))):
        for tool in tools:
            xs = [j + (p.index(tool) - (len(p) - 1) / 2) * width for j, p in enumerate(present) if tool in p]
            ys = [accuracy[s][0][tool][k] for s in sets if tool in accuracy[s][0]]
            bars = ax.bar(xs, ys, width, label=label(tool), color=colors[tool])
            ax.bar_label(bars, fmt="%.3f", fontsize=6, rotation=90, padding=2)
        ax.set_xticks(range(len(sets)))
        ax.set_xticklabels([f"{s}\n({accuracy[s][1]} sets)" for s in sets])
        ax.set_ylim(0, 1.1)
        ax.set_title(f"mean {what} per set")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("accuracy against the reference")
    fig.tight_layout()
    axes[1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _save(fig, out / "accuracy", plt, caption)


def run_sets(paths: list[Path], simulated: bool) -> list[str]:
    """The run-set folders of the simulated files (or of the set files): a figure's caption."""
    found = set()
    for path in paths:
        meta = json.loads(path.read_text()).get("meta") or {}
        if simulated == ((meta.get("params") or {}).get("n") is not None) and (simulated or meta.get("sets")):
            found.add(path.resolve().parent.name)
    return sorted(found)


def _save(fig, stem: Path, plt, caption: Sequence[str] = ()) -> list[Path]:
    """The figure as PNG and SVG, the run sets of its data printed under it."""
    if caption:
        fig.text(0.0, -0.02, "data: " + ", ".join(caption), fontsize=7, color="gray", ha="left", va="top")
    written = []
    for ext in ("png", "svg"):
        path = stem.with_suffix(f".{ext}")
        fig.savefig(path, dpi=120, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None)
        written.append(path)
    plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", nargs="+", type=Path, help="benchmark JSON files (simulated.py, balifam.py)")
    p.add_argument("-o", "--out", type=Path, default=Path("."), help="output folder (made if missing)")
    p.add_argument("--sets-root", type=Path, action="append", default=[],
                   help="folder holding the sets' inputs (SET/in/CASE): also plot time per family against its size")
    p.add_argument("--table", type=Path, help="also write the Markdown table of these files here")
    p.add_argument("--table-also", type=Path, nargs="+", default=[], metavar="JSON",
                   help="more files for the table only (another run of a set already plotted)")
    p.add_argument("--readme", type=Path, help="also put that table between this page's results-table markers")
    p.add_argument("--results-root", type=Path, default=Path(__file__).resolve().parent / "results",
                   help="the table names each file's folder relative to this one (default: benchmarks/results)")
    a = p.parse_args(argv)
    if a.table or a.readme:
        root = a.results_root.resolve()
        files = [*a.json, *a.table_also]
        text = table(files, root if all(root in q.resolve().parents for q in files) else None)
        if a.table:
            a.table.write_text(text)
        if a.readme:
            put_table(a.readme, text)
    try:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "msa"  # the SVGs' ids, like their date, fixed: same data, same bytes
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: error: matplotlib is not installed (pip install '.[bench]')", file=sys.stderr)
        return 1
    try:
        times, accuracy = load(a.json)
        families = family_times(a.json, a.sets_root)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"plot.py: error: {exc}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    # One colour per tool across both plots.
    tools = sorted(set(times) | {t for scores, _ in accuracy.values() for t in scores}
                   | {t for per_tool in families.values() for t in per_tool})
    colors = {tool: f"C{i % 10}" for i, tool in enumerate(tools)}
    written: list[Path] = []
    if times:
        written += plot_time(times, colors, a.out, plt, run_sets(a.json, simulated=True))
    if accuracy:
        written += plot_accuracy(accuracy, colors, a.out, plt, run_sets(a.json, simulated=False))
    if families:
        written += plot_families(families, colors, a.out, plt, run_sets(a.json, simulated=False))
    if not written:
        print("plot.py: error: no finished runs in these files", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
