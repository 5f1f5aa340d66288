"""benchmarks/plot.py on small JSONs of the harness's shape: PNG and SVG of time and accuracy."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _write(path: Path, meta: dict, runs: list[dict], summary: dict) -> None:
    path.write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}))


def test_plot_writes_png_and_svg(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    for n, t in ((1000, 1.0), (10000, 3.0)):
        runs = [{"tool": "msa", "case": f"sim{n}", "sp": 0.9, "tc": 0.5, "wall_s": t, "peak_rss_mb": 1, "error": None},
                {"tool": "famsa", "case": f"sim{n}", "sp": None, "tc": None, "wall_s": None, "peak_rss_mb": None,
                 "error": "timeout"}]
        _write(tmp_path / f"sim{n}.json", {"params": {"n": n}}, runs, {})
    summary = {"msa": {"cases": 3, "sp": 0.8, "tc": 0.5}, "famsa": {"cases": 3, "sp": 0.82, "tc": 0.52}}
    _write(tmp_path / "balifam1000.json", {"sets": "x"}, [], summary)
    out = tmp_path / "plots"
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "plot.py"), *map(str, sorted(tmp_path.glob("*.json"))),
                             "-o", str(out)], capture_output=True)
    assert result.returncode == 0, result.stderr.decode()
    for name in ("time.png", "time.svg", "accuracy.png", "accuracy.svg"):
        assert (out / name).stat().st_size > 1000
    assert (out / "time.png").read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in (out / "accuracy.svg").read_bytes()[:2000]


def test_plot_with_no_finished_runs_is_an_error(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _write(tmp_path / "x.json", {"sets": "x"}, [], {"msa": {"cases": 0, "sp": None, "tc": None}})
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "plot.py"), str(tmp_path / "x.json"),
                             "-o", str(tmp_path)], capture_output=True)
    assert result.returncode == 1 and b"no finished runs" in result.stderr


def _run(tool: str, case: str, sp: float | None, wall: float, error: str | None = None) -> dict:
    return {"tool": tool, "case": case, "sp": sp, "tc": None if sp is None else sp / 2, "wall_s": wall,
            "peak_rss_mb": 1.0, "error": error}


def test_load_merges_a_set_over_files_and_keeps_timeouts_as_lower_bounds(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    from plot import load

    # Two runs on one BaliFam folder with different tools: one set, means over the cases both
    # finished (mafft timed out on b, so b is left out of every tool's mean).
    _write(tmp_path / "balifam1000.json", {"sets": "/x/balifam1000"},
           [_run("msa-gpu", "a", 0.8, 1.0), _run("msa-gpu", "b", 0.4, 1.0)], {})
    _write(tmp_path / "balifam1000-mafft.json", {"sets": "/y/balifam1000"},
           [_run("mafft", "a", 0.6, 5.0), _run("mafft", "b", None, 9.0, "mafft timed out after 9 s")], {})
    # The same tool on the same set from a third file is kept apart, named by its file.
    _write(tmp_path / "other.json", {"sets": "/z/balifam1000"}, [_run("msa-gpu", "a", 0.7, 1.0)], {})
    # Simulated sizes: a median over seeds; a size where famsa only timed out is a lower bound;
    # a run that failed otherwise is left out.
    for seed, wall in ((1, 2.0), (2, 4.0), (3, 3.0)):
        _write(tmp_path / f"sim{seed}.json", {"params": {"n": 1000}},
               [_run("msa-gpu", "s", 0.9, wall), _run("famsa", "s", None, 60.0, "famsa timed out after 60 s"),
                _run("mafft", "s", None, 1.0, "mafft exited 1: boom")], {})
    times, accuracy = load(sorted(tmp_path.glob("*.json")))
    scores, cases = accuracy["balifam1000"]
    assert cases == 1
    assert scores["msa-gpu"] == (0.8, 0.4) and scores["mafft"] == (0.6, 0.3)
    assert scores["msa-gpu (other)"] == (0.7, 0.35)
    assert sorted(times["msa-gpu"][1000][0]) == [2.0, 3.0, 4.0] and times["msa-gpu"][1000][1] == []
    assert times["famsa"][1000] == ([], [60.0, 60.0, 60.0])
    assert "mafft" not in times


def test_the_time_legend_names_the_cpu_and_sits_outside_the_lines(tmp_path: Path, monkeypatch) -> None:
    """``msa`` (the harness's CPU run) is ``msa-cpu`` beside ``msa-gpu``, in both plots, and the
    time plot's legend is outside the axes, where it cannot cover a line."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import plot

    figures = []
    monkeypatch.setattr(plot, "_save", lambda fig, stem, plt, caption=(): figures.append(fig) or [])
    times = {"msa": {1000: ([0.8], []), 100000: ([38.0], [])}, "msa-gpu": {1000: ([1.0], []), 100000: ([7.0], [])},
             "famsa": {100000: ([], [300.0])}}
    accuracy = {"balifam1000": ({"msa": (0.8, 0.5), "msa (other)": (0.8, 0.5), "famsa": (0.8, 0.5)}, 3)}
    colors = {tool: f"C{i}" for i, tool in enumerate(["famsa", "msa", "msa (other)", "msa-gpu"])}
    plot.plot_time(times, colors, tmp_path, plt)
    plot.plot_accuracy(accuracy, colors, tmp_path, plt)
    time_fig, accuracy_fig = figures
    ax = time_fig.axes[0]
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        "famsa", "msa-cpu", "msa-gpu", "stopped at the timeout (at least)"]
    time_fig.canvas.draw()
    assert not legend.get_window_extent().overlaps(ax.get_window_extent())
    names = [t.get_text() for t in accuracy_fig.axes[1].get_legend().get_texts()]
    assert names == ["famsa", "msa-cpu", "msa-cpu (other)"]
    plt.close("all")


