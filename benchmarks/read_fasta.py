"""Benchmark of the FASTA readers: ``read_alignment`` (aligned FASTA, as ``msa add``/``merge``
read an existing alignment) and ``read_fasta`` (unaligned input), on synthetic files.

    python benchmarks/read_fasta.py --rows 10006 --width 2766
    python benchmarks/read_fasta.py --rows 10000 --width 953 --plain-rows 1000000 --plain-length 300

The aligned file has ``rows`` rows of ``width`` columns, about ``--gaps`` of them gaps
(runs, as in a real alignment), wrapped at 60 columns as ``msa`` writes it; the plain
file has ``plain-rows`` sequences of about ``plain-length`` residues (uniform in
[length/2, 3 length/2]), one line each unless ``--plain-wrap`` (as ``datasets/simulate.py``
writes them). Both are written to a temporary directory; each reader is timed best of
``--repeat`` and reported in seconds and MB/s of file. Only the shapes matter for timing.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from msa.io.fasta import read_fasta  # noqa: E402
from msa.io.formats import read_alignment  # noqa: E402

AMINO = np.frombuffer(b"ARNDCQEGHILKMFPSTWYV", dtype=np.uint8)


def _records(path: Path, names: list[str], text: np.ndarray, lengths: np.ndarray, wrap: int) -> None:
    """Write records ``text`` cut at ``lengths``, lines of ``wrap`` bytes (0: one line each)."""
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    with open(path, "wb") as fh:
        for i, name in enumerate(names):
            row = text[offsets[i]:offsets[i + 1]].tobytes()
            if wrap:
                row = b"\n".join(row[k:k + wrap] for k in range(0, len(row), wrap))
            fh.write(b">" + name.encode() + b" synthetic record\n" + row + b"\n")


def aligned_file(path: Path, rows: int, width: int, gaps: float, seed: int) -> None:
    """``rows`` x ``width`` aligned FASTA with gap runs making up about ``gaps`` of it."""
    rng = np.random.default_rng(seed)
    text = AMINO[rng.integers(0, len(AMINO), size=(rows, width))]
    # Gap runs of mean length 8, starting at a column with probability -ln(1 - gaps) / 8 ...
    starts = rng.random((rows, width)) < -np.log1p(-gaps) / 8
    run = np.zeros((rows, width), dtype=np.int32)
    run[starts] = rng.geometric(1 / 8, size=int(starts.sum()))
    gap = np.zeros((rows, width), dtype=bool)
    left = run.copy()  # ... and runs on for its length
    for c in range(width):
        if c:
            left[:, c] = np.maximum(left[:, c], left[:, c - 1] - 1)
        gap[:, c] = left[:, c] > 0
    text[gap] = ord("-")
    text[:, 0] = np.where(gap[:, 0], AMINO[0], text[:, 0])  # every row keeps a residue
    names = [f"row{i}" for i in range(rows)]
    _records(path, names, text.reshape(-1), np.full(rows, width), 60)


def plain_file(path: Path, rows: int, length: int, wrap: int, seed: int) -> None:
    """``rows`` unaligned sequences of about ``length`` residues."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(max(1, length // 2), length + length // 2 + 1, size=rows)
    text = AMINO[rng.integers(0, len(AMINO), size=int(lengths.sum()))]
    _records(path, [f"seq{i}" for i in range(rows)], text, lengths, wrap)


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=10000, help="rows of the aligned file")
    p.add_argument("--width", type=int, default=953, help="columns of the aligned file")
    p.add_argument("--gaps", type=float, default=0.3, help="share of gaps in the aligned file")
    p.add_argument("--plain-rows", type=int, default=None, help="sequences of the plain file (default: --rows; 0: none)")
    p.add_argument("--plain-length", type=int, default=300, help="mean sequence length of the plain file")
    p.add_argument("--plain-wrap", type=int, default=0, help="line length of the plain file (0: one line each)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, default=None, help="write the files here and keep them")
    a = p.parse_args(argv)
    plain_rows = a.rows if a.plain_rows is None else a.plain_rows
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        cases = []
        if a.rows:
            aln = where / f"aligned_{a.rows}x{a.width}.fa"
            aligned_file(aln, a.rows, a.width, a.gaps, a.seed)
            cases.append(("read_alignment", aln, lambda: read_alignment(str(aln))))
        if plain_rows:
            fa = where / f"plain_{plain_rows}x{a.plain_length}.fa"
            plain_file(fa, plain_rows, a.plain_length, a.plain_wrap, a.seed)
            cases.append(("read_fasta", fa, lambda: read_fasta(fa)))
        for name, path, fn in cases:
            size = path.stat().st_size
            fn()  # warm: page cache, imports
            t = best_of(fn, a.repeat)
            print(f"{name:15s} {path.name:28s} {size / 1e6:8.1f} MB  {t:7.3f} s  {size / t / 1e6:7.1f} MB/s",
                  flush=True)


if __name__ == "__main__":
    main()
