"""Where the default's extra time goes, family by family: each balifam10000-dev family aligned
in one warm process with --consistency auto and off, each stage's time (ms) from the reporter's
stages, and a cProfile of the families named on the command line (auto)."""
import contextlib
import cProfile
import glob
import pstats
import sys
import time

import msa.progress
from msa import align_files

times: dict[str, float] = {}


@contextlib.contextmanager
def stage(self, description, total=None, note=True):
    t = time.perf_counter()
    yield msa.progress._ignore
    times[description] = times.get(description, 0.0) + time.perf_counter() - t


msa.progress.LogReport.stage = stage
folder, profiled = sys.argv[1], sys.argv[2:]
files = sorted(glob.glob(folder + "/*"))
align_files(files[:1], "/tmp/warm", quiet=True)  # the kernels and the server's first use
for f in files:
    for c in ("auto", "off"):
        times.clear()
        t = time.perf_counter()
        align_files([f], "/tmp/st", quiet=True, consistency=c)
        total = time.perf_counter() - t
        parts = " ".join(f"{k.replace(' ', '_')}={v * 1e3:.0f}" for k, v in times.items())
        print(f"{f.rsplit('/', 1)[-1]} {c} total={total * 1e3:.0f} {parts}", flush=True)
for name in profiled:
    f = [x for x in files if name in x][0]
    cProfile.run("align_files([f], '/tmp/st', quiet=True)", "/tmp/p.prof")
    print("== profile", name)
    pstats.Stats("/tmp/p.prof").sort_stats("tottime").print_stats(22)
