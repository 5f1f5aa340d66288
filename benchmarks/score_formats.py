"""Benchmark of reading alignments in every format msa writes: ``msa score TEST REF`` with TEST in
each format (and gzipped) against a FASTA reference, beside the same with TEST in FASTA.

    python benchmarks/score_formats.py --rows 100000 --width 300
    python benchmarks/score_formats.py --rows 10000 --width 953 --formats clustal stockholm --repeat 3

The alignment is ``read_fasta.py``'s synthetic one (``rows`` x ``width``, about ``--gaps`` of it
gap runs), written by msa in each format (``msa.io.write_alignment``) and gzipped at level 1;
the reference is the same rows in FASTA, so every run scores SP = 1 (A3M, whose inserts come
back left-justified between their match columns, a little less). Each case runs
``python -m msa score`` in a subprocess (start-up included, as a user sees it), best of
``--repeat``; the table gives the seconds, the file's size and the ratio to the FASTA case.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.read_fasta import aligned_file  # noqa: E402
from msa.io import FORMATS, write_alignment  # noqa: E402
from msa.io.formats import FORMAT_SUFFIXES, read_alignment  # noqa: E402


def score_seconds(test: Path, ref: Path, fmt: str, repeat: int) -> float:
    """Best wall time of ``msa score test ref --in-format fmt --ref-format fasta``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "msa", "score", str(test), str(ref), "--in-format", fmt, "--ref-format", "fasta"]
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        best = min(best, time.perf_counter() - began)
        perfect = fmt == "a3m" or "SP (Q)\t1.0000" in done.stdout  # A3M's inserts come back left-justified
        if done.returncode != 0 or not perfect:
            raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip() or done.stdout}")
    return best


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100000)
    p.add_argument("--width", type=int, default=300)
    p.add_argument("--gaps", type=float, default=0.3, help="share of gaps")
    p.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    p.add_argument("--no-gzip", action="store_true", help="skip the gzipped cases")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, default=None, help="write the files here and keep them")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        ref = where / "ref.fa"
        aligned_file(ref, a.rows, a.width, a.gaps, a.seed)
        aligned = read_alignment(str(ref))
        cases = []
        for fmt in a.formats:
            path = where / f"test-{fmt}{FORMAT_SUFFIXES[fmt]}"
            if fmt == "fasta":
                shutil.copyfile(ref, path)
            else:
                with open(path, "wb") as out:
                    write_alignment(out, aligned, fmt)
            cases.append((fmt, path))
            if not a.no_gzip:
                packed = path.with_name(path.name + ".gz")
                with open(path, "rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                cases.append((fmt, packed))
        print(f"msa score of {a.rows} x {a.width} rows against a FASTA reference, best of {a.repeat}")
        base = None
        for fmt, path in cases:
            seconds = score_seconds(path, ref, fmt, a.repeat)
            base = seconds if base is None and fmt == "fasta" and path.suffix != ".gz" else base
            ratio = f"{seconds / base:5.2f}x" if base else "     -"
            print(f"{fmt:15s} {path.name:26s} {path.stat().st_size / 1e6:8.1f} MB {seconds:7.2f} s  {ratio}",
                  flush=True)


if __name__ == "__main__":
    main()
