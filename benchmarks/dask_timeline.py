"""A dataset's families on one GPU (``-O``) against the same run on N GPUs through Dask,
each in a fresh process, with the Dask run's timeline per worker.

    python3 benchmarks/dask_timeline.py bench-data/balifam10000-dev/in --copies 8 --gpus 2
    python3 benchmarks/dask_timeline.py IN --copies 2 --device cpu --workers 2   # a smoke test, no GPU

The inputs are ``--copies`` copies of each file of IN under distinct names (``NAME.c0``...), made
once under ``--work``. An untimed run fills the kernel caches first (as benchmarks/common.py's
warm-up). Then ``msa align IN -O one`` and ``msa align IN -O multi --gpus N`` (``--workers N``
with ``--device cpu``), each timed as a whole process, cluster start included. Without dask-cuda,
a scheduler and one ``dask worker`` per GPU (pinned by CUDA_VISIBLE_DEVICES) are started and the
run goes to them by ``--scheduler``; their start is inside the timing too. Prints both wall times,
their ratio, whether every output is byte-identical, and the timeline (msa.run.dask's
``$MSA_DASK_TIMELINE``): when the cluster was ready, and per worker its span, threads, warm-up,
tasks with their reading / guide tree / aligning / writing seconds, and idle time. With
``--one-gpu-cluster``, ``--gpus 1`` too (several workers share the one GPU): the ratio of N GPUs
to it is what the other GPUs add.
"""
from __future__ import annotations

import argparse
import contextlib
import filecmp
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from msa.run.dask import TIMELINE_ENV, timeline_lines  # noqa: E402
from common import write_manifest  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path, help="a folder of families (balifam10000-dev/in)")
    parser.add_argument("--copies", type=int, default=8, help="copies of each family, under distinct names")
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="CPU workers, with --device cpu")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--work", type=Path, help="where the copies and outputs go (default: a new temporary folder)")
    parser.add_argument("--json", type=Path, help="write the figures and the timeline here too")
    parser.add_argument("--one-gpu-cluster", action="store_true",
                        help="also time --gpus 1 (its workers share one GPU): what the other GPUs add to it")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="msa-dask-timeline-"))
    inputs = make_copies(args.input, work / "in", args.copies)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    msa = [sys.executable, "-m", "msa", "align"]
    smallest = min(inputs.iterdir(), key=lambda p: p.stat().st_size)
    subprocess.run([*msa, str(smallest), "-o", os.devnull, "--device", args.device, "-q"], env=env, check=True)

    one = timed([*msa, str(inputs), "-O", str(work / "one"), "--device", args.device, "-q"], env)
    print(f"1 {'GPU' if args.device != 'cpu' else 'process'}: {one:.1f} s", file=sys.stderr, flush=True)
    timeline_file = work / "timeline.json"
    multi_env = dict(env, **{TIMELINE_ENV: str(timeline_file)})
    n = args.workers if args.device == "cpu" else args.gpus
    with cluster_flags(args.device, n, work, multi_env) as (how, flags, started):
        multi = timed([*msa, str(inputs), "-O", str(work / "multi"), "--device", args.device, "-q", *flags],
                      multi_env) + started
    same = identical(work / "one", work / "multi")
    count = sum(1 for _ in inputs.iterdir())
    print(f"{count} families: one {one:.1f} s; {n} workers via {how} {multi:.1f} s ({multi / one:.2f}x); "
          f"outputs {'byte-identical' if same else 'DIFFERENT'}")
    timeline = json.loads(timeline_file.read_text())
    for line in timeline_lines(timeline):
        print(line)
    figures = {"families": count, "one_s": one, "multi_s": multi, "how": how, "identical": same}
    if args.one_gpu_cluster and args.device != "cpu":
        one_gpu = timed([*msa, str(inputs), "-O", str(work / "one-gpu"), "--device", args.device, "-q", "--gpus", "1"],
                        env)
        same = same and identical(work / "one", work / "one-gpu")
        figures |= {"one_gpu_cluster_s": one_gpu, "identical": same}
        print(f"--gpus 1: {one_gpu:.1f} s ({one_gpu / one:.2f}x one process); {n} GPUs {multi / one_gpu:.2f}x it")
    if args.json:
        write_manifest(args.json.parent)
        args.json.write_text(json.dumps(figures | {"timeline": timeline}, indent=1))
    if not same:
        sys.exit(1)


def make_copies(source: Path, target: Path, copies: int) -> Path:
    """``copies`` copies of each file of ``source`` in ``target`` (``NAME.cK``), made once."""
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(p for p in source.iterdir() if p.is_file() and not p.name.startswith(".")):
        for k in range(copies):
            copy = target / f"{path.name}.c{k}"
            if not copy.exists() or copy.stat().st_size != path.stat().st_size:
                shutil.copyfile(path, copy)
    return target


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True)
    return time.perf_counter() - start


@contextlib.contextmanager
def cluster_flags(device: str, n: int, work: Path, env: dict[str, str]) -> Iterator[tuple[str, list[str], float]]:
    """The Dask flags of the timed run, how they run, and the seconds spent starting a cluster
    outside it (only without dask-cuda on the GPU: a scheduler and one worker per GPU)."""
    if device == "cpu":
        yield f"--workers {n} (LocalCluster, its start included)", ["--workers", str(n)], 0.0
        return
    if _imports("dask_cuda"):
        yield f"--gpus {n} (a local cluster, several workers a GPU, its start included)", ["--gpus", str(n)], 0.0
        return
    start = time.perf_counter()
    file = work / "scheduler.json"
    file.unlink(missing_ok=True)
    dask = [sys.executable, "-m"]
    logs = [open(work / f"{name}.log", "w") for name in ["scheduler", *(f"worker{g}" for g in range(n))]]
    procs = [subprocess.Popen([*dask, "distributed.cli.dask_scheduler", "--scheduler-file", str(file),
                               "--no-dashboard"], env=env, stdout=logs[0], stderr=subprocess.STDOUT)]
    for g in range(n):
        procs.append(subprocess.Popen(
            [*dask, "distributed.cli.dask_worker", "--scheduler-file", str(file), "--nthreads", "1",
             "--no-dashboard"], env=dict(env, CUDA_VISIBLE_DEVICES=str(g)), stdout=logs[g + 1],
            stderr=subprocess.STDOUT))
    try:
        from distributed import Client

        while not file.exists():
            time.sleep(0.1)
        with Client(scheduler_file=str(file)) as client:
            client.wait_for_workers(n, timeout=120)
            address = client.scheduler.address
        yield (f"--scheduler (a scheduler and {n} dask workers, one per GPU; their start included)",
               ["--scheduler", address], time.perf_counter() - start)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()
        for log in logs:
            log.close()


def _imports(module: str) -> bool:
    """Whether ``module`` imports here (dask-cuda carried as a wheel may not)."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure means: not usable
        print(f"({module} does not import: {type(exc).__name__}: {exc})", file=sys.stderr)
        return False
    return True


def identical(a: Path, b: Path) -> bool:
    """The two folders hold the same names with the same bytes."""
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)):
        return False
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    return not mismatch and not errors


if __name__ == "__main__":
    main()
