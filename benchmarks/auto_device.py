"""Calibrate ``--device auto``'s cost model (msa._runtime.startup.COSTS) on a GPU host.

    python benchmarks/auto_device.py [--runs 3] [--msa 'msa'] \
        datasets/examples/example.fa \
        /work/shared/datasets/balifam/balifam1000/in/PF00018.1000 \
        /work/shared/datasets/balifam/balifam1000/in/PF00009.1000 \
        /work/shared/datasets/balifam/balifam1000/in/PF00343.1000 \
        /work/shared/datasets/balifam/balifam10000-dev/in/<a few families>

Each input is aligned by ``msa align IN -o OUT`` as users run it, one process per run, with
``--device cpu`` (all cores, and a quarter of them for the cores' term), and ``--device cuda``;
the runs are interleaved (one of each, then the next round) and each input's median is taken
after one untimed warm run of each. The CPU's and the GPU's outputs must be the same bytes.
Then, per backend, a least-squares fit of ``seconds = start + per_mb * MB + per_1k * sequences
/ 1000`` over the inputs (MB and sequences as msa._runtime.startup counts them), the CPU's
exponent of the threads from its two thread counts, and the ``COSTS`` to paste into
msa/_runtime/startup.py, with the host it was measured on. Use inputs on both sides of where
the backends cross (a few hundred KB to a few MB), at least four of them. Run it with the
Python that has msa installed (a wheel install, not a checkout: the shipped compiled code is
part of what a user's run costs).
"""
from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from msa._runtime.startup import MB, count_sequences, host_threads, input_bytes


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def fit(mb: np.ndarray, kseq: np.ndarray, seconds: np.ndarray) -> tuple[float, float, float]:
    """(start, per_mb, per_1k_sequences), least squares, none below zero (a negative term is
    dropped and the rest fitted again)."""
    columns = [np.ones_like(mb), mb, kseq]
    keep = [0, 1, 2]
    while True:
        a = np.stack([columns[k] for k in keep], axis=1)
        coef, *_ = np.linalg.lstsq(a, seconds, rcond=None)
        if (coef >= 0).all() or len(keep) == 1:
            out = [0.0, 0.0, 0.0]
            for k, c in zip(keep, coef):
                out[k] = max(float(c), 0.0)
            return out[0], out[1], out[2]
        keep = [k for k, c in zip(keep, coef) if c >= 0 or k == 0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each input and backend")
    ap.add_argument("--msa", default="msa", help="the msa command (default: msa on PATH)")
    ap.add_argument("--no-gpu", action="store_true", help="time and fit the CPU only (a host without a GPU)")
    a = ap.parse_args()
    cores = host_threads()
    few = max(1, cores // 4)
    msa = shlex.split(a.msa)
    out = Path(tempfile.mkdtemp(prefix="msa-auto-device-"))
    variants = {"cpu": ["--device", "cpu"], "cpu-few": ["--device", "cpu", "--threads", str(few)],
                "cuda": ["--device", "cuda"]}
    if cores == few:
        del variants["cpu-few"]
    if a.no_gpu:
        del variants["cuda"]
    times: dict[tuple[str, Path], list[float]] = {}
    for round_ in range(a.runs + 1):  # round 0 warms the caches, untimed
        for inp in a.inputs:
            for name, extra in variants.items():
                target = out / f"{name}-{inp.name}.fa"
                seconds = timed([*msa, "align", str(inp.resolve()), "-o", str(target), "-q", *extra], out)
                if round_:
                    times.setdefault((name, inp), []).append(seconds)
    for inp in a.inputs if "cuda" in variants else ():
        if (out / f"cpu-{inp.name}.fa").read_bytes() != (out / f"cuda-{inp.name}.fa").read_bytes():
            raise SystemExit(f"auto_device.py: {inp}: the CPU's and the GPU's outputs differ")
    mb = np.array([input_bytes(str(i)) / MB for i in a.inputs])
    kseq = np.array([(count_sequences(str(i)) or 0) / 1000 for i in a.inputs])
    med = {name: np.array([statistics.median(times[name, i]) for i in a.inputs]) for name in variants}
    print(f"host: {cores} CPU threads; {len(a.inputs)} inputs, {a.runs} timed runs each (medians, s)")
    print(f"{'input':>24} {'MB':>6} {'kseq':>6} " + " ".join(f"{n:>8}" for n in variants))
    for k, inp in enumerate(a.inputs):
        print(f"{inp.name[-24:]:>24} {mb[k]:6.3f} {kseq[k]:6.2f} " + " ".join(f"{med[n][k]:8.3f}" for n in variants))
    cpu = fit(mb, kseq, med["cpu"])
    exponent = 0.0
    if "cpu-few" in variants:
        few_fit = fit(mb, kseq, med["cpu-few"])
        work_all = cpu[1] * mb + cpu[2] * kseq
        work_few = few_fit[1] * mb + few_fit[2] * kseq
        ratios = [f / w for f, w in zip(work_few, work_all) if w > 0 and f > 0]
        if ratios:
            exponent = max(0.0, math.log(statistics.median(ratios)) / math.log(cores / few))
    scale = cores ** exponent  # the model's per-MB terms are one thread's
    gpu = fit(mb, kseq, med["cuda"]) if "cuda" in variants else None
    print("\n# msa/_runtime/startup.py, calibrated by benchmarks/auto_device.py on "
          f"{os.uname().nodename} ({cores} CPU threads, {time.strftime('%Y-%m-%d')}):")
    print("COSTS: dict[str, Cost] = {")
    print(f'    "cpu": Cost(start={cpu[0]:.3f}, per_mb={cpu[1] * scale:.3f}, '
          f"per_1k_sequences={cpu[2] * scale:.3f}, core_exponent={exponent:.2f}),")
    if gpu is not None:
        print(f'    "cuda": Cost(start={gpu[0]:.3f}, per_mb={gpu[1]:.3f}, per_1k_sequences={gpu[2]:.3f}),')
    print("}")


if __name__ == "__main__":
    main()
