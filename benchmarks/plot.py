"""Plots of the side-by-side benchmark JSONs: time against sequences (log-log) and accuracy per set.

    python benchmarks/plot.py bench-out/*.json -o bench-out/

Reads the files ``common.write_json`` writes (``meta``, ``summary``, ``runs``):
a file whose ``meta.params.n`` is set comes from ``simulated.py`` (one point
per run: sequences against wall time, a line per tool); any other (``balifam.py``,
``semisynthetic.sh``) is a set, drawn as its tools' mean SP and TC
(``summary``). Writes ``time.png``/``time.svg`` and ``accuracy.png``/``accuracy.svg``
into the output folder (a plot without data is left out); needs matplotlib
(the ``bench`` extra).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def load(paths: list[Path]) -> tuple[dict[str, list[tuple[int, float]]], dict[str, dict[str, tuple[float, float]]]]:
    """``(times, accuracy)``: per tool the (sequences, wall s) of simulated runs; per set, per tool (SP, TC)."""
    times: dict[str, list[tuple[int, float]]] = defaultdict(list)
    accuracy: dict[str, dict[str, tuple[float, float]]] = {}
    for path in paths:
        data = json.loads(path.read_text())
        n = (data.get("meta", {}).get("params") or {}).get("n")
        if n is not None:
            for run in data.get("runs", []):
                if run.get("error") is None and run.get("wall_s") is not None:
                    times[run["tool"]].append((int(n), float(run["wall_s"])))
        else:
            scores = {
                tool: (float(s["sp"]), float(s["tc"]))
                for tool, s in data.get("summary", {}).items()
                if s.get("cases") and s.get("sp") is not None
            }
            if scores:
                accuracy[path.stem] = scores
    return {t: sorted(v) for t, v in times.items()}, accuracy


def plot_time(times: dict[str, list[tuple[int, float]]], out: Path, plt) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for tool in sorted(times):
        xs, ys = zip(*times[tool])
        ax.plot(xs, ys, marker="o", label=tool)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sequences")
    ax.set_ylabel("wall time (s)")
    ax.set_title("Time against family size (simulated families)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _save(fig, out / "time", plt)


def plot_accuracy(accuracy: dict[str, dict[str, tuple[float, float]]], out: Path, plt) -> list[Path]:
    sets = sorted(accuracy)
    tools = sorted({t for s in sets for t in accuracy[s]})
    fig, axes = plt.subplots(1, 2, figsize=(max(6, 2.5 + 1.6 * len(sets)) * 1.6, 4.5), sharey=True)
    width = 0.8 / max(1, len(tools))
    for k, (ax, what) in enumerate(zip(axes, ("SP (Q)", "TC"))):
        for i, tool in enumerate(tools):
            xs = [j + (i - (len(tools) - 1) / 2) * width for j, s in enumerate(sets) if tool in accuracy[s]]
            ys = [accuracy[s][tool][k] for s in sets if tool in accuracy[s]]
            ax.bar(xs, ys, width, label=tool)
        ax.set_xticks(range(len(sets)))
        ax.set_xticklabels(sets, rotation=20, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"mean {what} per set")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("accuracy against the reference")
    axes[1].legend()
    fig.tight_layout()
    return _save(fig, out / "accuracy", plt)


def _save(fig, stem: Path, plt) -> list[Path]:
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
    a = p.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: error: matplotlib is not installed (pip install '.[bench]')", file=sys.stderr)
        return 1
    try:
        times, accuracy = load(a.json)
    except (OSError, ValueError, KeyError) as exc:
        print(f"plot.py: error: {exc}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if times:
        written += plot_time(times, a.out, plt)
    if accuracy:
        written += plot_accuracy(accuracy, a.out, plt)
    if not written:
        print("plot.py: error: no finished runs in these files", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
