"""benchmarks/aligners.py: per-family JSON, skipped tools, resume, and the report of the families
where msa is furthest below the best other tool (stand-in commands, so no aligner is needed)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "aligners.py"


def _balifam(root: Path) -> Path:
    """A BaliFam-layout folder of two families whose inputs are their own reference (equal lengths)."""
    sets = root / "tiny1000"
    for sub in ("in", "ref", "info"):
        (sets / sub).mkdir(parents=True)
    for case in ("PFa", "PFb"):
        text = ">s1\nMKVLAAGIVG\n>s2\nMKVLAAGIVA\n>s3\nMRVLSAGIVG\n"
        (sets / "in" / case).write_text(text)
        (sets / "ref" / case).write_text(text)
    (sets / "info" / "ids.txt").write_text("PFa\nPFb\n")
    return sets


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_runs_scores_skips_and_reports(tmp_path: Path) -> None:
    sets, out = _balifam(tmp_path), tmp_path / "out"
    shift = "{python} -c \"import sys; t=open(sys.argv[1]).read(); open(sys.argv[2],'w').write(t.replace('MKVLAAGIVG','-MKVLAAGIVG').replace('MKVLAAGIVA','MKVLAAGIVA-').replace('MRVLSAGIVG','MRVLSAGIVG-'))\" {input} {output}"
    result = _run(str(sets), "--tools", "msa,kalign,clustalo", "--out", str(out),
                  "--msa-cmd", shift, "--kalign-cmd", "cp {input} {output}",
                  "--clustalo-cmd", "no-such-aligner-here -i {input} -o {output}",
                  "--variant", "msa-copy=cp {input} {output}")
    assert result.returncode == 0, result.stderr
    assert "clustalo: skipped (no-such-aligner-here is not on PATH)" in result.stderr
    stored = json.loads((out / "tiny1000" / "PFa.json").read_text())["runs"]
    sp = {r["tool"]: r["sp"] for r in stored}
    assert sp["kalign"] == 1.0 and sp["msa"] < 1.0
    assert "msa more than 5 SP points below the best other tool: 2 of 2" in result.stdout
    assert "PFa" in result.stdout and "kalign 1.000" in result.stdout
    assert "msa-copy more than 5 SP points below the best other tool: 0 of 2" in result.stdout
    # a second run finds every family stored and only reports
    again = _run(str(sets), "--tools", "msa,kalign", "--out", str(out), "--msa-cmd", "false {input} {output}",
                 "--variant", "msa-copy=false {input} {output}")
    assert again.returncode == 0 and "PFa msa" not in again.stderr
    assert again.stdout == result.stdout


def test_gaps_to_best_orders_by_shortfall() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from aligners import gaps_to_best

    def run(tool: str, sp: float | None, error: str | None = None) -> dict:
        return {"tool": tool, "sp": sp, "error": error}

    families = {"a": [run("msa", 0.9), run("famsa", 0.8), run("clustalo", None, "timed out"), run("msa-x", 0.95)],
                "b": [run("msa", 0.5), run("famsa", 0.6), run("kalign", 0.7)],
                "c": [run("famsa", 0.9)]}
    assert gaps_to_best(families) == [("b", 0.5, "kalign", 0.7), ("a", 0.9, "famsa", 0.8)]
