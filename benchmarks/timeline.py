"""Where a short msa run's wall clock goes, thread by thread: one CLI run with a mark at each
step of the backend's start (msa._runtime.startup's two threads) and at each stage of the main thread.

    python benchmarks/timeline.py add EXISTING.fa NEW.fa -o OUT.fa
    python benchmarks/timeline.py align datasets/examples/example.fa -o OUT.fa --device cuda

The arguments are msa's own. Marks go to stderr as ``seconds-since-start thread what``; the
run's own stage lines are left as they are. A start-up change is judged by the wall clock of
whole runs (benchmarks/startup.py); this shows which thread a run waits on, e.g. that a run
of ``msa add`` on the GPU ends its reading at the same time the CuPy and Numba imports end,
because the three share the GIL (docs/start-up.md).
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

START = time.perf_counter()


def mark(what: str) -> None:
    print(f"  {time.perf_counter() - START:6.3f} {threading.current_thread().name:18s} {what}",
          file=sys.stderr, flush=True)


def _wrap(owner, name: str, before: str, after: str) -> None:
    """Mark ``before`` and ``after`` around each call of ``owner.name``."""
    inner = getattr(owner, name)

    def marked(*args, **kwargs):
        mark(before)
        result = inner(*args, **kwargs)
        mark(after)
        return result

    setattr(owner, name, marked)


#: Compiled functions loaded from a cache (msa.jit) on each thread: count and seconds.
LOADS: dict[str, list[float]] = {}


def _count_loads() -> None:
    """Sum the time of each compiled function's load from a cache, per thread (a load's marks
    would drown the timeline: a run loads 10-20). Called on the Numba thread, where the
    pipeline's import would import msa.jit (and Numba) first thing anyway."""
    from msa import jit

    inner = jit._LazyCache.load_overload

    def counted(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(self, *args, **kwargs)
        finally:
            entry = LOADS.setdefault(threading.current_thread().name, [0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - start

    jit._LazyCache.load_overload = counted


def _instrument() -> None:
    import msa.progress as progress
    import msa._runtime.startup as startup

    load_numba = startup._load_numba

    def load_numba_counted(*args, **kwargs):
        _count_loads()
        return load_numba(*args, **kwargs)

    startup._load_numba = load_numba_counted

    _wrap(startup, "start_cuda", "start_cuda begin", "start_cuda end (CuPy imported, context made)")
    _wrap(startup, "_load_numba", "Numba thread begins", "Numba thread ends (first compiled call made)")
    _wrap(startup.BackendStart, "backend", "main thread waits for the backend", "main thread has the backend")
    prepare = startup.prepare_backend

    def prepare_marked(*args, **kwargs):
        mark("pipeline imported; backend class chosen")
        make, note = prepare(*args, **kwargs)

        def make_marked():
            backend = make()
            mark("backend made")
            return backend

        return make_marked, note

    startup.prepare_backend = prepare_marked
    stage = progress.Progress.stage

    @contextlib.contextmanager
    def stage_marked(self, description, *args, **kwargs):
        mark(f"stage {description!r} begins")
        with stage(self, description, *args, **kwargs) as advance:
            yield advance
        mark(f"stage {description!r} ends")

    progress.Progress.stage = stage_marked


def main() -> None:
    mark("script start")
    from msa._runtime.bytecode import keep_bytecode

    mark(f"bytecode prefix {keep_bytecode()} (as the CLI's start)")
    from msa._runtime.collector import begin

    begin()  # the collector paused, as the CLI's start
    _instrument()
    from msa.cli import main as cli_main

    mark("msa.cli imported")
    sys.argv = ["msa", *sys.argv[1:]]
    try:
        cli_main()
    finally:
        for thread, (n, seconds) in LOADS.items():
            mark(f"{n:.0f} compiled functions loaded from the cache on {thread} in {seconds:.3f} s")
        mark("exit")


if __name__ == "__main__":
    main()
