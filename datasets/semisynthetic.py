"""Grow a real family into a larger semi-synthetic one: each sequence plus mutated copies.

Each input sequence is written unchanged, followed by ``variants`` copies of it,
each with about ``subst`` of its residues replaced by a random standard residue
and 0..``max_indels`` short indels (``indel_min``..``indel_max`` residues; half
insertions of random residues, half deletions). The originals keep their names,
so a BaliFam reference of the input (``ref/<id>``) scores the grown family: the
variants are not in the reference, the originals are. Unlike ``simulate.py``, the
family's shape (its real guide-tree difficulty) comes from real sequences.

Example (issue 9's 10^5 family)::

    python datasets/semisynthetic.py balifam10000-dev/in/PF00078.10000 -o PF00078.100000 --seed 1
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import BinaryIO

import numpy as np

STANDARD = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def read_records(path: Path) -> list[tuple[bytes, bytes]]:
    """(header line without '>', residues) of each record; line breaks and gaps dropped."""
    records: list[tuple[bytes, bytes]] = []
    for chunk in path.read_bytes().split(b"\n>"):
        if not chunk.strip():
            continue
        header, _, body = chunk.lstrip(b">").partition(b"\n")
        records.append((header.rstrip(b"\r"), body.translate(None, b"\r\n\t -.")))
    return records


def mutate(seq: np.ndarray, rng: np.random.Generator, subst: float, max_indels: int,
           indel_min: int, indel_max: int) -> np.ndarray:
    """One variant of ``seq``: substitutions everywhere at rate ``subst``, then a few short indels."""
    out = seq.copy()
    hit = rng.random(len(out)) < subst
    out[hit] = STANDARD[rng.integers(0, 20, int(hit.sum()))]
    for _ in range(int(rng.integers(0, max_indels + 1))):
        k = int(rng.integers(indel_min, indel_max + 1))
        at = int(rng.integers(0, len(out) + 1))
        if rng.random() < 0.5 or len(out) <= k + 1:
            out = np.concatenate((out[:at], STANDARD[rng.integers(0, 20, k)], out[at:]))
        else:
            at = min(at, len(out) - k)
            out = np.concatenate((out[:at], out[at + k :]))
    return out


def grow(records: list[tuple[bytes, bytes]], variants: int, subst: float, max_indels: int,
         indel_min: int, indel_max: int, seed: int, originals: bool = True) -> list[tuple[bytes, bytes]]:
    """The originals (unless ``originals`` is false), each followed by its variants (named ``<name>_v<k>``)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[bytes, bytes]] = []
    for header, residues in records:
        if originals:
            out.append((header, residues))
        name = header.split()[0] if header.split() else header
        seq = np.frombuffer(residues, dtype=np.uint8)
        for k in range(1, variants + 1):
            out.append((name + b"_v%d" % k, mutate(seq, rng, subst, max_indels, indel_min, indel_max).tobytes()))
    return out


def write_substituted(records: list[tuple[bytes, bytes]], variants: int, subst: float, seed: int, out: BinaryIO,
                      originals: bool = True) -> None:
    """:func:`grow` without indels, written as it goes: each record's variants in one array, so
    that 10^7 sequences (PF00037.10000 x 1000, issue 31's benchmark family) take minutes, not
    hours. Its random stream is its own (not ``grow``'s for the same seed)."""
    rng = np.random.default_rng(seed)
    for header, residues in records:
        name = header.split()[0] if header.split() else header
        if originals:
            out.write(b">" + header + b"\n" + residues + b"\n")
        rows = np.tile(np.frombuffer(residues, dtype=np.uint8), (variants, 1))
        hit = rng.random(rows.shape) < subst
        rows[hit] = STANDARD[rng.integers(0, 20, int(hit.sum()))]
        out.write(b"".join(b">%s_v%d\n%s\n" % (name, k + 1, row) for k, row in enumerate(rows)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", type=Path)
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--variants", type=int, default=9)
    ap.add_argument("--subst", type=float, default=0.08)
    ap.add_argument("--max-indels", type=int, default=2)
    ap.add_argument("--indel-min", type=int, default=1)
    ap.add_argument("--indel-max", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variants-only", action="store_true", help="write the variants, not the originals")
    a = ap.parse_args()
    if a.max_indels == 0:
        with a.out.open("wb") as out:
            write_substituted(read_records(a.input), a.variants, a.subst, a.seed, out, not a.variants_only)
        return
    grown = grow(read_records(a.input), a.variants, a.subst, a.max_indels, a.indel_min, a.indel_max, a.seed,
                 not a.variants_only)
    a.out.write_bytes(b"".join(b">" + h + b"\n" + s + b"\n" for h, s in grown))


if __name__ == "__main__":
    main()
