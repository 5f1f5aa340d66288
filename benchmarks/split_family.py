"""One large family on one GPU (``-o``) against the same on N GPUs (``-o --gpus N``: split along its
guide tree, msa.run.split), each in a fresh process, with peak GPU and host memory.

    python3 benchmarks/split_family.py bench-data/balifam10000-dev/in/PF00078.10000 --copies 100 --gpus 2
    python3 benchmarks/split_family.py bench-data/balifam10000-dev/in/PF00037.10000 --copies 1000 --gpus 2 --skip-one

The family is grown from a real one (datasets/semisynthetic.py: each sequence and ``copies - 1``
variants with 8 % substitutions and no indels, so the width stays the family's), made once under
``--work``. Untimed runs of the example (default tree and PartTree) fill the kernel and Numba
caches, and each timed run starts after a sync (no dirty pages of the last one). Then ``msa align F -o one.fa``
(unless ``--skip-one``) and ``msa align F -o multi.fa --gpus N`` (with ``$MSA_SPLIT_FAMILY_BYTES=0``:
split whatever its size), each timed as a whole process
(reading, the cluster's start and the writing included), while nvidia-smi and /proc/meminfo are
sampled every 0.2 s: the peak memory used on each GPU and on the host, above what was in use
before the run. Prints the times, their ratio, whether the outputs are byte-identical, and the
Dask run's timeline (msa.run.dask's ``$MSA_DASK_TIMELINE``).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from msa.run.dask import TIMELINE_ENV, timeline_lines  # noqa: E402
from msa.run.split import SPLIT_BYTES_ENV  # noqa: E402
from common import write_manifest  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", type=Path, help="a real family (balifam10000-dev/in/PF00078.10000)")
    parser.add_argument("--copies", type=int, default=100, help="sequences per original sequence")
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--skip-one", action="store_true", help="no one-GPU run (a family that does not fit one)")
    parser.add_argument("--work", type=Path, help="where the family and outputs go (default: a new temporary folder)")
    parser.add_argument("--json", type=Path, help="write the figures and the timeline here too")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="msa-split-"))
    work.mkdir(parents=True, exist_ok=True)
    grown = work / f"{args.family.name.split('.')[0]}.x{args.copies}.fa"
    if not grown.exists():
        start = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "datasets" / "semisynthetic.py"), str(args.family), "-o", str(grown),
                        "--variants", str(args.copies - 1), "--max-indels", "0", "--seed", "1"], check=True)
        print(f"grown {grown.name}: {grown.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - start:.0f} s",
              file=sys.stderr, flush=True)
    # the msa first on PYTHONPATH is measured (an installed wheel's, with its compiled code); the checkout last
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)])))
    env[SPLIT_BYTES_ENV] = "0"  # split whatever the family's size (msa.run.split.SPLIT_FAMILY_BYTES)
    msa = [sys.executable, "-m", "msa", "align"]
    for tree in ("auto", "parttree"):  # every compiled function either run takes, in the caches (Numba's)
        subprocess.run([*msa, str(ROOT / "datasets" / "examples" / "example.fa"), "-o", os.devnull, "--device",
                        "cuda", "--tree", tree, "-q"], env=env, check=True)
    figures: dict = {"family": grown.name, "bytes": grown.stat().st_size, "gpus": args.gpus}
    if not args.skip_one:
        figures["one"] = timed([*msa, str(grown), "-o", str(work / "one.fa"), "-v"], env)
        print(f"1 GPU: {figures['one']}", file=sys.stderr, flush=True)
    timeline_file = work / "timeline.json"
    figures["multi"] = timed([*msa, str(grown), "-o", str(work / "multi.fa"), "--gpus", str(args.gpus), "-v"],
                             dict(env, **{TIMELINE_ENV: str(timeline_file)}))
    print(f"{args.gpus} GPUs: {figures['multi']}", file=sys.stderr, flush=True)
    if not args.skip_one:
        figures["identical"] = subprocess.run(["cmp", "-s", str(work / "one.fa"), str(work / "multi.fa")]).returncode == 0
        figures["ratio"] = figures["multi"]["seconds"] / figures["one"]["seconds"]
        (work / "one.fa").unlink()
        print(f"one {figures['one']['seconds']:.1f} s, {args.gpus} GPUs {figures['multi']['seconds']:.1f} s "
              f"({figures['ratio']:.2f}x); outputs {'byte-identical' if figures['identical'] else 'DIFFERENT'}")
    figures["output_bytes"] = (work / "multi.fa").stat().st_size
    (work / "multi.fa").unlink()
    timeline = json.loads(timeline_file.read_text())
    for line in timeline_lines(timeline):
        print(line)
    if args.json:
        write_manifest(args.json.parent)
        args.json.write_text(json.dumps(figures | {"timeline": timeline}, indent=1))
    if figures.get("identical") is False:
        sys.exit(1)


def timed(command: list[str], env: dict[str, str]) -> dict:
    """Wall seconds of ``command``, the peak memory it added on each GPU and on the host (GB),
    and the last lines it wrote to stderr (its stages with -v)."""
    os.sync()  # the last run's output on disk: each run starts without dirty pages to write back
    with sampled() as peaks:
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return {"seconds": seconds, **peaks, "stderr": done.stderr.splitlines()[-12:]}


@contextlib.contextmanager
def sampled(every: float = 0.2) -> Iterator[dict]:
    """Peak GPU memory per GPU and host memory in use (GB) above their levels at the start."""
    peaks: dict = {}
    stop = threading.Event()

    def gpus() -> list[float]:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout
        return [float(x) / 1024 for x in out.split()]

    def host() -> float:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) / 2**20

    base_gpu, base_host = gpus(), host()

    def watch() -> None:
        top_gpu, top_host = list(base_gpu), base_host
        while not stop.wait(every):
            top_gpu = [max(a, b) for a, b in zip(top_gpu, gpus())]
            top_host = max(top_host, host())
        peaks["gpu_peak_gb"] = [round(a - b, 2) for a, b in zip(top_gpu, base_gpu)]
        peaks["host_peak_gb"] = round(top_host - base_host, 2)

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()


if __name__ == "__main__":
    main()