def test_per_family_times_read_each_input_s_residues(tmp_path: Path) -> None:
    """--sets-root: each finished run of a set file becomes (residues of its input, wall time),
    the default command's msa named msa-auto; runs without an input found, or failed, are left out."""
    pytest.importorskip("matplotlib")
    (tmp_path / "data" / "setA" / "in").mkdir(parents=True)
    (tmp_path / "data" / "setA" / "in" / "f1").write_text(">a\nMKV\nLA\n>b\nMK\n")
    (tmp_path / "data" / "setA" / "in" / "f2").write_text(">a\nMKVLAMKVLA\n")
    runs = [_run("msa", "f1", 0.8, 1.5), _run("famsa", "f1", 0.8, 0.5), _run("msa", "f2", None, 2.0, "failed"),
            _run("famsa", "gone", 0.5, 1.0)]
    _write(tmp_path / "setA.json", {"sets": "/elsewhere/setA", "commands": {"msa": "{python} -m msa align {input}"}},
           runs, {})
    out = tmp_path / "plots"
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "plot.py"), str(tmp_path / "setA.json"),
                             "--sets-root", str(tmp_path / "data"), "-o", str(out)], capture_output=True)
    assert result.returncode == 0, result.stderr.decode()
    assert (out / "per-family.png").read_bytes().startswith(b"\x89PNG")
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from plot import family_times
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert family_times([tmp_path / "setA.json"], [tmp_path / "data"]) == {
        "setA": {"msa-auto": [(7, 1.5)], "famsa": [(7, 0.5)]}}


def _brace(word: str) -> list[str]:
    """Bash's brace expansion of one ``{a,b}`` group, as the README's command uses it."""
    m = re.search(r"\{([^{}]*)\}", word)
    return [word[: m.start()] + part + word[m.end():] for part in m[1].split(",")] if m else [word]


def test_the_readme_table_is_what_plot_py_makes_of_its_run_sets(monkeypatch) -> None:
    """The README's results table is plot.py's table of the files its command names, so the
    runners' results regenerate it (``--readme``)."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    from plot import TABLE_MARKERS, table

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = next(b for b in re.findall(r"```bash\n(.*?)```", readme, re.S) if "benchmarks/plot.py" in b)
    words = shlex.split(command.replace("\\\n", " "))
    files = [REPO / w for word in words for w in _brace(word) if w.endswith(".json")]
    assert files and all(f.is_file() for f in files), files
    shown = readme[readme.index(TABLE_MARKERS[0]) + len(TABLE_MARKERS[0]):readme.index(TABLE_MARKERS[1])]
    assert shown.strip() == table(files, REPO / "benchmarks" / "results").strip()


def test_table_names_each_command_and_run_set(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    from plot import put_table, table

    run_set = tmp_path / "2026-01-01_abc1234_cpu-2c"
    run_set.mkdir()
    summary = {"msa": {"cases": 2, "sp": 0.9, "tc": 0.5, "wall_s": 3.0},
               "famsa": {"cases": 0, "sp": None, "tc": None, "wall_s": 9.0}}
    runs = [_run("famsa", "a", None, 9.0, "famsa timed out after 9 s")]
    _write(run_set / "set.json", {"sets": "/x/balifam1000", "commands": {"msa": "msa align --consistency off"}},
           runs, summary)
    text = table([run_set / "set.json"], tmp_path)
    assert "`msa --consistency off`" in text and "FAMSA 2" in text
    assert "| balifam1000 (2) | `2026-01-01_abc1234_cpu-2c` | 0.900 / 0.500, 3.0 s | stopped at 9 s |" in text
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- results table -->\nold\n<!-- end of results table -->\nb\n")
    put_table(readme, text)
    assert readme.read_text() == "a\n<!-- results table -->\n" + text + "<!-- end of results table -->\nb\n"


def test_results_dir_writes_the_manifest_once_and_adds_each_command(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    import common

    monkeypatch.setattr(sys, "argv", ["benchmarks/balifam.py", "--threads", "2"])
    folder = common.results_dir("testhost", root=tmp_path)
    date, commit, host = folder.name.split("_")
    assert host == "testhost" and len(date) == 10 and commit
    monkeypatch.setattr(sys, "argv", ["benchmarks/simulated.py", "-n", "10"])
    common.write_manifest(folder)
    common.write_manifest(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["commands"] == ["python3 benchmarks/balifam.py --threads 2",
                                    "python3 benchmarks/simulated.py -n 10"]
    assert {"gpu", "gpus", "driver", "cores"} <= set(manifest["host"]) and "numpy" in manifest["packages"]
    assert common.host_label({"gpu": "NVIDIA H100 80GB HBM3", "gpus": 2, "cores": 32}) == "2xh100-32c"
    assert common.host_label({"gpu": "NVIDIA A100-SXM4-80GB", "gpus": 1, "cores": 16}) == "a100-16c"
    assert common.host_label({"gpu": None, "gpus": 0, "cores": 2}) == "cpu-2c"
