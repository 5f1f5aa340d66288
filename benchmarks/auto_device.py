"""Calibrate ``--device auto``'s cost model (msa.run.plan.COSTS): time on a GPU host, fit anywhere.

    python benchmarks/auto_device.py time --json times.json [--runs 1] [--few-every 2] [--msa 'msa'] \
        datasets/examples/example.fa \
        /work/shared/datasets/balifam/balifam1000/in/* \
        /work/shared/datasets/balifam/balifam10000-dev/in/*
    python benchmarks/auto_device.py fit times.json

``time``: each input is aligned by ``msa align IN -o OUT`` as users run it, one process per run,
with ``--device cpu`` (all cores), ``--device cpu --threads CORES/4`` (every ``--few-every``-th
input: the cores' term) and ``--device cuda``; the runs are interleaved (one of each, then the
next input) after one untimed run of each variant on the first input, and the CPU's and the
GPU's outputs must be the same bytes. The JSON holds every run, each input's bytes and sequences
as msa.run.plan counts them, and the host.

``fit``: per backend, ``seconds = start + (per_mb * MB + per_1k_sequences * sequences / 1000 +
per_mb_length * MB * length / 1000) / threads ** core_exponent`` (length: the mean record's bytes,
MB / sequences; the progressive stage's cells grow with it), fitted by non-negative least
squares on relative errors (a 0.3 s family weighs as much as a 5 s one); the CPU's exponent of
the threads from the two thread counts. Prints each input's measured and predicted times, the
choice against the faster backend and the seconds a wrong choice costs, and the ``COSTS`` to
paste into msa/run/plan.py. Run ``time`` with the Python that has msa installed from
the wheel (the shipped compiled code is part of what a user's run costs).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from fits import nnls_relative

from msa.run.plan import MB, Cost, count_sequences, host_threads, input_bytes
from common import write_manifest  # noqa: E402


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def time_inputs(a: argparse.Namespace) -> None:
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

    def run(name: str, inp: Path) -> float:
        target = out / f"{name}-{inp.name}.fa"
        return timed([*msa, "align", str(inp.resolve()), "-o", str(target), "-q", *variants[name]], out)

    for _ in range(2):  # caches warmed, untimed
        for name in variants:
            run(name, a.inputs[0])
    times: dict[str, dict[str, list[float]]] = {str(i): {} for i in a.inputs}
    for _ in range(a.runs):
        for k, inp in enumerate(a.inputs):
            for name in variants:
                if name != "cpu-few" or k % a.few_every == 0:
                    times[str(inp)].setdefault(name, []).append(run(name, inp))
    for inp in a.inputs if "cuda" in variants else ():
        if (out / f"cpu-{inp.name}.fa").read_bytes() != (out / f"cuda-{inp.name}.fa").read_bytes():
            raise SystemExit(f"auto_device.py: {inp}: the CPU's and the GPU's outputs differ")
    record = {
        "host": os.uname().nodename, "cores": cores, "few": few, "date": time.strftime("%Y-%m-%d"),
        "inputs": [{"path": str(i), "bytes": input_bytes(str(i)), "sequences": count_sequences(str(i)),
                    "seconds": times[str(i)]} for i in a.inputs],
    }
    write_manifest(a.json.parent)
    a.json.write_text(json.dumps(record, indent=1))
    print(f"{len(a.inputs)} inputs timed on {cores} CPU threads: {a.json}")


def features(nbytes: np.ndarray, sequences: np.ndarray) -> np.ndarray:
    """The model's work terms per input, as Cost.seconds weighs them (one thread's)."""
    return np.stack([Cost.work_terms(int(b), int(s) or None)
                     for b, s in zip(nbytes, sequences)])


def fit(a: argparse.Namespace) -> None:
    record = json.loads(a.json.read_text())
    cores, few = record["cores"], record["few"]
    rows = record["inputs"]
    nbytes = np.array([r["bytes"] for r in rows], dtype=np.float64)
    seqs = np.array([r["sequences"] or 0 for r in rows], dtype=np.float64)
    work = features(nbytes, seqs)  # (inputs, terms)
    x = np.column_stack([np.ones(len(rows)), work])
    med = {name: np.array([statistics.median(r["seconds"][name]) if name in r["seconds"] else np.nan for r in rows])
           for name in ("cpu", "cpu-few", "cuda")}
    coef = {}
    for name in ("cpu", "cuda"):
        ok = ~np.isnan(med[name])
        if ok.any():
            coef[name] = nnls_relative(x[ok], med[name][ok])
    exponent = 0.0
    ok = ~np.isnan(med["cpu-few"])
    if ok.any() and few < cores:
        # The few-thread run's work over the all-thread run's, past the common start: 2^e per doubling.
        start = coef["cpu"][0]
        ratios = [(f - start) / (c - start) for f, c in zip(med["cpu-few"][ok], med["cpu"][ok]) if c - start > 0.05]
        if ratios:
            exponent = min(1.0, max(0.0, math.log(statistics.median(ratios)) / math.log(cores / few)))
    scale = cores ** exponent  # fitted on all threads: one thread's work is this much more
    costs = {"cpu": Cost(coef["cpu"][0], *(coef["cpu"][1:] * scale), core_exponent=exponent)}
    if "cuda" in coef:
        costs["cuda"] = Cost(coef["cuda"][0], *coef["cuda"][1:])
    print(f"host {record['host']}: {cores} CPU threads, {len(rows)} inputs, {record['date']}")
    print(f"{'input':>22} {'MB':>6} {'kseq':>6} {'cpu':>7} {'~cpu':>7} {'cuda':>7} {'~cuda':>7} choice")
    lost = chosen_sum = best_sum = 0.0
    wrong = 0
    for k, r in enumerate(rows):
        pred = {d: c.seconds(int(nbytes[k]), int(seqs[k]) or None, cores) for d, c in costs.items()}
        line = f"{Path(r['path']).name[-22:]:>22} {nbytes[k] / MB:6.3f} {seqs[k] / 1000:6.2f} {med['cpu'][k]:7.3f} " \
               f"{pred['cpu']:7.3f}"
        if "cuda" in costs:
            pick = "cpu" if pred["cpu"] <= pred["cuda"] else "cuda"
            best = "cpu" if med["cpu"][k] <= med["cuda"][k] else "cuda"
            cost = med[pick][k] - med[best][k]
            lost += cost
            wrong += pick != best
            chosen_sum += med[pick][k]
            best_sum += med[best][k]
            line += f" {med['cuda'][k]:7.3f} {pred['cuda']:7.3f} {pick}" + ("" if pick == best else f" (+{cost:.3f} s)")
        print(line)
    if "cuda" in costs:
        print(f"choices: {wrong} of {len(rows)} not the faster backend, {lost:.2f} s lost; chosen sum {chosen_sum:.2f} s, "
              f"best {best_sum:.2f} s, all cpu {np.nansum(med['cpu']):.2f} s, all cuda {np.nansum(med['cuda']):.2f} s")
    print(f"\n# msa/run/plan.py, calibrated by benchmarks/auto_device.py on {record['host']} "
          f"({cores} CPU threads, {record['date']}):")
    print(f"COSTS: dict[str, Cost] = {{")
    for name, c in costs.items():
        print(f'    "{name}": Cost(start={c.start:.3f}, per_mb={c.per_mb:.3f}, per_1k_sequences={c.per_1k_sequences:.3f}, '
              f"per_mb_length={c.per_mb_length:.4f}" + (f", core_exponent={c.core_exponent:.2f}" if c.core_exponent else "")
              + "),")
    print("}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("time", help="time both backends per input (a GPU host, msa installed)")
    t.add_argument("inputs", nargs="+", type=Path)
    t.add_argument("--json", type=Path, required=True, help="write the timings here")
    t.add_argument("--runs", type=int, default=1, help="timed runs of each input and backend")
    t.add_argument("--few-every", type=int, default=1, help="time the few-threads CPU run on every Nth input")
    t.add_argument("--msa", default="msa", help="the msa command (default: msa on PATH)")
    t.add_argument("--no-gpu", action="store_true", help="time the CPU only (a host without a GPU)")
    f = sub.add_parser("fit", help="fit COSTS to timings")
    f.add_argument("json", type=Path)
    a = ap.parse_args()
    (time_inputs if a.command == "time" else fit)(a)


if __name__ == "__main__":
    main()
