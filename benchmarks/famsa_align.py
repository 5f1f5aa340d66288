"""Align a FASTA file with pyfamsa (FAMSA 2) from the command line.

The benchmarks run FAMSA through this script in a subprocess, so that its time
and peak memory are measured the same way as for ``msa`` and MAFFT.

Usage: python benchmarks/famsa_align.py IN OUT [--threads 2] [--guide-tree sl|upgma|nj|medoid]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pyfamsa


def read_records(path: Path) -> list[tuple[bytes, bytes]]:
    """(name, residues) pairs of a FASTA file, the name being the header's first word."""
    out = []
    for chunk in path.read_bytes().split(b"\n>"):
        header, _, body = chunk.lstrip(b">").partition(b"\n")
        if header.split():
            out.append((header.split()[0], b"".join(body.split()).replace(b"-", b"")))
    return out


def main() -> None:
    """Parse arguments, align, write FASTA (one line per sequence, input order)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", type=Path)
    ap.add_argument("output", type=Path)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--guide-tree", default="sl", choices=["sl", "upgma", "nj", "medoid"])
    a = ap.parse_args()
    records = read_records(a.input)
    seqs = [pyfamsa.Sequence(name, residues) for name, residues in records]
    if a.guide_tree == "medoid":
        aligner = pyfamsa.Aligner(threads=a.threads, tree_heuristic="medoid")
    else:
        aligner = pyfamsa.Aligner(threads=a.threads, guide_tree=a.guide_tree)
    aligned = {s.id: s.sequence for s in aligner.align(seqs)}
    with open(a.output, "wb") as out:  # record by record: 10^6 rows are tens of GB
        for name, _ in records:
            out.write(b">%s\n%s\n" % (name, aligned[name]))


if __name__ == "__main__":
    main()
