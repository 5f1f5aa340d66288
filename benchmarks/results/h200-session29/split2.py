"""(split.py after call C's change: tables take the backend.) What the default's extra time in the GPU's level loop is made of: each family named on the
command line aligned in one warm process four ways, the 'aligning profiles' stage timed (ms):
off (no library); full (the default); host (the bonuses made on the host and added on the
device as always, then not given to the DP: the plain fills); scored (no walks, no maps to the
host: each guided merge's table all zeros, given to the DP: its scored fills)."""
import contextlib
import glob
import sys
import time

import numpy as np

import msa.consistency as C
import msa.progress
from msa import align_files
from msa.seqdb import offsets_of

times: dict[str, float] = {}


@contextlib.contextmanager
def stage(self, description, total=None, note=True):
    t = time.perf_counter()
    yield msa.progress._ignore
    times[description] = times.get(description, 0.0) + time.perf_counter() - t


msa.progress.LogReport.stage = stage
tables, add = C.LevelBonuses.tables, C.LevelBonuses.add


def host_tables(self, nodes, kids, widths, sizes, backend):
    got = tables(self, nodes, kids, widths, sizes, backend)
    xp = backend.xp
    if got is not None:
        xp.asarray(got[0][:1]).get() if xp is not np else None  # wait for the add
    return None


def zero_tables(self, nodes, kids, widths, sizes, backend):
    xp = backend.xp
    k, lib = nodes - self.n, self.library
    has = lib.off[k + 1] > lib.off[k]
    if not has.any():
        return None
    off = offsets_of(np.where(has, widths[kids[0::2]] * widths[kids[1::2]], 0))
    return xp.zeros(int(off[-1]), dtype=xp.int64), off


ways = {"off": (tables, add, "off"), "full": (tables, add, "auto"), "host": (host_tables, add, "auto"),
        "scored": (zero_tables, lambda *a: None, "auto")}
files = sorted(glob.glob(sys.argv[1] + "/*"))
align_files(files[:1], "/tmp/warm", quiet=True)
for name in sys.argv[2:]:
    f = [x for x in files if name in x][0]
    for rnd in range(2):
        row = []
        for way, (t, a, c) in ways.items():
            C.LevelBonuses.tables, C.LevelBonuses.add = t, a
            times.clear()
            align_files([f], "/tmp/sp", quiet=True, consistency=c)
            row.append(f"{way}={times['aligning profiles'] * 1e3:.0f}")
        print(name, rnd, " ".join(row), flush=True)
