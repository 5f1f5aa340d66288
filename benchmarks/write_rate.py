"""How fast this host fills a large output file through memory maps, as msa's FASTA writer does
(msa.io.fasta.fill_mapped), with the file's space reserved (posix_fallocate, timed apart) or left
sparse (ftruncate), by 1 to N threads and by 2 processes at once: the ceiling of the writing
stage; then msa's own writer (write_fasta) on a synthetic alignment of as many bytes (rows of
``--width`` columns with 250 residues each) with maps of 64 MB, 256 MB and 1 GB (MAP_BYTES), to
see how close it comes.

    python3 benchmarks/write_rate.py /tmp/probe --gb 8 --threads 16 --width 23393
"""
from __future__ import annotations

import argparse
import mmap
import multiprocessing
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

WINDOW = 1 << 26


def fill(path: str, lo: int, hi: int, threads: int) -> None:
    """Bytes ``lo..hi`` of ``path`` set through maps of WINDOW bytes, ``threads`` maps at a time."""
    fd = os.open(path, os.O_RDWR)

    def one(off: int) -> None:
        size = min(WINDOW, hi - off)
        with mmap.mmap(fd, size, offset=off) as m:
            a = np.frombuffer(m, dtype=np.uint8)
            a[:] = 45
            del a

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(lo, hi, WINDOW)))
    os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--gb", type=float, default=8)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--width", type=int, default=23393, help="msa's rows (PF00078.10000 x 100's width)")
    a = ap.parse_args()
    size = int(a.gb * 2**30) // WINDOW * WINDOW
    for how in ("fallocate", "truncate"):
        for threads, procs in ((1, 1), (a.threads, 1), (a.threads // 2, 2)):
            os.sync()
            fd = os.open(a.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            start = time.perf_counter()
            os.posix_fallocate(fd, 0, size) if how == "fallocate" else os.ftruncate(fd, size)
            reserved = time.perf_counter() - start
            os.close(fd)
            start = time.perf_counter()
            half = size // procs // WINDOW * WINDOW
            ranges = [(p * half, size if p == procs - 1 else (p + 1) * half) for p in range(procs)]
            workers = [multiprocessing.Process(target=fill, args=(a.path, lo, hi, threads)) for lo, hi in ranges]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            seconds = time.perf_counter() - start
            print(f"{how:9s} {procs} process(es) x {threads:2d} threads: {size / seconds / 1e9:5.2f} GB/s "
                  f"({size / 1e9:.1f} GB in {seconds:.2f} s; {how} {reserved:.2f} s)", flush=True)
            os.unlink(a.path)
    msa_writer(a.path, size, a.width)


def msa_writer(path: str, size: int, width: int, residues: int = 250) -> None:
    """msa.io.fasta.write_fasta of rows of ``width`` columns, about ``size`` bytes, timed whole and
    without its header lines' preparation."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import msa.io.fasta
    from msa.alignment import AlignedRows
    from msa.io.fasta import wrapped_line, write_fasta
    from msa.io.output import open_output
    from msa.seqdb import SeqDB

    n = max(1, size // (wrapped_line(width) + 16))
    offsets = np.arange(n + 1, dtype=np.int64) * residues
    letters = np.full(n * residues, ord("A"), dtype=np.uint8)
    columns = np.tile(np.sort(np.random.default_rng(0).choice(width, residues, replace=False)), n).astype(np.int64)
    names = [f"seq{i:09d}_v1" for i in range(n)]
    rows = AlignedRows(names, names, SeqDB(names, names, letters, offsets, letters), columns, width)
    default = msa.io.fasta.MAP_BYTES
    for window in sorted({1 << 26, 1 << 28, 1 << 30, default}):  # a window's fixed cost against its size
        msa.io.fasta.MAP_BYTES = window
        os.sync()
        start = time.perf_counter()
        with open_output(path) as out:
            total = write_fasta(out, names, rows)
        seconds = time.perf_counter() - start
        print(f"msa write_fasta, {window >> 20} MB windows{' (MAP_BYTES)' if window == default else ''}: "
              f"{total / seconds / 1e9:5.2f} GB/s ({total / 1e9:.1f} GB, {n} rows of {width} columns in "
              f"{seconds:.2f} s)", flush=True)
        os.unlink(path)
    msa.io.fasta.MAP_BYTES = default


if __name__ == "__main__":
    main()
