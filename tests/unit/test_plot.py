"""benchmarks/plot.py on small JSONs of the harness's shape: PNG and SVG of time and accuracy."""
from __future__ import annotations

import json
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
