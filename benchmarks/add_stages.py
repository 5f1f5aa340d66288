"""Where `msa add`'s alignment stage goes, in process: each backend call synchronised and timed.

    python benchmarks/add_stages.py EXISTING.fa NEW.fa [--device cuda] [--repeat 3]

Reads the existing alignment and the new sequences once, then runs
``msa.merge.add_sequences`` ``--repeat`` times, timing the backend's profile_slots (the merges;
the device is synchronised around it, so its time is its own) within it. Prints the cells (new
residues x profile width) so a rate can be worked out. `benchmarks/add_sequences.sh` makes a
suitable pair of inputs.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import msa.merge as merge
from msa.backends import get_backend
from msa.io import read_fasta
from msa.io.formats import read_alignment
from msa.params import AlignParams

TIMED = ("profile_slots",)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("existing")
    ap.add_argument("new")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    t = time.perf_counter()
    old, db = read_alignment(a.existing), read_fasta(a.new)
    print(f"read {time.perf_counter() - t:.3f} s")
    backend = get_backend(a.device, quiet=True)
    sync = _synchroniser(backend)
    spent: dict[str, float] = {}
    for name in TIMED:
        _wrap(backend, name, sync, spent)
    for _ in range(a.repeat):
        spent.clear()
        sync()
        t = time.perf_counter()
        merge.add_sequences(old, db, AlignParams(), backend)
        sync()
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in spent.items())
        print(f"add_sequences {time.perf_counter() - t:.3f} s ({parts})")
    print(f"{backend.name}: {int(np.sum(db.lengths)) * old.width:.3e} cells (new residues x width {old.width})")


def _synchroniser(backend):
    if backend.name == "cuda":
        import cupy as cp

        return cp.cuda.Device().synchronize
    return lambda: None


def _wrap(backend, name: str, sync, spent: dict[str, float]) -> None:
    call = getattr(backend, name)

    def timed(*args, **kwargs):
        sync()
        t = time.perf_counter()
        out = call(*args, **kwargs)
        sync()
        spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
        return out

    setattr(backend, name, timed)


if __name__ == "__main__":
    main()
